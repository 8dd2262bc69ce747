"""Kafka record batches (message format v2), encoded and decoded without I/O.

:mod:`.batch` holds the model (:class:`RecordBatch`, :class:`Record`, :class:`Header`) and the
encoder and decoder, including partial trailing batches; :mod:`.compression` holds the gzip,
snappy, lz4 and zstd adapters. Import the public names from here.
"""

from __future__ import annotations

from kafka_shim.protocol.records.batch import (
    DEFAULT_MAX_DECOMPRESSED,
    MAGIC,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    Header,
    HeaderInput,
    Record,
    RecordBatch,
    RecordInput,
    TimestampType,
    batch_attributes,
    build_batch,
    decode_batch,
    decode_batches,
    decode_batches_with_tail,
    encode_batch,
)
from kafka_shim.protocol.records.compression import Compression, UnsupportedCompressionError, supported_compressions

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED",
    "MAGIC",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "Compression",
    "Header",
    "HeaderInput",
    "Record",
    "RecordBatch",
    "RecordInput",
    "TimestampType",
    "UnsupportedCompressionError",
    "batch_attributes",
    "build_batch",
    "decode_batch",
    "decode_batches",
    "decode_batches_with_tail",
    "encode_batch",
    "supported_compressions",
]
