"""The records of a magic-2 batch read whole, as Kafka reads them when it needs their keys, values or timestamps.

LogValidator reads every record with ``DefaultRecord.readFrom`` where it checks records one by one (a compacted
topic, timestamp bounds, a batch that claims LogAppendTime) or rebuilds the batch (another codec than the topic's,
or records out of order). That reader is lenient where a strict decoder is not: a negative key, value or
header-value size of any value is null; header keys stay bytes (decoded only when a rebuilt batch writes them, with
Java's replacement of invalid UTF-8); a fifth varint byte's high bits (a varlong's tenth) are dropped by Java's int
(long) arithmetic. It has two sources, which differ in what a record's fields are judged against:

- an uncompressed batch: the batch's own buffer (``DefaultRecordBatch.uncompressedIterator``). A key, value or
  header count is checked against what is left of the whole batch, not of the record; the declared length is
  compared with what was read at the end. A length varint that never ends is an IllegalArgumentException that
  escapes the iterator (``IllegalLength``: UNKNOWN_SERVER_ERROR); running out of bytes while reading a length is
  "Incorrect declared batch size, premature EOF reached".
- a compressed one: the decompressed stream (``compressedIterator`` without skipping key and value). Each record's
  body is first read into a buffer of its declared length, so its fields are judged against the record. A byte
  read past the end of the stream is -1 (a continuation byte), and a length that is negative or never ends is
  "Incorrect declared batch size, premature EOF reached" (the stream iterator's IllegalArgumentException).

Every other failure is Kafka's InvalidRecordException (``WholeRecordError``, its text the exception's message):
"Found invalid record structure" for a read past the end or an illegal varint inside a record, "Invalid record size:
..." when the declared length and the bytes disagree, "Incorrect declared batch size, records still remaining in
file" for bytes after the last record. The client sees INVALID_RECORD without a message either way.
"""

from __future__ import annotations

from typing import NamedTuple

_PREMATURE_EOF = "Incorrect declared batch size, premature EOF reached"
_STRUCTURE = "Found invalid record structure"
_REMAINING = "Incorrect declared batch size, records still remaining in file"


class WholeRecordError(Exception):
    """Kafka's InvalidRecordException; its text is the exception's message."""


class IllegalLength(Exception):
    """An uncompressed batch's record length varint whose fifth byte still has its continuation bit."""


class WholeRecord(NamedTuple):
    attributes: int
    timestamp_delta: int
    offset_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[bytes, bytes | None], ...]


class _Underflow(Exception):
    """BufferUnderflowException."""


class _IllegalVarint(Exception):
    """IllegalArgumentException from a varint that does not end in time."""


def _varint(buf: bytes, pos: int, end: int, bits: int = 32) -> tuple[int, int]:
    """ByteUtils.readVarint (``bits`` 32) / readVarlong (64) on a ByteBuffer: at most 5 (10) bytes, zigzag-decoded
    as a Java int (long), the last byte's bits past 32 (64) dropped."""
    result = shift = 0
    while True:
        if pos >= end:
            raise _Underflow
        b = buf[pos]
        pos += 1
        if b < 0x80:
            raw = (result | (b << shift)) & ((1 << bits) - 1)
            return (raw >> 1) ^ -(raw & 1), pos
        result |= (b & 0x7F) << shift
        shift += 7
        if shift >= bits + 3:  # a fifth (tenth) byte with its continuation bit
            raise _IllegalVarint


def _bytes(buf: bytes, pos: int, size: int, end: int) -> tuple[bytes | None, int]:
    """Utils.readBytes: null for any negative size; a size past ``end`` fails the slice's limit."""
    if size < 0:
        return None, pos
    if pos + size > end:
        raise _IllegalVarint  # IllegalArgumentException, as a varint's
    return buf[pos:pos + size], pos + size


