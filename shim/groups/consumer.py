"""Consumer groups of the KIP-848 protocol (ConsumerGroupHeartbeat), as Kafka 3.9's new group coordinator keeps them.

Kafka's counterparts: ``GroupMetadataManager.consumerGroupHeartbeat`` / ``consumerGroupLeave`` / the session and
rebalance timers, ``modern/consumer/ConsumerGroup.java`` and ``ConsumerGroupMember.java``,
``CurrentAssignmentBuilder`` (a member's reconciliation towards its target) and ``TargetAssignmentBuilder`` (the
assignor run when the group epoch moves past the assignment epoch). Plain state: no asyncio, no wire types; the
handler in ``handlers/consumer_groups.py`` turns its answers into messages.

Behaviour, as 3.9:
- A heartbeat with epoch 0 joins (creating the group; an *empty* classic group of that id is replaced), epoch > 0
  heartbeats, -1 leaves, -2 is a static member leaving for a while (its partitions stay held until it comes back
  or its session expires). Any change of subscription bumps the group epoch; the assignor then computes the new
  target assignment (epoch = group epoch) and each member moves towards it on its own heartbeats: first it gives
  up partitions it must lose (UNREVOKED_PARTITIONS, staying at its epoch until it stops reporting them), then it
  gets the new epoch and the partitions nobody holds any more (UNRELEASED_PARTITIONS while some are still held).
- Errors carry Kafka's codes and messages: 110 (an epoch the coordinator does not know), 25 (unknown member),
  69 (no such group, or the group is a classic one), 111/82 (static members), 81 (group full), 112 (unknown
  assignor), 42 (malformed request), -1 when the assignor fails.
- Sessions: ``group.consumer.session.timeout.ms`` after the last heartbeat the member is fenced (removed, group
  epoch bumped); a member that does not revoke within its rebalance timeout is fenced too. Timers are deadlines
  checked on every call that reaches the group (``expire``) and by the coordinator's sweep, so a test clock drives them.

Classic-protocol requests for a consumer group's id, as Kafka 3.9's new coordinator (whatever
``group.consumer.migration.policy`` says): a JoinGroup for an *empty* consumer group deletes it and goes on with a
classic group (``GroupCoordinator.release_empty_consumer_group``); for a non-empty one the member joins the consumer
group as a classic-protocol member (``classic_join``: protocol type "consumer" and a protocol every classic member
offers, else 23; MEMBER_ID_REQUIRED first at v4+; generation = member epoch; no leader), SyncGroup returns its
assigned partitions in ConsumerProtocol form (``classic_sync``), Heartbeat answers 27 while it must rejoin to move
towards its target (``classic_heartbeat``), LeaveGroup removes it (``classic_leave``). Its session is the JoinGroup's
session timeout; it must SyncGroup within its rebalance timeout after joining and rejoin within it after a 27.

Version notes. 3.9's schema has no SubscribedTopicRegex in the heartbeat (regex subscriptions arrived in 4.0);
the first heartbeat must name topics (42 "SubscribedTopicNames must be set in first request."). Online
upgrade/downgrade (converting a whole group between the two types, ``group.consumer.migration.policy``) is off by
default in 3.9 and not built here; a non-empty classic group answers the heartbeat with 69.
"""

from __future__ import annotations

import base64
import copy
import enum
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.groups import assignors
from kafka_shim.shim.groups.assignors import AssignorError, MemberSpec
from kafka_shim.shim.groups.classic import JoinResult, SyncResult
from kafka_shim.shim.groups.consumer_protocol import MalformedProtocol, decode_subscription, encode_assignment, version_of
from kafka_shim.shim.groups.server_assignors import ServerAssignorCounts
from kafka_shim.shim.javacompat.java_hash import hash_set_order, java_string_hash
from kafka_shim.shim.javacompat.timeline_table import TimelineTableOrder

log = get_logger(__name__)

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2

Partitions = dict[uuid.UUID, frozenset[int]]


class TopicShape(NamedTuple):
    """What the coordinator needs of a topic: its id and partition count."""

    topic_id: uuid.UUID
    partitions: int


class GroupError(Exception):
    """A Kafka error the heartbeat answers with: its code and message."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message


class MemberState(enum.Enum):
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


@dataclass(frozen=True)
class ClassicMetadata:
    """A member that joined with JoinGroup (classic protocol) inside a consumer group: its session timeout and the
    protocols (name, subscription bytes) it offered."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)
    pending_revocation: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)
    classic: ClassicMetadata | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def subscribed_names_in_kafka_order(self) -> list[str]:
        """The names as Kafka lists them (a java.util.HashSet copied into a list)."""
        return hash_set_order(self.subscribed_topic_names)


