"""The server-side assignors of KIP-848 consumer groups, as Kafka 3.9's group coordinator has them.

Kafka's counterparts: ``org.apache.kafka.coordinator.group.assignor.UniformAssignor`` (name ``uniform``, the
default: ``UniformHomogeneousAssignmentBuilder`` when every member subscribes to the same topics, the "optimized"
case, else ``UniformHeterogeneousAssignmentBuilder``, the "general" one) and ``RangeAssignor`` (name ``range``).
``group.consumer.assignors`` lists them; the first is the group's default, a member may ask for another with
``ServerAssignor`` (group.remote.assignor in the Java consumer).

What each gives:
- ``range``: per topic, its partitions cut into contiguous ranges over the members subscribed to it, in the order
  static members first (by instance id), then the others by member id; the first ``partitions % members`` get one
  more. Not sticky, exactly as Kafka's (its result depends only on the members and topics).
- ``uniform``: every partition of the subscribed topics to exactly one member, the counts differing by at most one
  (among members with the same subscription), sticky: a member keeps what it had up to its quota.

Which member gets what among equally good choices follows the Java hash orders Kafka walks, ties within a bucket
included: the members in the order of TargetAssignmentBuilder's ``java.util.HashMap`` of member ids (the caller
passes them so: the first ``total % members`` of them get the extra partition); a member's subscribed topic ids in
the order of its HashSet of names (``MemberSpec``), put into the builders' ``HashSet``s of topic ids; a member's
current partitions by its map of topic ids, which decides what it keeps and what it gives up. Each assignment comes
back as a dict in Kafka's iteration order of that map (built by ``computeIfAbsent``, which puts a new topic first in
its bucket), and a member whose assignment did not change keeps its dict, as Kafka keeps its map: compared on 340
random groups with Kafka 3.9's own UniformAssignor driven as its coordinator drives it. The heterogeneous builder
is Kafka's step for step (shim.groups.uniform_heterogeneous), its Kafka 3.9 failure included.
Kafka 3.9 has no rack-aware placement in these assignors (racks are recorded only).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from kafka_shim.shim.groups.assignor_spec import Assignment, AssignorError, MemberSpec
from kafka_shim.shim.groups.uniform_heterogeneous import UniformHeterogeneous
from kafka_shim.shim.javacompat.hash_orders import int_hash_set_order, java_hash_map_order, java_hash_set_order, java_map_order
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.javacompat.scala_set import kafka_uuid_hash

UNIFORM = "uniform"
RANGE = "range"

# group.consumer.assignors takes class names; each assignor answers to its short name.
CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": UNIFORM,
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": RANGE,
}

def assignor_name(configured: str) -> str:
    """The short name of a ``group.consumer.assignors`` entry (a class name or already a short name)."""
    return CLASS_NAMES.get(configured, configured)


def assign(name: str, members: Mapping[str, MemberSpec], partition_counts: Mapping[uuid.UUID, int],
           homogeneous: bool) -> dict[str, Assignment]:
    """The target assignment of every member by the assignor ``name``; ``partition_counts`` gives each topic's size.
    ``members`` iterate as Kafka's TargetAssignmentBuilder holds them (see :func:`kafka_member_order`)."""
    if not members:
        return {}
    if name == RANGE:
        built = _range(members, partition_counts, homogeneous)
    elif name == UNIFORM:
        built = (_uniform_homogeneous if homogeneous else _uniform_heterogeneous)(members, partition_counts)
    else:
        raise AssignorError(f"Unknown assignor {name}")
    # TargetAssignmentBuilder writes a record only for a member whose assignment changed: the others keep the map
    # they had, in its order (which the next sticky pass walks).
    return {m: members[m].assignment if m in members and _same(members[m].assignment, a) else a for m, a in built.items()}


def _same(current: Mapping[uuid.UUID, frozenset[int]], new: Assignment) -> bool:
    return {t: set(ps) for t, ps in current.items() if ps} == {t: set(ps) for t, ps in new.items()}


def kafka_member_order(members_before: list[str], updated: str, removed: str | None = None) -> list[str]:
    """The member ids as TargetAssignmentBuilder.build's ``java.util.HashMap`` iterates them: filled with the group's
    members as its table holds them (``members_before``, before this update), then the updated member put (a new one
    comes last), the member a static member replaces removed afterwards (the table keeps the size it grew to)."""
    filled = members_before if updated in members_before else [*members_before, updated]
    return [m for m in java_hash_map_order(filled, java_string_hash) if m != removed]


