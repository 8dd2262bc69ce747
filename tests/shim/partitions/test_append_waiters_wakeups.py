"""Waiting fetches wake when their partition goes away or its log start moves, not only on appends; no socket."""

from __future__ import annotations

import asyncio

from kafka_shim.shim.cluster.state import ClusterState
from kafka_shim.shim.log.log_manager import LogManager
from kafka_shim.shim.partitions.manager import Partitions
from kafka_shim.shim.partitions.waiting import AppendWaiters


def _setup() -> tuple[Partitions, AppendWaiters]:
    partitions = Partitions(ClusterState(cluster_id="c", node_id=1), LogManager(), {})
    waiters = AppendWaiters()
    partitions.add_append_listener(waiters.appended)
    partitions.create_topic("gone", 2)
    partitions.create_topic("kept", 1)
    return partitions, waiters


def test_deleting_a_topic_wakes_the_fetches_waiting_on_it_and_only_them() -> None:
    async def scenario() -> None:
        partitions, waiters = _setup()
        on_gone = asyncio.ensure_future(waiters.wait([("gone", 1)], 600))
        on_kept = asyncio.ensure_future(waiters.wait([("kept", 0)], 600))
        await asyncio.sleep(0)
        partitions.delete_topic("gone")
        assert await asyncio.wait_for(on_gone, 60) == ("gone", 1)
        await asyncio.sleep(0)
        assert not on_kept.done()
        on_kept.cancel()
        await asyncio.gather(on_kept, return_exceptions=True)
        assert len(waiters) == 0

    asyncio.run(scenario())
