"""Iteration orders of the hash maps Kafka keys by TopicPartition, which decide the order of partitions in answers.

Kafka's Produce handler (KafkaApis, ReplicaManager) collects partitions in Scala 2.13 ``mutable.HashMap``s, merges
them into an immutable ``Map``, and ProduceRequest.getErrorResponse walks a ``java.util.HashMap``; the answer lists
topics and partitions in those maps' iteration order. Each order is a pure function of the keys' hash codes:

- ``java.util.HashMap`` (default capacity 16, load factor 0.75, resized once the size passes the threshold):
  by bucket ``(h ^ (h >>> 16)) & (n - 1)``, within a bucket in insertion order when filled by ``put``, in reverse
  when filled by ``compute`` / ``computeIfAbsent``, which link a new key at the bucket's head
  (ProduceRequest.partitionSizes; the KIP-848 assignors' member assignments). A resize keeps each bucket's order.
- Scala 2.13 ``mutable.HashMap`` (capacity 16, load factor 0.75, grown before an insertion that would reach the
  threshold): by bucket ``improved & (n - 1)`` with ``improved = h ^ (h >>> 16)``, within a bucket by ascending
  improved hash (signed), as its ``put0`` keeps each bucket sorted.
- ``java.util.concurrent.ConcurrentHashMap`` (and ``java.util.Properties``, which keeps one; 16 slots to start): by
  bucket ``(h ^ (h >>> 16)) & 0x7fffffff & (n - 1)``, new keys appended to their bucket; the table doubles once the
  size reaches three quarters of it, and the move keeps the trailing run of each bucket whose keys go the same way
  and links the keys before it in reverse, so collisions can come out of insertion order.
- Scala 2.13 immutable ``Map``: up to four entries in insertion order (Map1..Map4), then a CHAMP HashMap, iterated
  as the immutable HashSet is (:mod:`.scala_set`).

``TopicPartition.hashCode`` is ``31 * (31 + partition) + topic.hashCode()``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.javacompat.scala_set import scala_set_order

T = TypeVar("T", bound=Hashable)
_MASK = 0xFFFFFFFF
_INITIAL_CAPACITY = 16


def topic_partition_hash(key: tuple[str, int]) -> int:
    """org.apache.kafka.common.TopicPartition.hashCode, unsigned 32-bit."""
    topic, partition = key
    return (31 * (31 + partition) + java_string_hash(topic)) & _MASK


def long_hash(value: int) -> int:
    """java.lang.Long.hashCode (the two halves xored), unsigned 32-bit."""
    unsigned = value & 0xFFFFFFFFFFFFFFFF
    return (unsigned ^ (unsigned >> 32)) & _MASK


def _spread(h: int) -> int:
    return h ^ (h >> 16)


def _signed(h: int) -> int:
    return h - (1 << 32) if h & 0x80000000 else h


def java_hash_map_order(keys: Iterable[T], hash_code: Callable[[T], int], *, by_compute: bool = False,
                        initial_capacity: int = _INITIAL_CAPACITY) -> list[T]:
    """The distinct keys as a ``java.util.HashMap`` filled in this order iterates them: by bucket, and within a bucket
    in insertion order for ``put`` but in reverse for ``compute`` (which links a new node at the bucket's head).
    ``initial_capacity``: ``new HashMap<>(n)``'s, whose table starts at the power of two at or above it."""
    distinct = list(dict.fromkeys(keys))
    length = 1 << max(initial_capacity - 1, 0).bit_length()  # HashMap.tableSizeFor
    if by_compute:
        while len(distinct) - 1 > length * 3 // 4:  # compute resizes before an insertion when size > threshold
            length *= 2
    else:
        while len(distinct) > length * 3 // 4:  # put resizes after an insertion when ++size > threshold
            length *= 2
    position = {key: (-index if by_compute else index) for index, key in enumerate(distinct)}
    return sorted(distinct, key=lambda k: (_spread(hash_code(k) & _MASK) & (length - 1), position[k]))


def java_map_order(put: Iterable[T], computed: Iterable[T], hash_code: Callable[[T], int]) -> list[T]:
    """The keys of a ``java.util.HashMap`` filled by ``put`` with ``put`` (in order: a copy of another map), then by
    ``computeIfAbsent`` with ``computed`` (in order): within a bucket the computed keys come first, the latest
    first, then the put ones in their order."""
    puts = list(dict.fromkeys(put))
    computes = [k for k in dict.fromkeys(computed) if k not in set(puts)]
    length = _INITIAL_CAPACITY
    while len(puts) + len(computes) > length * 3 // 4:
        length *= 2
    position = {key: index for index, key in enumerate(puts)} | {key: -1 - index for index, key in enumerate(computes)}
    return sorted([*puts, *computes], key=lambda k: (_spread(hash_code(k) & _MASK) & (length - 1), position[k]))


def java_concurrent_hash_map_order(keys: Iterable[T], hash_code: Callable[[T], int]) -> list[T]:
    """The distinct ``keys`` as a ``ConcurrentHashMap`` (or ``Properties``) filled in this order iterates them.

    Not modelled: a bucket of eight keys, which makes a table under 64 slots grow instead of turning into a tree.
    """
    length = _INITIAL_CAPACITY
    table: list[list[tuple[T, int]]] = [[] for _ in range(length)]
    seen: set[T] = set()
    for key in keys:
        if key in seen:
            continue
        seen.add(key)
        h = _spread(hash_code(key) & _MASK) & 0x7FFFFFFF
        table[h & (length - 1)].append((key, h))
        if len(seen) >= length - (length >> 2):  # addCount: resize once the count reaches sizeCtl
            table = _concurrent_transfer(table, length)
            length *= 2
    return [key for bucket in table for key, _ in bucket]


def _concurrent_transfer(table: list[list[tuple[T, int]]], length: int) -> list[list[tuple[T, int]]]:
    """ConcurrentHashMap.transfer: each bucket splits on the bit ``length``; its last run of nodes that all go one way
    is moved as it is, the nodes before it are pushed in front of their new bucket one by one (so reversed)."""
    grown: list[list[tuple[T, int]]] = [[] for _ in range(2 * length)]
    for index, bucket in enumerate(table):
        if not bucket:
            continue
        run_start = len(bucket) - 1
        while run_start > 0 and (bucket[run_start - 1][1] & length) == (bucket[-1][1] & length):
            run_start -= 1
        low: list[tuple[T, int]] = []
        high: list[tuple[T, int]] = []
        (high if bucket[-1][1] & length else low).extend(bucket[run_start:])
        for node in bucket[:run_start]:
            (high if node[1] & length else low).insert(0, node)
        grown[index], grown[index + length] = low, high
    return grown


def scala_mutable_map_order(keys: Iterable[T], hash_code: Callable[[T], int]) -> list[T]:
    """The distinct keys as a Scala 2.13 ``mutable.HashMap`` holding them iterates them."""
    distinct = list(dict.fromkeys(keys))
    length = _INITIAL_CAPACITY
    while len(distinct) >= int(length * 0.75):  # grown before the insertion that would reach the threshold
        length *= 2

    def place(key: T) -> tuple[int, int]:
        improved = _spread(hash_code(key) & _MASK)
        return improved & (length - 1), _signed(improved)

    return sorted(distinct, key=place)


def scala_immutable_map_order(keys: Iterable[T], hash_code: Callable[[T], int]) -> list[T]:
    """The distinct keys as a Scala 2.13 immutable ``Map`` built by adding them in this order iterates them."""
    return scala_set_order(keys, hash_code)


def java_hash_set_order(values: Iterable[T], hash_code: Callable[[T], int]) -> list[T]:
    """The distinct ``values`` in the order ``new HashSet<>(collection)`` iterates them: its table is sized for the
    whole collection at once (``max(n / .75f + 1, 16)`` rounded up to a power of two), filled in the collection's
    order (which decides only the order within a bucket)."""
    given = list(values)
    distinct = list(dict.fromkeys(given))
    wanted = max(int(len(given) / 0.75) + 1, _INITIAL_CAPACITY)  # sized by the collection, duplicates included
    length = 1 << (wanted - 1).bit_length()
    position = {value: index for index, value in enumerate(distinct)}
    return sorted(distinct, key=lambda v: (_spread(hash_code(v) & _MASK) & (length - 1), position[v]))


def int_hash_set_order(values: Iterable[int]) -> list[int]:
    """The distinct ``values`` in the order ``new HashSet<>(collection)`` of Integers iterates them
    (``Integer.hashCode`` is the value itself)."""
    return java_hash_set_order(values, int)
