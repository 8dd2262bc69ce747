"""Topics and partitions as the broker knows them, and Kafka's topic-name rules (Topic.validate)."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME_LENGTH = 249


def topic_name_error(name: str) -> str | None:
    """Why Kafka would reject a topic name (Topic.validate), or None if it is legal."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, topic name: {name}"
    if not _LEGAL_TOPIC.match(name):
        return f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
    return None


@dataclass
class Partition:
    index: int
    leader_id: int
    leader_epoch: int = 0
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    configs: dict[str, str] = field(default_factory=dict)  # the topic's config overrides (validated when set)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS
