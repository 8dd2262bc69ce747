"""Java's String.hashCode and the iteration order of java.util.HashMap / HashSet with String keys.

Kafka builds several answers by iterating hash tables, so the order of results on the wire is theirs:
DescribeUserScramCredentials and AlterUserScramCredentials iterate HashMaps, SCRAM extensions are parsed into
one, and SaslHandshake lists the enabled mechanisms from ``new ArrayList<>(new HashSet<>(list))``.

A HashMap iterates by bucket (String.hashCode spread by ``h ^ h >>> 16``, masked by the table size), and within
a bucket by insertion. The table is a power of two that doubles whenever the size passes three quarters of it,
and never shrinks. Not modelled: buckets that turn into trees, which takes eight keys colliding in one bucket of
a table of 64 or more.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Generic, TypeVar

V = TypeVar("V")

_MASK = 0xFFFFFFFF
_DEFAULT_CAPACITY = 16  # new HashMap<>()


@lru_cache(maxsize=65536)
def java_string_hash(text: str) -> int:
    """java.lang.String.hashCode (``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, wrapping at 32 bits),
    as an unsigned 32-bit value: Java's negative ints are their two's complement here."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & _MASK
    return h


def _spread(text: str) -> int:
    """HashMap.hash: the high half folded into the low one, since only the low bits pick a bucket."""
    h = java_string_hash(text)
    return h ^ (h >> 16)


def _table_size_for(capacity: int) -> int:
    """HashMap.tableSizeFor: the smallest power of two at least ``capacity``."""
    return 1 << max(capacity - 1, 0).bit_length()


class JavaHashMap(Generic[V]):
    """A dict that iterates like a java.util.HashMap<String, V> built with ``new HashMap<>(initial_capacity)``."""

    def __init__(self, initial_capacity: int = _DEFAULT_CAPACITY) -> None:
        self._values: dict[str, V] = {}
        self._seq: dict[str, int] = {}
        self._next = 0
        self._capacity = _table_size_for(initial_capacity)

    def __contains__(self, key: str) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key: str, default: V | None = None) -> V | None:
        return self._values.get(key, default)

    def put(self, key: str, value: V) -> None:
        if key not in self._values:
            self._seq[key] = self._next
            self._next += 1
            if len(self._values) + 1 > self._capacity * 3 // 4:
                self._capacity *= 2
        self._values[key] = value

    def remove(self, key: str) -> V | None:
        self._seq.pop(key, None)
        return self._values.pop(key, None)

    def keys(self) -> list[str]:
        mask = self._capacity - 1
        return sorted(self._values, key=lambda k: (_spread(k) & mask, self._seq[k]))

    def items(self) -> Iterator[tuple[str, V]]:
        for key in self.keys():
            yield key, self._values[key]

    def values(self) -> Iterator[V]:
        for key in self.keys():
            yield self._values[key]


def java_order(keys: list[str]) -> list[str]:
    """``keys`` (distinct, in insertion order) as a fresh ``new HashMap<>()`` holding them would iterate them."""
    m: JavaHashMap[None] = JavaHashMap()
    for key in keys:
        m.put(key, None)
    return m.keys()


def hash_set_order(items: Iterable[str]) -> list[str]:
    """The distinct ``items`` in the order ``new HashSet<>(collection)`` iterates them.

    HashSet(Collection) sizes its table for the whole collection at once (``max(n / .75f + 1, 16)``), so, unlike
    a HashMap filled one key at a time from 16 slots, it never resizes while being filled.
    """
    unique = list(dict.fromkeys(items))
    m: JavaHashMap[None] = JavaHashMap(max(int(len(unique) / 0.75) + 1, _DEFAULT_CAPACITY))
    for item in unique:
        m.put(item, None)
    return m.keys()
