"""Producer-state snapshots: Kafka 3.9's file format, atomic files, and a restart that keeps retries recognised."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest

from kafka_shim.shim.producers.snapshot import (
    CorruptSnapshotError,
    decode_snapshot,
    delete_snapshots,
    encode_snapshot,
    latest_snapshot,
    snapshot_offsets,
    snapshot_path,
    write_snapshot,
)
from kafka_shim.shim.producers.state import LoggedBatch, Outcome, PartitionProducers, ProducerEntry, rebuild


def _live() -> tuple[PartitionProducers, list[LoggedBatch]]:
    batches = [
        LoggedBatch(7, 0, 0, 2, 0, 2, 100),
        LoggedBatch(9, 2, 0, 0, 3, 3, 150),
        LoggedBatch(7, 0, 3, 4, 4, 5, 200),
    ]
    return rebuild(batches, partition="orders-0"), batches


def test_the_file_is_kafkas_version_1_layout() -> None:
    entry = ProducerEntry(7, coordinator_epoch=-1)
    entry.add_batch(3, 41, 1_000, 1, 123_456)
    data = encode_snapshot([entry])
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count) == (1, 1)
    assert crc == crc32c.crc32c(data[6:])
    assert struct.unpack_from(">qhiqiqiq", data, 10) == (7, 3, 41, 1_000, 1, 123_456, -1, -1)
    assert len(data) == 10 + 46


def test_snapshot_names_follow_kafka(tmp_path: Path) -> None:
    assert snapshot_path(tmp_path, 42).name == "00000000000000000042.snapshot"


def test_round_trip_keeps_each_producers_epoch_and_last_batch(tmp_path: Path) -> None:
    live, _ = _live()
    write_snapshot(tmp_path, 6, live.entries())
    snapshot = latest_snapshot(tmp_path)
    assert snapshot is not None and snapshot.offset == 6
    restored = PartitionProducers("orders-0")
    restored.load(snapshot.entries)
    for entry in live.entries():
        back = restored.entry(entry.producer_id)
        assert (back.epoch, back.last_timestamp, list(back.batches)) == (entry.epoch, entry.last_timestamp, [entry.batches[-1]])
    # The last batch of each producer is still recognised as a duplicate, with its original offsets.
    check = restored.check_append(7, 0, 3, 4)
    assert check.outcome is Outcome.DUPLICATE and check.duplicate.first_offset == 4
    assert restored.check_append(7, 0, 5, 5).outcome is Outcome.ACCEPT
    assert [f.name for f in tmp_path.iterdir()] == ["00000000000000000006.snapshot"]


def test_an_entry_without_a_batch_and_an_open_transaction_round_trip() -> None:
    entry = ProducerEntry(11, epoch=4, last_timestamp=77, coordinator_epoch=2, current_txn_first_offset=30)
    (back,) = decode_snapshot(encode_snapshot([entry]))
    assert (back.producer_id, back.epoch, back.last_timestamp, back.coordinator_epoch, back.current_txn_first_offset) == (
        11,
        4,
        77,
        2,
        30,
    )
    assert not back.batches and back.last_seq == -1


def test_snapshot_then_later_batches_rebuild_the_live_state(tmp_path: Path) -> None:
    live, written = _live()
    write_snapshot(tmp_path, 6, live.entries())
    later = [LoggedBatch(7, 0, 5, 5, 6, 6, 300), LoggedBatch(12, 0, 0, 1, 7, 8, 310)]
    for batch in later:
        live.record_append(
            batch.producer_id,
            batch.epoch,
            batch.first_seq,
            batch.last_seq,
            batch.base_offset,
            batch.last_offset,
            batch.max_timestamp,
        )
    snapshot = latest_snapshot(tmp_path, at_most=9)
    restored = rebuild(later, start=snapshot.entries)
    # What the snapshot keeps plus the replayed batches: every producer's epoch and latest batches agree.
    for entry in live.entries():
        back = restored.entry(entry.producer_id)
        assert back.epoch == entry.epoch and back.last_timestamp == entry.last_timestamp
        assert list(back.batches) == list(entry.batches)[-len(back.batches) :]
    # Without any snapshot, the whole log gives exactly the live state.
    full = rebuild([*written, *later])
    assert {e.producer_id: list(e.batches) for e in full.entries()} == {e.producer_id: list(e.batches) for e in live.entries()}


def test_expired_producers_are_not_loaded() -> None:
    live, _ = _live()
    restored = PartitionProducers(expiration_ms=1_000)
    restored.load(decode_snapshot(encode_snapshot(live.entries())), now_ms=1_120)
    assert sorted(e.producer_id for e in restored.entries()) == [7, 9]
    restored.load(decode_snapshot(encode_snapshot(live.entries())), now_ms=1_160)
    assert sorted(e.producer_id for e in restored.entries()) == [7]


def test_a_corrupt_snapshot_is_deleted_and_the_previous_one_used(tmp_path: Path) -> None:
    live, _ = _live()
    write_snapshot(tmp_path, 3, live.entries())
    newest = write_snapshot(tmp_path, 6, live.entries())
    data = bytearray(newest.read_bytes())
    data[-1] ^= 0xFF
    newest.write_bytes(bytes(data))
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(bytes(data))
    snapshot = latest_snapshot(tmp_path)
    assert snapshot is not None and snapshot.offset == 3
    assert snapshot_offsets(tmp_path) == [3]


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00\x02" + bytes(8), encode_snapshot([])[:-1], encode_snapshot([ProducerEntry(1, 0)]) + b"\x00"],
    ids=["empty", "version-2", "short", "trailing"],
)
def test_unreadable_snapshots_are_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(data)


def test_snapshots_beyond_the_log_or_before_its_start_are_deleted(tmp_path: Path) -> None:
    for offset in (0, 5, 10, 15):
        write_snapshot(tmp_path, offset, [])
    (tmp_path / "00000000000000000003.log").write_bytes(b"")
    assert delete_snapshots(tmp_path, below=5, above=10) == [0, 15]
    assert snapshot_offsets(tmp_path) == [5, 10]
    assert latest_snapshot(tmp_path, at_most=9).offset == 5
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())
