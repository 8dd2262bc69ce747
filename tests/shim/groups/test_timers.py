"""The group coordinator's timers on the broker's loop."""

from __future__ import annotations

import asyncio

import structlog.testing

from kafka_shim.shim.groups.timers import LoopScheduler


async def test_a_failing_deadline_is_logged_and_the_loop_goes_on() -> None:
    """A deadline whose work raises (Kafka's delayed join fails the same way on a member listing a protocol twice)
    is logged as the broker's error, and later deadlines still fire."""
    fired = asyncio.Event()

    def broken() -> None:
        raise StopIteration

    with structlog.testing.capture_logs() as logs:
        scheduler = LoopScheduler()
        scheduler.call_later(0, broken)
        scheduler.call_later(1, fired.set)
        await asyncio.wait_for(fired.wait(), 30)
    failed = [e for e in logs if e["event"] == "group_timer_failed"]
    assert [(e["log_level"], e["callback"]) for e in failed] == [
        ("error", "test_a_failing_deadline_is_logged_and_the_loop_goes_on.<locals>.broken")]
