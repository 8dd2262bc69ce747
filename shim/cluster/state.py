"""What the broker knows about its cluster: its identity and its topics. Plain state, changed only on the event loop."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kafka_shim.shim.cluster.topics import Partition, Topic


@dataclass
class ClusterState:
    cluster_id: str
    node_id: int
    topics: dict[str, Topic] = field(default_factory=dict)

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        for topic in self.topics.values():
            if topic.topic_id == topic_id:
                return topic
        return None

    def leads(self, topic: str, partition: int) -> bool:
        """Whether this broker leads the partition (it may not while a fault holds it leaderless)."""
        return self.topics[topic].partitions[partition].leader_id == self.node_id

    def add_topic(self, name: str, partitions: int = 1) -> Topic:
        topic = Topic(name, uuid.uuid4(), [Partition(i, self.node_id, 0, [self.node_id], [self.node_id]) for i in range(partitions)])
        self.topics[name] = topic
        return topic
