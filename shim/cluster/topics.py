"""Topics and partitions as the broker knows them, and Kafka 3.9's topic-name rule (``org.apache.kafka.common.internals.Topic.validate``)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.javacompat.timeline_table import TimelineTableOrder

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_NAME_LENGTH = 249


def invalid_topic_name(name: str) -> str | None:
    """Kafka 3.9's ``Topic.validate`` message (InvalidTopicException, code 17) for an illegal name, or None.

    The one topic-name rule of kafka-shim: CreateTopics, Metadata (auto-creation and the 17 of an unknown illegal
    name), DescribeTopicPartitions and the config APIs all ask it. Lengths count UTF-16 units, as Java's
    ``String.length()`` does, so a name of 249 characters outside the BMP is too long.
    """
    if not name:
        why = "the empty string is not allowed"
    elif name in (".", ".."):
        why = f"'{name}' is not allowed"
    elif len(name.encode("utf-16-le", "surrogatepass")) // 2 > MAX_TOPIC_NAME_LENGTH:
        why = f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
    elif not _LEGAL_TOPIC.fullmatch(name):
        why = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    else:
        return None
    return "Topic name is invalid: " + why


@dataclass
class Partition:
    index: int
    leader_id: int
    leader_epoch: int = 0
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)
    # An ongoing reassignment (AlterPartitionReassignments): replicas being added and removed, each ascending.
    adding: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    configs: dict[str, str] = field(default_factory=dict)  # the topic's config overrides (validated when set)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class TopicTable(dict[str, Topic]):
    """The cluster's topics by name (a dict in creation order), which also follows the iteration order of the
    controller's ``topicsByName`` (ReplicationControlManager's TimelineHashMap, a table that grows with the topics
    ever held at once and never shrinks): ElectLeaders for every partition lists the topics in that order.

    Every way a dict changes goes through the table, so the partitions module can keep treating it as a plain dict.
    """

    def __init__(self, topics: Mapping[str, Topic] | None = None) -> None:
        super().__init__()
        self._order: TimelineTableOrder[str] = TimelineTableOrder(java_string_hash)
        self.update(topics or {})

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy or pickle is rebuilt from the names in creation order (the default would put them before the
        # table exists); the table's growth from topics deleted since is not kept.
        return (TopicTable, (dict(self),))

    def kafka_order(self) -> list[str]:
        """The names as Kafka's controller iterates its topics."""
        return self._order.order()

    def __setitem__(self, name: str, topic: Topic) -> None:
        if name not in self:  # Kafka puts a name once, at its TopicRecord
            self._order.put(name)
        super().__setitem__(name, topic)

    def __delitem__(self, name: str) -> None:
        super().__delitem__(name)
        self._order.remove(name)

    def pop(self, name: str, *default: Any) -> Any:  # type: ignore[override]
        if name in self:
            self._order.remove(name)
        return super().pop(name, *default)

    def popitem(self) -> tuple[str, Topic]:
        name, topic = super().popitem()
        self._order.remove(name)
        return name, topic

    def setdefault(self, name: str, topic: Topic) -> Topic:  # type: ignore[override]
        if name not in self:
            self[name] = topic
        return self[name]

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        for name, topic in dict(*args, **kwargs).items():
            self[name] = topic

    def clear(self) -> None:
        for name in list(self):
            self._order.remove(name)
        super().clear()
