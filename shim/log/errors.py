"""What a partition log refuses, each with the Kafka error code a handler answers with.

Kafka's counterparts: ``OffsetOutOfRangeException``, ``RecordBatchTooLargeException`` and
``CorruptRecordException`` (org.apache.kafka.common.errors), ``KafkaStorageException`` for a failing disk.
"""

from __future__ import annotations

from kafka_shim.protocol.codes import ErrorCode


class LogError(Exception):
    """Base of the log's refusals; ``error_code`` is what the client is told."""

    error_code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR


class OffsetOutOfRange(LogError):
    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class BatchTooLarge(LogError):
    """A batch larger than ``segment.bytes`` can never fit a segment (Kafka says MESSAGE_TOO_LARGE)."""

    error_code = ErrorCode.MESSAGE_TOO_LARGE


class CorruptBatch(LogError):
    error_code = ErrorCode.CORRUPT_MESSAGE


class StorageFailure(LogError):
    """The storage could not be written or read (a full disk, an I/O error): an error to the client, not a crash."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class InconsistentTopicId(LogError):
    """The directory holds a partition of another topic of the same name (its ``partition.metadata`` differs)."""

    error_code = ErrorCode.INCONSISTENT_TOPIC_ID
