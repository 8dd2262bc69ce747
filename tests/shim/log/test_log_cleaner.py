"""Log compaction as Kafka 3.9's cleaner does it: what a consumer reads from the start of a compacted partition
after a cleaning, where the dirty section ends, tombstones and their delete horizon, transactions, active producers,
and a crash between the cleaned copy and the swap."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_shim.protocol.records import (
    Compression,
    RecordBatch,
    TimestampType,
    build_batch,
    decode_batches,
    encode_batch,
)
from kafka_shim.shim.cluster.state import ClusterState
from kafka_shim.shim.log.cleaner import CleanerSettings, Cleaning, LogToClean, cleanable_offsets
from kafka_shim.shim.log.log_manager import LogManager
from kafka_shim.shim.log.partition_log import CLEANED_SUFFIX, SWAP_SUFFIX, PartitionLog, decoded_batches
from kafka_shim.shim.log.storage import FileStorage
from kafka_shim.shim.partitions.log_cleaner import CLEANER_CHECKPOINT, LogCleaner
from kafka_shim.shim.partitions.manager import Partitions, PartitionState
from kafka_shim.shim.partitions.transactions import write_marker
from tests.support.log_batches import STORAGES, FakeClock
from tests.support.malformed import raw_record, varint, whole_read_batch

T0 = 1_700_000_000_000
COMPACT = {"cleanup.policy": "compact", "segment.bytes": "300", "min.cleanable.dirty.ratio": "0.01"}


def keyed(*pairs: tuple[bytes | None, bytes | None], timestamp: int = T0, compression: Compression = Compression.NONE,
          producer: tuple[int, int, int] | None = None, transactional: bool = False,
          timestamp_type: TimestampType = TimestampType.CREATE_TIME) -> bytes:
    pid, epoch, seq = producer or (-1, -1, -1)
    return encode_batch(build_batch([(k, v, [], timestamp + i) for i, (k, v) in enumerate(pairs)], compression=compression,
                                    producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=transactional,
                                    timestamp_type=timestamp_type))


def broker(storage: str = "memory", tmp_path: Path | None = None, clock: FakeClock | None = None,
           configs: dict[str, str] | None = None) -> tuple[Partitions, PartitionState]:
    clock = clock or FakeClock(T0 + 10_000)
    logs = LogManager(STORAGES[storage](tmp_path or Path("/nonexistent"), clock), clock=clock)
    partitions = Partitions(ClusterState("c", 1), logs, {})
    partitions.create_topic("t", 1, configs or COMPACT)
    return partitions, partitions.get("t", 0)


def everything(partition_log: PartitionLog) -> list[RecordBatch]:
    return list(decoded_batches(partition_log))


def records(partition_log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(b.base_offset + r.offset_delta, r.key, r.value) for b in everything(partition_log) for r in b.records]


def clean_once(partitions: Partitions) -> bool:
    cleaner = LogCleaner(partitions)
    chosen = cleaner.filthiest(partitions.logs.clock())
    if chosen is None:
        return False
    for _ in cleaner.clean_steps(*chosen):
        pass
    return True


def test_a_cleaning_keeps_each_keys_last_record_below_the_active_segment() -> None:
    partitions, partition = broker()
    for round_ in range(4):
        for key in (b"a", b"b", b"c"):
            partition.log.append(keyed((key, b"%s%d" % (key, round_))))
    active_base = partition.log.active.base_offset
    before = records(partition.log)
    assert clean_once(partitions)
    after = records(partition.log)
    below = [r for r in before if r[0] < active_base]
    last_of = {key: max(o for o, k, _ in below if k == key) for key in {k for _, k, _ in below}}
    assert [r for r in after if r[0] < active_base] == [r for r in below if r[0] == last_of[r[1]]]
    assert [r for r in after if r[0] >= active_base] == [r for r in before if r[0] >= active_base]
    assert partition.log.log_end_offset == 12 and partition.log.log_start_offset == 0
    # The next pass finds nothing dirty: the checkpoint is at the end of what was cleaned.
    assert LogCleaner(partitions).checkpoints == {("t", 0): active_base} and not clean_once(partitions)


def test_batches_keep_their_offsets_and_last_offset_delta_and_are_copied_whole_when_untouched() -> None:
    partitions, partition = broker()
    first = keyed((b"a", b"1"), (b"b", b"1"), (b"a", b"2"), producer=(7, 0, 0))
    partition.log.append(first)
    partition.log.append(keyed((b"c", b"1")))
    partition.log.roll()
    partition.log.append(keyed((b"d", b"1")))
    assert clean_once(partitions)
    rebuilt, untouched = everything(partition.log)[:2]
    assert (rebuilt.base_offset, rebuilt.last_offset_delta, rebuilt.base_sequence, rebuilt.producer_id) == (0, 2, 0, 7)
    assert [(r.offset_delta, r.key) for r in rebuilt.records] == [(1, b"b"), (2, b"a")]
    assert rebuilt.base_timestamp == T0 + 1 and [r.timestamp_delta for r in rebuilt.records] == [0, 1]
    assert encode_batch(untouched)[16:] == keyed((b"c", b"1"))[16:]  # as produced, but for the stamped offset and epoch


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP])
def test_tombstones_get_a_delete_horizon_then_go_once_it_passed(compression: Compression) -> None:
    clock = FakeClock(T0 + 10_000)
    partitions, partition = broker(clock=clock, configs={**COMPACT, "delete.retention.ms": "1000"})
    partition.log.append(keyed((b"a", b"1"), (b"b", b"1"), compression=compression))
    partition.log.append(keyed((b"a", None), compression=compression))
    partition.log.roll()
    partition.log.append(keyed((b"z", b"1")))
    assert clean_once(partitions)
    batches = everything(partition.log)
    tombstone_batch = batches[1]
    assert tombstone_batch.has_delete_horizon and tombstone_batch.base_timestamp == clock.now + 1000
    assert tombstone_batch.compression is compression
    assert [(r.key, r.value) for r in tombstone_batch.records] == [(b"a", None)]
    assert [(r.key, r.value) for r in batches[0].records] == [(b"b", b"1")] and not batches[0].has_delete_horizon
    # Within the horizon a later cleaning keeps the tombstone; after it, the tombstone goes.
    partition.log.append(keyed((b"y", b"1")))
    partition.log.roll()
    partition.log.append(keyed((b"x", b"1")))
    clock.now += 500
    assert clean_once(partitions)
    assert (2, b"a", None) in records(partition.log)
    partition.log.append(keyed((b"w", b"1")))
    partition.log.roll()
    partition.log.append(keyed((b"v", b"1")))
    clock.now += 600
    assert clean_once(partitions)
    assert all(key != b"a" for _, key, _ in records(partition.log))


def test_keyless_records_go_and_log_append_time_batches_keep_their_time() -> None:
    partitions, partition = broker(configs={**COMPACT, "message.timestamp.type": "LogAppendTime"})
    partition.log.append(keyed((b"a", b"1"), (None, b"x"), (b"a", b"2")))
    partition.log.roll()
    partition.log.append(keyed((b"b", b"1")))
    stamped = everything(partition.log)[0].max_timestamp
    assert clean_once(partitions)
    batch = everything(partition.log)[0]
    assert [r.key for r in batch.records] == [b"a"] and batch.max_timestamp == stamped
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME and batch.base_timestamp == stamped


def test_the_last_batch_of_an_active_producer_stays_as_an_empty_header() -> None:
    partitions, partition = broker()
    _append_producer_batch(partition, keyed((b"a", b"0"), producer=(5, 3, 0)))
    _append_producer_batch(partition, keyed((b"a", b"1"), producer=(5, 3, 1)))
    partition.log.append(keyed((b"a", b"2")))
    partition.log.roll()
    partition.log.append(keyed((b"b", b"1")))
    assert clean_once(partitions)
    batches = everything(partition.log)
    kept = [b for b in batches if b.producer_id == 5]
    assert len(kept) == 1 and kept[0].records == [] and (kept[0].base_sequence, kept[0].producer_epoch) == (1, 3)
    assert kept[0].base_timestamp == -1 and len(encode_batch(kept[0])) == 61


def _append_producer_batch(partition: PartitionState, data: bytes) -> None:
    """An idempotent or transactional producer's batch, appended and remembered as the produce path does."""
    batch = decode_batches(data)[0]
    info = partition.log.append(data)
    partition.producers.record_append(batch.producer_id, batch.producer_epoch, batch.base_sequence,
                                      batch.base_sequence + batch.last_offset_delta, info.base_offset, info.last_offset,
                                      batch.max_timestamp, transactional=batch.is_transactional)


def test_aborted_transactions_go_and_their_marker_follows_after_its_horizon() -> None:
    clock = FakeClock(T0 + 10_000)
    partitions, partition = broker(clock=clock, configs={**COMPACT, "delete.retention.ms": "0"})
    _append_producer_batch(partition, keyed((b"t", b"aborted"), producer=(9, 0, 0), transactional=True))
    assert write_marker(partitions, "t", 0, 9, 0, 0, committed=False, now_ms=clock.now) == 0
    _append_producer_batch(partition, keyed((b"c", b"committed"), producer=(8, 0, 0), transactional=True))
    assert write_marker(partitions, "t", 0, 8, 0, 0, committed=True, now_ms=clock.now) == 0
    partition.log.append(keyed((b"k", b"1")))
    partition.log.roll()
    partition.log.append(keyed((b"z", b"1")))
    partition.producers.clear()  # both producers expired: nothing of theirs needs to stay
    assert partition.log.collect_aborted_transactions(0, 5)
    assert clean_once(partitions)
    kinds = [(b.base_offset, b.is_control, [r.key for r in b.records]) for b in everything(partition.log)]
    # The aborted batch goes; its marker stays (no data of it was seen this pass: it may go, after a horizon).
    assert [k for k in kinds if not k[1]][:2] == [(2, False, [b"c"]), (4, False, [b"k"])]
    def markers() -> list[tuple[int, bool]]:
        return [(b.base_offset, b.has_delete_horizon) for b in everything(partition.log) if b.is_control]

    def dirty_again() -> None:
        partition.log.append(keyed((b"y", b"1")))
        partition.log.roll()
        partition.log.append(keyed((b"x", b"1")))
        clock.now += 1

    # This pass saw the aborted batch, so its marker stays as it was, and so does its .txnindex entry.
    assert markers() == [(1, False), (3, False)] and partition.log.collect_aborted_transactions(0, 5)
    dirty_again()
    assert clean_once(partitions)  # no data of the aborted transaction is seen: its marker gets a horizon
    assert markers() == [(1, True), (3, False)] and partition.log.collect_aborted_transactions(0, 5) == []
    dirty_again()
    assert clean_once(partitions)  # past the horizon (delete.retention.ms=0): the marker goes
    assert markers() == [(3, False)]  # the commit marker stays while its transaction's record does


