"""AppendWaiters: a waiting fetch wakes on an append to one of its partitions, or at its time limit; no socket."""

from __future__ import annotations

import asyncio

from kafka_shim.shim.partitions.waiting import AppendWaiters


def test_an_append_wakes_the_fetch_waiting_on_that_partition() -> None:
    async def scenario() -> None:
        waiters = AppendWaiters()
        waiting = asyncio.ensure_future(waiters.wait([("t", 0), ("t", 1)], 60))
        await asyncio.sleep(0)
        assert len(waiters) == 2 and not waiting.done()
        waiters.appended("t", 2)  # another partition: nothing happens
        waiters.appended("other", 0)
        await asyncio.sleep(0)
        assert not waiting.done()
        waiters.appended("t", 1)
        assert await asyncio.wait_for(waiting, 30) == ("t", 1)
        assert len(waiters) == 0  # nothing left registered

    asyncio.run(scenario())


def test_every_fetch_on_a_partition_wakes() -> None:
    async def scenario() -> None:
        waiters = AppendWaiters()
        fetches = [asyncio.ensure_future(waiters.wait([("t", 0)], 60)) for _ in range(3)]
        await asyncio.sleep(0)
        waiters.appended("t", 0)
        assert await asyncio.wait_for(asyncio.gather(*fetches), 30) == [("t", 0)] * 3

    asyncio.run(scenario())


def test_the_time_limit_ends_the_wait_and_forgets_it() -> None:
    async def scenario() -> None:
        waiters = AppendWaiters()
        assert await waiters.wait([("t", 0)], 0.01) is None
        assert len(waiters) == 0
        assert await waiters.wait([("t", 0)], 0) is None
        assert await waiters.wait([], 5) is None

    asyncio.run(scenario())


def test_a_cancelled_fetch_is_forgotten() -> None:
    async def scenario() -> None:
        waiters = AppendWaiters()
        waiting = asyncio.ensure_future(waiters.wait([("t", 0)], 60))
        await asyncio.sleep(0)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        assert len(waiters) == 0
        waiters.appended("t", 0)  # nothing to wake, no error

    asyncio.run(scenario())
