"""Committed offsets per group, as Kafka 3.9's default (old, Scala) group coordinator keeps them.

Kafka's counterparts: ``GroupMetadata`` (its ``offsets`` map, ``removeOffsets``, ``removeExpiredOffsets``),
``GroupMetadataManager`` (``storeOffsets``, ``getOffsets``, ``cleanupGroupMetadata``) and the orders its Scala maps
give the answers of OffsetCommit, OffsetFetch and OffsetDelete (``javacompat.hash_orders``).

- **Commit** (``storeOffsets``): an offset whose metadata is longer than ``offset.metadata.max.bytes`` (counted in
  UTF-16 units, as Java's ``String.length``) gets OFFSET_METADATA_TOO_LARGE (12); the others are written, first to
  the sink (``__consumer_offsets`` when there is a data directory), then to memory. A sink that fails (full disk)
  answers Kafka's converted error (KAFKA_STORAGE_ERROR -> NOT_COORDINATOR) and nothing changes.
- **Fetch** (``getOffsets``): each asked partition with its offset, leader epoch and metadata, or -1 / -1 / "" when
  never committed; all partitions of the group when none are named.
- **Retention** (``removeExpiredOffsets``): an offset committed with an explicit expiry (OffsetCommit v2-v4's
  ``retention_time_ms``) expires at it; otherwise ``offsets.retention.minutes`` counts from when its group became
  Empty (a consumer group), from its commit (a group that only stores offsets), or, in a Stable consumer group
  that knows its subscriptions, from its commit for topics nobody subscribes to. Whoever owns the group decides
  which rule applies (``ExpiryRule``); this module applies it.

No wire types, no asyncio; changed only on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.records import NO_PRODUCER_EPOCH as _NO_PRODUCER_EPOCH
from kafka_shim.protocol.records import NO_PRODUCER_ID as _NO_PRODUCER_ID
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.javacompat.hash_orders import (
    scala_immutable_map_order,
    scala_mutable_map_order,
    topic_partition_hash,
)
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.javacompat.timeline_table import TimelineTableOrder
from kafka_shim.shim.log.partition_log import wall_clock_ms

log = get_logger(__name__)

TopicPartition = tuple[str, int]
NO_OFFSET = -1
NO_LEADER_EPOCH = -1
NO_METADATA = ""
_MASK = 0xFFFFFFFF
# Errors a failed append to __consumer_offsets turns into (GroupMetadataManager.maybeConvertOffsetCommitError).
_APPEND_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
}


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """One committed offset (Kafka's OffsetAndMetadata)."""

    offset: int
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str = NO_METADATA
    commit_timestamp: int = 0  # ms since the epoch
    expire_timestamp: int | None = None  # OffsetCommit v2-v4's explicit retention, else None


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    """One partition of an OffsetFetch answer."""

    offset: int = NO_OFFSET
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str = NO_METADATA
    error: int = ErrorCode.NONE


NEVER_COMMITTED = FetchedOffset()
_UNSTABLE = FetchedOffset(error=ErrorCode.UNSTABLE_OFFSET_COMMIT)


@dataclass(frozen=True, slots=True)
class ExpiryRule:
    """Which offsets of a group may expire now (GroupMetadata.removeExpiredOffsets' cases).

    ``since``: None counts from each offset's commit; a timestamp counts from it (when a consumer group became
    Empty). ``keep_topics``: topics whose offsets never expire now (a Stable group's subscriptions)."""

    since: int | None = None
    keep_topics: frozenset[str] = frozenset()


class OffsetsSink(Protocol):
    """Where committed offsets are kept across restarts (``offsets_log.OffsetsLog``)."""

    def append_offsets(self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None: ...

    def append_tombstones(self, group_id: str, partitions: Iterable[TopicPartition], *, group: bool = False) -> None: ...


class SinkError(Exception):
    """The sink could not append; ``error_code`` is the append's error (KAFKA_STORAGE_ERROR for a failing disk)."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class RecordsNotBuilt(Exception):
    """Kafka's MemoryRecordsBuilder refuses the batch before anything is written (an IllegalArgumentException, which
    Kafka answers UNKNOWN_SERVER_ERROR): a transactional commit at epoch -1 (NO_PRODUCER_EPOCH) with a producer id."""


# OffsetCommit and OffsetFetch accept the empty group id, for old clients (GroupCoordinator.isValidGroupId).
EMPTY_GROUP_ID_ALLOWED = frozenset({ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.DESCRIBE_GROUPS, ApiKey.DELETE_GROUPS})


def java_length(text: str) -> int:
    """Java's String.length: UTF-16 code units."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


class OffsetTables:
    """The new group coordinator's offsets (OffsetMetadataManager.Offsets): per group a TimelineHashMap of topics, each
    a TimelineHashMap of partitions, a put for every offset written and the emptied maps removed; an all-partitions
    OffsetFetch walks them (:mod:`..javacompat.timeline_table`)."""

    def __init__(self) -> None:
        self._groups: dict[str, tuple[TimelineTableOrder[str], dict[str, TimelineTableOrder[int]]]] = {}

    def put(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        entry = self._groups.get(group_id)
        if entry is None:
            entry = self._groups[group_id] = (TimelineTableOrder(java_string_hash), {})
        topics, by_topic = entry
        for topic, partition in partitions:
            table = by_topic.get(topic)
            if table is None:
                topics.put(topic)
                table = by_topic[topic] = TimelineTableOrder(_integer_hash)
            table.put(partition)

    def remove(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        entry = self._groups.get(group_id)
        if entry is None:
            return
        topics, by_topic = entry
        for topic, partition in partitions:
            table = by_topic.get(topic)
            if table is None:
                continue
            table.remove(partition)
            if not len(table):
                del by_topic[topic]
                topics.remove(topic)
        if not by_topic:
            del self._groups[group_id]

    def order(self, group_id: str) -> list[TopicPartition]:
        entry = self._groups.get(group_id)
        if entry is None:
            return []
        topics, by_topic = entry
        return [(topic, partition) for topic in topics.order() for partition in by_topic[topic].order()]


def _integer_hash(value: int) -> int:
    return value  # java.lang.Integer.hashCode


class OffsetStore:
    """The committed offsets of every group: group id -> {(topic, partition): OffsetAndMetadata}."""

    def __init__(self, metadata_max_bytes: int = 4096, retention_ms: int = 7 * 24 * 3600 * 1000,
                 now_ms: Callable[[], int] = wall_clock_ms, *, tables: OffsetTables | None = None) -> None:
        # ``tables``: the new coordinator's maps, whose order an all-partitions fetch then follows.
        self.tables = tables
        self.metadata_max_bytes = metadata_max_bytes
        self.retention_ms = retention_ms
        self.now_ms = now_ms
        self.sink: OffsetsSink | None = None
        self._groups: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        # TxnOffsetCommit's offsets until their transaction ends: producer id -> group -> offsets, each with the
        # order it was written in (``_written``), so that a plain commit written after it wins (Kafka compares the
        # offsets of the two records in __consumer_offsets: CommitRecordMetadataAndOffset.olderThan).
        self._pending: dict[int, dict[str, dict[TopicPartition, tuple[int, OffsetAndMetadata]]]] = {}
        self._written: dict[tuple[str, TopicPartition], int] = {}
        # The new coordinator's pending offsets per producer (OffsetMetadataManager.pendingTransactionalOffsets): a
        # commit marker applies them in these maps' order, which an all-partitions fetch then shows.
        self._pending_tables: dict[int, OffsetTables] = {}
        self._sequence = 0

    # -- reads ----------------------------------------------------------------------------------------------------

    def has_offsets(self, group_id: str) -> bool:
        return bool(self._groups.get(group_id))

    def group_ids(self) -> list[str]:
        return [g for g, offsets in self._groups.items() if offsets]

    def offsets_of(self, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        return dict(self._groups.get(group_id, {}))

    def fetch(self, group_id: str, partitions: Sequence[TopicPartition] | None,
              require_stable: bool = False) -> list[tuple[TopicPartition, FetchedOffset]]:
        """GroupMetadataManager.getOffsets, in the order of Kafka's answer: the named partitions (each once), or all
        of the group's when ``partitions`` is None; with ``require_stable`` (KIP-447), a partition with an offset
        waiting for its transaction answers UNSTABLE_OFFSET_COMMIT."""
        offsets = self._groups.get(group_id, {})
        if partitions is not None:
            keys = fetch_order(partitions)
        else:
            keys = self.tables.order(group_id) if self.tables is not None else all_offsets_order(list(offsets))
        return [(tp, _UNSTABLE if require_stable and self.has_pending(group_id, tp) else _fetched(offsets.get(tp)))
                for tp in keys]

    # -- writes ---------------------------------------------------------------------------------------------------

    def metadata_too_large(self, metadata: str) -> bool:
        return java_length(metadata) > self.metadata_max_bytes

    def commit(self, group_id: str, offsets: Sequence[tuple[TopicPartition, OffsetAndMetadata]]) -> dict[TopicPartition, int]:
        """GroupMetadataManager.storeOffsets: each partition's error code (later entries of a partition win)."""
        def write(accepted: dict[TopicPartition, OffsetAndMetadata]) -> None:
            if self.sink is not None:
                self.sink.append_offsets(group_id, accepted)
            self._groups.setdefault(group_id, {}).update(accepted)
            for tp in accepted:
                self._written[(group_id, tp)] = self._next()
            if self.tables is not None:
                self.tables.put(group_id, accepted)

        return self._store(group_id, offsets, write, "offset_commit_not_stored")

    # -- transactional offsets (TxnOffsetCommit) ------------------------------------------------------------------

    def commit_transactional(self, group_id: str, producer_id: int, producer_epoch: int,
                             offsets: Sequence[tuple[TopicPartition, OffsetAndMetadata]]) -> dict[TopicPartition, int]:
        """GroupMetadataManager.storeOffsets for a transaction: written now (a transactional batch of the producer),
        applied when the transaction's commit marker reaches the group's partition (:meth:`complete_transaction`).
        A refused append fails the producer's pending offsets of these partitions on the old coordinator
        (GroupMetadata.failPendingTxnOffsetCommit), earlier commits' included; the new one keeps them (its
        timeline state goes back to before this write)."""
        def write(accepted: dict[TopicPartition, OffsetAndMetadata]) -> None:
            if producer_epoch == _NO_PRODUCER_EPOCH and producer_id != _NO_PRODUCER_ID:
                raise RecordsNotBuilt("Invalid negative producer epoch")
            append = getattr(self.sink, "append_transactional_offsets", None) if self.sink is not None else None
            if append is not None:
                try:
                    append(group_id, producer_id, producer_epoch, accepted)
                except SinkError:
                    if self.tables is None:
                        self._fail_pending(producer_id, group_id, accepted)
                    raise
            pending = self._pending.setdefault(producer_id, {}).setdefault(group_id, {})
            for tp, o in accepted.items():
                pending[tp] = (self._next(), o)
            if self.tables is not None:
                self._pending_tables.setdefault(producer_id, OffsetTables()).put(
                    group_id, [tp for tp, _ in offsets if tp in accepted])

        return self._store(group_id, offsets, write, "txn_offset_commit_not_stored")

    def _store(self, group_id: str, offsets: Sequence[tuple[TopicPartition, OffsetAndMetadata]],
               write: Callable[[dict[TopicPartition, OffsetAndMetadata]], None], refused_event: str) -> dict[TopicPartition, int]:
        """Each partition's code: metadata past ``offset.metadata.max.bytes`` 12; the others written (the sink first:
        a refused append changes nothing) with the append's error mapped as Kafka maps it."""
        wanted = dict(offsets)
        accepted = {tp: o for tp, o in wanted.items() if not self.metadata_too_large(o.metadata)}
        result = ErrorCode.NONE
        if accepted:
            try:
                write(accepted)
            except SinkError as exc:
                result = _APPEND_ERRORS.get(exc.error_code, exc.error_code)
                log.warning(refused_event, group_id=group_id, error=str(exc), error_code=result)
        return {tp: result if tp in accepted else ErrorCode.OFFSET_METADATA_TOO_LARGE for tp in wanted}

    def complete_transaction(self, producer_id: int, committed: bool, groups: Iterable[str] | None = None) -> list[str]:
        """A transaction marker of ``producer_id`` (GroupMetadata.completePendingTxnOffsetCommit): its pending offsets
        of ``groups`` (all when None) become committed, unless a later plain commit of the partition was written, or
        are dropped on abort. The groups whose offsets changed."""
        by_group = self._pending.get(producer_id)
        if not by_group:
            return []
        done = [g for g in by_group if groups is None or g in set(groups)]
        tables = self._pending_tables.get(producer_id)
        for group_id in done:
            pending = by_group.pop(group_id)
            order = list(pending) if tables is None else [tp for tp in tables.order(group_id) if tp in pending]
            if tables is not None:
                tables.remove(group_id, list(pending))
            if not committed:
                continue
            offsets = self._groups.setdefault(group_id, {})
            for tp in order:
                written, o = pending[tp]
                if written > self._written.get((group_id, tp), -1):
                    offsets[tp] = o
                    self._written[(group_id, tp)] = written
                    if self.tables is not None:
                        self.tables.put(group_id, [tp])
            self._forget_if_empty(group_id)
        if not by_group:
            del self._pending[producer_id]
            self._pending_tables.pop(producer_id, None)
        return done

    def _fail_pending(self, producer_id: int, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        by_group = self._pending.get(producer_id, {})
        pending = by_group.get(group_id, {})
        for tp in partitions:
            pending.pop(tp, None)
        if not pending:
            by_group.pop(group_id, None)
        if not by_group:
            self._pending.pop(producer_id, None)

    def pending_groups(self, producer_id: int) -> list[str]:
        return list(self._pending.get(producer_id, {}))

    def has_pending_offsets(self, group_id: str) -> bool:
        """A transaction of the group not ended yet (GroupMetadata.pendingTransactionalOffsetCommits.nonEmpty)."""
        return any(group_id in groups for groups in self._pending.values())

    def has_pending(self, group_id: str, tp: TopicPartition) -> bool:
        """GroupMetadata.hasPendingOffsetCommitsForTopicPartition (transactional ones: plain commits never wait)."""
        return any(tp in groups.get(group_id, {}) for groups in self._pending.values())

    def load_pending(self, group_id: str, producer_id: int, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Transactional offsets read back at start whose transaction has no marker yet."""
        pending = self._pending.setdefault(producer_id, {}).setdefault(group_id, {})
        for tp, o in offsets.items():
            pending[tp] = (self._next(), o)
        if self.tables is not None:
            self._pending_tables.setdefault(producer_id, OffsetTables()).put(group_id, list(offsets))

    def _drop_pending(self, group_id: str, partitions: list[TopicPartition] | None, *, keep_entry: bool) -> None:
        """``keep_entry``: the producer's (now perhaps empty) entry stays until its transaction ends, as the old
        coordinator's pendingTransactionalOffsetCommits keeps it (and so counts the group as holding offsets)."""
        for producer_id, by_group in list(self._pending.items()):
            pending = by_group.get(group_id)
            if pending is None:
                continue
            dropped = [tp for tp in (list(pending) if partitions is None else partitions) if tp in pending]
            for tp in dropped:
                del pending[tp]
            if producer_id in self._pending_tables:
                self._pending_tables[producer_id].remove(group_id, dropped)
            if not pending and not keep_entry:
                del by_group[group_id]
            if not by_group:
                del self._pending[producer_id]
                self._pending_tables.pop(producer_id, None)

    def _next(self) -> int:
        self._sequence += 1
        return self._sequence

    def load(self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Offsets read back from the sink at start (nothing is written)."""
        if offsets:
            self._groups.setdefault(group_id, {}).update(offsets)
            if self.tables is not None:
                self.tables.put(group_id, offsets)

    def delete(self, group_id: str, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        """GroupMetadata.removeOffsets: the removed ones (tombstoned in the sink). A transaction's offsets waiting for
        those partitions go too: its commit marker no longer brings them back."""
        offsets = self._groups.get(group_id, {})
        partitions = list(dict.fromkeys(partitions))
        self._drop_pending(group_id, partitions, keep_entry=True)
        removed = {tp: offsets.pop(tp) for tp in partitions if tp in offsets}
        if self.tables is not None:
            self.tables.remove(group_id, removed)
        self._forget_if_empty(group_id)
        self._tombstone(group_id, removed)
        return removed

    def delete_group(self, group_id: str, *, generation: int = 0) -> int:
        """Every offset of a deleted group (DeleteGroups); a group that had a generation also gets its group
        metadata tombstone, as cleanupGroupMetadata writes it. The number of offsets removed. The group's
        transactional offsets still waiting are dropped (the group is gone when their marker arrives)."""
        self._drop_pending(group_id, None, keep_entry=False)
        removed = self._groups.pop(group_id, {})
        if self.tables is not None:
            self.tables.remove(group_id, removed)
        self._tombstone(group_id, removed, group=generation > 0)
        return len(removed)

    def topic_deleted(self, topic: str) -> dict[str, list[TopicPartition]]:
        """GroupCoordinator.handleDeletedPartitions: the offsets of a deleted topic go from every group."""
        gone: dict[str, list[TopicPartition]] = {}
        for group_id in list(self._groups):
            removed = self.delete(group_id, [tp for tp in self._groups[group_id] if tp[0] == topic])
            if removed:
                gone[group_id] = list(removed)
        if gone:
            log.info("offsets_of_deleted_topic_removed", topic=topic, groups=len(gone), offsets=sum(map(len, gone.values())))
        return gone

    def expire(self, group_id: str, rule: ExpiryRule | None, now: int | None = None) -> dict[TopicPartition, OffsetAndMetadata]:
        """GroupMetadata.removeExpiredOffsets for one group under ``rule`` (None: nothing of it expires now)."""
        offsets = self._groups.get(group_id)
        if not offsets or rule is None:
            return {}
        now = self.now_ms() if now is None else now
        expired = {}
        for tp, o in offsets.items():
            if tp[0] in rule.keep_topics:
                continue
            if o.expire_timestamp is not None:
                due = now >= o.expire_timestamp
            else:
                due = now - (o.commit_timestamp if rule.since is None else rule.since) >= self.retention_ms
            if due:
                expired[tp] = o
        for tp in expired:
            del offsets[tp]
        if self.tables is not None:
            self.tables.remove(group_id, expired)
        self._forget_if_empty(group_id)
        self._tombstone(group_id, expired)
        return expired

    def tombstone_group(self, group_id: str) -> None:
        """The group metadata tombstone of a group that is gone (its offsets were removed before)."""
        self._tombstone(group_id, [], group=True)

    def _forget_if_empty(self, group_id: str) -> None:
        if not self._groups.get(group_id, True):
            del self._groups[group_id]

    def _tombstone(self, group_id: str, removed: Iterable[TopicPartition], *, group: bool = False) -> None:
        removed = list(removed)
        if self.sink is None or not (removed or group):
            return
        try:  # Kafka appends tombstones with acks=0 and goes on if that fails: the next cleanup writes them again
            self.sink.append_tombstones(group_id, removed, group=group)
        except SinkError as exc:
            log.warning("offset_tombstones_not_written", group_id=group_id, error=str(exc))


def _fetched(committed: OffsetAndMetadata | None) -> FetchedOffset:
    if committed is None:
        return NEVER_COMMITTED
    return FetchedOffset(committed.offset, committed.leader_epoch, committed.metadata)


# -- Kafka's answer orders --------------------------------------------------------------------------------------------


def _topic_id_partition_hash(tp: TopicPartition) -> int:
    """TopicIdPartition.hashCode with the zero topic id (whose hash is 0), which OffsetCommit's maps key by."""
    return (31 * 31 + topic_partition_hash(tp)) & _MASK


def commit_order(partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    """The order OffsetCommit answers the partitions that reach the coordinator: a Scala mutable.HashMap keyed by
    TopicIdPartition, turned into an immutable Map (small maps keep the mutable map's order, larger are CHAMP)."""
    keys = list(dict.fromkeys(partitions))
    if len(keys) <= 4:
        return scala_mutable_map_order(keys, _topic_id_partition_hash)
    return scala_immutable_map_order(keys, _topic_id_partition_hash)


def fetch_order(partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    """getOffsets over named partitions: ``Seq.map(...).toMap``, an immutable Map keyed by TopicPartition."""
    return scala_immutable_map_order(partitions, topic_partition_hash)


def all_offsets_order(partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    """getOffsets over all of a group's offsets: a fresh mutable.HashMap's order, then an immutable Map."""
    keys = list(dict.fromkeys(partitions))
    if len(keys) <= 4:
        return scala_mutable_map_order(keys, topic_partition_hash)
    return scala_immutable_map_order(keys, topic_partition_hash)


def delete_order(partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    """handleDeleteOffsets' immutable Map (subscribed partitions first, then the deleted ones)."""
    return scala_immutable_map_order(partitions, topic_partition_hash)


def by_topic(entries: Iterable[tuple[TopicPartition, object]]) -> dict[str, list[tuple[int, object]]]:
    """Entries grouped by topic in first-appearance order, as the coordinator adapter builds its answers."""
    topics: dict[str, list[tuple[int, object]]] = {}
    for (topic, partition), value in entries:
        topics.setdefault(topic, []).append((partition, value))
    return topics