def test_the_dirty_section_stops_at_the_last_stable_offset_and_the_compaction_lag() -> None:
    clock = FakeClock(T0 + 10_000)
    _, partition = broker(clock=clock, configs={**COMPACT, "min.compaction.lag.ms": "5000"})
    partition.log.append(keyed((b"a", b"1"), timestamp=T0))
    partition.log.roll()
    partition.log.append(keyed((b"a", b"2"), timestamp=clock.now - 1000))  # within the lag
    partition.log.roll()
    partition.log.append(keyed((b"a", b"3")))
    offsets = cleanable_offsets(partition.log, None, clock.now, partition.last_stable_offset)
    assert (offsets.first_dirty, offsets.first_uncleanable) == (0, 1)
    offsets = cleanable_offsets(partition.log, None, clock.now, 0)  # an open transaction at offset 0
    assert offsets.first_uncleanable == 0
    to_clean = LogToClean.of(partition.log, cleanable_offsets(partition.log, 5, clock.now, 3), clock.now)
    assert to_clean.first_dirty == 0  # a checkpoint past the log end starts over at the log start


def test_a_full_offset_map_cleans_up_to_the_last_offset_it_holds() -> None:
    _, partition = broker(configs={**COMPACT, "segment.bytes": "100000"})
    keys = [b"k%d" % (i % 6) for i in range(24)] + [b"k%d" % i for i in range(6, 22)]  # 6 keys repeated, 16 new
    for offset, key in enumerate(keys):
        partition.log.append(keyed((key, b"v%d" % offset)))
    partition.log.roll()
    partition.log.append(keyed((b"z", b"1")))
    to_clean = LogToClean.of(partition.log, cleanable_offsets(partition.log, None, T0, 41), T0)
    settings = CleanerSettings(dedupe_buffer_size=24 * 12, io_buffer_load_factor=1.0)  # room for 12 keys
    cleaning = Cleaning(partition.log, to_clean, settings, now_ms=T0, active_producers=dict)
    for _ in cleaning.run():
        pass
    # The 13th key (k12, offset 30) does not fit: the cleaning covers offsets 0-29 and keeps 30 on as they are.
    assert cleaning.end_offset == 30
    assert [offset for offset, _, _ in records(partition.log)] == list(range(18, 41))


