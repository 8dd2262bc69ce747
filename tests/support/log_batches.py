"""Record batches and logs for the partition-log tests (tests/shim/log, tests/differential/test_log_layout.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kafka_shim.protocol.records import Compression, RecordBatch, build_batch, decode_batches, encode_batch
from kafka_shim.shim.log.storage import FileStorage, MemoryStorage, Storage


def batch_bytes(
    values: list[bytes], *, timestamp: int = 1_700_000_000_000, key: bytes | None = b"k",
    compression: Compression = Compression.NONE, timestamps: list[int] | None = None,
) -> bytes:
    """One batch as a producer sends it (base offset 0), a record per value."""
    stamps = timestamps or [timestamp + index for index in range(len(values))]
    records = [(key, value, [], stamp) for value, stamp in zip(values, stamps, strict=True)]
    return encode_batch(build_batch(records, compression=compression))


def visible(records: bytes) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every record in whole batches of a read (a cut tail is dropped, as clients do)."""
    return [(batch.base_offset + record.offset_delta, record.value) for batch in batches_of(records) for record in batch.records]


def batches_of(records: bytes) -> list[RecordBatch]:
    return decode_batches(records, allow_partial_tail=True)


class FakeClock:
    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


StorageFactory = Callable[[Path, FakeClock], Storage]

STORAGES: dict[str, StorageFactory] = {
    "memory": lambda _path, clock: MemoryStorage(clock),
    "files": lambda path, _clock: FileStorage(path / "data"),
}
