"""Every partition this broker leads: its log and producer state, created and deleted with its topic.

Kafka's counterparts: ``ReplicaManager`` (the partitions a broker holds) and, on a single node, the part of the
KRaft controller that records topics (``ReplicationControlManager``): a topic exists once ``create_topic`` returns.
Topic checks that need Kafka's messages (names, replication factor, configs) are the caller's; this module keeps
the state consistent. With a data directory the topics (names, ids, partition counts, config overrides) are kept
in ``kafka-shim-topics.json`` at the root of ``log.dirs`` and each partition's log in Kafka's own layout, so a
restart finds everything acknowledged before it.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafka_shim.shim.cluster.state import ClusterState
from kafka_shim.shim.cluster.topics import Topic
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.javacompat.kafka_uuid import random_uuid
from kafka_shim.shim.log import leader_epoch_checkpoint
from kafka_shim.shim.log.dir_lock import DataDirLock
from kafka_shim.shim.log.log_config import LogConfig
from kafka_shim.shim.log.log_manager import LogManager
from kafka_shim.shim.log.partition_log import PartitionLog
from kafka_shim.shim.log.storage import MemoryStorage
from kafka_shim.shim.partitions.log_configs import effective_topic_values, log_config_of
from kafka_shim.shim.partitions.producer_recovery import recover_producers, save_snapshot
from kafka_shim.shim.producers.state import DEFAULT_PRODUCER_ID_EXPIRATION_MS, PartitionProducers

log = get_logger(__name__)

TOPICS_FILE = "kafka-shim-topics.json"
# Leader epoch bumps of one restart (KRaft's controller: leaderless at shutdown or fencing, re-elected at registration).
RESTART_EPOCH_BUMP = 2
_TOPICS_FILE_VERSION = 1

AppendListener = Callable[[str, int], None]
MarkerListener = Callable[[str, int, int, bool], None]


def assign_epoch(entries: list[tuple[int, int]], epoch: int, start: int) -> list[tuple[int, int]]:
    """LeaderEpochFileCache.assign: a new (epoch, start offset) entry drops the entries that are not below it in
    both (an epoch that saw no record leaves no entry)."""
    return [(e, s) for e, s in entries if e < epoch and s < start] + [(epoch, start)]


@dataclass(eq=False)
class PartitionState:
    """One partition of a topic on this broker."""

    topic: str
    index: int
    log: PartitionLog
    producers: PartitionProducers
    # Kafka's leader-epoch cache, (epoch, start offset) ascending, once the partition has had more than one leader
    # epoch (a leaderless fault, a restart); empty before: one epoch, from the log start.
    epoch_cache: list[tuple[int, int]] = field(default_factory=list)

    @property
    def last_stable_offset(self) -> int:
        """UnifiedLog.lastStableOffset: the first offset of the earliest open transaction (never below the log start
        offset, as maybeIncrementFirstUnstableOffset keeps it) when it is below the high watermark, else the high
        watermark."""
        high_watermark = self.log.high_watermark
        first_unstable = self.producers.first_unstable_offset()
        if first_unstable is None:
            return high_watermark
        first_unstable = max(first_unstable, self.log.log_start_offset)
        return first_unstable if first_unstable < high_watermark else high_watermark


class Partitions:
    """The topics' partitions. Changed only on the event loop; nothing here awaits."""

    def __init__(self, cluster: ClusterState, logs: LogManager, broker_properties: Mapping[str, str],
                 data_dir: Path | None = None, *, dir_lock: DataDirLock | None = None, min_isr_capped: bool = True) -> None:
        self.cluster = cluster
        # Partition.effectiveMinIsr (Kafka 3.7+) counts a min.insync.replicas above the replicas as the replicas;
        # an emulated older release (kafka.version) holds acks=all writes to the configured value.
        self.min_isr_capped = min_isr_capped
        self._dir_lock = dir_lock  # the data directory's .lock, released by close()
        self.logs = logs
        self.broker_properties = dict(broker_properties)
        self._topics_file = data_dir / TOPICS_FILE if data_dir is not None else None
        self._states: dict[tuple[str, int], PartitionState] = {}
        # The most partitions ever open at once: the size Kafka's table of logs (LogManager.currentLogs, a
        # ConcurrentHashMap that never shrinks) has grown to, whose order DescribeLogDirs lists them in.
        self.peak_open = 0
        self._listeners: list[AppendListener] = []
        self._deleted_listeners: list[Callable[[str], None]] = []
        self._marker_listeners: list[MarkerListener] = []

    # -- lookup -------------------------------------------------------------------------------------------------------

    def get(self, topic: str, partition: int) -> PartitionState | None:
        """The partition, or None when the topic or the partition does not exist."""
        state = self._states.get((topic, partition))
        if state is not None:
            return state
        known = self.cluster.topics.get(topic)
        if known is None or not 0 <= partition < len(known.partitions):
            return None
        return self._open(known, partition, self._log_config(known))  # a topic recorded without its logs (add_topic)

    def __iter__(self) -> Iterator[PartitionState]:
        return iter(list(self._states.values()))

    def topic_values(self, topic: str) -> dict[str, object]:
        """The topic's effective config values (override, else broker key, else Kafka's default)."""
        known = self.cluster.topics[topic]
        return effective_topic_values(known.configs, self.broker_properties)

    # -- topics -------------------------------------------------------------------------------------------------------

    def create_topic(self, name: str, num_partitions: int, configs: Mapping[str, str] | None = None, *,
                     topic_id: uuid.UUID | None = None, replicas: list[list[int]] | None = None) -> Topic:
        """Record a topic and open its partitions' logs. The caller has validated name, count, configs and the
        replicas of each partition (placed by ClusterState.placement when None)."""
        placed = replicas or self.cluster.placement(num_partitions)
        topic = Topic(name, topic_id or random_uuid(), [self.cluster.new_partition(i, placed[i]) for i in range(num_partitions)],
                      dict(configs or {}))
        self.cluster.topics[name] = topic
        config = self._log_config(topic)
        for index in range(num_partitions):
            self._open(topic, index, config)
        self._save()
        log.info("topic_created", topic=name, topic_id=str(topic.topic_id), partitions=num_partitions, configs=sorted(topic.configs))
        return topic

    def add_partitions(self, name: str, total: int) -> None:
        """Grow a topic to ``total`` partitions (CreatePartitions; the caller checked that it grows)."""
        topic = self.cluster.topics[name]
        placed = self.cluster.placement(total - len(topic.partitions), len(topic.partitions[0].replicas) if topic.partitions else 1)
        config = self._log_config(topic)
        for index in range(len(topic.partitions), total):
            topic.partitions.append(self.cluster.new_partition(index, placed[index - total]))
            self._open(topic, index, config)
        self._save()

    def set_topic_configs(self, name: str, overrides: Mapping[str, str]) -> None:
        """Replace a topic's config overrides (validated by the caller); its logs obey them from now on."""
        topic = self.cluster.topics[name]
        topic.configs = dict(overrides)
        self.logs.update_config(name, log_config_of(self.topic_values(name)))
        self._save()

    def set_broker_properties(self, properties: Mapping[str, str]) -> None:
        """New effective broker properties (a dynamic broker config changed): every topic's logs obey them now."""
        self.broker_properties = dict(properties)
        for name in list(self.cluster.topics):
            self.logs.update_config(name, log_config_of(self.topic_values(name)))

    def delete_topic(self, name: str) -> None:
        """Forget a topic and delete its logs."""
        self.cluster.topics.pop(name, None)
        gone = [key for key in self._states if key[0] == name]
        for key in gone:
            del self._states[key]
        self.logs.delete_topic(name)
        self._save()
        log.info("topic_deleted", topic=name)
        for deleted in self._deleted_listeners:
            deleted(name)  # e.g. the group coordinator drops the topic's committed offsets
        for topic, index in gone:
            # As ReplicaManager.stopPartitions completes the delayed fetches of a deleted partition: a fetch waiting
            # on it answers now (UNKNOWN_TOPIC_OR_PARTITION) rather than at the end of its max_wait_ms.
            self.appended(topic, index)

    # -- appends ------------------------------------------------------------------------------------------------------

    def add_append_listener(self, listener: AppendListener) -> None:
        """Call ``listener(topic, partition)`` after each append, and when the partition is deleted or its log start
        moves (what wakes waiting fetches: they read again and answer what changed)."""
        self._listeners.append(listener)

    def add_marker_listener(self, listener: MarkerListener) -> None:
        """Call ``listener(topic, partition, producer_id, committed)`` after each transaction marker written
        (:func:`kafka_shim.shim.partitions.transactions.write_marker`)."""
        self._marker_listeners.append(listener)

    def marker_written(self, topic: str, partition: int, producer_id: int, committed: bool) -> None:
        """Tell the marker listeners (the write path calls it once the marker is in the log)."""
        for listener in self._marker_listeners:
            listener(topic, partition, producer_id, committed)

    def add_topic_deleted_listener(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(topic)`` once a topic is deleted."""
        self._deleted_listeners.append(listener)

    def appended(self, topic: str, partition: int) -> None:
        """Tell the listeners that a partition's log grew (the append path calls it), or was cut or deleted."""
        for listener in self._listeners:
            listener(topic, partition)

    # -- start and stop -----------------------------------------------------------------------------------------------

    def load(self) -> None:
        """At start: the topics recorded in the data directory, with their logs opened (and recovered)."""
        for entry in self._read_topics_file():
            placed = self.cluster.placement(entry["partitions"])
            topic = Topic(entry["name"], uuid.UUID(entry["id"]),
                          [self.cluster.new_partition(i, placed[i]) for i in range(entry["partitions"])], dict(entry["configs"]))
            self.cluster.topics[topic.name] = topic
            config = self._log_config(topic)
            for index in range(len(topic.partitions)):
                self._restarted(topic, self._open(topic, index, config))
        stray = [tp for tp in self.logs.stored_partitions() if self.get(*tp) is None]
        if stray:
            log.warning("unknown_partition_directories", partitions=[f"{t}-{p}" for t, p in stray],
                        hint=f"{TOPICS_FILE} does not list these topics; they are not served")

    def _restarted(self, topic: Topic, state: PartitionState) -> None:
        """A restart moves every partition's leader epoch on by two, as a single-node KRaft cluster does: the
        controller takes the leadership away when the broker shuts down or is fenced (one bump) and gives it back
        when the broker registers again (another); the new epoch starts at the log end in the epoch cache
        (Partition.makeLeader, LeaderEpochFileCache.assign dropping entries that are not below it)."""
        entries = leader_epoch_checkpoint.read(state.log.directory) or [(0, state.log.log_start_offset)]
        epoch, log_end = entries[-1][0] + RESTART_EPOCH_BUMP, state.log.log_end_offset
        state.epoch_cache = assign_epoch(entries, epoch, log_end)
        topic.partitions[state.index].leader_epoch = epoch
        self.save_epochs(state)

    def save_epochs(self, state: PartitionState) -> None:
        """Keep the partition's leader-epoch cache in its directory (with a data directory), as Kafka's
        leader-epoch-checkpoint, so that the next start knows the epochs."""
        if self._topics_file is not None and state.epoch_cache:
            leader_epoch_checkpoint.write(state.log.directory, state.epoch_cache)

    def close(self) -> None:
        if not isinstance(self.logs.storage, MemoryStorage):  # in memory no next start needs the snapshot
            for state in self._states.values():
                save_snapshot(state.log, state.producers)  # the next start need not replay the whole log
        self._states.clear()
        self.logs.close()
        if self._dir_lock is not None:
            self._dir_lock.release()

    # -- inside -------------------------------------------------------------------------------------------------------

    def _log_config(self, topic: Topic) -> LogConfig:
        return log_config_of(effective_topic_values(topic.configs, self.broker_properties))

    def _open(self, topic: Topic, index: int, config: LogConfig) -> PartitionState:
        # ``config``: the topic's, parsed once by callers opening many partitions (parsing it was most of an open).
        partition_log = self.logs.create(topic.name, index, topic_id=topic.topic_id, config=config)
        expiration_ms = int(self.broker_properties.get("producer.id.expiration.ms", DEFAULT_PRODUCER_ID_EXPIRATION_MS))
        state = PartitionState(topic.name, index, partition_log,
                               recover_producers(partition_log, f"{topic.name}-{index}", expiration_ms))
        self._states[(topic.name, index)] = state
        self.peak_open = max(self.peak_open, len(self._states))
        return state

    def _save(self) -> None:
        if self._topics_file is None:
            return
        document = {
            "version": _TOPICS_FILE_VERSION,
            "topics": [
                {"name": t.name, "id": str(t.topic_id), "partitions": len(t.partitions), "configs": t.configs}
                for t in self.cluster.topics.values()
            ],
        }
        tmp = self._topics_file.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=1)
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(self._topics_file)

    def _read_topics_file(self) -> list[dict]:
        if self._topics_file is None or not self._topics_file.exists():
            return []
        try:
            document = json.loads(self._topics_file.read_text(encoding="utf-8"))
            if document.get("version") != _TOPICS_FILE_VERSION:
                raise ValueError(f"version {document.get('version')!r}, expected {_TOPICS_FILE_VERSION}")
            return list(document["topics"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"cannot read {self._topics_file}: {exc}; fix or remove the file") from None