@pytest.mark.parametrize("left", [CLEANED_SUFFIX, SWAP_SUFFIX])
def test_a_crash_during_the_swap_leaves_the_old_segments_or_the_cleaned_one(tmp_path: Path, left: str) -> None:
    partitions, partition = broker("files", tmp_path)
    for round_ in range(3):
        for key in (b"a", b"b"):
            partition.log.append(keyed((key, b"%s%d" % (key, round_))))
    expected_before = records(partition.log)
    directory = partition.log.directory
    assert clean_once(partitions)
    expected_after = records(partition.log)
    partitions.logs.close()
    # Put the directory back as a crash would leave it: the old segments beside the cleaned copy.
    data = tmp_path / "data" / "t-0"
    cleaned_log = data / "00000000000000000000.log"
    (data / ("00000000000000000000.log" + left)).write_bytes(cleaned_log.read_bytes())
    assert directory.name == "t-0"
    reopened = PartitionLog.open(FileStorage(tmp_path / "data").open("t-0"))
    got = records(reopened)
    assert got == expected_after and got != expected_before
    assert not any(name.endswith((CLEANED_SUFFIX, SWAP_SUFFIX)) for name in (p.name for p in data.iterdir()))
    assert (tmp_path / "data" / CLEANER_CHECKPOINT).read_text().splitlines()[2] == "t 0 4"


def test_records_a_strict_decoder_refuses_are_cleaned_as_kafka_reads_them() -> None:
    # Stored as produced (a compacted topic keeps an uncompressed batch as sent): a header key that is not UTF-8, a
    # header value size of -3, an offset delta in five bytes with bits above 32. Kafka's cleaner reads them as its
    # validator did and writes the kept records again: the header key with its invalid bytes replaced.
    odd_body = (b"\0" + varint(0) + b"\x84\x80\x80\x80\x70" + varint(1) + b"c" + varint(1) + b"v" + varint(1) + varint(1)
                + b"h" + varint(-3))
    records_ = (raw_record(0, key=b"a") + raw_record(1, key=b"b", headers=varint(1) + varint(3) + b"\xff\xfeh" + varint(1) + b"v")
                + varint(len(odd_body)) + odd_body)
    partitions, partition = broker()
    partition.log.append(whole_read_batch(records_, gzipped=False))
    partition.log.append(keyed((b"a", b"2")))
    partition.log.roll()
    partition.log.append(keyed((b"z", b"1")))
    assert clean_once(partitions)
    rebuilt = everything(partition.log)[0]
    assert [(r.offset_delta, r.key, [(h.key, h.value) for h in r.headers]) for r in rebuilt.records] == [
        (1, b"b", [("\ufffd\ufffdh", b"v")]), (2, b"c", [("h", None)])]
    assert [(o, k) for o, k, _ in records(partition.log)] == [(1, b"b"), (2, b"c"), (3, b"a"), (4, b"z")]
