"""Compressed records read as Kafka reads a batch it keeps in place (DefaultRecord.readPartiallyFrom): the texts of
its exceptions for the broker's log, and what it lets through (tests/differential/test_malformed_batches.py compares
the answers with Kafka 3.9)."""

from __future__ import annotations

import pytest

from kafka_shim.shim.partitions.partial_records import PartialRecord, PartialRecordError, read_partially


def _varint(value: int) -> bytes:
    zigzag, out = (value << 1) ^ (value >> 63), bytearray()
    while True:
        byte, zigzag = zigzag & 0x7F, zigzag >> 7
        if not zigzag:
            return bytes(out + bytes([byte]))
        out.append(byte | 0x80)


def _record(offset: int, key_size: int = 1, *, length: int | None = None, tail: bytes = _varint(0)) -> bytes:
    key = b"k" * max(key_size, 0)
    body = b"\0" + _varint(7) + _varint(offset) + _varint(key_size) + key + _varint(1) + b"v" + tail
    return _varint(len(body) if length is None else length) + body


def test_declared_lengths_are_not_checked_and_negative_sizes_skip_nothing() -> None:
    data = _record(0, length=200) + _record(1, key_size=-7) + _record(2, length=1)
    assert read_partially(data, 3) == [PartialRecord(0, 7, 1, 1), PartialRecord(1, 7, -7, 1), PartialRecord(2, 7, 1, 1)]


@pytest.mark.parametrize(("data", "count", "message"), [
    (_record(0)[:-2], 1, "Reached end of input stream before skipping all bytes. Remaining bytes:1"),
    (_record(0), 2, "Incorrect declared batch size, premature EOF reached"),
    (_record(0) + b"\x00", 1, "Incorrect declared batch size, records still remaining in file"),
    (_record(0, tail=_varint(-1)), 1, "Found invalid number of record headers -1"),
    (_record(0, tail=_varint(1) + _varint(-2)), 1, "Invalid negative header key size -2"),
    (_varint(5) + b"\x00" + b"\xff" * 10, 1, "Found invalid record structure"),  # an over-long timestamp varint
])
def test_what_kafka_refuses(data: bytes, count: int, message: str) -> None:
    with pytest.raises(PartialRecordError) as refused:
        read_partially(data, count)
    assert str(refused.value) == message
