"""The iteration order of Kafka's ``TimelineHashMap`` (server-common's ``BaseHashTable``), which the new group
coordinator keeps a consumer group's members in: ConsumerGroupDescribe lists them in this order.

Unlike ``java.util.HashMap`` the slot is chosen by Fibonacci hashing: the hash code times -7046029254386353131 (a
64-bit product), of which the top ``log2(capacity)`` bits. Colliding entries share a slot as an array, appended in
insertion order (a replaced key keeps its place, a removed one closes the gap). The table starts at two slots
(``expectedSize`` 0), doubles before a put that would pass three quarters of it (a put of a key already present
counts too) and never shrinks; a rehash walks the old slots in order. Iteration walks the slots in order and each
slot's array from its last entry to its first.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)

_MULTIPLIER = -7046029254386353131
_MASK64 = (1 << 64) - 1
_MIN_CAPACITY = 2
_MAX_CAPACITY = 1 << 30
_MAX_LOAD_FACTOR = 0.75


def _signed32(h: int) -> int:
    h &= 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def find_slot(hash_code: int, capacity: int) -> int:
    """BaseHashTable.findSlot for an object whose hashCode() is ``hash_code`` (signed or unsigned 32-bit)."""
    log2size = capacity.bit_length()  # 32 - numberOfLeadingZeros(capacity)
    return ((_signed32(hash_code) * _MULTIPLIER) & _MASK64) >> (65 - log2size)


class TimelineTableOrder(Generic[T]):
    """The keys of one ``TimelineHashMap`` as its table holds them, kept in step by ``put`` and ``remove``."""

    def __init__(self, hash_code: Callable[[T], int]) -> None:
        self._hash_code = hash_code
        self._slots: list[list[T]] = [[] for _ in range(_MIN_CAPACITY)]
        self._size = 0

    def put(self, key: T) -> None:
        """``baseAddOrReplace``: the table may grow even when ``key`` is already in it."""
        if (self._size + 1) * _MAX_LOAD_FACTOR > len(self._slots) and len(self._slots) < _MAX_CAPACITY:
            self._rehash(len(self._slots) * 2)
        slot = self._slots[find_slot(self._hash_code(key), len(self._slots))]
        if key not in slot:
            slot.append(key)
            self._size += 1

    def remove(self, key: T) -> None:
        slot = self._slots[find_slot(self._hash_code(key), len(self._slots))]
        if key in slot:
            slot.remove(key)
            self._size -= 1

    def __len__(self) -> int:
        return self._size

    def order(self) -> list[T]:
        return [key for slot in self._slots for key in reversed(slot)]

    def _rehash(self, capacity: int) -> None:
        old, self._slots = self._slots, [[] for _ in range(capacity)]
        for slot in old:
            for key in slot:
                self._slots[find_slot(self._hash_code(key), capacity)].append(key)