def _sorted_members(members: Mapping[str, MemberSpec]) -> list[str]:
    """RangeAssignor.sortMemberIds: static members first by instance id, then dynamic ones by member id."""
    def key(member_id: str) -> tuple[int, str]:
        instance = members[member_id].instance_id
        return (0, instance) if instance is not None else (1, member_id)
    return sorted(members, key=key)


def _range(members: Mapping[str, MemberSpec], partition_counts: Mapping[uuid.UUID, int], homogeneous: bool) -> dict[str, Assignment]:
    order = _sorted_members(members)
    subscribers: dict[uuid.UUID, int] = {}
    for member_id in order:
        for topic_id in members[member_id].subscribed_topic_ids:
            if topic_id not in partition_counts:
                raise AssignorError("Member is subscribed to a non-existent topic")
            subscribers[topic_id] = subscribers.get(topic_id, 0) + 1
    next_start = dict.fromkeys(subscribers, 0)
    extra = {t: partition_counts[t] % n for t, n in subscribers.items()}
    result: dict[str, Assignment] = {}
    for member_id in order:
        assignment: Assignment = {}
        for topic_id in sorted(members[member_id].subscribed_topic_ids):
            quota = partition_counts[topic_id] // subscribers[topic_id]
            if extra[topic_id] > 0:
                quota += 1
                extra[topic_id] -= 1
            start = next_start[topic_id]
            end = min(start + quota, partition_counts[topic_id])
            next_start[topic_id] = end
            if start < end:
                assignment[topic_id] = frozenset(range(start, end))
        result[member_id] = assignment
    return result


def _uniform_homogeneous(members: Mapping[str, MemberSpec], partition_counts: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
    """Kafka's UniformHomogeneousAssignmentBuilder: quotas of total/members (the first total%members members one
    more), each member keeps its partitions up to its quota, the rest are handed to members below their quota.
    ``members`` in Kafka's order (see the module's notes)."""
    order = list(members)
    # new HashSet<>(the first member's subscribed topic ids)
    topics = java_hash_set_order(list(members[order[0]].subscribed_topic_ids), kafka_uuid_hash)
    if not topics:
        return {m: {} for m in order}
    for topic_id in topics:
        if topic_id not in partition_counts:
            raise AssignorError(f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata.")
    subscribed = set(topics)
    owned = {(t, p) for m in order for t, ps in members[m].assignment.items() if t in subscribed for p in ps}
    unassigned = [(t, p) for t in topics for p in range(partition_counts[t]) if (t, p) not in owned]
    total = sum(partition_counts[t] for t in topics)
    minimum, extra = divmod(total, len(order))
    result: dict[str, dict[uuid.UUID, set[int]]] = {}
    added: dict[str, list[uuid.UUID]] = {}  # topics new to each member, in the order computeIfAbsent adds them
    unfilled: list[tuple[str, int]] = []
    for member_id in order:
        quota = minimum + (1 if extra > 0 else 0)
        extra -= 1 if extra > 0 else 0
        current = members[member_id].assignment  # its map's order: a bucket's topics as the dict lists them
        kept: dict[uuid.UUID, set[int]] = {}
        for topic_id in java_hash_map_order(current, kafka_uuid_hash):
            owned_partitions = current[topic_id]
            if topic_id not in subscribed:
                continue  # no longer subscribed: revoked
            partitions = int_hash_set_order(sorted(owned_partitions))
            if len(partitions) <= quota:
                kept[topic_id] = set(partitions)
                quota -= len(partitions)
                continue
            for partition in partitions:
                if quota > 0:
                    kept.setdefault(topic_id, set()).add(partition)
                    quota -= 1
                else:
                    unassigned.append((topic_id, partition))
        result[member_id] = kept
        added[member_id] = []
        if quota > 0:
            unfilled.append((member_id, quota))
    index = 0
    for member_id, quota in unfilled:
        for _ in range(quota):
            if index >= len(unassigned):
                break
            topic_id, partition = unassigned[index]
            index += 1
            if topic_id not in result[member_id]:
                added[member_id].append(topic_id)
            result[member_id].setdefault(topic_id, set()).add(partition)
    if index < len(unassigned):
        raise AssignorError("Partitions were left unassigned")
    # A member's map is its current one (or a copy of it, put key by key) with new topics added by computeIfAbsent.
    return {m: {t: frozenset(a[t]) for t in java_map_order([t for t in a if t not in added[m]], added[m], kafka_uuid_hash) if a[t]}
            for m, a in result.items()}


def _uniform_heterogeneous(members: Mapping[str, MemberSpec], partition_counts: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
    """The general case (members subscribe to different topics): Kafka 3.9's builder (shim.groups.uniform_heterogeneous)."""
    return UniformHeterogeneous(members, partition_counts).build()
