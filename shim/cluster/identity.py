"""The cluster's identity: its id, kept in meta.properties in the first log dir as Kafka keeps it."""

from __future__ import annotations

from pathlib import Path

from kafka_shim.shim.config.broker_config import BrokerConfig, ConfigError
from kafka_shim.shim.config.properties import parse_properties
from kafka_shim.shim.javacompat.kafka_uuid import kafka_uuid_string, random_uuid


def new_cluster_id() -> str:
    """Kafka's form (``kafka-storage random-uuid``): a random UUID as 22 characters of URL-safe base64."""
    return kafka_uuid_string(random_uuid())


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
