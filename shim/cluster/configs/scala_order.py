"""The iteration order of a Scala 2.13 ``mutable.HashMap[String, _]``, the order of Kafka's DescribeConfigs entries.

ConfigHelper lists a broker's or topic's configs by iterating ``config.originals ++ config.nonInternalValues``, a
Scala mutable.HashMap. It iterates by bucket (String.hashCode folded by ``h ^ h >>> 16``, masked by the table
size) and, inside a bucket, by ascending folded hash as a signed Int (ties: insertion order). The table is a power of two that
doubles once the size reaches three quarters of it; ``table_size`` lets a caller name the size Kafka ends with.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from kafka_shim.shim.javacompat.java_hash import java_string_hash


def _improved(text: str) -> int:
    """The folded hash as the signed Int Scala compares."""
    h = java_string_hash(text)
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def scala_table_size(count: int) -> int:
    """The table length of a mutable.HashMap after ``count`` insertions (16 to start, doubled at 3/4 full)."""
    size = 16
    while count >= int(size * 0.75):  # put grows before the insertion that reaches the threshold
        size *= 2
    return size


def scala_hashmap_order(keys: Iterable[str], table_size: int | None = None) -> list[str]:
    """``keys`` (in insertion order; repeats count once) as a Scala mutable.HashMap holding them iterates them."""
    return list(_ordered(tuple(dict.fromkeys(keys)), table_size))


@lru_cache(maxsize=256)
def _ordered(keys: tuple[str, ...], table_size: int | None) -> tuple[str, ...]:
    # DescribeConfigs asks for the same key sets again and again (a broker's, a topic's): remembered
    size = table_size or scala_table_size(len(keys))
    position = {key: i for i, key in enumerate(keys)}
    return tuple(sorted(keys, key=lambda key: (_improved(key) & (size - 1), _improved(key), position[key])))
