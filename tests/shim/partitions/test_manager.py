"""Partitions: topics created with their logs, kept across a restart when there is a data directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_shim.protocol.records import TimestampType
from kafka_shim.shim.cluster.state import ClusterState
from kafka_shim.shim.log.log_manager import LogManager
from kafka_shim.shim.log.storage import FileStorage
from kafka_shim.shim.partitions.manager import TOPICS_FILE, Partitions


def _partitions(data_dir: Path | None, props: dict[str, str] | None = None) -> Partitions:
    cluster = ClusterState(cluster_id="c", node_id=1)
    logs = LogManager(FileStorage(data_dir) if data_dir else None)
    partitions = Partitions(cluster, logs, props or {}, data_dir)
    partitions.load()
    return partitions


def test_a_created_topic_has_a_log_per_partition() -> None:
    partitions = _partitions(None)
    topic = partitions.create_topic("orders", 3, {"retention.ms": "1000"})
    assert [p.index for p in topic.partitions] == [0, 1, 2]
    assert partitions.get("orders", 2) is not None and partitions.get("orders", 3) is None
    assert partitions.get("orders", 0).log.config.retention_ms == 1000


def test_topic_configs_follow_overrides_then_broker_keys() -> None:
    partitions = _partitions(None, {"log.message.timestamp.type": "LogAppendTime", "log.segment.bytes": "2048"})
    partitions.create_topic("t", 1, {"segment.bytes": "4096"})
    config = partitions.get("t", 0).log.config
    assert config.message_timestamp_type is TimestampType.LOG_APPEND_TIME
    assert config.segment_bytes == 4096
    partitions.set_topic_configs("t", {})
    assert partitions.get("t", 0).log.config.segment_bytes == 2048


def test_topics_and_their_ids_survive_a_restart(tmp_path: Path) -> None:
    first = _partitions(tmp_path)
    created = first.create_topic("orders", 2, {"cleanup.policy": "delete"})
    first.add_partitions("orders", 4)
    first.create_topic("gone", 1)
    first.delete_topic("gone")
    first.close()
    assert (tmp_path / TOPICS_FILE).exists() and not (tmp_path / "gone-0").exists()

    second = _partitions(tmp_path)
    topic = second.cluster.topics["orders"]
    assert topic.topic_id == created.topic_id and len(topic.partitions) == 4
    assert topic.configs == {"cleanup.policy": "delete"}
    assert "gone" not in second.cluster.topics
    assert second.get("orders", 3) is not None


def test_an_unreadable_topics_file_is_refused_with_what_to_do(tmp_path: Path) -> None:
    (tmp_path / TOPICS_FILE).write_text("{not json")
    with pytest.raises(ValueError, match="fix or remove the file"):
        _partitions(tmp_path)


def test_append_listeners_hear_each_append() -> None:
    partitions = _partitions(None)
    heard: list[tuple[str, int]] = []
    partitions.add_append_listener(lambda topic, index: heard.append((topic, index)))
    partitions.appended("t", 0)
    assert heard == [("t", 0)]
