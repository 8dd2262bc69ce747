"""The iteration order of a java.util.HashMap with String keys, which Kafka's SCRAM answers follow.

Kafka builds DescribeUserScramCredentials and AlterUserScramCredentials results by iterating HashMaps, so
the order of results on the wire is that order: by bucket (String.hashCode spread by ``h ^ h >>> 16``, masked
by the table size, which doubles whenever the size passes three quarters of it and never shrinks), and within
a bucket by insertion. Not modelled: buckets that turn into trees, which takes eight keys colliding in one
bucket of a table of 64 or more.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

V = TypeVar("V")


def java_string_hash(text: str) -> int:
    """String.hashCode over UTF-16 code units, as an unsigned 32-bit value."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def _spread(text: str) -> int:
    h = java_string_hash(text)
    return h ^ (h >> 16)


class JavaHashMap(Generic[V]):
    """A dict that iterates like a java.util.HashMap<String, V> built with ``new HashMap<>()``."""

    def __init__(self) -> None:
        self._values: dict[str, V] = {}
        self._seq: dict[str, int] = {}
        self._next = 0
        self._capacity = 16

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
    """``keys`` (distinct, in insertion order) as a fresh HashMap holding them would iterate them."""
    m: JavaHashMap[None] = JavaHashMap()
    for key in keys:
        m.put(key, None)
    return m.keys()


def java_sorted(keys: set[str] | list[str]) -> list[str]:
    """Java's natural String order (UTF-16 code units), which differs from Python's above U+FFFF."""
    return sorted(keys, key=lambda k: k.encode("utf-16-be", "surrogatepass"))
