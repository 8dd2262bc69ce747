"""What the broker knows about its cluster: its identity, its nodes and its topics. Plain state, changed only on the
event loop.

A kafka-shim process is one broker, or a cluster of ``kafka.shim.brokers`` brokers in one process (kfake's and
librdkafka mock's cluster): node ids ``node.id`` up, one set of listeners each, one shared set of topics and logs.
Each partition has replicas on some of the nodes and a leader among them; requests that must reach the leader (or a
group's coordinator) answer NOT_LEADER_OR_FOLLOWER (NOT_COORDINATOR) on the other nodes, as in a real cluster. The
logs are shared, so a follower never lags: a new leader has every acknowledged record.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kafka_shim.shim.cluster.features import Features
from kafka_shim.shim.cluster.topics import Partition, Topic, TopicTable
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.javacompat.kafka_uuid import random_uuid


@dataclass
class ClusterState:
    cluster_id: str
    node_id: int  # the first node's (node.id); the only one of a one-broker process
    topics: TopicTable = field(default_factory=TopicTable)  # by name; also in Kafka's controller order
    node_ids: list[int] = field(default_factory=list)  # every node, ascending ([node_id] when empty at creation)
    down: set[int] = field(default_factory=set)  # nodes a fault has stopped
    features: Features = field(default_factory=Features)  # finalized feature levels (UpdateFeatures, ApiVersions)
    # The partition count each coordinator divides its keys by, fixed when the broker starts: Kafka's coordinators
    # read it once (the internal topic's count, or offsets.topic.num.partitions / transaction.state.log.num.partitions
    # while it does not exist), so a topic made later with fewer partitions leaves some keys without a coordinator.
    coordinator_partition_counts: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.topics, TopicTable):
            self.topics = TopicTable(self.topics)
        if not self.node_ids:
            self.node_ids = [self.node_id]
        self._next_placement = 0

    @property
    def live_nodes(self) -> list[int]:
        return [n for n in self.node_ids if n not in self.down]

    def controller(self) -> int:
        """The node Metadata and DescribeCluster name as controller (KRaft names an alive broker): the lowest live."""
        live = self.live_nodes
        return live[0] if live else self.node_id

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        for topic in self.topics.values():
            if topic.topic_id == topic_id:
                return topic
        return None

    def leads(self, topic: str, partition: int, node_id: int | None = None) -> bool:
        """Whether ``node_id`` (the first node when None) leads the partition (not while it is leaderless)."""
        return self.topics[topic].partitions[partition].leader_id == (self.node_id if node_id is None else node_id)

    def coordinator_partition(self, internal_topic: str, key: str) -> int | None:
        """The partition of ``internal_topic`` that holds ``key``: abs(key.hashCode) % the coordinator's partition
        count (which may name a partition the topic lacks); None while the topic does not exist."""
        topic = self.topics.get(internal_topic)
        if topic is None or not topic.partitions:
            return None
        count = self.coordinator_partition_counts.get(internal_topic) or len(topic.partitions)
        h = java_string_hash(key)
        h = h - (1 << 32) if h & 0x80000000 else h
        return (0 if h == -(1 << 31) else abs(h)) % count

    def coordinator(self, internal_topic: str, key: str) -> int | None:
        """The node that coordinates ``key`` (a group id in ``__consumer_offsets``, a transactional id in
        ``__transaction_state``): the leader of its partition (-1: leaderless, or a partition the topic lacks);
        None while the topic does not exist."""
        partition = self.coordinator_partition(internal_topic, key)
        if partition is None:
            return None
        partitions = self.topics[internal_topic].partitions
        return partitions[partition].leader_id if partition < len(partitions) else -1

    def fix_coordinator_partition_counts(self, configured: dict[str, int]) -> None:
        """What the coordinators divide keys by from now on (a broker's start): each internal topic's partition count,
        or ``configured`` for one that does not exist yet."""
        self.coordinator_partition_counts = {
            name: len(self.topics[name].partitions) if name in self.topics and self.topics[name].partitions else count
            for name, count in configured.items()}

    def placement(self, count: int, factor: int = 1) -> list[list[int]]:
        """Replicas for ``count`` new partitions, ``factor`` each: StripedReplicaPlacer's round robin over the live
        nodes (each partition's first replica is its preferred leader), from a start that moves on with every call
        so that topics do not all lead on one node. One node: ``[[node]]`` per partition."""
        live = self.live_nodes or [self.node_id]
        start = self._next_placement
        self._next_placement += count
        return [[live[(start + p + r) % len(live)] for r in range(min(factor, len(live)))] for p in range(count)]

    def new_partition(self, index: int, replicas: list[int]) -> Partition:
        live = [n for n in replicas if n not in self.down]
        return Partition(index, live[0] if live else -1, 0, list(replicas), live)

    def add_topic(self, name: str, partitions: int = 1) -> Topic:
        placed = self.placement(partitions)
        topic = Topic(name, random_uuid(), [self.new_partition(i, placed[i]) for i in range(partitions)])
        self.topics[name] = topic
        return topic
