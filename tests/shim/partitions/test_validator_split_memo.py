"""The validator remembers how it split recent records (a Produce request's records are split four times per
partition): what it answers must still follow the bytes it is given, whatever it remembers."""

from __future__ import annotations

import time

from kafka_shim.protocol.records import build_batch, encode_batch
from kafka_shim.shim.partitions import validator


def _batch(count: int) -> bytes:
    now = int(time.time() * 1000)
    return encode_batch(build_batch([(None, b"v" * 10, [], now) for _ in range(count)]))


def test_a_changed_bytearray_is_split_again() -> None:
    data = bytearray(_batch(3))
    assert len(validator.shallow_batches(data)) == 1
    data += _batch(2)  # a second batch appended in place: the same object, new contents
    assert len(validator.shallow_batches(data)) == 2


def test_many_distinct_records_each_get_their_own_batches() -> None:
    records = [_batch(n) for n in range(1, 80)]  # more than the memo keeps
    for _ in range(2):
        for count, data in enumerate(records, start=1):
            (batch,) = validator.shallow_batches(data)
            assert batch.header[12] == count  # the record count field of that very batch