@dataclass(frozen=True)
class Heartbeat:
    """A ConsumerGroupHeartbeat's fields, plain."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    server_assignor: str | None = None
    owned: list[tuple[uuid.UUID, list[int]]] | None = None


@dataclass(frozen=True)
class HeartbeatAnswer:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int = 0
    assignment: Partitions | None = None  # None: not sent (the member's assignment did not change)


class ConsumerGroup:
    """One consumer group (Kafka's ConsumerGroup): epochs, members, target assignment, partition owners."""

    group_type = "consumer"
    protocol_type = "consumer"

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerMember] = {}
        # Kafka's members TimelineHashMap, whose order ConsumerGroupDescribe lists them in.
        self._member_table: TimelineTableOrder[str] = TimelineTableOrder(java_string_hash)
        # Kafka's serverAssignors TimelineHashMap, kept in step with the member updates its records replay.
        self.server_assignors = ServerAssignorCounts()
        self.target: dict[str, Partitions] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.subscription_metadata: dict[str, TopicShape] = {}
        # (topic id, partition) -> the member holding it (assigned or pending revocation).
        self.owners: dict[tuple[uuid.UUID, int], str] = {}
        self.session_deadlines: dict[str, float] = {}
        self.rebalance_deadlines: dict[str, tuple[int, float]] = {}  # member id -> (epoch it must leave, deadline)
        # Classic-protocol members: SyncGroup due after a JoinGroup, JoinGroup due after a REBALANCE_IN_PROGRESS.
        self.sync_deadlines: dict[str, float] = {}
        self.join_deadlines: dict[str, float] = {}
        self.dead = False  # deleted (DeleteGroups of an Empty group)

    def transition_to(self, state: str) -> None:
        """Only DeleteGroups moves a consumer group by hand, and only to Dead; every other state follows its members."""
        if state != "Dead":
            raise ValueError(f"a consumer group's state follows its members; it cannot be set to {state}")
        self.dead = True

    # -- views -------------------------------------------------------------------------------------------

    @property
    def state(self) -> str:
        """Kafka's ConsumerGroupState names: Empty, Assigning, Reconciling, Stable (Dead once deleted)."""
        if self.dead:
            return "Dead"
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def is_empty(self) -> bool:
        return not self.members

    def subscribed_topics(self) -> set[str]:
        return {name for m in self.members.values() for name in m.subscribed_topic_names}

    def preferred_assignor(self, default: str) -> str:
        """ConsumerGroup.preferredServerAssignor (ConsumerGroupDescribe's assignor name): the server assignor most
        members asked for, a tie going to the first in the group's TimelineHashMap; the default when none asked."""
        name = self.server_assignors.preferred()
        return default if name is None else name

    def partition_owner_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """ConsumerGroup.currentPartitionEpoch: the holder's epoch, -1 when the partition is free."""
        holder = self.owners.get((topic_id, partition))
        return -1 if holder is None else self.members[holder].member_epoch

    # -- updates -----------------------------------------------------------------------------------------

    def put_member(self, member: ConsumerMember) -> None:
        """Store a member (new or changed), keeping the partition owners and static ids in step."""
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
            if old != member:  # the record of the change replays as updateMember(old, new)
                self.server_assignors.update(old.server_assignor, member.server_assignor)
        else:  # a new member is written as two records (its metadata, its assignment), each a put in Kafka's table
            self._member_table.put(member.member_id)
            self.server_assignors.update(None, member.server_assignor)
            self.server_assignors.update(member.server_assignor, member.server_assignor)
        self._member_table.put(member.member_id)
        self.members[member.member_id] = member
        for topic_id, partitions in (*member.assigned.items(), *member.pending_revocation.items()):
            for partition in partitions:
                self.owners[(topic_id, partition)] = member.member_id
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is None:
            return
        # Kafka replays the assignment's tombstone as one more put of the member, then the metadata's as the removal.
        self._member_table.put(member_id)
        self._member_table.remove(member_id)
        self.server_assignors.update(member.server_assignor, member.server_assignor)
        self.server_assignors.update(member.server_assignor, None)
        self._release(member)
        self.target.pop(member_id, None)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        for deadlines in (self.session_deadlines, self.rebalance_deadlines, self.sync_deadlines, self.join_deadlines):
            deadlines.pop(member_id, None)

    def snapshot(self) -> dict[str, Any]:
        """The group's state, for ``restore`` when a request fails after changing it (Kafka reverts the timeline
        snapshot of a request whose records it does not write). Members are immutable; the tables are copied."""
        state = {name: dict(value) if isinstance(value, dict) else value for name, value in vars(self).items()}
        state["_member_table"] = copy.deepcopy(self._member_table)
        state["server_assignors"] = copy.deepcopy(self.server_assignors)
        return state

    def restore(self, state: dict[str, Any]) -> None:
        vars(self).clear()
        vars(self).update(state)

    def members_in_kafka_order(self) -> list[ConsumerMember]:
        """The members as Kafka's coordinator iterates them (ConsumerGroupDescribe)."""
        return [self.members[member_id] for member_id in self._member_table.order()]

    def classic_members(self) -> list[ConsumerMember]:
        return [m for m in self.members.values() if m.classic is not None]

    def supports_classic_protocols(self, protocol_type: str, names: set[str]) -> bool:
        """ConsumerGroup.supportsClassicProtocols: type "consumer" and a protocol whose count among the classic members'
        protocols is the number of classic members. Kafka counts each protocol a member lists (a name listed twice
        counts twice), so a classic member naming a protocol twice makes every later classic join inconsistent, its
        own rejoins too, until it leaves."""
        if protocol_type != "consumer":
            return False
        if not self.members:
            return bool(names)
        classic = self.classic_members()
        counts: dict[str, int] = {}
        for member in classic:
            assert member.classic is not None
            for name, _ in member.classic.protocols:
                counts[name] = counts.get(name, 0) + 1
        return any(counts.get(name, 0) == len(classic) for name in names)

    def waiting_on_unreleased_partition(self, member: ConsumerMember) -> bool:
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, partitions in self.target.get(member.member_id, {}).items():
            held = member.assigned.get(topic_id, frozenset())
            if any(p not in held and self.partition_owner_epoch(topic_id, p) != -1 for p in partitions):
                return True
        return False

    def _release(self, member: ConsumerMember) -> None:
        for topic_id, partitions in (*member.assigned.items(), *member.pending_revocation.items()):
            for partition in partitions:
                if self.owners.get((topic_id, partition)) == member.member_id:
                    del self.owners[(topic_id, partition)]


