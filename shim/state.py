"""What the broker knows about its cluster: identity and topics."""

from __future__ import annotations

import base64
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from shim.config import BrokerConfig, ConfigError
from shim.properties import parse_properties

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


def new_cluster_id() -> str:
    """Kafka's form: a random UUID as 22 characters of URL-safe base64."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


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

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


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

    def add_topic(self, name: str, partitions: int = 1) -> Topic:
        topic = Topic(name, uuid.uuid4(), [Partition(i, self.node_id, 0, [self.node_id], [self.node_id]) for i in range(partitions)])
        self.topics[name] = topic
        return topic


def load_cluster_identity(config: BrokerConfig) -> str:
    """The cluster id: from meta.properties in the first log dir (written on first start), else a fresh one."""
    if not config.log_dirs:
        return new_cluster_id()
    meta = Path(config.log_dirs[0]) / "meta.properties"
    if meta.exists():
        try:
            props = parse_properties(meta.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {meta}: {exc}; fix or remove the file") from None
        cluster_id = props.get("cluster.id", "").strip()
        if not cluster_id:
            raise ConfigError(f"{meta} has no cluster.id; fix or remove the file")
        stored_node = props.get("node.id", "").strip()
        if stored_node and stored_node != str(config.node_id):
            raise ConfigError(f"{meta} belongs to node.id={stored_node}, but this broker is node.id={config.node_id}")
        return cluster_id
    cluster_id = new_cluster_id()
    try:
        meta.parent.mkdir(parents=True, exist_ok=True)
        tmp = meta.with_suffix(".tmp")
        tmp.write_text(f"version=1\ncluster.id={cluster_id}\nnode.id={config.node_id}\n", encoding="utf-8")
        tmp.replace(meta)
    except OSError as exc:
        raise ConfigError(f"cannot write {meta}: {exc.strerror or exc}; check log.dirs") from None
    return cluster_id
