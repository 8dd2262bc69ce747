"""A topic's effective log settings: its config overrides over the broker's ``log.*`` keys over Kafka's defaults."""

from __future__ import annotations

from collections.abc import Mapping

from kafka_shim.protocol.records import TimestampType
from kafka_shim.shim.cluster.configs.topic_configs import broker_log_defaults, parse_topic_configs
from kafka_shim.shim.log.log_config import LogConfig


def effective_topic_values(overrides: Mapping[str, str], broker_properties: Mapping[str, str]) -> dict[str, object]:
    """Every topic key's value as the topic obeys it (overrides are already validated)."""
    return parse_topic_configs(overrides, broker_log_defaults(broker_properties))


def log_config_of(values: Mapping[str, object]) -> LogConfig:
    """The settings a partition log reads, from a topic's effective values."""
    return LogConfig(
        segment_bytes=int(values["segment.bytes"]),
        segment_ms=int(values["segment.ms"]),
        segment_index_bytes=int(values["segment.index.bytes"]),
        index_interval_bytes=int(values["index.interval.bytes"]),
        retention_ms=int(values["retention.ms"]),
        retention_bytes=int(values["retention.bytes"]),
        cleanup_policy=frozenset(values["cleanup.policy"]),
        message_timestamp_type=(
            TimestampType.LOG_APPEND_TIME if values["message.timestamp.type"] == "LogAppendTime" else TimestampType.CREATE_TIME
        ),
        flush_messages=int(values["flush.messages"]),
        flush_ms=int(values["flush.ms"]),
        min_cleanable_dirty_ratio=float(values["min.cleanable.dirty.ratio"]),
        min_compaction_lag_ms=int(values["min.compaction.lag.ms"]),
        max_compaction_lag_ms=int(values["max.compaction.lag.ms"]),
        delete_retention_ms=int(values["delete.retention.ms"]),
    )
