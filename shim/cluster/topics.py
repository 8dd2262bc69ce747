"""Topics and partitions as the broker knows them, and Kafka 3.9's topic-name rule (``org.apache.kafka.common.internals.Topic.validate``)."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

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
