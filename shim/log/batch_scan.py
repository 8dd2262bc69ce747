"""A stored batch read as the log cleaner needs it, without decoding it whole: the header fields, and of each record
of an uncompressed batch only its offset delta, key and whether it is a tombstone.

The cleaner reads every record of the log at each cleaning; most batches are then copied as they are or dropped
whole, so building every record (values, headers) first would be wasted. A batch this scan cannot read (compressed,
a control batch, or anything malformed) goes through :func:`kafka_shim.protocol.records.decode_batch` instead,
which reports what is wrong.
"""

from __future__ import annotations

import struct

_HEAD = struct.Struct(">qiibIhiqqqhii")
_COMPRESSION_MASK, _TRANSACTIONAL_BIT, _CONTROL_BIT, _DELETE_HORIZON_BIT = 0x07, 0x10, 0x20, 0x40
RECORDS_AT = 61

ScannedRecord = tuple[int, bytes | None, bool]  # offset delta, key, tombstone


class StoredBatch:
    """The header of a stored magic-2 batch (the fields CleanedTransactions and the cleaner's filter read)."""

    __slots__ = ("attributes", "base_offset", "base_sequence", "base_timestamp", "count", "last_offset",
                 "max_timestamp", "producer_epoch", "producer_id")

    def __init__(self, raw: bytes | memoryview) -> None:
        (self.base_offset, _length, _epoch, _magic, _crc, self.attributes, last_delta, self.base_timestamp,
         self.max_timestamp, self.producer_id, self.producer_epoch, self.base_sequence, self.count) = _HEAD.unpack_from(raw)
        self.last_offset = self.base_offset + last_delta

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_BIT)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & _DELETE_HORIZON_BIT)

    @property
    def compressed(self) -> bool:
        return bool(self.attributes & _COMPRESSION_MASK)


def scan_records(raw: bytes | memoryview, header: StoredBatch) -> list[ScannedRecord] | None:
    """(offset delta, key, tombstone) of each record of an uncompressed data batch; None when the batch is not one
    or does not read cleanly (the caller decodes it whole)."""
    if header.compressed or header.is_control or header.count < 0:
        return None
    buf = bytes(raw[RECORDS_AT:])
    end, pos, found = len(buf), 0, []
    try:
        for _ in range(header.count):
            length, pos = _varint(buf, pos)
            record_end = pos + length
            if length < 0 or record_end > end:
                return None
            pos += 1  # attributes
            _, pos = _varint(buf, pos, 64)  # timestamp delta
            offset_delta, pos = _varint(buf, pos)
            key_length, pos = _varint(buf, pos)
            key = None if key_length < 0 else buf[pos : pos + key_length]
            pos += max(key_length, 0)
            value_length, pos = _varint(buf, pos)
            if pos > record_end or (key is not None and len(key) != key_length):
                return None
            found.append((offset_delta, key, value_length < 0))
            pos = record_end
    except IndexError:
        return None
    return found if pos == end else None


def _varint(buf: bytes, pos: int, bits: int = 32) -> tuple[int, int]:
    """A zigzag varint (``bits`` 32) or varlong (64), as Kafka's ByteUtils.readVarint / readVarlong read it: at most
    5 (10) bytes, the last one's bits past 32 (64) dropped; the position after it."""
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            result &= (1 << bits) - 1
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift >= bits + 3:  # a fifth (tenth) byte with its continuation bit
            raise IndexError(f"varint longer than {(bits + 6) // 7} bytes")