def new_member_id() -> str:
    """Kafka's Uuid.randomUuid().toString(): 22 URL-safe base64 characters, never starting with '-'."""
    while True:
        raw = os.urandom(16)
        text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        if not text.startswith("-") and any(raw):
            return text


def reconcile(member: ConsumerMember, target_epoch: int, target: Partitions,
              owner_epoch: Callable[[uuid.UUID, int], int], owned: list[tuple[uuid.UUID, list[int]]] | None) -> ConsumerMember:
    """Kafka's CurrentAssignmentBuilder.build: the member's next step towards its target assignment."""
    if member.state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next_assignment(member, member.member_epoch, target_epoch, target, owner_epoch, owned)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return member
        return _next_assignment(member, member.member_epoch + 1, target_epoch, target, owner_epoch, owned)
    return _next_assignment(member, member.member_epoch, target_epoch, target, owner_epoch, owned)


def _owns_any(owned: list[tuple[uuid.UUID, list[int]]] | None, partitions: Mapping[uuid.UUID, frozenset[int]]) -> bool:
    """Whether the member still reports any of ``partitions`` (an unknown owned list counts as yes)."""
    if owned is None:
        return True
    return any(p in partitions.get(topic_id, ()) for topic_id, ps in owned for p in ps)


def _next_assignment(member: ConsumerMember, epoch: int, target_epoch: int, target: Partitions,
                     owner_epoch: Callable[[uuid.UUID, int], int],
                     owned: list[tuple[uuid.UUID, list[int]]] | None) -> ConsumerMember:
    assigned: dict[uuid.UUID, frozenset[int]] = {}
    revoking: dict[uuid.UUID, frozenset[int]] = {}
    adding: dict[uuid.UUID, frozenset[int]] = {}
    unreleased = False
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset())
        current = member.assigned.get(topic_id, frozenset())
        keep = current & wanted
        revoke = current - keep
        new = wanted - keep
        free = frozenset(p for p in new if owner_epoch(topic_id, p) == -1)
        unreleased = unreleased or free != new
        if keep:
            assigned[topic_id] = keep
        if revoke:
            revoking[topic_id] = revoke
        if free:
            adding[topic_id] = free
    if revoking and _owns_any(owned, revoking):
        return replace(member, state=MemberState.UNREVOKED_PARTITIONS, member_epoch=epoch,
                       previous_member_epoch=member.member_epoch, assigned=assigned, pending_revocation=revoking)
    for topic_id, partitions in adding.items():
        assigned[topic_id] = assigned.get(topic_id, frozenset()) | partitions
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return replace(member, state=state, member_epoch=target_epoch, previous_member_epoch=member.member_epoch,
                   assigned=assigned, pending_revocation={})


