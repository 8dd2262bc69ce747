"""A classic-protocol group and its members: Kafka 3.9's GroupMetadata.scala and MemberMetadata.scala as plain state.

The group moves through Kafka's states (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead) only along the
edges Kafka allows. It counts, per protocol name, how many members support it (the candidates every member shares),
elects the protocol by the members' votes (each votes for its first candidate), keeps the static members' instance
ids, the dynamic members waiting to rejoin with their new id (MEMBER_ID_REQUIRED, JoinGroup v4+) and the members the
current generation still waits a SyncGroup from. The rules that move it (join, sync, heartbeat, leave, timers) are in
``classic_coordinator.py``.

Kafka keeps members in a Scala ``mutable.HashMap`` keyed by member id; its iteration order decides the leader's
member list, the next leader when the leader leaves and which rejoined member leads when the leader did not rejoin,
and kafka-shim follows it (``kafka_order``). Member ids are ``<client.id or group.instance.id>-<uuid4>``, as Kafka.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.groups.timers import Timer
from kafka_shim.shim.javacompat.hash_orders import scala_mutable_map_order
from kafka_shim.shim.javacompat.java_hash import java_order, java_string_hash
from kafka_shim.shim.javacompat.scala_set import scala_set

EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD = (
    "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")

# GroupMetadata's validPreviousStates: the states each state may be entered from.
_VALID_PREVIOUS = {
    DEAD: {STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD},
    COMPLETING_REBALANCE: {PREPARING_REBALANCE},
    STABLE: {COMPLETING_REBALANCE},
    PREPARING_REBALANCE: {STABLE, COMPLETING_REBALANCE, EMPTY},
    EMPTY: {PREPARING_REBALANCE},
}
CONSUMER_PROTOCOL_TYPE = "consumer"
UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1


@dataclass
class JoinResult:
    """What a JoinGroup is answered (GroupCoordinator's JoinGroupResult); ``members`` only for the leader."""

    error: int
    member_id: str
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)  # (member id, instance id, metadata)


@dataclass
class SyncResult:
    error: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


class IllegalGroupTransition(RuntimeError):
    pass


@dataclass(eq=False)
class ClassicMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: JoinCallback | None = None
    awaiting_sync: SyncCallback | None = None
    # A member added by this rebalance: until its first JoinGroup answer it may be expired (5 minutes, Kafka's
    # NewMemberJoinTimeoutMs) although it is waiting.
    is_new: bool = False
    heartbeat_timer: Timer | None = None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    def has_satisfied_heartbeat(self) -> bool:
        """MemberMetadata.hasSatisfiedHeartbeat, at the moment a session deadline passes (no heartbeat since)."""
        if self.is_new:
            return False
        return self.is_awaiting_join or self.is_awaiting_sync

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise KeyError(protocol)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return protocols == self.protocols

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        # A member listing a protocol twice counts it twice: once the others are gone, no count matches the group's
        # size and nothing is a candidate (MemberMetadata.vote / ClassicGroupMember.vote throw).
        raise NoCandidateProtocol("Member does not support any of the candidate protocols")


