"""The group coordinator of a single-broker Kafka 3.9 (GroupCoordinatorService / GroupMetadataManager on one node).

Every group lives here, whatever its protocol: ``groups`` maps a group id to a classic group (``classic.py``, the
JoinGroup/SyncGroup state table) or a consumer group (``consumer.py``, KIP-848), never both at once. Committed
offsets are kept beside them (``offsets.py``) and written to ``__consumer_offsets`` as Kafka writes them. The
handlers call this class with plain values and turn its answers into wire messages; nothing here knows a socket.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.groups.admin_views import (
    CLASSIC,
    CONSUMER,
    DEAD,
    EMPTY,
    NO_PROTOCOL,
    NO_PROTOCOL_TYPE,
    STABLE,
    GroupCacheOrder,
    GroupOverview,
    GroupSummary,
    MemberSummary,
    ShardedGroupOrder,
    members_in_kafka_order,
)
from kafka_shim.shim.groups.classic import ClassicGroup, ClassicMember
from kafka_shim.shim.groups.classic_coordinator import ClassicCoordinator
from kafka_shim.shim.groups.consumer import ConsumerGroup, ConsumerGroupManager
from kafka_shim.shim.groups.consumer_records import ConsumerGroupRecorder
from kafka_shim.shim.groups.consumer_records import restore as restore_consumer_group
from kafka_shim.shim.groups.offsets import (
    EMPTY_GROUP_ID_ALLOWED,
    ExpiryRule,
    FetchedOffset,
    OffsetAndMetadata,
    OffsetStore,
    OffsetTables,
    RecordsNotBuilt,
    SinkError,
    TopicPartition,
    commit_order,
    delete_order,
)
from kafka_shim.shim.groups.offsets_log import GroupRecord, Loaded, MemberRecord, OffsetsLog, OffsetsTopic
from kafka_shim.shim.groups.offsets_log import partition_for as offsets_partition_for
from kafka_shim.shim.groups.settings import GroupSettings
from kafka_shim.shim.groups.timers import LoopScheduler, Scheduler
from kafka_shim.shim.javacompat.hash_orders import scala_mutable_map_order
from kafka_shim.shim.javacompat.java_hash import java_order, java_string_hash
from kafka_shim.shim.javacompat.strings import java_trim

_log = get_logger("kafka_shim.groups")

log = get_logger(__name__)


class GroupCoordinator:
    def __init__(self, settings: GroupSettings, clock: Callable[[], float] = time.monotonic,
                 scheduler: Scheduler | None = None) -> None:
        self.settings = settings
        self._deleted_with_pending: set[str] = set()  # new coordinator: groups cleaned up while a transaction was open
        self.clock = clock
        # group id -> its group (classic or consumer protocol).
        self.groups: dict[str, Any] = {}
        # Kafka's group cache as ListGroups iterates it. Its table grows with the groups held and never shrinks, so
        # the groups are shown to it before any leaves (``_note_groups_held``), not only when ListGroups asks.
        # The new coordinator (Kafka 3.9 with the consumer protocol on) keeps per-shard tables, walked shard by shard.
        self._group_cache: GroupCacheOrder | ShardedGroupOrder = (
            ShardedGroupOrder(settings.offsets_topic_num_partitions) if settings.new_coordinator else GroupCacheOrder())
        # Committed offsets (offsets.py), written to __consumer_offsets once the Broker attaches it.
        self.offsets = OffsetStore(settings.offset_metadata_max_bytes, settings.offsets_retention_minutes * 60_000,
                                   tables=OffsetTables() if settings.new_coordinator else None)
        self.offsets_log: OffsetsLog | None = None
        self.consumer_recorder: ConsumerGroupRecorder | None = None
        self._offsets_topic: OffsetsTopic | None = None
        self._expiry_timer: asyncio.TimerHandle | None = None
        # --- classic protocol (classic.py, classic_coordinator.py) ---
        self.scheduler: Scheduler = scheduler if scheduler is not None else LoopScheduler()
        self.classic = ClassicCoordinator(self.groups, settings, self.scheduler)
        # Where Kafka's storeGroup writes a group's metadata record, kafka-shim writes it to __consumer_offsets too.
        self.classic.on_group_stored = self._store_classic_group

    def close(self) -> None:
        """Stop the timers; called once when the broker stops."""
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None
        self.classic.close()

    # -- committed offsets (OffsetCommit, OffsetFetch, OffsetDelete; GroupCoordinator.scala's offset methods) -----------

    def attach_offsets_topic(self, topic: OffsetsTopic, *, persist: bool) -> None:
        """The Broker hands over ``__consumer_offsets``: whether it exists decides whether this broker coordinates
        groups (NOT_COORDINATOR before it does, as in Kafka); with ``persist`` (the broker's choice, in memory too)
        offsets and group metadata are written to it and ``load_offsets`` reads them back."""
        self._offsets_topic = topic
        self.offsets_log = OffsetsLog(topic, self.offsets.now_ms) if persist else None
        self.offsets.sink = self.offsets_log
        # KIP-848 groups: their records follow each change (consumer_records.py), as the new coordinator writes them.
        self.consumer_recorder = ConsumerGroupRecorder(self.offsets_log.append_records) if persist else None
        self.consumer.on_changed = self._store_consumer_group if persist else None

    def _store_consumer_group(self, group: ConsumerGroup) -> None:
        if self.consumer_recorder is None:
            return
        try:
            self.consumer_recorder.sync(group)
        except SinkError as exc:  # the group goes on in memory; only its restart state is lost
            log.error("consumer_group_records_not_stored", group_id=group.group_id, epoch=group.group_epoch, error=str(exc))

    def _forget_consumer_group(self, group_id: str) -> None:
        if self.consumer_recorder is None:
            return
        try:
            self.consumer_recorder.deleted(group_id)
        except SinkError as exc:
            log.error("consumer_group_tombstones_not_stored", group_id=group_id, error=str(exc))

    def offsets_status(self, group_id: str, api_key: int, local: bool = True) -> int:
        """GroupCoordinator.validateGroupStatus: INVALID_GROUP_ID (an empty id is fine for OffsetCommit/OffsetFetch),
        then NOT_COORDINATOR while ``__consumer_offsets`` does not exist."""
        if group_id is None or (group_id == "" and api_key not in EMPTY_GROUP_ID_ALLOWED):
            return ErrorCode.INVALID_GROUP_ID
        if not local or (self._offsets_topic is not None and self._offsets_topic.partition_count() is None):
            return ErrorCode.NOT_COORDINATOR  # another node of the cluster coordinates it, or nobody yet
        return ErrorCode.NONE

    def commit_offsets(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int,
                       offsets: Sequence[tuple[TopicPartition, OffsetAndMetadata]], api_version: int,
                       local: bool = True) -> list[tuple[TopicPartition, int]]:
        """GroupCoordinator.handleCommitOffsets: each partition's error, in Kafka's answer order (the new coordinator's:
        the request's, a partition named twice answered twice)."""
        order = [tp for tp, _ in offsets] if self.settings.new_coordinator else commit_order(tp for tp, _ in offsets)
        error = self.commit_error(group_id, member_id, group_instance_id, generation_id, api_version, local)
        if error != ErrorCode.NONE:
            return [(tp, error) for tp in order]
        stored = self.offsets.commit(group_id, offsets)
        return [(tp, stored[tp]) for tp in order]

    def commit_error(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int,
                     api_version: int, local: bool = True) -> int:
        """The group's error for an OffsetCommit (its status, then the member checks), 0 when offsets may be stored.
        The new coordinator throws it, and KafkaApis then answers it on every partition of the request."""
        error = self.offsets_status(group_id, ApiKey.OFFSET_COMMIT, local)
        if error == ErrorCode.NONE:
            error = self._validate_offset_commit(group_id, generation_id, member_id, group_instance_id, api_version)
        return error

    def commit_transactional_offsets(self, group_id: str, member_id: str, group_instance_id: str | None,
                                     generation_id: int, producer_id: int, producer_epoch: int,
                                     offsets: Sequence[tuple[TopicPartition, OffsetAndMetadata]], *,
                                     verified: int = ErrorCode.NONE, local: bool = True) -> list[tuple[TopicPartition, int]]:
        """GroupCoordinator.handleTxnCommitOffsets: the group's status, the transaction verification's error
        (``verified``, already converted by the caller), the member checks of a transactional commit, then the
        offsets wait in the store for the transaction's marker. The old coordinator creates a missing group before
        the verification (it stays, Empty, when that fails); the new one only for a commit without a generation.
        The new coordinator answers in request order, a repeated partition again (commitTransactionalOffset)."""
        order = [tp for tp, _ in offsets] if self.settings.new_coordinator else commit_order(tp for tp, _ in offsets)
        error = self.offsets_status(group_id, ApiKey.TXN_OFFSET_COMMIT, local)
        if error == ErrorCode.NONE and not self.settings.new_coordinator:
            self.classic.simple_group(group_id)
        if error == ErrorCode.NONE:
            error = verified
        if error == ErrorCode.NONE:
            error = self.validate_txn_offset_commit(group_id, generation_id, member_id, group_instance_id)
        if error != ErrorCode.NONE:
            return [(tp, error) for tp in order]
        try:
            stored = self.offsets.commit_transactional(group_id, producer_id, producer_epoch, offsets)
        except RecordsNotBuilt:
            if not self.settings.new_coordinator:
                raise  # the old coordinator throws out of the request (the handler answers it whole)
            # CoordinatorRuntime fails the write; GroupCoordinatorService answers each of its partitions.
            return [(tp, ErrorCode.UNKNOWN_SERVER_ERROR) for tp in order]
        return [(tp, stored[tp]) for tp in order]

    def complete_transaction(self, producer_id: int, committed: bool, offsets_partition: int | None = None) -> None:
        """A transaction marker reached ``__consumer_offsets`` partition ``offsets_partition`` (None: every partition):
        the producer's pending offsets of the groups kept there are applied or dropped
        (GroupMetadataManager.scheduleHandleTxnCompletion)."""
        groups = self.offsets.pending_groups(producer_id)
        if offsets_partition is not None and self._offsets_topic is not None:
            count = self._offsets_topic.partition_count()
            if count:
                groups = [g for g in groups if offsets_partition_for(g, count) == offsets_partition]
        orphaned = [g for g in groups if g in self._deleted_with_pending and g not in self.groups]
        if orphaned:
            self.offsets.complete_transaction(producer_id, False, orphaned)
            self._deleted_with_pending.difference_update(orphaned)
            groups = [g for g in groups if g not in orphaned]
        done = self.offsets.complete_transaction(producer_id, committed, groups)
        if done:
            log.debug("transactional_offsets_completed", producer_id=producer_id, committed=committed, groups=done)

    def fetch_offsets(self, group_id: str, partitions: Sequence[TopicPartition] | None, require_stable: bool = False,
                      member: tuple[str | None, int] | None = None, local: bool = True) -> tuple[int, list[tuple[TopicPartition, FetchedOffset]]]:
        """GroupCoordinator.handleFetchOffsets: the group's error, or its offsets in Kafka's order. Plain commits are
        written before they are answered, so only a transaction's offsets are ever pending (``require_stable``)."""
        error = self.offsets_status(group_id, ApiKey.OFFSET_FETCH, local)
        if error == ErrorCode.NONE and member is not None and self.consumer_group(group_id) is not None:
            error = self.validate_consumer_offset_fetch(group_id, *member)  # v9: a KIP-848 member's id and epoch
        if error != ErrorCode.NONE:
            return error, []
        return ErrorCode.NONE, self.offsets.fetch(group_id, partitions, require_stable)

    def delete_offsets(self, group_id: str, partitions: Sequence[TopicPartition],
                       local: bool = True) -> tuple[int, list[tuple[TopicPartition, int]]]:
        """GroupCoordinator.handleDeleteOffsets: a group error, or each partition's (86 for topics the members
        consume, else removed)."""
        error = self.offsets_status(group_id, ApiKey.OFFSET_DELETE, local)
        if error != ErrorCode.NONE:
            return error, []
        group = self.groups.get(group_id)
        state = getattr(group, "state", "Dead")
        if group is None or state == "Dead":
            return ErrorCode.GROUP_ID_NOT_FOUND, []
        consumed: list[TopicPartition] = []
        if state == "Empty":
            eligible = list(partitions)
        elif isinstance(group, ConsumerGroup) or (
                state in ("PreparingRebalance", "CompletingRebalance", "Stable") and getattr(group, "protocol_type", None) == "consumer"):
            # A KIP-848 group allows it in every state (ConsumerGroup.validateOffsetDelete), Assigning and Reconciling too.
            subscribed = group.subscribed_topics()  # None: unknown, so every topic counts as consumed (Kafka's caution)
            consumed = [tp for tp in partitions if subscribed is None or tp[0] in subscribed]
            eligible = [tp for tp in partitions if not (subscribed is None or tp[0] in subscribed)]
        else:
            return ErrorCode.NON_EMPTY_GROUP, []
        if eligible:
            self._note_groups_held()
            self.offsets.delete(group_id, eligible)
            self._drop_group_if_done_now(group_id)
        errors = {tp: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC for tp in consumed} | {tp: ErrorCode.NONE for tp in eligible}
        if self.settings.new_coordinator:  # OffsetMetadataManager.deleteOffsets: as asked, a repeated one again
            return ErrorCode.NONE, [(tp, errors[tp]) for tp in partitions]
        return ErrorCode.NONE, [(tp, errors[tp]) for tp in delete_order([*consumed, *eligible])]

    def topic_deleted(self, topic: str) -> None:
        """The offsets of a deleted topic go (GroupCoordinator.handleDeletedPartitions); groups left Empty without
        offsets go with them."""
        self._note_groups_held()
        emptied = list(self.offsets.topic_deleted(topic))
        # The old coordinator's cleanupGroupMetadata pass here runs over every group it holds, so any Empty group
        # without offsets goes, not only one that lost offsets of this topic (e.g. one whose transaction's offsets
        # were aborted, or made by a JoinGroup that never got a member).
        for group_id in emptied if self.settings.new_coordinator else list(self.groups):
            self._drop_group_if_done_now(group_id)

    def expire_offsets(self) -> int:
        """One pass of ``offsets.retention.minutes`` (GroupMetadataManager.cleanupGroupMetadata): the number of offsets
        removed."""
        now = self.offsets.now_ms()
        removed = 0
        self._note_groups_held()
        for group_id in list(self.groups):
            removed += len(self.offsets.expire(group_id, self._expiry_rule(self.groups[group_id]), now))
            self._drop_group_if_done(group_id)
        if removed:
            log.info("offsets_expired", count=removed)
        return removed

    def record_group(self, group_id: str, group: GroupRecord) -> None:
        """Keep a classic group's metadata in ``__consumer_offsets`` (GroupMetadataManager.storeGroup), when the topic
        is attached with ``persist``; for the classic protocol's rebalance and sync steps to call. Raises SinkError when the
        append fails (Kafka answers it as storeGroup's converted error)."""
        if self.offsets_log is not None:
            self.offsets_log.append_group(group_id, group)

    def _store_classic_group(self, group: ClassicGroup) -> None:
        record = self.group_record_of(group, {m.member_id: m.assignment for m in group.members.values()})
        try:
            self.record_group(group.group_id, record)
        except SinkError as exc:  # the group goes on in memory; only its restart state is lost (Kafka logs it too)
            log.error("group_metadata_not_stored", group_id=group.group_id, generation_id=group.generation_id, error=str(exc))

    def load_offsets(self) -> Loaded | None:
        """At start: the committed offsets (of a data directory's logs) read back into the store; groups that only stored
        offsets come back as Empty groups (as Kafka loads them). The group metadata records are returned for the
        classic protocol to restore its groups."""
        if self.offsets_log is None:
            return None
        loaded = self.offsets_log.load()
        for group_id, offsets in loaded.offsets.items():
            self.offsets.load(group_id, offsets)
            if offsets and group_id not in loaded.groups:
                self.groups.setdefault(group_id, self._new_simple_group(group_id))
        for group_id, record in loaded.groups.items():
            if group_id not in self.groups:
                self.classic.loaded(self._restore_group(group_id, record))
        for group_id, records in loaded.consumer_groups.items():
            self._load_consumer_group(group_id, records)
        for producer_id, by_group in loaded.pending.items():
            for group_id, offsets in by_group.items():
                self.offsets.load_pending(group_id, producer_id, offsets)
        log.info("offsets_loaded", groups=len(loaded.offsets), offsets=sum(map(len, loaded.offsets.values())))
        return loaded

    def _load_consumer_group(self, group_id: str, records: dict[bytes, bytes]) -> None:
        """GroupMetadataManager.replay + onLoaded for a KIP-848 group: it comes back with its epochs, members and
        assignments; its members must heartbeat within their session timeout. A group of that id written later in
        the classic format wins (kafka-shim writes one only after the consumer group was deleted)."""
        try:
            group = restore_consumer_group(group_id, records)
        except (ValueError, struct.error, IndexError) as exc:
            log.warning("unreadable_consumer_group_records", group_id=group_id, error=str(exc),
                        hint="the group is not restored; its members rejoin with epoch 0")
            return
        if self.consumer_recorder is not None:
            self.consumer_recorder.prime(group_id, records)
        if group is None or (isinstance(self.groups.get(group_id), ClassicGroup) and self.groups[group_id].members):
            return
        self.consumer.loaded(group)

    def start_offsets_expiry(self) -> None:
        """Run ``expire_offsets`` every ``offsets.retention.check.interval.ms`` on the running loop until ``close``."""
        loop = asyncio.get_running_loop()
        interval = max(self.settings.offsets_retention_check_interval_ms, 1) / 1000

        def tick() -> None:
            try:
                self.expire_offsets()
            except Exception as exc:  # one failed pass must not end the chore
                log.warning("offsets_expiry_failed", error=str(exc))
            self._expiry_timer = loop.call_later(interval, tick)

        self._expiry_timer = loop.call_later(interval, tick)

    def _expiry_rule(self, group: Any) -> ExpiryRule | None:
        """GroupMetadata.removeExpiredOffsets' cases for the group's protocol and state."""
        protocol_type = getattr(group, "protocol_type", None) or None
        state = getattr(group, "state", "Empty")
        if protocol_type is None:
            return ExpiryRule()  # a group that only stores offsets: from each commit
        if state == "Empty":
            return ExpiryRule(since=self._state_since_ms(group))
        if protocol_type == "consumer" and state == "Stable":
            subscribed = group.subscribed_topics()
            if subscribed is not None:
                return ExpiryRule(keep_topics=frozenset(subscribed))
        return None

    def _state_since_ms(self, group: Any) -> int | None:
        """When the group entered its state, in wall-clock ms (commit timestamps are wall-clock, as in Kafka); a
        group timed on the loop's clock (``state_timestamp_ms``) is converted through the scheduler's now."""
        since = getattr(group, "current_state_timestamp", None)
        if since is not None:
            return since if since >= 0 else None
        loop_ms, scheduler = getattr(group, "state_timestamp_ms", None), getattr(self, "scheduler", None)
        if loop_ms is None or scheduler is None:
            return None
        return self.offsets.now_ms() - (scheduler.now_ms() - loop_ms)

    def _drop_group_if_done_now(self, group_id: str) -> None:
        """After offsets were removed: the old coordinator drops a group left Empty without offsets at once; the new
        one (GroupCoordinatorShard) only writes the offsets' tombstones, and the group stays until the next
        cleanupGroupMetadata pass (``offsets.retention.check.interval.ms``) finds it empty."""
        if not self.settings.new_coordinator:
            self._drop_group_if_done(group_id)

    def _drop_group_if_done(self, group_id: str) -> None:
        """cleanupGroupMetadata: an Empty group without offsets becomes Dead and is forgotten; one that had a
        generation gets its group metadata tombstone."""
        group = self.groups.get(group_id)
        if group is None or getattr(group, "state", None) != "Empty" or self.offsets.has_offsets(group_id):
            return
        if self.offsets.has_pending_offsets(group_id):
            if not self.settings.new_coordinator:
                return  # GroupMetadata.hasOffsets counts a transaction's offsets still waiting
            # The new coordinator deletes the group all the same; offsets its transaction commits later are kept
            # under no group, which OffsetFetch and ListGroups never show.
            self._deleted_with_pending.add(group_id)
        del self.groups[group_id]
        if isinstance(group, ConsumerGroup):  # the new coordinator's cleanup writes the group's tombstones
            group.transition_to(DEAD)
            self._forget_consumer_group(group_id)
            return
        group.transition_to("Dead", self.scheduler.now_ms())
        if getattr(group, "generation_id", 0) > 0:
            self.offsets.tombstone_group(group_id)

    def group_record_of(self, group: ClassicGroup, assignment: dict[str, bytes]) -> GroupRecord:
        """GroupMetadataManager.groupMetadataValue's content for a classic group and its members' assignments (for
        ``record_group``): the state timestamp in wall-clock ms, each member's metadata of the chosen protocol."""
        members = tuple(
            MemberRecord(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms, m.session_timeout_ms,
                         m.metadata(group.protocol_name) if group.protocol_name else b"", assignment.get(m.member_id, b""))
            for m in group.members.values())
        return GroupRecord(group.protocol_type or "", group.generation_id, group.protocol_name, group.leader_id,
                           self._state_since_ms(group) or -1, members)

    def _validate_offset_commit(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                                api_version: int) -> int:
        if self.consumer_group(group_id) is not None:  # KIP-848 members commit with their member epoch
            return self.validate_consumer_offset_commit(group_id, member_id, generation_id, api_version)
        return self.validate_classic_offset_commit(group_id, generation_id, member_id, group_instance_id, api_version)

    def _new_simple_group(self, group_id: str) -> ClassicGroup:
        """A group loaded with offsets and no metadata: Empty, no protocol, generation 0, its state starting now."""
        return ClassicGroup(group_id, self.scheduler.now_ms(), new_coordinator=self.settings.new_coordinator)

    def _restore_group(self, group_id: str, record: GroupRecord) -> ClassicGroup:
        """A group read back from its GroupMetadataValue, as GroupMetadata.loadGroup rebuilds it: its generation,
        protocol, leader and members with their subscriptions and assignments, Stable when it has members (Empty
        otherwise), with the time it entered its state. The members' sessions start again now: those that do not
        heartbeat within their session timeout are removed and the others rebalance (classic ``loaded``)."""
        group = self._new_simple_group(group_id)
        group.protocol_type = record.protocol_type or None
        group.protocol_name = record.protocol if record.members else None
        group.generation_id = record.generation
        for m in record.members:
            member = ClassicMember(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                   m.session_timeout_ms, record.protocol_type, [(record.protocol or "", m.subscription)],
                                   assignment=m.assignment)
            group.add(member, None)
        if record.members:
            group.leader_id = record.leader
            group.state = STABLE
        if record.current_state_timestamp >= 0:
            group.state_timestamp_ms = self.scheduler.now_ms() - (self.offsets.now_ms() - record.current_state_timestamp)
        return group

    # --- classic protocol: the interface the offsets and admin parts use ---

    def classic_group(self, group_id: str) -> ClassicGroup | None:
        return self.classic.group(group_id)

    def validate_classic_offset_commit(self, group_id: str, generation_id: int, member_id: str,
                                       group_instance_id: str | None, api_version: int) -> int:
        """The error code of Kafka's member checks for an OffsetCommit to a classic group, 0 when it may be stored.

        Kafka checks generation and member whatever the version (v0-1 carry -1 / "" when the client has none, which
        is the "simple" consumer's case). With the consumer protocol on, Kafka 3.9 runs its new group coordinator,
        whose OffsetMetadataManager answers a commit with a generation to a group that does not exist with
        GROUP_ID_NOT_FOUND from v9 on (ILLEGAL_GENERATION before, as the old coordinator does at every version)."""
        if (api_version >= 9 and generation_id >= 0 and self.settings.consumer_protocol_enabled
                and group_id not in self.groups):
            return ErrorCode.GROUP_ID_NOT_FOUND
        return self.classic.validate_offset_commit(group_id, generation_id, member_id, group_instance_id)

    def validate_txn_offset_commit(self, group_id: str, generation_id: int, member_id: str,
                                   group_instance_id: str | None) -> int:
        """TxnOffsetCommit's member checks. The new coordinator (OffsetMetadataManager.validateTransactionalOffsetCommit):
        a missing group is a simple classic group without a generation, else ILLEGAL_GENERATION; a consumer group
        checks the member and its epoch (ConsumerGroup.validateOffsetCommit), a stale epoch answered as
        ILLEGAL_GENERATION."""
        if self.settings.new_coordinator:
            consumer_group = self.consumer_group(group_id)
            if consumer_group is not None:
                error = self.consumer.validate_offset_commit(consumer_group, member_id, generation_id, transactional=True)
                return ErrorCode.ILLEGAL_GENERATION if error == ErrorCode.STALE_MEMBER_EPOCH else error
            if self.classic.group(group_id) is None:
                if generation_id >= 0:
                    return ErrorCode.ILLEGAL_GENERATION
        group = self.classic.simple_group(group_id)
        assert group is not None
        return self.classic.validate_txn_offset_commit(group, generation_id, member_id, group_instance_id)

    # -- consumer groups (KIP-848; shim/groups/consumer.py) -----------------------------------------------

    @property
    def consumer(self) -> ConsumerGroupManager:
        """The consumer-protocol half of the coordinator, over the same ``groups`` map."""
        manager = self.__dict__.get("_consumer")
        if manager is None:
            manager = self.__dict__["_consumer"] = ConsumerGroupManager(self.groups, self.settings, self.clock, self.scheduler)
        return manager

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group of that id (its expired members fenced first), or None (absent or classic)."""
        return self.consumer.group(group_id)

    def validate_consumer_offset_commit(self, group_id: str, member_id: str, member_epoch: int, api_version: int = 9) -> int:
        """OffsetCommit against a consumer group (ConsumerGroup.validateOffsetCommit): 0 when it may go on, else
        UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, or UNSUPPORTED_VERSION for a consumer-protocol member below v9."""
        group = self.consumer_group(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        return self.consumer.validate_offset_commit(group, member_id, member_epoch, api_version)

    def validate_consumer_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        """OffsetFetch v9 with a member id/epoch against a consumer group (ConsumerGroup.validateOffsetFetch)."""
        group = self.consumer_group(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        return self.consumer.validate_offset_fetch(group, member_id, member_epoch)

    def release_empty_consumer_group(self, group_id: str) -> bool:
        """A JoinGroup (classic protocol) for the id of an *empty* consumer group: Kafka 3.9's new coordinator deletes
        that group and goes on with a classic one (maybeDeleteEmptyConsumerGroup). True when it was dropped. For a
        non-empty consumer group 3.9 takes the JoinGroup into the consumer group as a classic-protocol member,
        which kafka-shim does not do (see README)."""
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup) and group.is_empty():
            self._note_groups_held()
            del self.groups[group_id]
            self._forget_consumer_group(group_id)
            return True
        return False

    def consumer_groups(self) -> list[ConsumerGroup]:
        """Every consumer group, its expired members fenced first (for ListGroups-like views of all groups)."""
        self.consumer.expire_all()
        return [group for group in self.groups.values() if isinstance(group, ConsumerGroup)]

    # -- group administration: DescribeGroups, ListGroups, DeleteGroups (the groupadmin section) ---------------------
    # Kafka 3.9's old coordinator (GroupCoordinator.handleDescribeGroup / handleListGroups / handleDeleteGroups). A
    # group is "local" once this broker leads its __consumer_offsets partition; before that (no group coordinator
    # asked for yet) Kafka answers NOT_COORDINATOR, which the handler decides through ``is_local``.

    def describe_group(self, group_id: str, is_local: Callable[[str], bool]) -> GroupSummary:
        """GroupCoordinator.handleDescribeGroup: the group's summary, Dead for an unknown one."""
        if not is_local(group_id):
            return GroupSummary(group_id, ErrorCode.NOT_COORDINATOR)
        group = self._admin_group(group_id)
        if group is None:
            return GroupSummary(group_id, state=DEAD)
        if not self._is_classic(group):
            # Only the new coordinator holds consumer groups; its DescribeGroups shows them as Dead (not classic).
            return GroupSummary(group_id, state=DEAD)
        protocol_type = group.protocol_type or NO_PROTOCOL_TYPE
        members = group.members
        order = java_order(list(members)) if self.settings.new_coordinator else members_in_kafka_order(members)
        if group.state == STABLE:
            protocol = group.protocol_name or NO_PROTOCOL
            return GroupSummary(group_id, state=group.state, protocol_type=protocol_type, protocol=protocol,
                                members=[_member_summary(members[m], protocol) for m in order])
        # Outside Stable no metadata is shown; the new coordinator (ClassicGroupMember.describeNoMetadata) still shows
        # each member's last assignment, which a rebalance from Stable keeps until the next SyncGroup.
        return GroupSummary(group_id, state=group.state, protocol_type=protocol_type,
                            members=[_member_summary(members[m], None, with_assignment=self.settings.new_coordinator)
                                     for m in order])

    def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()) -> list[GroupOverview]:
        """GroupCoordinator.handleListGroups: every group held, filtered by state (case-insensitive) and type; the
        old coordinator holds only classic groups, so a type filter without ``classic`` lists nothing."""
        # The new coordinator also trims each state name (String.trim: code points up to U+0020).
        wanted_states = {java_trim(s.lower()) if self.settings.new_coordinator else s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        listed = []
        if self.settings.consumer_protocol_enabled:
            self.consumer_groups()  # fences expired consumer-group members (a group may go Empty)
        for group_id in self._note_groups_held():
            group = self._admin_group(group_id)
            overview = self._overview(group_id, group)
            if wanted_states and overview.state.lower() not in wanted_states:
                continue
            if wanted_types and overview.group_type not in wanted_types:
                continue
            listed.append(overview)
        return listed

    def delete_groups(self, group_ids: Iterable[str], is_local: Callable[[str], bool] = lambda _: True) -> dict[str, int]:
        """GroupCoordinator.handleDeleteGroups: each distinct group's error code, in Kafka's (Scala mutable.HashMap)
        order. An Empty group goes Dead, leaves the coordinator and loses its committed offsets; a group with members
        is NON_EMPTY_GROUP, an unknown (or Dead) one GROUP_ID_NOT_FOUND."""
        errors: dict[str, int] = {}
        for group_id in dict.fromkeys(group_ids):
            if not is_local(group_id):
                errors[group_id] = ErrorCode.NOT_COORDINATOR
                continue
            group = self._admin_group(group_id)
            state = None if group is None else self._overview(group_id, group).state
            if state is None or state == DEAD:
                errors[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif state == EMPTY:
                errors[group_id] = ErrorCode.NONE
            else:
                errors[group_id] = ErrorCode.NON_EMPTY_GROUP
        deleted = [g for g, code in errors.items() if code == ErrorCode.NONE]
        if deleted:
            self._note_groups_held()
            removed = sum(self._remove_group(g, self._admin_group(g)) for g in deleted)
            _log.info("groups_deleted", groups=deleted, offsets_removed=removed)
        return {group_id: errors[group_id] for group_id in scala_mutable_map_order(errors, java_string_hash)}

    def _admin_group(self, group_id: str) -> Any:
        """The group held under this id; a group known only by its committed offsets (as Kafka loads one from
        __consumer_offsets, or a simple consumer's commits) is an Empty classic group without protocol type."""
        group = self.groups.get(group_id)
        if group is None and self._admin_offsets_of(group_id):
            return _OffsetsOnlyGroup()
        if group is not None and not self._is_classic(group):
            group = self.consumer_group(group_id)  # its expired members fenced first, as a read in Kafka sees them
        return group

    def _note_groups_held(self) -> list[str]:
        """The groups held now, added to (or removed from) the cache model; their ids in its iteration order (the
        new coordinator's when it is on)."""
        return self._group_cache.sync(self._admin_group_ids())

    def _admin_group_ids(self) -> list[str]:
        return [*self.groups, *(g for g in self.offsets.group_ids() if g not in self.groups)]

    def _admin_offsets_of(self, group_id: str) -> bool:
        return self.offsets.has_offsets(group_id)

    @staticmethod
    def _is_classic(group: Any) -> bool:
        return getattr(group, "group_type", CLASSIC) == CLASSIC

    def _overview(self, group_id: str, group: Any) -> GroupOverview:
        if self._is_classic(group):
            return GroupOverview(group_id, group.protocol_type or NO_PROTOCOL_TYPE, group.state, CLASSIC)
        return GroupOverview(group_id, CONSUMER, group.state, CONSUMER)

    def _remove_group(self, group_id: str, group: Any) -> int:
        """cleanupGroupMetadata for a deleted group: it goes Dead and leaves the coordinator, its committed offsets go
        (with their tombstones in __consumer_offsets, and the group's own when it had a generation); how many
        offsets went."""
        if isinstance(group, ConsumerGroup):
            group.transition_to(DEAD)
            self._forget_consumer_group(group_id)
        elif isinstance(group, ClassicGroup):
            group.transition_to(DEAD, self.scheduler.now_ms())
        elif not isinstance(group, _OffsetsOnlyGroup):
            group.state = DEAD
        self.groups.pop(group_id, None)
        return self.offsets.delete_group(group_id, generation=getattr(group, "generation_id", 0))


class _OffsetsOnlyGroup:
    """A group that exists only through its committed offsets: Kafka shows it as an Empty group with no protocol."""

    group_type = CLASSIC
    state = EMPTY
    protocol_type: str | None = None
    protocol_name: str | None = None
    members: dict[str, Any] = {}


def _member_summary(member: Any, protocol: str | None, *, with_assignment: bool = False) -> MemberSummary:
    """MemberMetadata.summary (the member's metadata for the group's protocol) or summaryNoMetadata."""
    if protocol is None:
        assignment = bytes(member.assignment or b"") if with_assignment else b""
        return MemberSummary(member.member_id, member.group_instance_id, member.client_id, member.client_host, b"",
                             assignment)
    metadata = next((data for name, data in member.protocols if name == protocol), b"")
    return MemberSummary(member.member_id, member.group_instance_id, member.client_id, member.client_host,
                         bytes(metadata), bytes(member.assignment or b""))
