"""The log chores run at their Kafka intervals and survive a failed pass."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kafka_shim.protocol.records import encode_batch
from kafka_shim.shim.cluster.state import ClusterState
from kafka_shim.shim.log.log_manager import LogManager
from kafka_shim.shim.log.partition_log import decoded_batches
from kafka_shim.shim.partitions.chores import CHORES, initial_delay_ms, interval_ms, run_chores
from kafka_shim.shim.partitions.log_cleaner import LogCleaner
from kafka_shim.shim.partitions.manager import Partitions
from tests.support.log_batches import batch_bytes


def test_intervals_come_from_kafka_keys_with_kafka_defaults() -> None:
    retention = next(c for c in CHORES if c.name == "retention")
    assert interval_ms(retention, {}) == 300_000
    assert interval_ms(retention, {"log.retention.check.interval.ms": "50"}) == 50
    assert interval_ms(retention, {"log.retention.check.interval.ms": "soon"}) == 300_000
    assert initial_delay_ms({}) == 30_000  # LogManager's first run waits log.initial.task.delay.ms
    assert initial_delay_ms({"log.initial.task.delay.ms": "0"}) == 0
    flush = next(c for c in CHORES if c.name == "flush")
    assert interval_ms(flush, {"log.flush.scheduler.interval.ms": "-5"}) == 2**63 - 1


async def test_retention_runs_on_its_interval_and_keeps_going_after_a_failure() -> None:
    partitions = Partitions(ClusterState("c", 1), LogManager(), {"log.retention.check.interval.ms": "20",
                                                                 "log.initial.task.delay.ms": "0"})
    # segment.bytes that holds one batch, so every append rolls a segment; retention.ms=1 makes rolled segments deletable.
    partitions.create_topic("old", 1, {"segment.bytes": "100", "retention.ms": "1"})
    partition = partitions.get("old", 0)
    for i in range(3):
        partition.log.append(batch_bytes([b"v%d" % i]))
    failures = 0
    real = partitions.logs.apply_retention

    def flaky() -> int:
        nonlocal failures
        if failures == 0:
            failures += 1
            raise OSError("disk went away")
        return real()

    partitions.logs.apply_retention = flaky
    task = asyncio.create_task(run_chores(partitions))
    try:
        async with asyncio.timeout(30):
            while partition.log.log_start_offset == 0:
                await asyncio.sleep(0.01)
    finally:
        task.cancel()
    assert failures == 1 and partition.log.log_start_offset > 0


def _rolled_topics(properties: dict[str, str]) -> Partitions:
    """Two topics whose every batch rolls a segment, old at once (retention.ms=1): one compact,delete, one delete."""
    partitions = Partitions(ClusterState("c", 1), LogManager(), properties)
    for name, policy in (("windowed", "compact,delete"), ("plain", "delete")):
        partitions.create_topic(name, 1, {"segment.bytes": "100", "retention.ms": "1", "cleanup.policy": policy})
        for i in range(3):
            partitions.get(name, 0).log.append(batch_bytes([b"v%d" % i]))
    return partitions


async def _run_chores_until(partitions: Partitions, done: Callable[[], bool]) -> None:
    """Run the chores until ``done`` holds (checked every 10 ms, for at most 30 s)."""
    task = asyncio.create_task(run_chores(partitions))
    try:
        async with asyncio.timeout(30):
            while not done():
                await asyncio.sleep(0.01)
    finally:
        task.cancel()


async def test_compacted_logs_lose_old_segments_on_the_cleaners_backoff_not_the_retention_check() -> None:
    """Kafka's LogManager leaves compacted logs to the log cleaner, which deletes their old segments every
    log.cleaner.backoff.ms when it has nothing to compact (Streams' windowed changelogs are compact,delete)."""
    partitions = _rolled_topics({"log.cleaner.backoff.ms": "20", "log.retention.check.interval.ms": "20",
                                 "log.initial.task.delay.ms": "3600000"})
    windowed, plain = partitions.get("windowed", 0).log, partitions.get("plain", 0).log
    await _run_chores_until(partitions, lambda: windowed.log_start_offset > 0)
    assert plain.log_start_offset == 0  # LogManager's first pass is an hour away


def test_the_retention_pass_and_the_cleaners_pass_split_the_logs_by_compaction() -> None:
    partitions = _rolled_topics({})
    windowed, plain = partitions.get("windowed", 0).log, partitions.get("plain", 0).log
    assert partitions.logs.apply_retention() > 0 and (windowed.log_start_offset, plain.log_start_offset > 0) == (0, True)
    assert partitions.logs.apply_retention(compacted=True) > 0 and windowed.log_start_offset > 0


async def test_no_cleaner_means_compacted_logs_keep_their_segments() -> None:
    partitions = _rolled_topics({"log.cleaner.enable": "false", "log.cleaner.backoff.ms": "1",
                                 "log.retention.check.interval.ms": "1", "log.initial.task.delay.ms": "0"})
    windowed = partitions.get("windowed", 0).log
    passes = _counted_retention_passes(partitions)
    await _run_chores_until(partitions, lambda: len(passes) >= 20)
    assert set(passes) == {False} and windowed.log_start_offset == 0  # only LogManager's passes, none the cleaner's


def _counted_retention_passes(partitions: Partitions) -> list[bool]:
    """Each retention pass from now on, as whether it was the cleaner's (compacted logs) or LogManager's."""
    passes: list[bool] = []
    real = partitions.logs.apply_retention

    def counted(compacted: bool = False) -> int:
        passes.append(compacted)
        return real(compacted)

    partitions.logs.apply_retention = counted
    return passes


def _dirty_compacted(properties: dict[str, str]) -> Partitions:
    """A compacted topic whose every batch rolls a segment: ten writes of one key, nine of them superseded."""
    partitions = Partitions(ClusterState("c", 1), LogManager(), properties)
    partitions.create_topic("state", 1, {"segment.bytes": "100", "cleanup.policy": "compact",
                                         "min.cleanable.dirty.ratio": "0.01"})
    for i in range(10):
        partitions.get("state", 0).log.append(batch_bytes([b"v%d" % i]))
    return partitions


def _records(partitions: Partitions) -> int:
    return sum(len(batch.records) for batch in decoded_batches(partitions.get("state", 0).log))


async def test_the_cleaner_compacts_and_keeps_going_after_a_failed_pass(monkeypatch) -> None:
    partitions = _dirty_compacted({"log.cleaner.backoff.ms": "10"})
    failures = []
    real = LogCleaner.filthiest

    def flaky(self, now_ms):
        if not failures:
            failures.append(now_ms)
            raise OSError("a segment vanished")
        return real(self, now_ms)

    monkeypatch.setattr(LogCleaner, "filthiest", flaky)
    await _run_chores_until(partitions, lambda: _records(partitions) < 10)
    assert failures and _records(partitions) == 2  # the last record below the active segment, and the active one


async def test_a_dynamic_cleaner_key_wakes_a_resting_cleaner(monkeypatch) -> None:
    partitions = Partitions(ClusterState("c", 1), LogManager(), {"log.cleaner.backoff.ms": "3600000"})
    looked: list[int] = []
    real = LogCleaner.filthiest
    monkeypatch.setattr(LogCleaner, "filthiest", lambda self, now_ms: looked.append(now_ms) or real(self, now_ms))
    task = asyncio.create_task(run_chores(partitions))
    try:
        async with asyncio.timeout(30):
            while not looked:  # the cleaner's first pass finds nothing: it rests for an hour
                await asyncio.sleep(0.01)
        dirty = _dirty_compacted({})
        partitions.create_topic("state", 1, {"segment.bytes": "100", "cleanup.policy": "compact",
                                             "min.cleanable.dirty.ratio": "0.01"})
        for batch in decoded_batches(dirty.get("state", 0).log):
            partitions.get("state", 0).log.append(encode_batch(batch))
        partitions.set_broker_properties({"log.cleaner.backoff.ms": "3600001"})  # as IncrementalAlterConfigs does
        async with asyncio.timeout(30):
            while _records(partitions) == 10:
                await asyncio.sleep(0.01)
    finally:
        task.cancel()
    assert _records(partitions) == 2


async def test_no_cleaner_means_no_compaction() -> None:
    partitions = _dirty_compacted({"log.cleaner.enable": "false", "log.retention.check.interval.ms": "1",
                                   "log.initial.task.delay.ms": "0"})
    passes = _counted_retention_passes(partitions)
    await _run_chores_until(partitions, lambda: len(passes) >= 20)
    assert _records(partitions) == 10