class ClassicGroup:
    """One classic group (GroupMetadata); the coordinator keeps it in ``GroupCoordinator.groups``."""

    def __init__(self, group_id: str, now_ms: int = 0, *, new_coordinator: bool = False) -> None:
        self.group_id = group_id
        # Kafka 3.9's new coordinator (GroupSettings.new_coordinator) keeps members and protocol votes in
        # java.util.HashMaps, the old one in Scala maps: their orders decide leaders, tie votes and answer orders.
        self.new_coordinator = new_coordinator
        self.state = EMPTY
        self.state_timestamp_ms = now_ms
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, ClassicMember] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.pending_members: set[str] = set()  # dynamic members told MEMBER_ID_REQUIRED, not yet rejoined
        self.pending_sync: set[str] = set()  # members of this generation that have not sent SyncGroup yet
        self.pending_member_timers: dict[str, Timer] = {}
        self.supported_protocols: dict[str, int] = {}
        self.new_member_added = False  # a member joined while an initial (group.initial.rebalance.delay.ms) delay runs
        self.initial_delay = False  # the join phase is an InitialDelayedJoin, which only its timer completes
        self.join_timer: Timer | None = None
        self.join_failed = False  # a join completion failed: PreparingRebalance for good, as Kafka's old coordinator
        # The new coordinator's join completion failed outside an initial rebalance: no join timer is left, and the
        # join or removal that finds every member joined completes the rebalance.
        self.completes_on_joins = False
        self.sync_timer: Timer | None = None
        self._subscribed: set[str] | None = None

    # --- the interface other parts of the coordinator read ---

    @property
    def leader_or_none(self) -> str | None:
        return self.leader_id

    def subscribed_topics(self) -> set[str] | None:
        """The topics the members subscribe to, from the consumer protocol's metadata of the chosen protocol, as
        computed at the last generation (GroupMetadata.computeSubscribedTopics); None when not a consumer group or
        unreadable."""
        return None if self._subscribed is None else set(self._subscribed)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return True if self._subscribed is None else topic in self._subscribed

    # --- state ---

    def is_state(self, state: str) -> bool:
        return self.state == state

    def transition_to(self, state: str, now_ms: int = 0) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise IllegalGroupTransition(f"group {self.group_id} cannot move from {self.state} to {state}")
        self.state = state
        self.state_timestamp_ms = now_ms

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[PREPARING_REBALANCE]

    # --- members ---

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def current_static_member_id(self, instance_id: str) -> str | None:
        return self.static_members.get(instance_id)

    @property
    def size(self) -> int:
        return len(self.members)

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.is_awaiting_join)

    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join() == len(self.members) and not self.pending_members

    def not_yet_rejoined(self) -> list[ClassicMember]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def kafka_order(self) -> list[ClassicMember]:
        """The members as Kafka's map of them iterates them (the old coordinator's Scala mutable.HashMap, the new
        one's java.util.HashMap)."""
        if self.new_coordinator:
            return [self.members[m] for m in java_order(list(self.members))]
        return [self.members[m] for m in scala_mutable_map_order(self.members, java_string_hash)]

    def rebalance_timeout_ms(self) -> int:
        """The members' longest rebalance timeout, never below 0 (Kafka folds from 0: a JoinGroup may say -1)."""
        return max([0, *(m.rebalance_timeout_ms for m in self.members.values())])

    def add(self, member: ClassicMember, callback: JoinCallback | None) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._count(member.protocols, +1)
        member.awaiting_join = callback
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._count(member.protocols, -1)
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
            if member.heartbeat_timer is not None:
                member.heartbeat_timer.cancel()
                member.heartbeat_timer = None
        if self.is_leader(member_id):
            self.leader_id = next((m.member_id for m in self.kafka_order()), None)
        self.pending_members.discard(member_id)
        timer = self.pending_member_timers.pop(member_id, None)
        if timer is not None:
            timer.cancel()
        self.pending_sync.discard(member_id)

    def update_member(self, member: ClassicMember, protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                      session_timeout_ms: int, callback: JoinCallback | None) -> None:
        self._count(member.protocols, -1)
        member.protocols = protocols
        self._count(protocols, +1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.awaiting_join = callback

    def replace_static_member(self, instance_id: str, old_member_id: str, new_member_id: str) -> ClassicMember:
        member = self.members.pop(old_member_id)
        self.invoke_join_callback(member, JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_member_id))
        self.invoke_sync_callback(member, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[instance_id] = new_member_id
        return member

    def maybe_elect_new_joined_leader(self) -> bool:
        """GroupMetadata.maybeElectNewJoinedLeader: keep a leader that rejoined, else any member that did."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        joined = next((m for m in self.kafka_order() if m.is_awaiting_join), None)
        if joined is None:
            return False
        self.leader_id = joined.member_id
        return True

    def invoke_join_callback(self, member: ClassicMember, result: JoinResult) -> None:
        callback, member.awaiting_join = member.awaiting_join, None
        if callback is not None:
            callback(result)

    def invoke_sync_callback(self, member: ClassicMember, result: SyncResult) -> bool:
        callback, member.awaiting_sync = member.awaiting_sync, None
        if callback is None:
            return False
        callback(result)
        return True

    # --- protocols ---

    def _count(self, protocols: list[tuple[str, bytes]], delta: int) -> None:
        for name, _ in protocols:
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + delta

    def supports_protocols(self, protocol_type: str, protocol_names: set[str]) -> bool:
        if self.state == EMPTY:
            return protocol_type != "" and bool(protocol_names)
        return self.protocol_type == protocol_type and any(
            self.supported_protocols.get(name, 0) == len(self.members) for name in protocol_names)

    def select_protocol(self) -> str:
        candidates = {name for name, count in self.supported_protocols.items() if count == len(self.members)}
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        # The old coordinator groups the votes into an immutable HashMap (List.groupBy) and takes maxBy; the new one
        # counts them in a java.util.HashMap and takes Stream.max: either way a tie goes to the protocol that map
        # iterates first.
        best = max(votes.values())
        order = java_order(list(votes)) if self.new_coordinator else scala_set(votes, java_string_hash, hashed=True)
        return next(name for name in order if votes[name] == best)

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self._subscribed = self._compute_subscribed_topics()
            self.transition_to(COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self._subscribed = self._compute_subscribed_topics()
            self.transition_to(EMPTY, now_ms)
        self.pending_sync.clear()

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        assert self.protocol_name is not None
        return [(m.member_id, m.group_instance_id, m.metadata(self.protocol_name)) for m in self.kafka_order()]

    def _compute_subscribed_topics(self) -> set[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.kafka_order():  # the first member whose bytes fail decides how
            parsed = subscription_topics(member.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return topics

    @staticmethod
    def generate_member_id(client_id: str, group_instance_id: str | None) -> str:
        return f"{group_instance_id if group_instance_id is not None else client_id}-{uuid.uuid4()}"


class JoinCompletionFailure(Exception):
    """A RuntimeException that Kafka's coordinator lets through a join completion (initNextGeneration, after the
    generation has moved on): see ClassicCoordinator._complete_join for what each coordinator does then."""


class NoCandidateProtocol(JoinCompletionFailure):
    """No protocol every member supports (ClassicGroupMember.vote's IllegalArgumentException): the generation has moved
    on, the protocol has not."""


class UnreadableSubscription(JoinCompletionFailure):
    """Subscription bytes that Kafka's generated reader fails on with a plain RuntimeException (a negative or
    oversized count, a null or overlong topic name, oversized user data), which the old group coordinator does not
    catch: only its SchemaException (bytes that end too soon) means "topics unknown"."""


def subscription_topics(metadata: bytes) -> set[str] | None:
    """The topics of a ConsumerProtocolSubscription read as Kafka's coordinator reads it: its version skipped, then
    the version 0 fields (the prefix of every version). None where Kafka's reader runs out of bytes (SchemaException);
    UnreadableSubscription where it throws anything else."""
    data, offset = memoryview(metadata), 2
    if len(data) < 2:
        return None

    def remaining() -> int:
        return len(data) - offset

    if remaining() < 4:
        return None
    (count,) = struct.unpack_from(">i", data, offset)
    offset += 4
    if count < 0:
        raise UnreadableSubscription("non-nullable field topics was serialized as null")
    if count > remaining():
        raise UnreadableSubscription(f"Tried to allocate a collection of size {count}, but there are only {remaining()} bytes remaining.")
    topics = set()
    for _ in range(count):
        if remaining() < 2:
            return None
        (length,) = struct.unpack_from(">h", data, offset)
        offset += 2
        if length < 0:
            raise UnreadableSubscription("non-nullable field topics element was serialized as null")
        if length > remaining():  # new String(array, offset, length) past the array's end
            raise UnreadableSubscription("String index out of range")
        topics.add(bytes(data[offset:offset + length]).decode("utf-8", errors="replace"))
        offset += length
    if remaining() < 4:
        return None
    (user_data,) = struct.unpack_from(">i", data, offset)
    if user_data > remaining() - 4:  # ByteBuffer.limit past the capacity
        raise UnreadableSubscription(f"newLimit > capacity: ({user_data} > {remaining() - 4})")
    return topics
