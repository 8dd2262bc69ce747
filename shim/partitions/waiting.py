"""Fetches waiting for records: woken by the append that brings them, by the deletion of their topic, or by their
time limit; never by polling (a DeleteRecords that moves the log start past them does not wake them, as in Kafka).

Kafka's counterpart: the delayed-fetch purgatory (``DelayedFetch`` watched under ``TopicPartitionOperationKey``s,
``checkAndComplete`` after each append). Here a waiting fetch registers one future under each partition it reads;
``appended(topic, partition)`` (an append listener of :class:`~.manager.Partitions`) resolves the futures of that
partition and forgets them. The fetch then reads again and decides whether it has enough (``min_bytes``), has an
error to answer (its topic deleted: 3; its offset now below the log start: 1), or waits for the rest of its time.
A fetch whose client went away is cancelled: ``wait`` forgets its future all the same, so nothing is left behind. Nothing wakes up unless a partition it watches grew, and no timer runs per partition.
Knows no wire types: keys are (topic, partition) pairs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

Key = tuple[str, int]


class AppendWaiters:
    """Futures of waiting fetches, per partition. Used on the event loop only."""

    def __init__(self) -> None:
        self._waiting: dict[Key, set[asyncio.Future[Key]]] = {}

    def __len__(self) -> int:
        """How many partitions have a fetch waiting on them."""
        return len(self._waiting)

    def appended(self, topic: str, partition: int) -> None:
        """The partition's log grew: wake every fetch waiting on it (an append listener)."""
        futures = self._waiting.pop((topic, partition), None)
        for future in futures or ():
            if not future.done():
                future.set_result((topic, partition))

    async def wait(self, keys: Iterable[Key], timeout_s: float) -> Key | None:
        """Wait until one of ``keys`` gets an append (returned) or ``timeout_s`` passes (None)."""
        keys = list(dict.fromkeys(keys))
        if not keys or timeout_s <= 0:
            return None
        future: asyncio.Future[Key] = asyncio.get_running_loop().create_future()
        for key in keys:
            self._waiting.setdefault(key, set()).add(future)
        try:
            return await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            return None
        finally:
            self._forget(future, keys)

    def _forget(self, future: asyncio.Future[Key], keys: list[Key]) -> None:
        for key in keys:
            waiting = self._waiting.get(key)
            if waiting is not None:
                waiting.discard(future)
                if not waiting:
                    del self._waiting[key]
