"""A partition log as a producer and a consumer see it: offsets, reads, rolls, retention, timestamps."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.protocol.records import Compression, TimestampType, decode_batch
from kafka_shim.shim.log.errors import BatchTooLarge, CorruptBatch, OffsetOutOfRange
from kafka_shim.shim.log.log_config import LogConfig
from kafka_shim.shim.log.partition_log import PartitionLog
from kafka_shim.shim.log.storage import MemoryStorage, Storage
from tests.support.log_batches import FakeClock, batch_bytes, batches_of, visible

T0 = 1_700_000_000_000


def open_log(storage: Storage, clock: FakeClock, **config: object) -> PartitionLog:
    return PartitionLog.open(storage.open("topic-0"), LogConfig(**config), clock=clock)  # type: ignore[arg-type]


def test_offsets_are_assigned_across_batches_and_the_bytes_are_stored_as_sent(storage: Storage, clock: FakeClock) -> None:
    log = open_log(storage, clock)
    sent = [batch_bytes([b"a", b"b", b"c"]), batch_bytes([b"d"]), batch_bytes([b"e", b"f"])]
    infos = [log.append(data, leader_epoch=3) for data in sent]

    assert [(i.base_offset, i.last_offset) for i in infos] == [(0, 2), (3, 3), (4, 5)]
    assert all(i.log_append_time == -1 and i.log_start_offset == 0 for i in infos)
    assert (log.log_end_offset, log.high_watermark) == (6, 6)
    stored = log.read(0, 1 << 20).records
    assert visible(stored) == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d"), (4, b"e"), (5, b"f")]
    # Only the base offset (8 bytes) and the leader epoch (4 bytes, before the CRC) differ from what was sent.
    position = 0
    for data, info in zip(sent, infos, strict=True):
        kept = stored[position : position + len(data)]
        assert kept[:8] == info.base_offset.to_bytes(8, "big")
        assert kept[12:16] == (3).to_bytes(4, "big")
        assert kept[8:12] == data[8:12] and kept[16:] == data[16:]
        position += len(data)
    assert all(batch.partition_leader_epoch == 3 for batch in batches_of(stored))


def test_log_append_time_rewrites_the_max_timestamp_and_keeps_the_crc_valid(storage: Storage, clock: FakeClock) -> None:
    log = open_log(storage, clock, message_timestamp_type=TimestampType.LOG_APPEND_TIME)
    clock.now = T0 + 5_000
    info = log.append(batch_bytes([b"a", b"b"], timestamp=T0, compression=Compression.GZIP))

    assert info.log_append_time == T0 + 5_000
    batch = decode_batch(log.read(0, 1 << 20).records)  # raises on a bad CRC
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == T0 + 5_000
    assert [r.value for r in batch.records] == [b"a", b"b"]


def test_the_first_batch_is_whole_even_when_larger_than_max_bytes(storage: Storage, clock: FakeClock) -> None:
    log = open_log(storage, clock)
    big = batch_bytes([b"x" * 500])
    log.append(big)
    log.append(batch_bytes([b"small"]))

    assert log.read(0, 10).records == log.read(0, len(big)).records
    assert len(log.read(0, 10).records) == len(big)
    assert visible(log.read(0, 10).records) == [(0, b"x" * 500)]
    # With room for more, the rest is cut at max_bytes, as Kafka cuts it: a partial tail clients drop.
    cut = log.read(0, len(big) + 20).records
    assert len(cut) == len(big) + 20 and visible(cut) == [(0, b"x" * 500)]
    assert visible(log.read(0, 1 << 20).records) == [(0, b"x" * 500), (1, b"small")]
    assert log.read(0, 0, min_one_batch=False).records == b""


def test_a_read_from_the_middle_of_a_batch_returns_the_batch_holding_the_offset(storage: Storage, clock: FakeClock) -> None:
    log = open_log(storage, clock)
    log.append(batch_bytes([b"a", b"b", b"c"]))
    log.append(batch_bytes([b"d", b"e"]))

    assert [b.base_offset for b in batches_of(log.read(1, 1).records)] == [0]
    assert [b.base_offset for b in batches_of(log.read(4, 1).records)] == [3]
    assert visible(log.read(2, 1 << 20).records)[0] == (0, b"a")


def test_reads_at_and_outside_the_log(storage: Storage, clock: FakeClock) -> None:
    log = open_log(storage, clock)
    log.append(batch_bytes([b"a", b"b"]))

    assert log.read(2, 1000).records == b""
    with pytest.raises(OffsetOutOfRange) as raised:
        log.read(3, 1000)
    assert raised.value.error_code is ErrorCode.OFFSET_OUT_OF_RANGE
    log.delete_records(1)
    with pytest.raises(OffsetOutOfRange):
        log.read(0, 1000)
    assert visible(log.read(1, 1000).records) == [(0, b"a"), (1, b"b")]  # the batch holding offset 1, whole
    # A bound below the log end (a later high watermark or last stable offset) hides the batches at and past it.
    log.append(batch_bytes([b"c"]))
    assert visible(log.read(1, 1000, upper_bound=2).records) == [(0, b"a"), (1, b"b")]
    assert log.read(2, 1000, upper_bound=2).records == b""


def test_segments_roll_by_size_and_reads_continue_across_them(storage: Storage, clock: FakeClock) -> None:
    one = len(batch_bytes([b"v" * 50]))
    log = open_log(storage, clock, segment_bytes=3 * one)
    for _ in range(10):
        log.append(batch_bytes([b"v" * 50]))

    assert [s.base_offset for s in log.segments] == [0, 3, 6, 9]
    assert storage.open("topic-0").list()[:3] == [
        "00000000000000000000.index", "00000000000000000000.log", "00000000000000000000.timeindex"]
    # A read never crosses into the next segment.
    assert [offset for offset, _ in visible(log.read(1, 1 << 20).records)] == [1, 2]
    offset, seen = 0, []
    while offset < log.log_end_offset:
        got = visible(log.read(offset, 1 << 20).records)
        seen += got
        offset = got[-1][0] + 1
    assert [o for o, _ in seen] == list(range(10))
    with pytest.raises(BatchTooLarge) as raised:
        log.append(batch_bytes([b"v" * (3 * one)]))
    assert raised.value.error_code is ErrorCode.MESSAGE_TOO_LARGE


def test_segments_roll_by_segment_ms_measured_on_record_timestamps(storage: Storage, clock: FakeClock) -> None:
    log = open_log(storage, clock, segment_ms=1000)
    log.append(batch_bytes([b"a"], timestamp=T0))
    log.append(batch_bytes([b"b"], timestamp=T0 + 1000))
    log.append(batch_bytes([b"c"], timestamp=T0 + 1001))
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_index_entries_every_index_interval_bytes(storage: Storage, clock: FakeClock) -> None:
    one = len(batch_bytes([b"v" * 100]))
    log = open_log(storage, clock, index_interval_bytes=2 * one)
    for _ in range(10):
        log.append(batch_bytes([b"v" * 100]))
    index = log.active.offset_index
    # An entry before the batch that follows more than index.interval.bytes: after 3 batches, then every 3.
    assert list(zip(index.offsets, index.positions, strict=True)) == [(3, 3 * one), (6, 6 * one), (9, 9 * one)]
    for offset in range(10):
        assert visible(log.read(offset, 1).records) == [(offset, b"v" * 100)]


def test_retention_bytes_deletes_whole_old_segments(storage: Storage, clock: FakeClock) -> None:
    one = len(batch_bytes([b"v" * 50]))
    log = open_log(storage, clock, segment_bytes=2 * one, retention_bytes=3 * one)
    for _ in range(7):
        log.append(batch_bytes([b"v" * 50]))
    assert [s.base_offset for s in log.segments] == [0, 2, 4, 6]

    assert log.apply_retention() == 2
    assert [s.base_offset for s in log.segments] == [4, 6]
    assert log.log_start_offset == 4
    assert not storage.open("topic-0").exists("00000000000000000000.log")
    with pytest.raises(OffsetOutOfRange):
        log.read(3, 100)


def test_retention_ms_deletes_expired_segments_and_rolls_when_all_expired(storage: Storage, clock: FakeClock) -> None:
    log = open_log(storage, clock, segment_ms=10, retention_ms=60_000)
    log.append(batch_bytes([b"old"], timestamp=T0))
    log.append(batch_bytes([b"new"], timestamp=T0 + 50_000))
    assert [s.base_offset for s in log.segments] == [0, 1]

    clock.now = T0 + 60_001
    assert log.apply_retention() == 1
    assert (log.log_start_offset, [s.base_offset for s in log.segments]) == (1, [1])
    clock.now = T0 + 200_000
    assert log.apply_retention() == 1
    # Everything expired: the log rolled first, so an empty active segment remains at the log end offset.
    assert [s.base_offset for s in log.segments] == [2]
    assert (log.log_start_offset, log.log_end_offset) == (2, 2)
    assert log.append(batch_bytes([b"next"], timestamp=clock.now)).base_offset == 2
    assert log.apply_retention() == 0  # an empty active segment never goes, and a fresh one is not expired


def test_delete_records_moves_the_log_start_offset(storage: Storage, clock: FakeClock) -> None:
    one = len(batch_bytes([b"v"]))
    log = open_log(storage, clock, segment_bytes=2 * one)
    for _ in range(5):
        log.append(batch_bytes([b"v"]))

    assert log.delete_records(3) == 3
    assert log.delete_records(1) == 3  # never backwards
    assert log.append(batch_bytes([b"w"])).log_start_offset == 3
    with pytest.raises(OffsetOutOfRange):
        log.delete_records(log.high_watermark + 1)
    assert log.apply_retention() == 1  # the segment [0, 2) is wholly below; [2, 4) holds offset 3
    assert [s.base_offset for s in log.segments] == [2, 4]
    assert log.delete_records(-1) == log.high_watermark == 6


def test_offset_for_timestamp_and_max_timestamp(storage: Storage, clock: FakeClock) -> None:
    one = len(batch_bytes([b"v", b"v"]))
    log = open_log(storage, clock, segment_bytes=2 * one, index_interval_bytes=1)
    log.append(batch_bytes([b"v", b"v"], timestamps=[T0 + 10, T0 + 30]))  # 0, 1
    log.append(batch_bytes([b"v", b"v"], timestamps=[T0 + 20, T0 + 40]))  # 2, 3
    log.append(batch_bytes([b"v", b"v"], timestamps=[T0 + 90, T0 + 50]))  # 4, 5  (a new segment)
    log.append(batch_bytes([b"v", b"v"], timestamps=[T0 + 60, T0 + 90]))  # 6, 7

    # Kafka answers the first record in offset order whose timestamp is >= t, not the nearest timestamp.
    found = {t: log.offset_for_timestamp(T0 + t) for t in (0, 10, 11, 25, 31, 41, 85, 91)}
    assert {t: (f.offset, f.timestamp - T0) if f else None for t, f in found.items()} == {
        0: (0, 10), 10: (0, 10), 11: (1, 30), 25: (1, 30), 31: (3, 40), 41: (4, 90), 85: (4, 90), 91: None,
    }
    assert found[0] is not None and found[0].leader_epoch == 0
    top = log.max_timestamp()
    assert top is not None and (top.offset, top.timestamp) == (4, T0 + 90)  # the first record holding it
    log.delete_records(5)
    found_after = log.offset_for_timestamp(T0 + 41)
    assert found_after is not None and found_after.offset == 5


def test_an_empty_log_has_no_timestamps(storage: Storage, clock: FakeClock) -> None:
    log = open_log(storage, clock)
    assert log.offset_for_timestamp(0) is None
    assert log.max_timestamp() is None
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 0, 0)


def test_a_corrupt_batch_is_refused_and_nothing_is_stored(storage: Storage, clock: FakeClock) -> None:
    log = open_log(storage, clock)
    data = bytearray(batch_bytes([b"a"]))
    data[-1] ^= 0xFF
    with pytest.raises(CorruptBatch) as raised:
        log.append(bytes(data))
    assert raised.value.error_code is ErrorCode.CORRUPT_MESSAGE
    assert log.log_end_offset == 0 and log.read(0, 100).records == b""


# ---------------------------------------------------------------------------------------------------------------------
# Any sequence of appends, reads, rolls and record deletions shows what a plain list of records shows.

_operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(st.binary(max_size=40), min_size=1, max_size=4)),
        st.tuples(st.just("read"), st.integers(0, 60), st.integers(0, 400)),
        st.tuples(st.just("roll")),
        st.tuples(st.just("delete"), st.integers(0, 60)),
        st.tuples(st.just("retention")),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=_operations, segment_bytes=st.integers(120, 600), interval=st.integers(0, 300))
def test_the_log_shows_what_a_list_model_shows(operations: list[tuple], segment_bytes: int, interval: int) -> None:
    clock = FakeClock()
    log = PartitionLog.open(
        MemoryStorage(clock).open("t-0"),
        LogConfig(segment_bytes=segment_bytes, index_interval_bytes=interval, retention_ms=-1),
        clock=clock,
    )
    model: list[bytes] = []
    start = 0
    for operation in operations:
        match operation:
            case ("append", values):
                data = batch_bytes(values)
                if len(data) > segment_bytes:
                    with pytest.raises(BatchTooLarge):
                        log.append(data)
                    continue
                info = log.append(data)
                assert info.base_offset == len(model)
                model += values
            case ("read", offset, max_bytes):
                if offset < start or offset > len(model):
                    with pytest.raises(OffsetOutOfRange):
                        log.read(offset, max_bytes)
                    continue
                got = visible(log.read(offset, max_bytes).records)
                if offset == len(model):
                    assert got == []
                    continue
                # The first batch is whole and holds the offset; what follows is consecutive and matches the model.
                assert got and got[0][0] <= offset <= got[-1][0]
                assert got == [(o, model[o]) for o in range(got[0][0], got[-1][0] + 1)]
            case ("roll",):
                log.roll()
            case ("delete", offset):
                if offset <= len(model):
                    start = max(start, offset)
                    assert log.delete_records(offset) == start
            case ("retention",):
                log.apply_retention()
                assert log.segments[0].base_offset <= start
        assert (log.log_start_offset, log.log_end_offset) == (start, len(model))
    # Read it all back from the log start, batch after batch.
    offset, seen = start, []
    while offset < len(model):
        got = [(o, v) for o, v in visible(log.read(offset, 1).records) if o >= offset]
        seen += got
        offset = got[-1][0] + 1
    assert seen == [(o, model[o]) for o in range(start, len(model))]
