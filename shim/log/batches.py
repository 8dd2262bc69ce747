"""Record-batch headers as the log needs them: walked, checked, and stamped with offsets, never re-encoded.

Kafka's counterparts: ``DefaultRecordBatch`` (``setLastOffset``, ``setPartitionLeaderEpoch``, ``setMaxTimestamp``,
``ensureValid``) and the batch iteration of ``FileRecords``/``ByteBufferLogInputStream``. The full model, encoder and
decoder live in :mod:`kafka_shim.protocol.records`; here only the 61-byte header is touched, so an appended batch is
stored exactly as the producer sent it except for the fields a broker assigns:

- ``baseOffset`` and ``partitionLeaderEpoch`` come before the CRC, which covers only the bytes from ``attributes`` on,
  so rewriting them keeps the CRC valid;
- with LogAppendTime the broker sets ``maxTimestamp`` and the timestamp-type bit of ``attributes``, both covered by
  the CRC, so the CRC-32C is computed again (``crc32c`` is the project's CRC-32C, as in ``protocol.records``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from kafka_shim.protocol.records import MAGIC, TimestampType
from kafka_shim.protocol.records.crc import crc32c
from kafka_shim.shim.log.errors import CorruptBatch

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp, maxTimestamp
_HEAD = struct.Struct(">qiibIhiqq")
HEADER_SIZE = 61  # the whole v2 header, up to the records
LOG_OVERHEAD = 12  # baseOffset + batchLength: enough to know where the next batch starts
_MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
_BASE_OFFSET = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_INT64 = struct.Struct(">q")
_LEADER_EPOCH_AT = 12
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_MAX_TIMESTAMP_AT = 35
_TIMESTAMP_TYPE_BIT = 0x08


class BatchHeader(NamedTuple):
    """Where a stored batch is and what the log needs of it."""

    position: int  # byte position of the batch in its segment (or buffer)
    base_offset: int
    size: int  # whole batch, LOG_OVERHEAD included
    last_offset: int
    max_timestamp: int
    partition_leader_epoch: int
    attributes: int

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType.LOG_APPEND_TIME if self.attributes & _TIMESTAMP_TYPE_BIT else TimestampType.CREATE_TIME


def parse_header(data: bytes | bytearray | memoryview, at: int, position: int) -> BatchHeader:
    """The header at ``data[at:]``, which must hold at least :data:`HEADER_SIZE` bytes; ``position`` is recorded."""
    base_offset, length, leader_epoch, _magic, _crc, attributes, last_delta, _base_ts, max_ts = _HEAD.unpack_from(data, at)
    return BatchHeader(position, base_offset, LOG_OVERHEAD + length, base_offset + last_delta, max_ts, leader_epoch, attributes)


def check_batch(data: bytes | bytearray | memoryview, at: int, available: int, *, verify_crc: bool = True) -> str | None:
    """Why the batch at ``data[at:]`` cannot be kept, or None: it is whole, magic 2, and its CRC-32C holds.

    ``available`` is how many bytes there are from ``at`` on. This is what recovery trusts (Kafka's
    ``ensureValid`` plus FileRecords' length checks): a batch that fails it, and all after it, are cut off.
    ``verify_crc=False`` leaves out the CRC, for bytes whose CRC the caller has just checked (the produce path's
    validator): computing it again would read every byte of the append a second time.
    """
    if available < LOG_OVERHEAD:
        return f"{available} bytes cannot hold a batch length"
    (length,) = _INT32.unpack_from(data, at + 8)
    if length < _MIN_BATCH_LENGTH:
        return f"batch length {length} is shorter than a batch header"
    if LOG_OVERHEAD + length > available:
        return f"batch length {length} runs past the end ({available - LOG_OVERHEAD} bytes left)"
    if data[at + 16] != MAGIC:
        return f"magic {data[at + 16]} is not {MAGIC}"
    if not verify_crc:
        return None
    (stored,) = _UINT32.unpack_from(data, at + _CRC_AT)
    computed = crc32c(memoryview(data)[at + _ATTRIBUTES_AT : at + LOG_OVERHEAD + length])
    if stored != computed:
        return f"CRC-32C mismatch: stored {stored:#010x}, computed {computed:#010x}"
    return None


def walk(data: bytes | bytearray | memoryview, position: int = 0) -> Iterator[BatchHeader]:
    """The headers of the whole batches in ``data`` (``position`` is the byte position of ``data[0]``)."""
    at, end = 0, len(data)
    while end - at >= HEADER_SIZE:
        header = parse_header(data, at, position + at)
        if header.size > end - at:
            return
        yield header
        at += header.size


def assign_offsets(data: bytearray, base_offset: int, leader_epoch: int, log_append_time: int | None, *,
                   verify_crc: bool = True) -> list[BatchHeader]:
    """Stamp each batch in ``data`` (in place) with its offsets and the leader epoch; with ``log_append_time``
    also its max timestamp and type, CRC recomputed. Returns the stamped headers, positions relative to ``data``.
    ``verify_crc=False``: the caller has checked each batch's CRC already (see :func:`check_batch`).

    Kafka's ``LogValidator`` in-place path for magic 2: ``setLastOffset``, ``setPartitionLeaderEpoch`` and, for a
    LogAppendTime topic, ``setMaxTimestamp(LOG_APPEND_TIME, now)``. Each batch takes ``lastOffsetDelta + 1`` offsets.
    """
    headers: list[BatchHeader] = []
    at, next_offset = 0, base_offset
    while at < len(data):
        problem = check_batch(data, at, len(data) - at, verify_crc=verify_crc)
        if problem is not None:
            raise CorruptBatch(f"batch at byte {at}: {problem}")
        header = parse_header(data, at, at)
        if header.last_offset < header.base_offset:
            raise CorruptBatch(f"batch at byte {at}: negative lastOffsetDelta {header.last_offset - header.base_offset}")
        _BASE_OFFSET.pack_into(data, at, next_offset)
        _INT32.pack_into(data, at + _LEADER_EPOCH_AT, leader_epoch)
        if log_append_time is not None:
            attributes = header.attributes | _TIMESTAMP_TYPE_BIT
            _INT16.pack_into(data, at + _ATTRIBUTES_AT, attributes)
            _INT64.pack_into(data, at + _MAX_TIMESTAMP_AT, log_append_time)
            crc = crc32c(memoryview(data)[at + _ATTRIBUTES_AT : at + header.size])
            _UINT32.pack_into(data, at + _CRC_AT, crc)
        stamped = parse_header(data, at, at)
        headers.append(stamped)
        next_offset = stamped.next_offset
        at += header.size
    if not headers:
        raise CorruptBatch("no record batch to append")
    return headers
