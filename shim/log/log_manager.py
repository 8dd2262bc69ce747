"""The partition logs of the broker, by (topic, partition), and the chores they share.

Kafka's counterpart: ``LogManager`` (``getOrCreateLog``, ``asyncDelete``, ``loadLogs``, ``cleanupLogs``,
``flushDirtyLogs``, ``checkpointLogStartOffsets``). Which topics exist is decided elsewhere (the cluster state); this
manager opens, creates and deletes the logs it is told about, and says which partition directories storage holds
so that the caller can match them at start.

Flush policy, as Kafka's: a log is fsynced after ``flush.messages`` (``log.flush.interval.messages``) appended
messages, and by :meth:`LogManager.flush_due` once ``flush.ms`` (``log.flush.interval.ms``) passed since its last
flush. Kafka's defaults for both are Long.MAX_VALUE: no explicit fsync at all; written bytes reach the disk when the
operating system writes its pages back, and Kafka counts on replication, not fsync, for durability. Like Kafka,
a segment is still fsynced when it is rolled and every log is flushed at a clean shutdown (:meth:`close`). After a
crash, recovery cuts whatever torn tail the last segment has.

The log start offsets that DeleteRecords moved are kept across restarts in ``log-start-offset-checkpoint`` at the
root of the log directory, in Kafka's checkpoint format (``0``, the count, then ``topic partition offset`` lines),
written by :meth:`checkpoint` (run it periodically, as Kafka's ``log.flush.start.offset.checkpoint.interval.ms``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.javacompat.kafka_uuid import kafka_uuid_string
from kafka_shim.shim.log import partition_metadata
from kafka_shim.shim.log.errors import InconsistentTopicId
from kafka_shim.shim.log.log_config import LogConfig
from kafka_shim.shim.log.partition_log import PartitionLog, wall_clock_ms
from kafka_shim.shim.log.storage import Directory, MemoryStorage, Storage

log = get_logger(__name__)

LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
_CHECKPOINT_VERSION = 0

TopicPartition = tuple[str, int]


def directory_name(topic: str, partition: int) -> str:
    """Kafka's partition directory: ``<topic>-<partition>``."""
    return f"{topic}-{partition}"


def parse_directory_name(name: str) -> TopicPartition | None:
    """The (topic, partition) a directory name stands for, or None (Kafka's ``-delete``/``-future`` dirs, others)."""
    topic, dash, number = name.rpartition("-")
    if not dash or not topic or not number.isdigit():
        return None
    return topic, int(number)


def read_offset_checkpoint(root: Directory, name: str) -> dict[TopicPartition, int]:
    """A checkpoint file in Kafka's format (``0``, the count, then ``topic partition offset`` lines); empty when
    there is none or it cannot be read (logged: Kafka stops the log directory here, kafka-shim goes on)."""
    if not root.exists(name):
        return {}
    lines = root.read(name, 0, root.size(name)).decode("utf-8", "replace").split("\n")
    try:
        if int(lines[0]) != _CHECKPOINT_VERSION:
            raise ValueError(f"version {lines[0]}")
        count = int(lines[1])
        entries = {}
        for line in lines[2 : 2 + count]:
            topic, partition, offset = line.split(" ")
            entries[(topic, int(partition))] = int(offset)
        return entries
    except (ValueError, IndexError) as exc:
        log.warning("offset_checkpoint_unreadable", file=name, reason=str(exc))
        return {}


def write_offset_checkpoint(root: Directory, name: str, entries: dict[TopicPartition, int]) -> None:
    """Replace a checkpoint file with ``entries``, atomically."""
    lines = [str(_CHECKPOINT_VERSION), str(len(entries))]
    lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(entries.items())]
    root.replace(name, ("\n".join(lines) + "\n").encode())


