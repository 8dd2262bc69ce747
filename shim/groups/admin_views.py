"""What the group administration APIs show of a group: Kafka 3.9's GroupSummary, MemberSummary and GroupOverview.

Plain values built by ``GroupCoordinator``'s administration methods (DescribeGroups, ListGroups, DeleteGroups) from
the groups it holds; the handlers in ``shim/handlers/group_admin.py`` turn them into wire messages. Kafka's old
(Scala) coordinator builds them in GroupMetadata.summary / overview and MemberMetadata.summary; the orders Kafka
answers in come from its hash maps, reproduced by :func:`members_in_kafka_order` and :func:`groups_in_kafka_order`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kafka_shim.shim.javacompat.hash_orders import scala_mutable_map_order, topic_partition_hash
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.javacompat.timeline_table import TimelineTableOrder

OFFSETS_TOPIC = "__consumer_offsets"

# GroupCoordinator.NoState / NoProtocolType / NoProtocol: what an errored or unknown group shows.
NO_STATE = ""
NO_PROTOCOL_TYPE = ""
NO_PROTOCOL = ""
DEAD = "Dead"
EMPTY = "Empty"
STABLE = "Stable"
CLASSIC = "classic"
CONSUMER = "consumer"


@dataclass(frozen=True)
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupSummary:
    """One DescribeGroups entry: the error for the group, then what Kafka's GroupMetadata.summary shows."""

    group_id: str
    error: int = 0
    state: str = NO_STATE
    protocol_type: str = NO_PROTOCOL_TYPE
    protocol: str = NO_PROTOCOL
    members: list[MemberSummary] = field(default_factory=list)


@dataclass(frozen=True)
class GroupOverview:
    """One ListGroups entry (GroupMetadata.overview)."""

    group_id: str
    protocol_type: str
    state: str
    group_type: str = CLASSIC


def members_in_kafka_order(member_ids: Iterable[str]) -> list[str]:
    """GroupMetadata keeps members in a Scala ``mutable.HashMap`` keyed by member id; DescribeGroups lists them in its
    iteration order."""
    return scala_mutable_map_order(member_ids, java_string_hash)


class GroupCacheOrder:
    """The iteration order of Kafka's group cache (GroupMetadataManager's Pool: a ``java.util.concurrent.
    ConcurrentHashMap`` of default capacity), which ListGroups answers in.

    ConcurrentHashMap keeps a table of bins (16 at first); a group goes to the tail of bin ``spread(hash) & (n - 1)``
    and leaves its bin in place; once the count reaches three quarters of the table, the table doubles and each bin is
    split as ``transfer`` splits it: the bin's last run of nodes bound for the same half is moved as it is, the nodes
    before it are pushed, one by one, onto the front of their half, which reverses them. The table never shrinks.
    The order thus depends on the history of the groups, not only on the ones there now: ``sync`` replays the
    additions and removals seen since its last call. (Bins of eight or more, which Kafka turns into trees, are kept as
    lists; with group ids they practically never occur.)
    """

    def __init__(self, hash_code: Callable[[Any], int] = java_string_hash) -> None:
        self._hash_code = hash_code
        self._bins: list[list[tuple[int, Any]]] = [[] for _ in range(16)]
        self._members: set[Any] = set()

    def sync(self, group_ids: Iterable[Any]) -> list[Any]:
        """Bring the cache up to these ids (new ones added in the given order, missing ones removed); the ids in
        Kafka's iteration order."""
        current = list(dict.fromkeys(group_ids))
        present = set(current)
        for gone in self._members - present:
            self._remove(gone)
        for new in current:
            if new not in self._members:
                self._add(new)
        return [key for bin_ in self._bins for _, key in bin_]

    def _add(self, key: Any) -> None:
        h = self._hash_code(key)
        spread = (h ^ (h >> 16)) & 0x7FFFFFFF
        self._bins[spread & (len(self._bins) - 1)].append((spread, key))
        self._members.add(key)
        if len(self._members) >= len(self._bins) * 3 // 4:
            self._resize()

    def _remove(self, key: Any) -> None:
        self._members.discard(key)
        for bin_ in self._bins:
            for i, (_, k) in enumerate(bin_):
                if k == key:
                    del bin_[i]
                    return

    def _resize(self) -> None:
        n = len(self._bins)
        table: list[list[tuple[int, Any]]] = [[] for _ in range(2 * n)]
        for index, nodes in enumerate(self._bins):
            if not nodes:
                continue
            run_start = len(nodes) - 1
            while run_start > 0 and (nodes[run_start - 1][0] & n) == (nodes[-1][0] & n):
                run_start -= 1
            low: list[tuple[int, Any]] = []
            high: list[tuple[int, Any]] = []
            (high if nodes[-1][0] & n else low).extend(nodes[run_start:])
            for node in nodes[:run_start]:
                (high if node[0] & n else low).insert(0, node)
            table[index], table[index + n] = low, high
        self._bins = table


class ShardedGroupOrder:
    """The order the new group coordinator (Kafka 3.9 with the consumer protocol on) lists groups in: each
    ``__consumer_offsets`` partition's shard keeps its groups in a TimelineHashMap (:mod:`..javacompat.timeline_table`),
    and ListGroups walks the shards in the order of the runtime's ConcurrentHashMap of partitions (all of them led
    here, added in ascending order). ``sync`` replays additions and removals as :class:`GroupCacheOrder` does."""

    def __init__(self, partitions: int) -> None:
        self._partitions = partitions
        self._shards = GroupCacheOrder(topic_partition_hash).sync([(OFFSETS_TOPIC, p) for p in range(partitions)])
        self._tables: dict[int, TimelineTableOrder[str]] = {}
        self._members: set[str] = set()

    def sync(self, group_ids: Iterable[str]) -> list[str]:
        current = list(dict.fromkeys(group_ids))
        present = set(current)
        for gone in self._members - present:
            self._table(gone).remove(gone)
        for new in current:
            if new not in self._members:
                self._table(new).put(new)
        self._members = present
        return [group_id for _, p in self._shards if p in self._tables for group_id in self._tables[p].order()]

    def _table(self, group_id: str) -> TimelineTableOrder[str]:
        partition = offsets_partition(group_id, self._partitions)
        table = self._tables.get(partition)
        if table is None:
            table = self._tables[partition] = TimelineTableOrder(java_string_hash)
        return table


def groups_in_kafka_order(group_ids: Iterable[str]) -> list[str]:
    """The order of a group cache that these groups were added to, in this order, and nothing removed from."""
    return GroupCacheOrder().sync(group_ids)


def offsets_partition(group_id: str, partitions: int) -> int:
    """GroupMetadataManager.partitionFor: Utils.abs(groupId.hashCode) % offsets.topic.num.partitions."""
    h = java_string_hash(group_id)
    signed = h - (1 << 32) if h & 0x80000000 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % partitions
