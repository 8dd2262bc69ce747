"""The ``uniform`` assignor when members subscribe to different topics: Kafka 3.9's
``UniformHeterogeneousAssignmentBuilder``, step for step, so that a group gets the partitions Kafka would give it.

The steps, as Kafka takes them:

1. Sticky: every member keeps the partitions of its current target assignment whose topics it still subscribes to.
2. The partitions left are sorted by their topic's partitions per subscriber (most first), then by the topic's
   subscriber count (fewest first), then by partition number; ties between topics keep the order of Kafka's
   ``HashSet`` of partitions. Each goes to the subscriber with the fewest partitions (then the least member id)
   that does not already hold every partition it could.
3. Balance: topics with one subscriber are fixed; the others' partitions are walked in the same sort order, and a
   partition moves from its owner to the least loaded subscriber whenever the owner has two more than some
   subscriber, until no move can narrow the spread. A partition that has moved is not moved again.

Kafka 3.9 inverts a consistency check of its movement records (fixed by the rework in Kafka 4.0, KAFKA-17710): a
move between two members in the direction opposite to an earlier move of the same topic fails the whole
assignment with "Mismatch in partition movement record ...", which the coordinator answers as
UNKNOWN_SERVER_ERROR. kafka-shim fails it the same way.

The member order (``groupSpec.memberIds()``) and the subscribed topic sets only decide the insertion order into
Kafka's hash sets; the partitions' ``HashSet`` order (``TopicIdPartition.hashCode``: ``Objects.hash(topicId,
partition)``) breaks ties between topics of the same shape.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from kafka_shim.shim.groups.assignor_spec import Assignment, AssignorError, MemberSpec
from kafka_shim.shim.javacompat.hash_orders import java_hash_map_order, java_hash_set_order
from kafka_shim.shim.javacompat.kafka_uuid import kafka_uuid_string
from kafka_shim.shim.javacompat.scala_set import kafka_uuid_hash
from kafka_shim.shim.javacompat.utf16 import utf16_key

TopicPartition = tuple[uuid.UUID, int]

MOVEMENT_MISMATCH = "Mismatch in partition movement record with respect to partition ownership during a rebalance"


def topic_id_partition_hash(key: TopicPartition) -> int:
    """org.apache.kafka.server.common.TopicIdPartition.hashCode: ``Objects.hash(topicId, partitionId)``."""
    topic_id, partition = key
    return (31 * (31 + kafka_uuid_hash(topic_id)) + partition) & 0xFFFFFFFF


class UniformHeterogeneous:
    """One run of the builder; ``build`` gives every member's target assignment, or raises AssignorError."""

    def __init__(self, members: Mapping[str, MemberSpec], partition_counts: Mapping[uuid.UUID, int]) -> None:
        self.members = members
        self.counts = partition_counts
        self.subscribers: dict[uuid.UUID, list[str]] = {}
        topics_in_order: list[uuid.UUID] = []
        for member_id, spec in members.items():
            for topic_id in java_hash_set_order(list(spec.subscribed_topic_ids), kafka_uuid_hash):
                if topic_id not in partition_counts:
                    raise AssignorError(f"Members are subscribed to topic {kafka_uuid_string(topic_id)} which doesn't exist "
                                        "in the topic metadata.")
                topics_in_order.append(topic_id)
                self.subscribers.setdefault(topic_id, []).append(member_id)
        self.topics = java_hash_map_order(topics_in_order, kafka_uuid_hash)  # Kafka's HashSet of subscribed topic ids
        # Kafka's HashSet of every partition of those topics, in its iteration order.
        self.partition_order = java_hash_map_order(((t, p) for t in self.topics for p in range(partition_counts[t])),
                                                   topic_id_partition_hash)
        self.unassigned = set(self.partition_order)
        self.target: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
        self.owner: dict[TopicPartition, str] = {}
        self.size = dict.fromkeys(members, 0)
        self.max_size = {m: sum(partition_counts[t] for t in spec.subscribed_topic_ids) for m, spec in members.items()}
        # Kafka's TreeSet of members by (assignment size, member id): only those below their maximum, and not those
        # the balance leaves out (until a move puts them back, as Kafka's does).
        self.candidates = {m for m in members if self.size[m] < self.max_size[m]}
        # (topic, from, to) of every move made: a later move the other way is Kafka 3.9's mismatch.
        self.moves: set[tuple[uuid.UUID, str, str]] = set()

    def build(self) -> dict[str, Assignment]:
        if self.topics:
            self._keep_current()
            self._assign_unassigned()
            self._balance()
        # Each member's map is a new HashMap filled by computeIfAbsent (kept partitions too): Kafka's iteration order.
        return {m: {t: frozenset(a[t]) for t in java_hash_map_order(a, kafka_uuid_hash, by_compute=True)}
                for m, a in self.target.items()}

    # -- Kafka's AssignmentManager ----------------------------------------------------------------------------
    def _by_size(self, members: list[str] | set[str]) -> list[str]:
        return sorted(members, key=lambda m: (self.size[m], utf16_key(m)))

    def _add(self, key: TopicPartition, member_id: str) -> None:
        topic_id, partition = key
        self.target[member_id].setdefault(topic_id, set()).add(partition)
        self.owner[key] = member_id
        self.size[member_id] += 1
        self.candidates.discard(member_id)
        if self.size[member_id] < self.max_size[member_id]:
            self.candidates.add(member_id)
        self.unassigned.discard(key)

    def _remove(self, key: TopicPartition, member_id: str) -> None:
        topic_id, partition = key
        partitions = self.target[member_id].get(topic_id)
        if partitions is not None:
            partitions.discard(partition)
            if not partitions:
                del self.target[member_id][topic_id]
        if self.owner.get(key) == member_id:
            del self.owner[key]
        self.size[member_id] = max(self.size[member_id] - 1, 0)
        self.candidates.discard(member_id)
        if self.size[member_id] < self.max_size[member_id]:
            self.candidates.add(member_id)

    # -- the builder's steps ---------------------------------------------------------------------------------
    def _sorted(self, keys: set[TopicPartition]) -> list[TopicPartition]:
        """sortTopicIdPartitions: a stable sort of the partitions in Kafka's HashSet order."""
        def rank(key: TopicPartition) -> tuple[float, int, int]:
            topic_id, partition = key
            subscribers = len(self.subscribers[topic_id])
            return -(self.counts[topic_id] / subscribers), subscribers, partition
        return sorted((k for k in self.partition_order if k in keys), key=rank)

    def _keep_current(self) -> None:
        for member_id, spec in self.members.items():
            for topic_id, partitions in spec.assignment.items():
                if topic_id in spec.subscribed_topic_ids:
                    for partition in sorted(partitions):
                        self._add((topic_id, partition), member_id)

    def _assign_unassigned(self) -> None:
        for key in self._sorted(self.unassigned):
            takers = [m for m in self.subscribers[key[0]] if self.size[m] < self.max_size[m]]
            if takers:  # none left: the balance step reports the partition unassigned, as Kafka's does
                self._add(key, self._by_size(takers)[0])

    def _balance(self) -> None:
        if self.unassigned:
            raise AssignorError("Some partitions were left unassigned")
        movable = {t for t, subs in self.subscribers.items() if len(subs) >= 2}
        self.unassigned = {k for k in self.partition_order if k[0] in movable}
        for member_id in self.members:
            if not self._may_take_part(member_id, movable):
                self.candidates.discard(member_id)
        if self.unassigned:
            self._reassign()

    def _may_take_part(self, member_id: str, movable: set[uuid.UUID]) -> bool:
        if self.size[member_id] < self.max_size[member_id]:
            return True
        return any(t in movable for t in self.target[member_id])

    def _is_balanced(self) -> bool:
        ranked = self._by_size(self.candidates)
        if not ranked:  # Kafka's TreeSet.first() throws; its coordinator answers UNKNOWN_SERVER_ERROR as for these
            raise AssignorError("no member can take part in the balance")
        if self.size[ranked[0]] >= self.size[ranked[-1]] - 1:
            return True
        for member_id in ranked:
            count = self.size[member_id]
            if count == self.max_size[member_id]:
                continue
            for topic_id in self.members[member_id].subscribed_topic_ids:
                held = self.target[member_id].get(topic_id, ())
                for partition in range(self.counts[topic_id]):
                    if partition not in held and count + 1 < self.size[self.owner[(topic_id, partition)]]:
                        return False
        return True

    def _reassign(self) -> None:
        modified = True
        while modified:
            modified = False
            moved = False
            for key in self._sorted(self.unassigned):
                if moved and self._is_balanced():
                    return
                moved = False
                owner = self.owner.get(key)
                if owner is None:
                    raise AssignorError(f"Expected topicIdPartition '{_text(key)}' to be assigned to a member")
                if any(self.size[owner] > self.size[other] + 1 for other in self.subscribers[key[0]]):
                    self._move(key, owner)
                    modified = moved = True

    def _move(self, key: TopicPartition, owner: str) -> None:
        topic_id = key[0]
        new_owner = next((m for m in self._by_size(self.candidates) if topic_id in self.members[m].subscribed_topic_ids), None)
        if new_owner is None:
            raise AssignorError(f"No suitable new owner was found for the partition{_text(key)}")
        if (topic_id, new_owner, owner) in self.moves:
            raise AssignorError(MOVEMENT_MISMATCH)
        self.moves.add((topic_id, owner, new_owner))
        self._remove(key, owner)
        self._add(key, new_owner)


def _text(key: TopicPartition) -> str:
    """TopicIdPartition.toString: the topic id as Kafka writes it, a colon, the partition."""
    return f"{kafka_uuid_string(key[0])}:{key[1]}"
