"""The records of a compressed magic-2 batch read as Kafka reads one it keeps in place.

LogValidator (validateMessagesAndAssignOffsetsCompressed) reads a batch whose codec the topic keeps through
``skipKeyValueIterator``: ``DefaultRecord.readPartiallyFrom`` on the decompressed stream, which skips keys, values and
headers and never compares a record's declared length with what it read, so the next record starts where the last
one really ended. What a stream gives past its end differs from a buffer too: a byte read there is -1, which a varint
takes as a continuation byte until it is too long. Kafka's texts, for the broker's log (the client gets only the
error code): an illegal varint in the length is "Incorrect declared batch size, premature EOF reached" (the stream
iterator's IllegalArgumentException), elsewhere "Found invalid record structure"; a key, value or header running past
the end "Reached end of input stream before skipping all bytes"; bytes after the last record "Incorrect declared batch
size, records still remaining in file". A negative key, value or header-value size skips nothing.
"""

from __future__ import annotations

from typing import NamedTuple


class PartialRecordError(Exception):
    """The InvalidRecordException Kafka throws; its text is the exception's message."""


class PartialRecord(NamedTuple):
    offset_delta: int
    timestamp_delta: int
    key_size: int  # -1 for a null key
    value_size: int


class _IllegalVarint(Exception):
    pass


def _varint(buf: bytes, pos: int, end: int, max_shift: int, bits: int) -> tuple[int, int]:
    """ByteUtils.readVarint / readVarlong on an InputStream: zigzag-decoded, Java int or long wrapping."""
    value = shift = 0
    while True:
        if pos < end:
            b = buf[pos]
            pos += 1
        else:
            b = -1  # InputStream.read() at the end: all bits set, so a continuation byte
        if not b & 0x80:
            break
        value |= (b & 0x7F) << shift
        shift += 7
        if shift > max_shift:
            raise _IllegalVarint
    value = (value | (b << shift)) & ((1 << bits) - 1)
    return (value >> 1) ^ -(value & 1), pos


def _skip(pos: int, size: int, end: int) -> int:
    if size <= 0:
        return pos
    if pos + size > end:
        raise PartialRecordError(f"Reached end of input stream before skipping all bytes. Remaining bytes:{pos + size - end}")
    return pos + size


def read_partially(buf: bytes, count: int) -> list[PartialRecord]:
    """``count`` records from the decompressed ``buf`` (a batch's records count); raises PartialRecordError."""
    records: list[PartialRecord] = []
    pos, end = 0, len(buf)
    for _ in range(count):
        try:
            _, pos = _varint(buf, pos, end, 28, 32)  # the declared length: read, never checked
        except _IllegalVarint:
            raise PartialRecordError("Incorrect declared batch size, premature EOF reached") from None
        try:
            pos = min(pos + 1, end)  # the attributes byte (-1 past the end, with no error)
            timestamp_delta, pos = _varint(buf, pos, end, 63, 64)
            offset_delta, pos = _varint(buf, pos, end, 28, 32)
            key_size, pos = _varint(buf, pos, end, 28, 32)
            pos = _skip(pos, key_size, end)
            value_size, pos = _varint(buf, pos, end, 28, 32)
            pos = _skip(pos, value_size, end)
            headers, pos = _varint(buf, pos, end, 28, 32)
            if headers < 0:
                raise PartialRecordError(f"Found invalid number of record headers {headers}")
            for _ in range(headers):
                header_key_size, pos = _varint(buf, pos, end, 28, 32)
                if header_key_size < 0:
                    raise PartialRecordError(f"Invalid negative header key size {header_key_size}")
                pos = _skip(pos, header_key_size, end)
                header_value_size, pos = _varint(buf, pos, end, 28, 32)
                pos = _skip(pos, header_value_size, end)
        except _IllegalVarint:
            raise PartialRecordError("Found invalid record structure") from None
        records.append(PartialRecord(offset_delta, timestamp_delta, key_size, value_size))
    if pos < end:
        raise PartialRecordError("Incorrect declared batch size, records still remaining in file")
    return records