class ConsumerGroupManager:
    """The consumer-protocol half of the coordinator (GroupMetadataManager's consumer methods) over the shared
    ``groups`` map: a group id holds a classic group or a ConsumerGroup, never both."""

    def __init__(self, groups: dict[str, Any], settings: Any, clock: Callable[[], float], scheduler: Any = None) -> None:
        self.groups = groups
        self.settings = settings
        self.clock = clock
        # Timers that re-check a group when one of its deadlines passes, so a member that stops talking is fenced
        # on time even when nobody else reaches the group (Kafka's timer does the same). Every read of a group
        # checks its deadlines too, which is all a loop-less user (a unit test) gets.
        self.scheduler = scheduler
        self._timers: dict[tuple[str, str, str], Any] = {}
        self.assignor_names = [assignors.assignor_name(name) for name in settings.consumer_assignors]
        # Called after every change of a group (the coordinator writes its records to __consumer_offsets).
        self.on_changed: Callable[[ConsumerGroup], None] | None = None

    def _changed(self, group: ConsumerGroup) -> None:
        if self.on_changed is not None and self.groups.get(group.group_id) is group:
            self.on_changed(group)

    # -- lookups -----------------------------------------------------------------------------------------

    def group(self, group_id: str) -> ConsumerGroup | None:
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            self.expire(group)
            return group
        return None

    def _existing(self, group_id: str, not_found: str) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is None:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, not_found)
        if not isinstance(group, ConsumerGroup):
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        self.expire(group)
        return group

    def _get_or_create(self, group_id: str) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is None or (not isinstance(group, ConsumerGroup) and _is_empty_classic(group)):
            return ConsumerGroup(group_id)
        if isinstance(group, ConsumerGroup):
            self.expire(group)
            return group
        raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    # -- the heartbeat -----------------------------------------------------------------------------------

    def validate(self, hb: Heartbeat) -> None:
        """GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid."""
        def empty(value: str | None) -> bool:
            return value is not None and not value.strip()

        if empty(hb.group_id):
            raise GroupError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if empty(hb.instance_id):
            raise GroupError(ErrorCode.INVALID_REQUEST, "InstanceId can't be empty.")
        if empty(hb.rack_id):
            raise GroupError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
        if hb.member_epoch > 0 or hb.member_epoch == LEAVE_EPOCH:
            if empty(hb.member_id):
                raise GroupError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        elif hb.member_epoch == JOIN_EPOCH:
            if hb.rebalance_timeout_ms == -1:
                raise GroupError(ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
            if hb.owned is None or hb.owned:
                raise GroupError(ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
            if not hb.subscribed_topic_names:
                raise GroupError(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
        elif hb.member_epoch == STATIC_LEAVE_EPOCH:
            if empty(hb.member_id):
                raise GroupError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
            if hb.instance_id is None:
                raise GroupError(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
        else:
            raise GroupError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
        if hb.server_assignor is not None and hb.server_assignor not in self.assignor_names:
            raise GroupError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                             f"ServerAssignor {hb.server_assignor} is not supported. Supported assignors: "
                             f"{', '.join(hash_set_order(self.assignor_names))}.")

    def heartbeat(self, hb: Heartbeat, topics: Mapping[str, TopicShape], client_id: str, client_host: str) -> HeartbeatAnswer:
        """One ConsumerGroupHeartbeat; raises GroupError with Kafka's code and message."""
        self.validate(hb)
        if hb.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(hb, topics)
        now = self.clock()
        joining = hb.member_epoch == JOIN_EPOCH
        group = self._get_or_create(hb.group_id) if joining else self._existing(
            hb.group_id, f"Consumer group {hb.group_id} not found.")
        member_id = hb.member_id
        if len(group.members) >= self.settings.consumer_max_size and (not member_id or member_id not in group.members):
            raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity of "
                             f"{self.settings.consumer_max_size} members.")
        if not member_id:
            member_id = new_member_id()
        replaced: str | None = None
        if hb.instance_id is None:
            member = self._member(group, member_id, joining)
            self._check_epoch(member, hb.member_epoch, hb.owned)
        else:
            member, replaced = self._static_member(group, member_id, hb, joining)
        updated = replace(
            member,
            instance_id=hb.instance_id if hb.instance_id is not None else member.instance_id,
            rack_id=hb.rack_id if hb.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=hb.rebalance_timeout_ms if hb.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
            server_assignor=hb.server_assignor if hb.server_assignor is not None else member.server_assignor,
            subscribed_topic_names=(frozenset(hb.subscribed_topic_names) if hb.subscribed_topic_names is not None
                                    else member.subscribed_topic_names),
            client_id=client_id, client_host=client_host, classic=None)
        self._put_member(group, member, updated, replaced, topics)
        reconciled = self._reconcile(group, group.members[member_id], hb.owned, now)
        self._set_deadline(group, "session", member_id, self.settings.consumer_session_timeout_ms / 1000)
        self._changed(group)
        full = joining or (hb.rebalance_timeout_ms != -1 and hb.subscribed_topic_names is not None and hb.owned is not None)
        send = full or dict(reconciled.assigned) != dict(member.assigned)
        return HeartbeatAnswer(member_id=reconciled.member_id, member_epoch=reconciled.member_epoch,
                               heartbeat_interval_ms=self.settings.consumer_heartbeat_interval_ms,
                               assignment=dict(reconciled.assigned) if send else None)

    def _member(self, group: ConsumerGroup, member_id: str, create: bool) -> ConsumerMember:
        member = group.members.get(member_id)
        if member is not None:
            return member
        if not create:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
        return ConsumerMember(member_id=member_id)

    @staticmethod
    def _check_epoch(member: ConsumerMember, received: int, owned: list[tuple[uuid.UUID, list[int]]] | None) -> None:
        """throwIfConsumerGroupMemberEpochIsInvalid: a lost answer may leave the member one epoch behind."""
        if received > member.member_epoch:
            raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH, "The consumer group member has a greater member "
                             f"epoch ({received}) than the one known by the group coordinator ({member.member_epoch}). "
                             "The member must abandon all its partitions and rejoin.")
        if received < member.member_epoch:
            subset = owned is not None and all(
                p in member.assigned.get(topic_id, ()) for topic_id, ps in owned for p in ps) and all(
                topic_id in member.assigned for topic_id, _ in owned)
            if received != member.previous_member_epoch or not subset:
                raise GroupError(ErrorCode.FENCED_MEMBER_EPOCH, "The consumer group member has a smaller member "
                                 f"epoch ({received}) than the one known by the group coordinator ({member.member_epoch}). "
                                 "The member must abandon all its partitions and rejoin.")

    def _static_member(self, group: ConsumerGroup, member_id: str, hb: Heartbeat, joining: bool) -> tuple[ConsumerMember, str | None]:
        """getOrMaybeSubscribeStaticConsumerGroupMember: (the member, the member id it replaces or None)."""
        instance_id = hb.instance_id
        assert instance_id is not None
        existing_id = group.static_members.get(instance_id)
        existing = group.members.get(existing_id) if existing_id is not None else None
        if joining:
            if existing is None:
                return ConsumerMember(member_id=member_id), None
            if existing.member_epoch != STATIC_LEAVE_EPOCH:
                raise GroupError(ErrorCode.UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                                 f"cannot join the group because the instance id is owned by {existing.member_id} member.")
            if existing.member_id == member_id:
                return replace(existing, member_epoch=0, previous_member_epoch=0), None
            return replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0), existing.member_id
        if existing is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise GroupError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                             f"was fenced by member {existing.member_id}.")
        self._check_epoch(existing, hb.member_epoch, hb.owned)
        return existing, None

    def _update_target(self, group: ConsumerGroup, order: list[str], preferred: str | None) -> None:
        """TargetAssignmentBuilder: run the ``preferred`` assignor (else the default) over every member's
        subscription (as topic ids), the members in ``order`` (assignors.kafka_member_order)."""
        default = self.assignor_names[0] if self.assignor_names else assignors.UNIFORM
        name = default if preferred is None else preferred
        ids = {name: shape.topic_id for name, shape in group.subscription_metadata.items()}
        counts = {shape.topic_id: shape.partitions for shape in group.subscription_metadata.values()}
        specs = {
            m.member_id: MemberSpec(m.member_id, m.instance_id, m.rack_id,
                                    tuple(ids[n] for n in m.subscribed_names_in_kafka_order() if n in ids),
                                    group.target.get(m.member_id, {}))
            for m in map(group.members.__getitem__, order)
        }
        subscribers: dict[str, int] = {}
        for m in group.members.values():
            for topic in m.subscribed_topic_names:
                subscribers[topic] = subscribers.get(topic, 0) + 1
        homogeneous = all(count == len(group.members) for count in subscribers.values())
        try:
            result = assignors.assign(name, specs, counts, homogeneous)
        except AssignorError as e:
            # Kafka logs the reason and answers UNKNOWN_SERVER_ERROR without a message (handleOperationException).
            log.error("consumer_group_assignment_failed", group=group.group_id, assignor=name,
                      reason=f"Failed to compute a new target assignment for epoch {group.group_epoch}: {e}")
            raise GroupError(ErrorCode.UNKNOWN_SERVER_ERROR, None) from e
        group.target = {m: dict(a) for m, a in result.items()}
        group.assignment_epoch = group.group_epoch
        log.info("consumer_group_target_assignment", group=group.group_id, epoch=group.group_epoch, assignor=name,
                 members=len(group.members))

    def _reconcile(self, group: ConsumerGroup, member: ConsumerMember, owned: list[tuple[uuid.UUID, list[int]]] | None,
                   now: float) -> ConsumerMember:
        if member.is_reconciled_to(group.assignment_epoch):
            return member
        updated = reconcile(member, group.assignment_epoch, group.target.get(member.member_id, {}),
                            group.partition_owner_epoch, owned)
        if updated != member:
            group.put_member(updated)
            if updated.classic is not None:
                pass  # classic members have join and sync timers instead
            elif updated.state is MemberState.UNREVOKED_PARTITIONS:
                group.rebalance_deadlines[updated.member_id] = (updated.member_epoch, now + updated.rebalance_timeout_ms / 1000)
                self._arm(group.group_id, updated.member_id, "rebalance", updated.rebalance_timeout_ms / 1000)
            else:
                group.rebalance_deadlines.pop(updated.member_id, None)
        return updated

    # -- leaving, fencing, timers -------------------------------------------------------------------------

    def loaded(self, group: ConsumerGroup) -> None:
        """A group read back from __consumer_offsets at start (GroupMetadataManager.onLoaded): its members' sessions
        start now, so a member that does not heartbeat within its session timeout is fenced; a member that was
        revoking partitions gets its rebalance timeout again."""
        self.groups[group.group_id] = group
        now = self.clock()
        for member in group.members.values():
            session_ms = member.classic.session_timeout_ms if member.classic is not None else self.settings.consumer_session_timeout_ms
            self._set_deadline(group, "session", member.member_id, session_ms / 1000)
            if member.state is MemberState.UNREVOKED_PARTITIONS and member.classic is None:
                group.rebalance_deadlines[member.member_id] = (member.member_epoch, now + member.rebalance_timeout_ms / 1000)
                self._arm(group.group_id, member.member_id, "rebalance", member.rebalance_timeout_ms / 1000)
        log.info("consumer_group_loaded", group=group.group_id, members=len(group.members), epoch=group.group_epoch)

    def _set_deadline(self, group: ConsumerGroup, kind: str, member_id: str, seconds: float) -> None:
        """Set one of the member's deadlines (session, sync, join) ``seconds`` from now and arm its timer."""
        deadline = self.clock() + seconds
        {"session": group.session_deadlines, "sync": group.sync_deadlines, "join": group.join_deadlines}[kind][member_id] = deadline
        self._arm(group.group_id, member_id, kind, seconds)

    def _arm(self, group_id: str, member_id: str, kind: str, seconds: float) -> None:
        if self.scheduler is None:
            return
        key = (group_id, member_id, kind)
        previous = self._timers.pop(key, None)
        if previous is not None:
            previous.cancel()
        try:
            # A few ms past the deadline: the loop may run a timer a clock tick early.
            self._timers[key] = self.scheduler.call_later(int(seconds * 1000) + 5, lambda: self._fire(key))
        except RuntimeError:
            pass  # no running event loop (plain use): deadlines are checked when the group is next reached

    def _fire(self, key: tuple[str, str, str]) -> None:
        self._timers.pop(key, None)
        group = self.groups.get(key[0])
        if isinstance(group, ConsumerGroup):
            self.expire(group)

    def _leave(self, hb: Heartbeat, topics: Mapping[str, TopicShape]) -> HeartbeatAnswer:
        group = self._existing(hb.group_id, f"Group {hb.group_id} not found.")
        if hb.instance_id is None:
            member = self._member(group, hb.member_id, False)
            self.fence(group, member.member_id)
            return HeartbeatAnswer(member_id=hb.member_id, member_epoch=hb.member_epoch)
        existing_id = group.static_members.get(hb.instance_id)
        existing = group.members.get(existing_id) if existing_id is not None else None
        if existing is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {hb.instance_id} is unknown.")
        if existing.member_id != hb.member_id:
            raise GroupError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {hb.member_id} with instance id {hb.instance_id} "
                             f"was fenced by member {existing.member_id}.")
        if hb.member_epoch == STATIC_LEAVE_EPOCH:
            # Kept with epoch -2: its partitions stay held (not handed to others) until it returns or expires.
            group.put_member(replace(existing, member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={}))
            self._changed(group)
            return HeartbeatAnswer(member_id=existing.member_id, member_epoch=STATIC_LEAVE_EPOCH)
        self.fence(group, existing.member_id)
        return HeartbeatAnswer(member_id=hb.member_id, member_epoch=hb.member_epoch)

    def fence(self, group: ConsumerGroup, member_id: str, reason: str = "it left the group") -> None:
        """consumerGroupFenceMember: remove the member and bump the group epoch (the others then rebalance)."""
        log.info("consumer_group_member_removed", group=group.group_id, member=member_id, reason=reason)
        group.remove_member(member_id)
        names = group.subscribed_topics()
        group.subscription_metadata = {n: s for n, s in group.subscription_metadata.items() if n in names}
        group.group_epoch += 1
        self._changed(group)

    def expire(self, group: ConsumerGroup) -> None:
        """Fence the members whose session or rebalance timeout has passed (Kafka's timers, as deadlines)."""
        now = self.clock()
        for member_id, deadline in list(group.session_deadlines.items()):
            if deadline <= now and member_id in group.members:
                self.fence(group, member_id, "the member session expired")
        for member_id, (epoch, deadline) in list(group.rebalance_deadlines.items()):
            member = group.members.get(member_id)
            if member is None:
                group.rebalance_deadlines.pop(member_id, None)
            elif deadline <= now and member.member_epoch == epoch and member.state is MemberState.UNREVOKED_PARTITIONS:
                self.fence(group, member_id, f"it failed to transition from epoch {epoch} within {member.rebalance_timeout_ms}ms")

        for reason, deadlines in (("the member failed to sync within timeout", group.sync_deadlines),
                                  ("the classic member failed to join within the rebalance timeout", group.join_deadlines)):
            for member_id, deadline in list(deadlines.items()):
                if deadline <= now and member_id in group.members:
                    self.fence(group, member_id, reason)

    def expire_all(self) -> None:
        for group in list(self.groups.values()):
            if isinstance(group, ConsumerGroup):
                self.expire(group)

    # -- classic-protocol members of a consumer group (JoinGroup/SyncGroup/Heartbeat/LeaveGroup) ---------------

    def classic_join(self, group: ConsumerGroup, member_id: str, instance_id: str | None, *, require_known_member_id: bool,
                     client_id: str, client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                     protocol_type: str, protocols: list[tuple[str, bytes]], topics: Mapping[str, TopicShape]) -> JoinResult:
        """GroupMetadataManager.classicGroupJoinToConsumerGroup: the member joins the consumer group and is answered at
        once with its member epoch as the generation (no leader: every classic member is a follower)."""
        try:
            return self._classic_join(group, member_id, instance_id, require_known_member_id, client_id, client_host,
                                      rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols, topics)
        except GroupError as e:
            # Thrown in Kafka: GroupCoordinatorService answers a bare JoinGroupResponseData with the code, no member id.
            return JoinResult(e.code, "")

    def _classic_join(self, group: ConsumerGroup, member_id: str, instance_id: str | None, require_known_member_id: bool,
                      client_id: str, client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                      protocol_type: str, protocols: list[tuple[str, bytes]], topics: Mapping[str, TopicShape]) -> JoinResult:
        self.expire(group)
        now = self.clock()
        unknown = member_id == ""
        if unknown:
            member_id = new_member_id()
        if len(group.members) >= self.settings.consumer_max_size and member_id not in group.members:
            raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED, None)
        if not group.supports_classic_protocols(protocol_type, {name for name, _ in protocols}):
            raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported.")
        if require_known_member_id and unknown:
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        replaced: str | None = None
        if instance_id is None:
            member = group.members.get(member_id) or ConsumerMember(member_id=member_id)
        else:
            existing_id = group.static_members.get(instance_id)
            existing = group.members.get(existing_id) if existing_id is not None else None
            if unknown:
                if existing is None:
                    member = ConsumerMember(member_id=member_id)
                else:
                    member = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
                    replaced = existing.member_id
            else:
                if existing is None:
                    raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
                if existing.member_id != member_id:
                    raise GroupError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                                     f"was fenced by member {existing.member_id}.")
                member = existing
        # deserializeSubscription comes after the member is found: an unknown or fenced static member is told so
        # whatever its subscription bytes.
        try:
            subscription = decode_subscription(protocols[0][1])
        except MalformedProtocol as e:
            raise GroupError(ErrorCode.UNKNOWN_SERVER_ERROR, "Malformed embedded consumer protocol in subscription deserialization.") from e
        updated = replace(
            member, instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=rebalance_timeout_ms if rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
            subscribed_topic_names=frozenset(subscription.topics), client_id=client_id, client_host=client_host,
            classic=ClassicMetadata(session_timeout_ms, tuple(protocols)))
        self._put_member(group, member, updated, replaced, topics)
        owned = [(topics[t].topic_id, ps) for t, ps in subscription.owned if t in topics]
        reconciled = self._reconcile(group, group.members[member_id], owned, now)
        group.join_deadlines.pop(member_id, None)
        self._set_deadline(group, "session", member_id, session_timeout_ms / 1000)
        self._set_deadline(group, "sync", member_id, max(rebalance_timeout_ms, 0) / 1000)
        self._changed(group)
        return JoinResult(ErrorCode.NONE, member_id, generation_id=reconciled.member_epoch, protocol_type="consumer",
                          protocol_name=protocols[0][0])

    def _put_member(self, group: ConsumerGroup, member: ConsumerMember, updated: ConsumerMember, replaced: str | None,
                    topics: Mapping[str, TopicShape]) -> None:
        """A member's new state into its group (a heartbeat's or a classic member's join): a static member's new id
        takes over the one it replaces, and the group epoch goes up when the subscriptions or their topics changed,
        which recomputes the target assignment."""
        member_id = updated.member_id
        members_before = [m.member_id for m in group.members_in_kafka_order()]
        # The target assignment is computed before Kafka replays this request's records: from the group's counts as
        # they were, with only this member's change applied (computePreferredServerAssignor).
        assignor = group.server_assignors.preferred_with(member.server_assignor, updated.server_assignor)
        # Kafka refreshes the subscription metadata on a change of subscription and when topics change (its
        # metadata image listener); recomputing it at every heartbeat gives the same answers.
        names = {n for m in group.members.values() if m.member_id not in (member_id, replaced) for n in m.subscribed_topic_names}
        names |= set(updated.subscribed_topic_names)
        metadata = {name: topics[name] for name in names if name in topics}
        bump = updated.subscribed_topic_names != member.subscribed_topic_names or metadata != group.subscription_metadata
        # A failed target assignment fails the request and leaves the group as it was (Kafka reverts the request's
        # records), so the state is kept until the assignor has answered.
        saved = group.snapshot() if bump or group.group_epoch > group.assignment_epoch else None
        registered = self.groups.get(group.group_id)
        if registered is not group:
            self.groups[group.group_id] = group  # a new group, or one replacing an empty classic group
        joined = member_id not in group.members
        if replaced is not None:
            target = group.target.pop(replaced, {})
            group.remove_member(replaced)
            group.target[member_id] = target
        group.put_member(updated)
        if bump:
            group.subscription_metadata = metadata
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            try:
                self._update_target(group, assignors.kafka_member_order(members_before, member_id, replaced), assignor)
            except GroupError:
                assert saved is not None
                group.restore(saved)
                if registered is None:
                    del self.groups[group.group_id]
                elif registered is not group:
                    self.groups[group.group_id] = registered
                raise
        if joined:
            log.info("consumer_group_member_joined", group=group.group_id, member=member_id, instance=updated.instance_id,
                     topics=sorted(updated.subscribed_topic_names), protocol="consumer" if updated.classic is None else "classic")

    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember:
        """validateConsumerGroupMember plus throwIfMemberDoesNotUseClassicProtocol."""
        if instance_id is None:
            member = self._member(group, member_id, False)
        else:
            static_id = group.static_members.get(instance_id)
            member = group.members.get(static_id) if static_id is not None else None
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member with instance id {instance_id} is not a member of group {group.group_id}.")
            if member.member_id != member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                                 f"was fenced by member {member.member_id}.")
        if member.classic is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol.")
        return member

    def classic_sync(self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int,
                     protocol_type: str | None, protocol_name: str | None, topic_names: Mapping[uuid.UUID, str]) -> SyncResult:
        """classicGroupSyncToConsumerGroup: the member's assigned partitions, in ConsumerProtocol form."""
        self.expire(group)
        if not group.members:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        try:
            member = self._classic_member(group, member_id, instance_id)
            if generation_id != member.member_epoch:
                raise GroupError(ErrorCode.ILLEGAL_GENERATION, None)
            name = member.classic.protocols[0][0]
            if (protocol_type is not None and protocol_type != "consumer") or (protocol_name is not None and protocol_name != name):
                raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, None)
            self._throw_if_rebalancing(group, member)
        except GroupError as e:
            return SyncResult(e.code)
        group.sync_deadlines.pop(member.member_id, None)
        self._set_deadline(group, "session", member.member_id, member.classic.session_timeout_ms / 1000)
        partitions = sorted((topic_names[t], sorted(ps)) for t, ps in member.assigned.items() if t in topic_names)
        assignment = encode_assignment(version_of(member.classic.protocols[0][1]), partitions)
        return SyncResult(ErrorCode.NONE, protocol_type=protocol_type, protocol_name=protocol_name, assignment=assignment)

    def _throw_if_rebalancing(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            if member.member_id not in group.join_deadlines:
                self._set_deadline(group, "join", member.member_id, max(member.rebalance_timeout_ms, 0) / 1000)
            raise GroupError(ErrorCode.REBALANCE_IN_PROGRESS, None)

    def classic_heartbeat(self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int) -> int:
        """classicGroupHeartbeatToConsumerGroup: 27 while the member must rejoin to move towards its target."""
        self.expire(group)
        try:
            member = self._classic_member(group, member_id, instance_id)
        except GroupError as e:
            return e.code
        if generation_id != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION
        self._set_deadline(group, "session", member.member_id, member.classic.session_timeout_ms / 1000)
        if (member.member_epoch < group.group_epoch or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS and not group.waiting_on_unreleased_partition(member))):
            if member.member_id not in group.join_deadlines:
                self._set_deadline(group, "join", member.member_id, max(member.rebalance_timeout_ms, 0) / 1000)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def classic_leave(self, group: ConsumerGroup, members: list[tuple[str, str | None]]) -> list[tuple[str, int]]:
        """classicGroupLeaveToConsumerGroup: (member id answered, error) per leaving member; one epoch bump for all."""
        self.expire(group)
        answers: list[tuple[str, int]] = []
        left = False
        for member_id, instance_id in members:
            try:
                if instance_id is None:
                    member = self._member(group, member_id, False)
                else:
                    static_id = group.static_members.get(instance_id)
                    member = group.members.get(static_id) if static_id is not None else None
                    if member is None:
                        raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
                    if member_id != "" and member.member_id != member_id:
                        raise GroupError(ErrorCode.FENCED_INSTANCE_ID, None)
                if member.classic is None:
                    raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, None)
            except GroupError as e:
                answers.append((member_id, e.code))
                continue
            log.info("consumer_group_member_removed", group=group.group_id, member=member.member_id, reason="LeaveGroup")
            group.remove_member(member.member_id)
            left = True
            answers.append((member.member_id, ErrorCode.NONE))
        if left:
            names = group.subscribed_topics()
            group.subscription_metadata = {n: t for n, t in group.subscription_metadata.items() if n in names}
            group.group_epoch += 1
            self._changed(group)
        return answers

    # -- offsets (ConsumerGroup.validateOffsetCommit / validateOffsetFetch) -----------------------------------

    def validate_offset_commit(self, group: ConsumerGroup, member_id: str, member_epoch: int, api_version: int = 9,
                               transactional: bool = False) -> int:
        if member_epoch < 0 and not group.members:
            return 0
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and member.classic is None and api_version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        return self._member_epoch_check(member, member_epoch)

    def validate_offset_fetch(self, group: ConsumerGroup, member_id: str | None, member_epoch: int) -> int:
        if member_id is None and member_epoch < 0:
            return 0
        if member_id is None:
            # members.get(null, offset): the timeline map hashes the key, a NullPointerException the coordinator
            # answers as UNKNOWN_SERVER_ERROR.
            return ErrorCode.UNKNOWN_SERVER_ERROR
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return self._member_epoch_check(member, member_epoch)

    @staticmethod
    def _member_epoch_check(member: ConsumerMember, epoch: int) -> int:
        """ConsumerGroup.validateMemberEpoch: classic members get ILLEGAL_GENERATION, the others STALE_MEMBER_EPOCH."""
        if epoch == member.member_epoch:
            return 0
        return ErrorCode.ILLEGAL_GENERATION if member.classic is not None else ErrorCode.STALE_MEMBER_EPOCH


def _is_empty_classic(group: Any) -> bool:
    """A classic group in state Empty, which a joining consumer-protocol member replaces (Kafka deletes it)."""
    state = getattr(group, "state", None)
    return state == "Empty" or (state is None and not getattr(group, "members", None))
