"""Which server assignor a KIP-848 consumer group uses, as Kafka 3.9's ``ConsumerGroup`` decides it.

The group counts its members' ``ServerAssignor`` choices in ``serverAssignors``, a ``TimelineHashMap<String,
Integer>`` updated on every member update or removal its records replay (``maybeUpdateServerAssignors``: the old
member's name ``compute``d down with ``Utils::decValue``, a count of 1 removing the key, then the new member's
name up with ``incValue``; ``Map.compute`` on a TimelineHashMap is a ``remove`` or a ``put``). The most chosen
name wins, a tie going to the first the map iterates (``Stream.max`` keeps the first of equals). Two orders apply:

- ``preferredServerAssignor`` (ConsumerGroupDescribe's ``AssignorName``) streams the TimelineHashMap itself
  (:mod:`..javacompat.timeline_table`);
- ``computePreferredServerAssignor(member, updatedMember)`` (the assignor a heartbeat runs for the new target
  assignment, before its own records are replayed) copies the map into a ``new HashMap<>(serverAssignors)``
  (pre-sized, filled by ``putVal`` in the TimelineHashMap's order), applies the member's change with
  ``HashMap.compute``, which links a new key at the *head* of its bin, and streams that copy.

So a member whose own choice counts 1 wins a tie at its heartbeat (its name is removed and linked back first in
its bin), while ConsumerGroupDescribe may name the other.
"""

from __future__ import annotations

from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.javacompat.timeline_table import TimelineTableOrder

_DEFAULT_CAPACITY = 16
_LOAD_FACTOR = 0.75


def _table_size_for(capacity: int) -> int:
    """HashMap.tableSizeFor."""
    return 1 if capacity <= 1 else 1 << (capacity - 1).bit_length()


def _first_max(entries: list[tuple[str, int]]) -> str | None:
    """``entrySet().stream().max(comparingByValue())``: the first of the greatest counts."""
    best: tuple[str, int] | None = None
    for name, count in entries:
        if best is None or count > best[1]:
            best = (name, count)
    return None if best is None else best[0]


class _CopiedHashMap:
    """A ``java.util.HashMap<String, Integer>`` as ``new HashMap<>(map)`` builds it and ``compute`` changes it (Java
    17): bins by ``(h ^ h >>> 16) & (n - 1)``, ``putVal`` appending to a bin and resizing after an insertion that
    passes the threshold, ``compute`` resizing first when the size is already past it and linking a new key at the
    bin's head. Resizes keep each bin's order (the lo/hi split)."""

    def __init__(self, entries: list[tuple[str, int]]) -> None:
        self._bins: list[list[list]] | None = None  # each bin a list of [key, value]
        self._threshold = 0
        self._size = 0
        if entries:  # putMapEntries: pre-size for the whole map, then putVal each entry in its iteration order
            wanted = int(len(entries) / _LOAD_FACTOR + 1.0)
            if wanted > self._threshold:
                self._threshold = _table_size_for(wanted)
            for key, value in entries:
                self._put_val(key, value)

    @staticmethod
    def _index(key: str, length: int) -> int:
        h = java_string_hash(key)
        return (h ^ (h >> 16)) & (length - 1)

    def _resize(self) -> None:
        old = self._bins
        old_capacity = len(old) if old is not None else 0
        if old_capacity > 0:
            capacity = old_capacity * 2
            threshold = self._threshold * 2 if old_capacity >= _DEFAULT_CAPACITY else int(capacity * _LOAD_FACTOR)
        elif self._threshold > 0:
            capacity = self._threshold
            threshold = int(capacity * _LOAD_FACTOR)
        else:
            capacity, threshold = _DEFAULT_CAPACITY, int(_DEFAULT_CAPACITY * _LOAD_FACTOR)
        bins: list[list[list]] = [[] for _ in range(capacity)]
        for bucket in old or []:
            for node in bucket:
                bins[self._index(node[0], capacity)].append(node)
        self._bins, self._threshold = bins, threshold

    def _find(self, key: str) -> tuple[list[list], list | None]:
        assert self._bins is not None
        bucket = self._bins[self._index(key, len(self._bins))]
        return bucket, next((node for node in bucket if node[0] == key), None)

    def _put_val(self, key: str, value: int) -> None:
        if self._bins is None:
            self._resize()
        bucket, node = self._find(key)
        if node is not None:
            node[1] = value
            return
        bucket.append([key, value])
        self._size += 1
        if self._size > self._threshold:
            self._resize()

    def compute(self, key: str, dec: bool) -> None:
        """``compute(key, Utils::decValue)`` or ``compute(key, Utils::incValue)``."""
        if self._bins is None or self._size > self._threshold:
            self._resize()
        bucket, node = self._find(key)
        old = node[1] if node is not None else None
        value = (None if old is None or old == 1 else old - 1) if dec else (1 if old is None else old + 1)
        if node is not None:
            if value is None:
                bucket.remove(node)
                self._size -= 1
            else:
                node[1] = value
        elif value is not None:
            bucket.insert(0, [key, value])
            self._size += 1

    def entries(self) -> list[tuple[str, int]]:
        return [(key, value) for bucket in self._bins or [] for key, value in bucket]


class ServerAssignorCounts:
    """ConsumerGroup.serverAssignors: how many members chose each server assignor, in the TimelineHashMap's order."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self._table: TimelineTableOrder[str] = TimelineTableOrder(java_string_hash)

    def update(self, old: str | None, new: str | None) -> None:
        """maybeUpdateServerAssignors(oldMember, newMember) on the group's map: the old member's choice, then the new
        member's (either None: no member, or no choice)."""
        if old is not None and old in self.counts:
            if self.counts[old] == 1:
                del self.counts[old]
                self._table.remove(old)
            else:
                self.counts[old] -= 1
                self._table.put(old)
        if new is not None:
            self.counts[new] = self.counts.get(new, 0) + 1
            self._table.put(new)

    def entries(self) -> list[tuple[str, int]]:
        return [(name, self.counts[name]) for name in self._table.order()]

    def preferred(self) -> str | None:
        """preferredServerAssignor: ConsumerGroupDescribe's assignor name (None: no member chose one)."""
        return _first_max(self.entries())

    def preferred_with(self, old: str | None, new: str | None) -> str | None:
        """computePreferredServerAssignor(member, updatedMember): the map copied, the member's change applied to the
        copy by ``HashMap.compute``."""
        copied = _CopiedHashMap(self.entries())
        if old is not None:
            copied.compute(old, dec=True)
        if new is not None:
            copied.compute(new, dec=False)
        return _first_max(copied.entries())
