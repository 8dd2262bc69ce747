"""The group coordinator of a single-broker Kafka 3.9 (GroupCoordinatorService / GroupMetadataManager on one node).

Every group lives here, whatever its protocol: ``groups`` maps a group id to a classic group (``classic.py``, the
JoinGroup/SyncGroup state table) or a consumer group (``consumer.py``, KIP-848), never both at once. Committed
offsets are kept beside them (``offsets.py``), in ``__consumer_offsets`` when there is a data directory. The handlers
call this class with plain values and turn its answers into wire messages; nothing here knows a socket.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import structlog

from kafka_shim.protocol.codes import ErrorCode
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
    members_in_kafka_order,
)
from kafka_shim.shim.groups.classic import ClassicGroup
from kafka_shim.shim.groups.classic_coordinator import ClassicCoordinator
from kafka_shim.shim.groups.consumer import ConsumerGroup, ConsumerGroupManager
from kafka_shim.shim.groups.settings import GroupSettings
from kafka_shim.shim.groups.timers import LoopScheduler, Scheduler
from kafka_shim.shim.javacompat.hash_orders import scala_mutable_map_order
from kafka_shim.shim.javacompat.java_hash import java_string_hash

_log = structlog.get_logger("kafka_shim.groups")


class GroupCoordinator:
    def __init__(self, settings: GroupSettings, clock: Callable[[], float] = time.monotonic,
                 scheduler: Scheduler | None = None) -> None:
        self.settings = settings
        self.clock = clock
        # group id -> its group (classic or consumer protocol).
        self.groups: dict[str, Any] = {}
        # --- classic protocol (classic.py, classic_coordinator.py) ---
        self.scheduler: Scheduler = scheduler if scheduler is not None else LoopScheduler()
        self.classic = ClassicCoordinator(self.groups, settings, self.scheduler)

    def close(self) -> None:
        """Stop the timers; called once when the broker stops."""
        self.classic.close()

    # --- classic protocol: the interface the offsets and admin parts use ---

    def classic_group(self, group_id: str) -> ClassicGroup | None:
        return self.classic.group(group_id)

    def validate_classic_offset_commit(self, group_id: str, generation_id: int, member_id: str,
                                       group_instance_id: str | None, api_version: int) -> int:
        """The error code of Kafka's member checks for an OffsetCommit to a classic group, 0 when it may be stored.

        Kafka checks generation and member whatever the version (v0-1 carry -1 / "" when the client has none, which
        is the "simple" consumer's case), so ``api_version`` changes nothing; it is taken for the interface's sake."""
        return self.classic.validate_offset_commit(group_id, generation_id, member_id, group_instance_id)

    def validate_classic_txn_offset_commit(self, group_id: str, generation_id: int, member_id: str,
                                           group_instance_id: str | None) -> int:
        """TxnOffsetCommit's variant: a missing group is created whatever the generation; no member needed when empty."""
        return self.classic.validate_offset_commit(group_id, generation_id, member_id, group_instance_id,
                                                   is_transactional=True)

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
            del self.groups[group_id]
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
        order = members_in_kafka_order(members)
        if group.state == STABLE:
            protocol = group.protocol_name or NO_PROTOCOL
            return GroupSummary(group_id, state=group.state, protocol_type=protocol_type, protocol=protocol,
                                members=[_member_summary(members[m], protocol) for m in order])
        return GroupSummary(group_id, state=group.state, protocol_type=protocol_type,
                            members=[_member_summary(members[m], None) for m in order])

    def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()) -> list[GroupOverview]:
        """GroupCoordinator.handleListGroups: every group held, filtered by state (case-insensitive) and type; the
        old coordinator holds only classic groups, so a type filter without ``classic`` lists nothing."""
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        listed = []
        if self.settings.consumer_protocol_enabled:
            self.consumer_groups()  # fences expired consumer-group members (a group may go Empty)
        cache = self.__dict__.setdefault("_admin_group_cache", GroupCacheOrder())
        for group_id in cache.sync(self._admin_group_ids()):
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

    def _admin_group_ids(self) -> list[str]:
        ids = list(self.groups)
        store = getattr(self, "offsets", None)
        known = getattr(store, "group_ids", None)
        if callable(known):
            ids.extend(g for g in known() if g not in self.groups)
        return ids

    def _admin_offsets_of(self, group_id: str) -> bool:
        store = getattr(self, "offsets", None)
        return bool(store is not None and store.has_offsets(group_id))

    @staticmethod
    def _is_classic(group: Any) -> bool:
        return getattr(group, "group_type", CLASSIC) == CLASSIC

    def _overview(self, group_id: str, group: Any) -> GroupOverview:
        if self._is_classic(group):
            return GroupOverview(group_id, group.protocol_type or NO_PROTOCOL_TYPE, group.state, CLASSIC)
        return GroupOverview(group_id, CONSUMER, group.state, CONSUMER)

    def _remove_group(self, group_id: str, group: Any) -> int:
        """The group goes Dead and leaves the coordinator with its committed offsets; how many offsets went."""
        if isinstance(group, _OffsetsOnlyGroup):
            pass
        elif hasattr(group, "transition_to"):
            group.transition_to(DEAD)
        else:
            group.state = DEAD
        self.groups.pop(group_id, None)
        store = getattr(self, "offsets", None)
        removed = store.delete_group(group_id) if store is not None else 0
        return removed if isinstance(removed, int) else 0


class _OffsetsOnlyGroup:
    """A group that exists only through its committed offsets: Kafka shows it as an Empty group with no protocol."""

    group_type = CLASSIC
    state = EMPTY
    protocol_type: str | None = None
    protocol_name: str | None = None
    members: dict[str, Any] = {}


def _member_summary(member: Any, protocol: str | None) -> MemberSummary:
    """MemberMetadata.summary (the member's metadata for the group's protocol) or summaryNoMetadata."""
    if protocol is None:
        return MemberSummary(member.member_id, member.group_instance_id, member.client_id, member.client_host, b"", b"")
    metadata = next((data for name, data in member.protocols if name == protocol), b"")
    return MemberSummary(member.member_id, member.group_instance_id, member.client_id, member.client_host,
                         bytes(metadata), bytes(member.assignment or b""))
