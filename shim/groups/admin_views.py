"""What the group administration APIs show of a group: Kafka 3.9's GroupSummary, MemberSummary and GroupOverview.

Plain values built by ``GroupCoordinator``'s administration methods (DescribeGroups, ListGroups, DeleteGroups) from
the groups it holds; the handlers in ``shim/handlers/group_admin.py`` turn them into wire messages. Kafka's old
(Scala) coordinator builds them in GroupMetadata.summary / overview and MemberMetadata.summary; the orders Kafka
answers in come from its hash maps, reproduced by :func:`members_in_kafka_order` and :func:`groups_in_kafka_order`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_shim.shim.javacompat.hash_orders import scala_mutable_map_order
from kafka_shim.shim.javacompat.java_hash import java_string_hash

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


def groups_in_kafka_order(group_ids: Iterable[str]) -> list[str]:
    """The group cache (GroupMetadataManager's Pool, a ``ConcurrentHashMap`` of default capacity) in iteration order:
    by bucket of the spread hash, within a bucket in insertion order. (A bucket of three or more groups that a resize
    split can come out reordered in Kafka; kafka-shim keeps insertion order there.)"""
    ids = list(dict.fromkeys(group_ids))
    length = 16
    while len(ids) >= length * 3 // 4:  # ConcurrentHashMap resizes once the count reaches 0.75 of the table
        length *= 2
    position = {gid: i for i, gid in enumerate(ids)}

    def bucket(gid: str) -> tuple[int, int]:
        h = java_string_hash(gid)
        return ((h ^ (h >> 16)) & 0x7FFFFFFF) & (length - 1), position[gid]

    return sorted(ids, key=bucket)


def offsets_partition(group_id: str, partitions: int) -> int:
    """GroupMetadataManager.partitionFor: Utils.abs(groupId.hashCode) % offsets.topic.num.partitions."""
    h = java_string_hash(group_id)
    signed = h - (1 << 32) if h & 0x80000000 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % partitions
