"""Compressed records read as Kafka reads a batch it keeps in place (DefaultRecord.readPartiallyFrom): the texts of
its exceptions for the broker's log, and what it lets through (tests/differential/test_malformed_batches.py compares
the answers with Kafka 3.9)."""

from __future__ import annotations

import pytest

from kafka_shim.shim.partitions.partial_records import PartialRecord, PartialRecordError, read_partially
from tests.support.malformed import raw_record, varint


def test_declared_lengths_are_not_checked_and_negative_sizes_skip_nothing() -> None:
    data = raw_record(0, length=200) + raw_record(1, key=None, key_size=-7) + raw_record(2, length=1)
    assert read_partially(data, 3) == [PartialRecord(0, 0, 1, 1), PartialRecord(1, 0, -7, 1), PartialRecord(2, 0, 1, 1)]


@pytest.mark.parametrize(("data", "count", "message"), [
    (raw_record(0)[:-2], 1, "Reached end of input stream before skipping all bytes. Remaining bytes:1"),
    (raw_record(0), 2, "Incorrect declared batch size, premature EOF reached"),
    (raw_record(0) + b"\x00", 1, "Incorrect declared batch size, records still remaining in file"),
    (raw_record(0, headers=varint(-1)), 1, "Found invalid number of record headers -1"),
    (raw_record(0, headers=varint(1) + varint(-2)), 1, "Invalid negative header key size -2"),
    (varint(5) + b"\x00" + b"\xff" * 10, 1, "Found invalid record structure"),  # an over-long timestamp varint
])
def test_what_kafka_refuses(data: bytes, count: int, message: str) -> None:
    with pytest.raises(PartialRecordError) as refused:
        read_partially(data, count)
    assert str(refused.value) == message