class LogManager:
    """Every partition log of the broker. In memory unless given a :class:`FileStorage`."""

    def __init__(self, storage: Storage | None = None, *, clock: Callable[[], int] = wall_clock_ms) -> None:
        self.storage = storage if storage is not None else MemoryStorage(clock)
        self._clock = clock
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._checkpointed = self._read_checkpoint()

    @property
    def clock(self) -> Callable[[], int]:
        """The wall clock the logs use (epoch milliseconds)."""
        return self._clock

    # -- the partitions -------------------------------------------------------------------------------------------

    def stored_partitions(self) -> list[TopicPartition]:
        """The partitions storage holds a directory for (at start: what earlier runs left)."""
        found = (parse_directory_name(name) for name in self.storage.directories())
        return sorted(tp for tp in found if tp is not None)

    def create(
        self, topic: str, partition: int, *, topic_id: uuid.UUID | None = None, config: LogConfig | None = None
    ) -> PartitionLog:
        """The log of a partition: opened (and recovered) from storage when it holds one, created otherwise.

        Call it for each partition of a topic when the topic is created and, at start, for each partition that
        exists. A directory whose ``partition.metadata`` names another topic id is refused.
        """
        key = (topic, partition)
        existing = self._logs.get(key)
        if existing is not None:
            return existing
        directory = self.storage.open(directory_name(topic, partition))
        if topic_id is not None:
            recorded = partition_metadata.read(directory)
            if recorded is not None and recorded != topic_id:
                raise InconsistentTopicId(
                    f"partition {directory.name} holds topic id {kafka_uuid_string(recorded)}, "
                    f"not {kafka_uuid_string(topic_id)}"
                )
            if recorded is None:
                partition_metadata.write(directory, topic_id)
        opened = PartitionLog.open(
            directory, config or LogConfig(), log_start_offset=self._checkpointed.get(key, 0), clock=self._clock
        )
        self._logs[key] = opened
        return opened

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def partitions(self) -> list[TopicPartition]:
        return sorted(self._logs)

    def __iter__(self) -> Iterator[tuple[TopicPartition, PartitionLog]]:
        return iter(sorted(self._logs.items()))

    def update_config(self, topic: str, config: LogConfig) -> None:
        """A topic's configs changed: its logs follow the new values from the next append or chore on."""
        for (name, _), partition_log in self._logs.items():
            if name == topic:
                partition_log.config = config

    def delete_topic(self, topic: str) -> None:
        """Drop every partition of ``topic``: its logs and their directories."""
        for key in [key for key in self._logs if key[0] == topic]:
            self._logs.pop(key).directory.close()
            self._checkpointed.pop(key, None)
        for stored_topic, partition in self.stored_partitions():
            if stored_topic == topic:
                self.storage.remove(directory_name(topic, partition))
        self.checkpoint()

    # -- chores ---------------------------------------------------------------------------------------------------

    def flush_due(self) -> int:
        """Flush the logs whose ``flush.ms`` has passed since their last flush; returns how many."""
        now = self._clock()
        due = [log_ for _, log_ in self if now - log_.last_flush_ms >= log_.config.flush_ms]
        for partition_log in due:
            partition_log.flush()
        return len(due)

    def apply_retention(self, compacted: bool = False) -> int:
        """One retention pass over the logs that are not compacted (Kafka's ``cleanupLogs``), or over the compacted
        ones (what Kafka's log cleaner deletes between cleanings, ``deletableLogs``); returns the segments deleted."""
        deleted = sum(partition_log.apply_retention() for _, partition_log in self
                      if partition_log.config.compacts == compacted)
        if deleted:
            self.checkpoint()
        return deleted

    def checkpoint(self) -> None:
        """Write ``log-start-offset-checkpoint``: the logs whose start is inside their first segment."""
        moved = {
            key: partition_log.log_start_offset
            for key, partition_log in self
            if partition_log.log_start_offset > partition_log.segments[0].base_offset
        }
        write_offset_checkpoint(self.storage.root(), LOG_START_CHECKPOINT, moved)
        self._checkpointed = moved

    def _read_checkpoint(self) -> dict[TopicPartition, int]:
        return read_offset_checkpoint(self.storage.root(), LOG_START_CHECKPOINT)

    def close(self) -> None:
        """A clean shutdown: every log flushed and closed, the log start offsets checkpointed."""
        self.checkpoint()
        for _, partition_log in self:
            partition_log.close()
        self._logs.clear()
        self.storage.close()