def _body(buf: bytes, pos: int, length: int, end: int) -> tuple[WholeRecord, int]:
    """The private DefaultRecord.readFrom(ByteBuffer, ...): a record body of ``length`` bytes at ``pos`` in a buffer
    that ends at ``end``."""
    if end - pos < length:
        raise WholeRecordError(f"Invalid record size: expected {length} bytes in record payload, but instead the buffer "
                               f"has only {end - pos} remaining bytes.")
    start = pos
    try:
        if pos >= end:
            raise _Underflow
        attributes = buf[pos] - 256 if buf[pos] > 127 else buf[pos]
        timestamp_delta, pos = _varint(buf, pos + 1, end, 64)
        offset_delta, pos = _varint(buf, pos, end)
        size, pos = _varint(buf, pos, end)
        key, pos = _bytes(buf, pos, size, end)
        size, pos = _varint(buf, pos, end)
        value, pos = _bytes(buf, pos, size, end)
        count, pos = _varint(buf, pos, end)
        if count < 0:
            raise WholeRecordError(f"Found invalid number of record headers {count}")
        if count > end - pos:
            raise WholeRecordError(f"Found invalid number of record headers. {count} is larger than the remaining size "
                                   "of the buffer")
        headers = []
        for _ in range(count):
            size, pos = _varint(buf, pos, end)
            if size < 0:
                raise WholeRecordError(f"Invalid negative header key size {size}")
            if pos + size > end:
                raise _IllegalVarint  # the key slice's limit: IllegalArgumentException
            header_key, pos = buf[pos:pos + size], pos + size
            size, pos = _varint(buf, pos, end)
            header_value, pos = _bytes(buf, pos, size, end)
            headers.append((header_key, header_value))
    except (_Underflow, _IllegalVarint):
        raise WholeRecordError(_STRUCTURE) from None
    if pos - start != length:
        raise WholeRecordError(f"Invalid record size: expected to read {length} bytes in record payload, but instead read "
                               f"{pos - start}")
    return WholeRecord(attributes, timestamp_delta, offset_delta, key, value, tuple(headers)), pos


def read_uncompressed(buf: bytes, count: int) -> list[WholeRecord]:
    """``count`` records from an uncompressed batch's records (the bytes after its header)."""
    records: list[WholeRecord] = []
    pos, end = 0, len(buf)
    for _ in range(count):
        try:
            length, pos = _varint(buf, pos, end)
        except _Underflow:
            raise WholeRecordError(_PREMATURE_EOF) from None
        except _IllegalVarint:
            raise IllegalLength from None
        record, pos = _body(buf, pos, length, end)
        records.append(record)
    if count > 0 and pos != end:
        raise WholeRecordError(_REMAINING)
    return records


def _stream_length(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """ByteUtils.readVarint(InputStream): a byte past the end reads as -1, a continuation byte."""
    result = 0
    for shift in (0, 7, 14, 21, 28):
        b = buf[pos] if pos < end else 0xFF
        pos += 1
        if b < 0x80:
            raw = (result | (b << shift)) & 0xFFFFFFFF
            return (raw >> 1) ^ -(raw & 1), min(pos, end)
        if shift == 28:
            raise WholeRecordError(_PREMATURE_EOF)
        result |= (b & 0x7F) << shift
    raise AssertionError("unreachable")


def read_stream(buf: bytes, count: int) -> list[WholeRecord]:
    """``count`` records from a compressed batch's decompressed records."""
    records: list[WholeRecord] = []
    pos, end = 0, len(buf)
    for _ in range(count):
        length, pos = _stream_length(buf, pos, end)
        if length < 0:  # ByteBuffer.allocate(negative)
            raise WholeRecordError(_PREMATURE_EOF)
        if end - pos < length:
            raise WholeRecordError(f"Invalid record size: expected {length} bytes in record payload, but the record "
                                   "payload reached EOF.")
        record, _ = _body(buf[pos:pos + length], 0, length, length)
        records.append(record)
        pos += length
    if count > 0 and pos != end:
        raise WholeRecordError(_REMAINING)
    return records
