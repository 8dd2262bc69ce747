"""The per-topic settings a partition log obeys, as plain values with Kafka 3.9's defaults.

Kafka's counterpart: ``LogConfig`` (storage/.../log/LogConfig.java) and the topic-level keys it reads. The names in
the comments are the topic config keys; the broker-wide ``log.*`` keys (``log.segment.bytes``, ``log.retention.ms``,
``log.flush.interval.messages``...) supply their defaults. Parsing and validating those strings is not done here:
a later task turns topic configs into this dataclass.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_shim.protocol.records import TimestampType

LONG_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class LogConfig:
    segment_bytes: int = 1024 * 1024 * 1024  # segment.bytes
    segment_ms: int = 7 * 24 * 60 * 60 * 1000  # segment.ms
    segment_index_bytes: int = 10 * 1024 * 1024  # segment.index.bytes: a full offset index rolls the segment
    index_interval_bytes: int = 4096  # index.interval.bytes
    retention_ms: int = 7 * 24 * 60 * 60 * 1000  # retention.ms; -1: no time limit
    retention_bytes: int = -1  # retention.bytes; -1: no size limit
    cleanup_policy: frozenset[str] = frozenset({"delete"})  # cleanup.policy; retention applies with "delete"
    message_timestamp_type: TimestampType = TimestampType.CREATE_TIME  # message.timestamp.type
    # flush.messages / flush.ms (log.flush.interval.messages / log.flush.interval.ms): Kafka's defaults never fsync
    # on a count or a timer; the operating system writes the pages back and replication is what keeps data safe.
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    # What the log cleaner obeys on a compacted log (log.cleaner.* keys are the broker-wide defaults).
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    max_compaction_lag_ms: int = LONG_MAX  # max.compaction.lag.ms
    delete_retention_ms: int = 24 * 60 * 60 * 1000  # delete.retention.ms: how long tombstones and markers stay

    @property
    def deletes(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def compacts(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def max_index_entries(self) -> int:
        # Kafka sizes an index to segment.index.bytes rounded down to whole 8-byte entries.
        return max(self.segment_index_bytes // 8, 1)
