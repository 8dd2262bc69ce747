"""Request-sized work that must not hold the event loop: one handler body, run inline or in slices.

A handler that loops over a request-sized collection (Metadata's topics: up to 419,410 names in a 4 MiB request)
writes its answer once, as a generator that yields its costly steps instead of running them:

    names = yield Pure(scala_set, requested_names, java_string_hash)   # a pure function of the request
    entries = yield Each(_missing, absent)                           # [_missing(n) for n in absent]

``run_inline(steps)`` runs every step on the spot (small requests: no overhead worth the name);
``await run_sliced(steps)`` runs ``Pure`` steps in the worker thread and ``Each`` steps on the loop, giving the loop
back every ``SLICE`` items, so other clients are served meanwhile. Either way the answer is the same. Only pure
work may be a ``Pure`` step: it runs beside the event loop, so it must not read broker state that requests change.

An awaiting handler whose answer is large (a Fetch carrying megabytes of records) returns ``EncodeOffLoop(body)``:
dispatch then encodes it in the worker thread rather than on the loop.

The worker is one thread for the process, started on first use: request-sized work is rare, one at a time
bounds the memory it takes, and the GIL would not run two such steps in parallel anyway.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from kafka_shim.shim.os_threads import name_os_thread

T = TypeVar("T")

# How many items an ``Each`` step works through before it lets the event loop serve other clients.
SLICE = 2000

_worker: ThreadPoolExecutor | None = None


@dataclass(frozen=True, slots=True)
class Pure:
    """``fn(*args)``, a pure function of the request."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        object.__setattr__(self, "fn", fn)
        object.__setattr__(self, "args", args)


@dataclass(frozen=True, slots=True)
class Each:
    """``[fn(item) for item in items]``; ``fn`` may read broker state (it runs on the loop)."""

    fn: Callable[[Any], Any]
    items: Iterable[Any]


Steps = Generator[Pure | Each, Any, T]


@dataclass(frozen=True, slots=True)
class EncodeOffLoop:
    """A response body an awaiting handler returns when it is large (a Fetch answer carrying megabytes of records):
    dispatch encodes it in the worker thread, so copying it into a frame does not hold the other clients."""

    body: Any


def off_loop(fn: Callable[..., T], *args: Any) -> Awaitable[T]:
    """Run ``fn(*args)`` in the worker thread."""
    global _worker
    if _worker is None:
        _worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kafka-shim-work", initializer=name_os_thread)
    return asyncio.get_running_loop().run_in_executor(_worker, fn, *args)


def run_inline(steps: Steps[T]) -> T:
    """The answer, every step run on the spot."""
    try:
        step = next(steps)
        while True:
            if type(step) is Pure:
                step = steps.send(step.fn(*step.args))
            else:
                step = steps.send([step.fn(item) for item in step.items])
    except StopIteration as done:
        return done.value


async def run_sliced(steps: Steps[T]) -> T:
    """The same answer, with pure steps in the worker thread and the rest in slices of ``SLICE`` items."""
    try:
        step = next(steps)
        while True:
            if type(step) is Pure:
                result = await off_loop(step.fn, *step.args)
            else:
                result = await sliced(step.items, step.fn)
            step = steps.send(result)
    except StopIteration as done:
        return done.value


async def sliced(items: Iterable[T], work: Callable[[T], Any], size: int = SLICE) -> list[Any]:
    """``[work(item) for item in items]``, giving the event loop back after every ``size`` items."""
    out: list[Any] = []
    for i, item in enumerate(items, 1):
        out.append(work(item))
        if i % size == 0:
            await asyncio.sleep(0)
    return out
