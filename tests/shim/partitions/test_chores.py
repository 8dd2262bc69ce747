"""The log chores run at their Kafka intervals and survive a failed pass."""

from __future__ import annotations

import asyncio

from kafka_shim.shim.cluster.state import ClusterState
from kafka_shim.shim.log.log_manager import LogManager
from kafka_shim.shim.partitions.chores import CHORES, interval_ms, run_chores
from kafka_shim.shim.partitions.manager import Partitions
from tests.support.log_batches import batch_bytes


def test_intervals_come_from_kafka_keys_with_kafka_defaults() -> None:
    retention = next(c for c in CHORES if c.name == "retention")
    assert interval_ms(retention, {}) == 300_000
    assert interval_ms(retention, {"log.retention.check.interval.ms": "50"}) == 50
    assert interval_ms(retention, {"log.retention.check.interval.ms": "soon"}) == 300_000


async def test_retention_runs_on_its_interval_and_keeps_going_after_a_failure() -> None:
    partitions = Partitions(ClusterState("c", 1), LogManager(), {"log.retention.check.interval.ms": "20"})
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
