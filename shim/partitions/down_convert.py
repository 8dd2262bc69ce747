"""Stored magic-2 batches converted to the magic 0/1 message sets of Fetch v0-3, as Kafka 3.9 converts them.

Kafka's counterparts: ``LazyDownConversionRecords`` / ``LazyDownConversionRecordsSend`` and
``RecordsUtil.downConvert`` with ``MemoryRecordsBuilder`` for magic < 2 (``LegacyRecord``).

- The answer's size is fixed first: the larger of the bytes read and the first converted batch (a fetch always
  carries at least one whole converted batch). Batches are then converted in chunks of up to 128 KiB of stored
  bytes; what the converted chunks do not fill is padded with an "overflow" message (offset -1 and a length past the
  end), which clients drop as a partial message, and everything is cut at that size.
- Control batches are left out. An uncompressed batch keeps only the records at or after the fetch offset, each a
  message with its absolute offset; a compressed batch becomes one wrapper message (offset: its last record's;
  inner offsets relative for magic 1, absolute for magic 0) compressed again with its codec. Headers are dropped
  (magic 0/1 have none); magic 0 drops timestamps too. LogAppendTime batches stamp every message with it.
- zstd cannot be converted: :class:`UnsupportedForDownConversion` for the first batch (the handler answers
  UNSUPPORTED_COMPRESSION_TYPE), an overflow message for a later one (the client fetches it again and gets the error).
- A converted record stamped below -1 (Kafka writes such records when it keeps a batch in place) is refused by
  Kafka's MemoryRecordsBuilder: :class:`NegativeTimestamp`, in the first chunk or a later one (the handler answers
  UNKNOWN_SERVER_ERROR, or closes the connection).

Compressed bytes come from kafka-shim's codecs, not Java's, so a compressed wrapper holds the same messages as
Kafka's but not byte for byte the same compressed stream (Kafka's own output differs between JVM versions too).
"""

from __future__ import annotations

import struct
import zlib

from kafka_shim.protocol.records import Compression, RecordBatch, TimestampType, decode_batch
from kafka_shim.protocol.records.compression import compress
from kafka_shim.shim.log.batches import walk

MAX_READ_SIZE = 128 * 1024
LOG_OVERHEAD = 12
RECORD_BATCH_OVERHEAD = 61
_TIMESTAMP_TYPE_BIT = 0x08
_HEADER = struct.Struct(">qi")


class UnsupportedForDownConversion(Exception):
    """A batch that magic 0/1 cannot carry (zstd)."""


class NegativeTimestamp(Exception):
    """A converted record's timestamp is below -1: Kafka's MemoryRecordsBuilder.appendWithOffset throws an
    IllegalArgumentException. ``first``: in the first converted chunk, which Kafka converts while handling the
    request (the whole fetch fails, UNKNOWN_SERVER_ERROR); later ones it converts while sending (connection closed)."""

    def __init__(self, timestamp: int, first: bool) -> None:
        super().__init__(f"Invalid negative timestamp {timestamp}")
        self.first = first


def down_convert(records: bytes, magic: int, fetch_offset: int) -> bytes:
    """The bytes a Fetch v0-3 answer carries for ``records`` (stored batches, maybe ending with a cut one)."""
    batches = [bytes(records[h.position:h.position + h.size]) for h in walk(records)]
    first, rest = None, 0
    while rest < len(batches) and first is None:
        converted = _convert([batches[rest]], magic, fetch_offset, first=True)  # raises for a first zstd batch
        rest += 1
        first = converted or None
    if first is None:
        size = LOG_OVERHEAD if batches else 0
        return _overflow(size)[:size]
    size = max(len(records), len(first))
    out = bytearray(first[:size])
    while len(out) < size:
        chunk, rest = _next_chunk(batches, rest, magic, fetch_offset)
        out += (chunk if chunk is not None else _overflow(size - len(out)))[: size - len(out)]
    return bytes(out)


def _next_chunk(batches: list[bytes], at: int, magic: int, fetch_offset: int) -> tuple[bytes | None, int]:
    """The next non-empty converted chunk and where the following one starts (None: nothing left to convert)."""
    while at < len(batches):
        chunk, size = [batches[at]], len(batches[at])
        at += 1
        while at < len(batches) and size + len(batches[at]) <= MAX_READ_SIZE:
            chunk.append(batches[at])
            size += len(batches[at])
            at += 1
        try:
            converted = _convert(chunk, magic, fetch_offset, first=False)
        except UnsupportedForDownConversion:
            return None, len(batches)
        if converted:
            return converted, at
    return None, at


def _overflow(remaining: int) -> bytes:
    """LazyDownConversionRecordsSend.buildOverflowBatch: offset -1, a length past the answer's end, zeros."""
    size = max(LOG_OVERHEAD, min(remaining + 1, MAX_READ_SIZE))
    head = _HEADER.pack(-1, max(remaining + 1, RECORD_BATCH_OVERHEAD))
    return head + bytes(size - len(head))


def _convert(raw_batches: list[bytes], magic: int, fetch_offset: int, first: bool) -> bytes:
    # RecordsUtil.downConvert looks at every batch of the chunk (a zstd one refuses the chunk) before it converts any:
    # a zstd batch anywhere in the chunk wins over a record the conversion would refuse in an earlier batch.
    batches = []
    for raw in raw_batches:
        batch = decode_batch(raw, as_kafka_reads=True)
        if batch.is_control:
            continue
        if batch.compression is Compression.ZSTD:
            raise UnsupportedForDownConversion("Down-conversion of zstandard-compressed batches is not supported")
        batches.append(batch)
    return b"".join(_convert_batch(batch, magic, fetch_offset, first) for batch in batches)


def _convert_batch(batch: RecordBatch, magic: int, fetch_offset: int, first: bool) -> bytes:
    log_append = batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    timestamp_type_bit = _TIMESTAMP_TYPE_BIT if log_append and magic > 0 else 0
    messages = []
    for record in batch.records:
        offset = batch.base_offset + record.offset_delta
        if batch.compression is Compression.NONE and offset < fetch_offset:
            continue
        timestamp = batch.max_timestamp if log_append else batch.base_timestamp + record.timestamp_delta
        if timestamp < -1:  # checked for magic 0 too, which then drops the timestamp
            raise NegativeTimestamp(timestamp, first)
        messages.append((offset, timestamp, record.key, record.value))
    if not messages:
        return b""
    if batch.compression is Compression.NONE:
        return b"".join(_message(magic, offset, timestamp_type_bit, ts, key, value) for offset, ts, key, value in messages)
    base = messages[0][0]
    inner = b"".join(
        _message(magic, offset - base if magic > 0 else offset, timestamp_type_bit, ts, key, value)
        for offset, ts, key, value in messages
    )
    wrapper_timestamp = batch.max_timestamp if log_append else max(ts for _, ts, _, _ in messages)
    attributes = int(batch.compression) | timestamp_type_bit
    return _message(magic, messages[-1][0], attributes, wrapper_timestamp, None, compress(batch.compression, inner, magic))


def _message(magic: int, offset: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None) -> bytes:
    """LegacyRecord: offset, size, crc32 (of what follows it), magic, attributes, [timestamp], key, value."""
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic > 0:
        body += struct.pack(">q", timestamp)
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    crc = zlib.crc32(body) & 0xFFFFFFFF
    return _HEADER.pack(offset, 4 + len(body)) + struct.pack(">I", crc) + bytes(body)
