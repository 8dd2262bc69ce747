"""The iteration order of Scala 2.13's immutable Set, which decides the order of topics in Kafka's Metadata answers.

KafkaApis turns the requested topic names into a Scala Set and answers in that Set's order. Up to four distinct
elements (Set1..Set4) keep their insertion order; from five on the Set is a CHAMP HashSet, iterated by the bits
of each element's improved hash: at each trie level the elements alone in their 5-bit slot come first (by slot),
then the sub-tries (by slot), depth first. A subset taken from a HashSet (partition, diff, filter) is a HashSet
again, even when small, and its order is its own trie's: an element that shared a slot in the whole set may be
alone in the subset's, and move ahead. Subsets of a small Set keep insertion order.

Elements are hashed by the ``hash_code`` given: java_hash.java_string_hash for topic names, kafka_uuid_hash
(below) for topic ids.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)
_MASK = 0xFFFFFFFF
_SMALL = 4  # Set1..Set4
_BITS = 5
_HASH_LENGTH = 32


def kafka_uuid_hash(value: uuid.UUID) -> int:
    """org.apache.kafka.common.Uuid.hashCode: the xor of the four 32-bit words, unsigned."""
    bits = value.int
    h = (bits >> 64) ^ (bits & 0xFFFFFFFFFFFFFFFF)
    return ((h >> 32) ^ h) & _MASK


def _improve(h: int) -> int:
    """scala.collection.Hashing.improve, on unsigned 32-bit values."""
    h = (h + (~(h << 9) & _MASK)) & _MASK
    h ^= h >> 14
    h = (h + (h << 4)) & _MASK
    return h ^ (h >> 10)


def _champ(entries: list[tuple[T, int]], shift: int) -> list[T]:
    if shift >= _HASH_LENGTH:
        return [item for item, _ in entries]  # equal hashes: a collision node keeps insertion order
    slots: dict[int, list[tuple[T, int]]] = {}
    for entry in entries:
        slots.setdefault((entry[1] >> shift) & 0x1F, []).append(entry)
    ordered = sorted(slots.items())
    out = [group[0][0] for _, group in ordered if len(group) == 1]
    for _, group in ordered:
        if len(group) > 1:
            out += _champ(group, shift + _BITS)
    return out


def scala_set_order(items: Iterable[T], hash_code: Callable[[T], int]) -> list[T]:
    """The distinct items in the order a Scala immutable Set built from them (in this order) iterates."""
    return list(scala_set(items, hash_code).items)


@dataclass(frozen=True, slots=True)
class ScalaSet(Generic[T]):
    """A Scala immutable Set as Kafka builds it: its items in iteration order, and whether it is a HashSet."""

    items: tuple[T, ...]
    hash_code: Callable[[T], int]
    hashed: bool

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, item: object) -> bool:
        return item in self.items

    def where(self, keep: Callable[[T], bool]) -> ScalaSet[T]:
        """The subset partition/filter/diff would build, in its own iteration order."""
        kept = [item for item in self.items if keep(item)]
        if self.hashed:
            kept = _champ([(item, _improve(self.hash_code(item) & _MASK)) for item in kept], 0)
        return ScalaSet(tuple(kept), self.hash_code, self.hashed)


def scala_set(items: Iterable[T], hash_code: Callable[[T], int], hashed: bool = False) -> ScalaSet[T]:
    """The Set ``items.toSet`` builds (``hashed``: built by a HashSet's own builder, e.g. its flatMap)."""
    distinct = list(dict.fromkeys(items))
    hashed = hashed or len(distinct) > _SMALL
    order = _champ([(item, _improve(hash_code(item) & _MASK)) for item in distinct], 0) if hashed else distinct
    return ScalaSet(tuple(order), hash_code, hashed)
