"""Timers for the group coordinator: Kafka's delayed-operation purgatories reduced to "call this in N ms".

Kafka's GroupCoordinator keeps its session, join and sync deadlines in DelayedOperationPurgatory (DelayedHeartbeat,
DelayedJoin, InitialDelayedJoin, DelayedSync). Here each deadline is one timer that the coordinator cancels or
replaces; what a timer does when it fires is decided by the coordinator at that moment, as Kafka's onExpiration does.

``LoopScheduler`` uses the running asyncio loop (handlers run in it); ``ManualScheduler`` is driven by a test's fake
clock, so the state table is tested without sockets or sleeps.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from typing import Protocol

from kafka_shim.shim.config.logging import get_logger

log = get_logger(__name__)


class Timer(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Timer: ...

    def now_ms(self) -> int: ...


class LoopScheduler:
    """Timers on the running asyncio loop (the broker's); ``call_later`` must be called from inside that loop."""

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(max(delay_ms, 0) / 1000.0, _logged, callback)

    def now_ms(self) -> int:
        return int(asyncio.get_running_loop().time() * 1000)


def _logged(callback: Callable[[], None]) -> None:
    """A deadline's work; should it raise (as Kafka's delayed join does on a member that lists a protocol twice, whose
    vote then finds no candidate: the join is never answered there either), the error goes to the broker's log
    rather than to the event loop's bare exception handler."""
    try:
        callback()
    except Exception:
        log.exception("group_timer_failed", callback=getattr(callback, "__qualname__", repr(callback)))


class _ManualTimer:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualScheduler:
    """A fake clock for unit tests: ``advance(ms)`` fires every timer due by then, earliest first."""

    def __init__(self) -> None:
        self._now = 0
        self._seq = itertools.count()
        self._heap: list[tuple[int, int, _ManualTimer, Callable[[], None]]] = []

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Timer:
        timer = _ManualTimer()
        heapq.heappush(self._heap, (self._now + max(delay_ms, 0), next(self._seq), timer, callback))
        return timer

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> None:
        end = self._now + ms
        while self._heap and self._heap[0][0] <= end:
            due, _, timer, callback = heapq.heappop(self._heap)
            self._now = max(self._now, due)
            if not timer.cancelled:
                callback()
        self._now = end

    def pending(self) -> int:
        return sum(1 for _, _, t, _ in self._heap if not t.cancelled)
