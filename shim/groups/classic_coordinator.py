"""The classic group protocol's rules: Kafka 3.9's (old, Scala) GroupCoordinator for JoinGroup, SyncGroup, Heartbeat,
LeaveGroup and the offset-commit member checks, with its delayed operations as timers.

What it does, as GroupCoordinator.scala does with the default ``group.coordinator.rebalance.protocols=classic``:

- JoinGroup: an empty group id 24; a session timeout outside [group.min.session.timeout.ms,
  group.max.session.timeout.ms] 26; a member id for a group that does not exist 25; a full group 81
  (``group.max.size``: counting members waiting to rejoin while PreparingRebalance, all members otherwise); a
  protocol type or protocol set the group cannot take 23. A new dynamic member at v4+ is given its id with 79
  (MEMBER_ID_REQUIRED) and must rejoin with it within its session timeout. A new member, or a member whose metadata
  changed, or the leader rejoining a Stable group starts a rebalance; a follower rejoining unchanged gets the current
  generation at once. The rebalance completes when every member has rejoined or the rebalance timeout (the largest
  of the members') passes, dropping the dynamic members that did not rejoin; a group that was Empty waits
  ``group.initial.rebalance.delay.ms`` first, extended by the same again for each member that arrives meanwhile, up to
  the rebalance timeout (InitialDelayedJoin). The leader gets every member's metadata for the chosen protocol.
- Static members (``group.instance.id``): a known instance joining with an unknown member id takes over its old
  member (the old one is answered 82) and, in a Stable group whose protocol would not change, gets the current
  generation without a rebalance (v9+: the leader is told to skip the assignment); a request naming an instance with
  another member id is fenced (82).
- SyncGroup: 25 / 82 / 22 / 23 checks; while CompletingRebalance the answer waits for the leader's assignment (members
  the leader left out get empty assignments); PreparingRebalance 27; members that do not sync within the rebalance
  timeout are removed and the group rebalances.
- Heartbeat: 25 / 82 / 22, then 27 while PreparingRebalance; each heartbeat restarts the member's session timeout.
  A member whose session timeout passes without a heartbeat (and that is not waiting on a JoinGroup or SyncGroup)
  is removed and the group rebalances.
- LeaveGroup: per member (v3+ batches; by instance id with an empty member id), 25 / 82.

Everything runs on the broker's event loop: callbacks answer waiting requests, timers come from a Scheduler.
"""

from __future__ import annotations

from collections.abc import Callable

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.groups.classic import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    ClassicMember,
    JoinCallback,
    JoinCompletionFailure,
    JoinResult,
    NoCandidateProtocol,
    SyncCallback,
    SyncResult,
)
from kafka_shim.shim.groups.settings import GroupSettings
from kafka_shim.shim.groups.timers import Scheduler

log = get_logger("kafka_shim.groups")

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000  # GroupCoordinator.NewMemberJoinTimeoutMs


def _never_answered(result: JoinResult) -> None:
    """The join callback left on a member whose join has nothing more to answer (Kafka never answers it, or its
    response future is already done): it keeps the member awaiting its join."""


class ClassicCoordinator:
    """The classic protocol over the coordinator's shared ``groups`` map (a group id holds one group of one kind)."""

    def __init__(self, groups: dict, settings: GroupSettings, scheduler: Scheduler) -> None:
        self.groups = groups
        self.settings = settings
        self.scheduler = scheduler
        # Called where Kafka's GroupMetadataManager.storeGroup writes the group's metadata record (a new generation's
        # assignment, a group that became Empty, a static member replaced): persistence hooks in here.
        self.on_group_stored: Callable[[ClassicGroup], None] | None = None
        # The JoinGroup being handled, and whether a join completion failed (while handling a request, Kafka's request
        # thread answers that request UNKNOWN_SERVER_ERROR through handleError; in a timer, nobody).
        self._answering: JoinCallback | None = None
        self._failed_in_request = False
        # Whether the JoinGroup being handled added or updated a member (the new coordinator tries to complete the
        # join phase only then; the old one after every JoinGroup).
        self._member_joined = False

    def _store(self, group: ClassicGroup) -> None:
        if self.on_group_stored is not None:
            self.on_group_stored(group)

    def loaded(self, group: ClassicGroup) -> None:
        """GroupCoordinator.onGroupLoaded: a Stable or Empty group read back from __consumer_offsets joins the
        coordinator; its members must heartbeat within their session timeouts, and a group above group.max.size
        rebalances so its members can commit before some are turned away."""
        self.groups[group.group_id] = group
        if group.size > self.settings.max_size:
            self._prepare_rebalance(group, f"freshly-loaded group is over capacity ({self.settings.max_size})")
        for member in list(group.members.values()):
            self._schedule_heartbeat_expiration(group, member, member.session_timeout_ms)

    # --- lookups ---

    def group(self, group_id: str) -> ClassicGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ClassicGroup) else None

    def _get_or_create(self, group_id: str, create: bool) -> ClassicGroup | None:
        group = self.group(group_id)
        if group is None and create and group_id not in self.groups:
            group = ClassicGroup(group_id, self.scheduler.now_ms(), new_coordinator=self.settings.new_coordinator)
            self.groups[group_id] = group
        return group

    # --- JoinGroup ---

    def join(self, group_id: str, member_id: str, group_instance_id: str | None, *, require_known_member_id: bool,
             support_skipping_assignment: bool, client_id: str, client_host: str, rebalance_timeout_ms: int,
             session_timeout_ms: int, protocol_type: str, protocols: list[tuple[str, bytes]], reason: str | None,
             callback: JoinCallback) -> None:
        """GroupCoordinator.handleJoinGroup: ``callback`` is called once, now or when the rebalance completes."""
        self._answering = callback
        self._failed_in_request = False
        self._member_joined = False
        try:
            self._join(group_id, member_id, group_instance_id, require_known_member_id=require_known_member_id,
                       support_skipping_assignment=support_skipping_assignment, client_id=client_id,
                       client_host=client_host, rebalance_timeout_ms=rebalance_timeout_ms,
                       session_timeout_ms=session_timeout_ms, protocol_type=protocol_type, protocols=protocols,
                       reason=reason, callback=callback)
        finally:
            self._answering = None

    def _join(self, group_id: str, member_id: str, group_instance_id: str | None, *, require_known_member_id: bool,
              support_skipping_assignment: bool, client_id: str, client_host: str, rebalance_timeout_ms: int,
              session_timeout_ms: int, protocol_type: str, protocols: list[tuple[str, bytes]], reason: str | None,
              callback: JoinCallback) -> None:
        if not group_id:
            callback(JoinResult(ErrorCode.INVALID_GROUP_ID, member_id))
            return
        if not self.settings.min_session_timeout_ms <= session_timeout_ms <= self.settings.max_session_timeout_ms:
            callback(JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id))
            return
        unknown = member_id == UNKNOWN_MEMBER_ID
        if group_id in self.groups and self.group(group_id) is None:
            # A consumer-protocol (KIP-848) group holds the id; the classic protocol cannot join it.
            callback(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        group = self._get_or_create(group_id, unknown)
        if group is None:
            callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            return
        why = reason if reason is not None else "not provided"
        if not self._accept_joining_member(group, member_id):
            group.remove(member_id)
            callback(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID))
        elif unknown:
            self._new_member_join(group, group_instance_id, require_known_member_id, support_skipping_assignment,
                                  client_id, client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                  protocols, callback, why)
        else:
            self._current_member_join(group, member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms,
                                      session_timeout_ms, protocol_type, protocols, callback, why)
        # GroupCoordinator.handleJoinGroup checks the join purgatory after any JoinGroup; GroupMetadataManager calls
        # maybeCompleteJoinPhase only where a member was added or updated, not after an error answer.
        if (group.is_state(PREPARING_REBALANCE) and not self._failed_in_request
                and (self._member_joined or not self.settings.new_coordinator)):
            self._try_complete_join(group)

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        if group.state in (EMPTY, DEAD):
            return True
        if group.state == PREPARING_REBALANCE:
            return ((group.has(member_id) and group.members[member_id].is_awaiting_join)
                    or group.num_awaiting_join() < self.settings.max_size)
        return group.has(member_id) or group.size < self.settings.max_size

    def _new_member_join(self, group: ClassicGroup, instance_id: str | None, require_known_member_id: bool,
                         support_skipping_assignment: bool, client_id: str, client_host: str, rebalance_timeout_ms: int,
                         session_timeout_ms: int, protocol_type: str, protocols: list[tuple[str, bytes]],
                         callback: JoinCallback, reason: str) -> None:
        if group.is_state(DEAD):
            callback(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, UNKNOWN_MEMBER_ID))
            return
        if not group.supports_protocols(protocol_type, {name for name, _ in protocols}):
            callback(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID))
            return
        new_id = group.generate_member_id(client_id, instance_id)
        if instance_id is not None:
            old_id = group.current_static_member_id(instance_id)
            if old_id is not None:
                log.info("static_member_rejoined", group_id=group.group_id, group_instance_id=instance_id,
                         old_member_id=old_id, member_id=new_id, state=group.state)
                self._update_static_member(group, old_id, new_id, instance_id, protocols, rebalance_timeout_ms,
                                           session_timeout_ms, callback, reason, support_skipping_assignment)
            else:
                self._add_member_and_rebalance(group, new_id, instance_id, client_id, client_host, rebalance_timeout_ms,
                                               session_timeout_ms, protocol_type, protocols, callback, reason)
        elif require_known_member_id:
            group.pending_members.add(new_id)
            group.pending_member_timers[new_id] = self.scheduler.call_later(
                session_timeout_ms, lambda: self._expire_pending_member(group, new_id))
            callback(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member_and_rebalance(group, new_id, None, client_id, client_host, rebalance_timeout_ms,
                                           session_timeout_ms, protocol_type, protocols, callback, reason)

    def _validate_current_member(self, group: ClassicGroup, member_id: str, instance_id: str | None) -> int:
        if instance_id is not None:
            current = group.current_static_member_id(instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                log.info("static_member_fenced", group_id=group.group_id, group_instance_id=instance_id,
                         member_id=member_id, current_member_id=current)
                return ErrorCode.FENCED_INSTANCE_ID
            return ErrorCode.NONE
        return ErrorCode.NONE if group.has(member_id) else ErrorCode.UNKNOWN_MEMBER_ID

    def _current_member_join(self, group: ClassicGroup, member_id: str, instance_id: str | None, client_id: str,
                             client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                             protocols: list[tuple[str, bytes]], callback: JoinCallback, reason: str) -> None:
        if group.is_state(DEAD):
            callback(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(protocol_type, {name for name, _ in protocols}):
            callback(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if group.is_pending_member(member_id):
            if instance_id is not None:
                # Kafka throws IllegalStateException here (a pending member cannot be static): the request fails
                # with UNKNOWN_SERVER_ERROR in JoinGroupRequest's error form and the member stays pending.
                log.warning("pending_member_joined_as_static", group_id=group.group_id, member_id=member_id,
                            group_instance_id=instance_id)
                callback(JoinResult(ErrorCode.UNKNOWN_SERVER_ERROR, UNKNOWN_MEMBER_ID))
                return
            self._add_member_and_rebalance(group, member_id, None, client_id, client_host, rebalance_timeout_ms,
                                           session_timeout_ms, protocol_type, protocols, callback, reason)
            return
        error = self._validate_current_member(group, member_id, instance_id)
        if error:
            callback(JoinResult(error, member_id))
            return
        member = group.members[member_id]
        if group.state == PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                              callback, f"member {member_id} joining during PreparingRebalance; client reason: {reason}")
        elif group.state == COMPLETING_REBALANCE:
            if member.matches(protocols):
                callback(self._current_generation(group, member_id, leader_members=group.is_leader(member_id)))
            else:
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                                  callback, f"updating metadata of member {member_id}; client reason: {reason}")
        elif group.state == STABLE:
            if group.is_leader(member_id) or not member.matches(protocols):
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                                  callback, f"member {member_id} rejoining a Stable group; client reason: {reason}")
            else:
                callback(self._current_generation(group, member_id, leader_members=False))
        else:
            log.warning("join_in_unexpected_state", group_id=group.group_id, member_id=member_id, state=group.state)
            callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _current_generation(self, group: ClassicGroup, member_id: str, *, leader_members: bool,
                            skip_assignment: bool = False, leader_id: str | None = None) -> JoinResult:
        return JoinResult(ErrorCode.NONE, member_id, group.generation_id, group.protocol_type, group.protocol_name,
                          leader_id if leader_id is not None else (group.leader_id or ""), skip_assignment,
                          group.current_member_metadata() if leader_members else [])

    def _add_member_and_rebalance(self, group: ClassicGroup, member_id: str, instance_id: str | None, client_id: str,
                                  client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                                  protocol_type: str, protocols: list[tuple[str, bytes]], callback: JoinCallback,
                                  reason: str) -> None:
        self._member_joined = True
        member = ClassicMember(member_id, instance_id, client_id, client_host, rebalance_timeout_ms, session_timeout_ms,
                               protocol_type, list(protocols), is_new=True)
        if group.is_state(PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, callback)
        # A new member cannot heartbeat before its first answer; a client that gave up would stay forever, so its
        # JoinGroup expires after 5 minutes (GroupCoordinator.NewMemberJoinTimeoutMs).
        self._schedule_heartbeat_expiration(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, f"adding new member {member_id} with group instance id {instance_id}; "
                                             f"client reason: {reason}")

    def _update_static_member(self, group: ClassicGroup, old_id: str, new_id: str, instance_id: str,
                              protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int, session_timeout_ms: int,
                              callback: JoinCallback, reason: str, support_skipping_assignment: bool) -> None:
        self._member_joined = True
        current_leader = group.leader_id or ""
        member = group.replace_static_member(instance_id, old_id, new_id)
        self._schedule_heartbeat_expiration(group, member, member.session_timeout_ms)
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, callback)
        if group.state == STABLE:
            try:
                selected = group.select_protocol()
            except NoCandidateProtocol as error:
                # selectProtocol throws out of the JoinGroup (the old coordinator's handleError, the new one's failed
                # write operation): UNKNOWN_SERVER_ERROR, while the member keeps its new id and protocols and its
                # join stays pending, unanswered; the group stays Stable.
                log.error("static_member_join_failed", group_id=group.group_id, member_id=new_id, reason=str(error))
                self._failed_in_request = True
                member.awaiting_join = _never_answered
                callback(JoinResult(ErrorCode.UNKNOWN_SERVER_ERROR, UNKNOWN_MEMBER_ID))
                return
            if group.protocol_name == selected:
                # Same protocol next generation: no rebalance, the member gets the current generation back.
                self._store(group)
                is_leader = group.is_leader(new_id)
                if support_skipping_assignment:
                    result = self._current_generation(group, new_id, leader_members=is_leader, skip_assignment=is_leader)
                else:
                    # Before v9 the old leader id is returned, so a restarted leader does not run a useless assignment.
                    result = self._current_generation(group, new_id, leader_members=False, leader_id=current_leader)
                group.invoke_join_callback(member, result)
            else:
                self._maybe_prepare_rebalance(group, f"static member {new_id} with instance id {instance_id} changed "
                                                     f"the group's protocol; client reason: {reason}")
        elif group.state == COMPLETING_REBALANCE:
            self._prepare_rebalance(group, f"updating metadata of static member {new_id} with instance id "
                                           f"{instance_id}; client reason: {reason}")

    def _update_member_and_rebalance(self, group: ClassicGroup, member: ClassicMember, protocols: list[tuple[str, bytes]],
                                     rebalance_timeout_ms: int, session_timeout_ms: int, callback: JoinCallback,
                                     reason: str) -> None:
        self._member_joined = True
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, callback)
        self._maybe_prepare_rebalance(group, reason)

    # --- rebalance: the join phase ---

    def _maybe_prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.is_state(COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._clear_sync_expiration(group)
        was_empty = group.is_state(EMPTY)
        group.transition_to(PREPARING_REBALANCE, self.scheduler.now_ms())
        log.info("group_rebalance_started", group_id=group.group_id, generation_id=group.generation_id, reason=reason)
        if group.join_timer is not None:
            group.join_timer.cancel()
        if was_empty:
            delay = self.settings.initial_rebalance_delay_ms
            self._start_initial_delay(group, delay, max(group.rebalance_timeout_ms() - delay, 0))
        else:
            group.join_timer = self.scheduler.call_later(group.rebalance_timeout_ms(), lambda: self._complete_join(group))
            self._try_complete_join(group)

    def _start_initial_delay(self, group: ClassicGroup, delay_ms: int, remaining_ms: int) -> None:
        """InitialDelayedJoin: never completes early; when it ends, members that arrived meanwhile buy another delay."""
        group.initial_delay = True

        def expire() -> None:
            if group.new_member_added and remaining_ms != 0:
                group.new_member_added = False
                configured = self.settings.initial_rebalance_delay_ms
                self._start_initial_delay(group, min(configured, remaining_ms), max(remaining_ms - delay_ms, 0))
            else:
                group.initial_delay = False
                self._complete_join(group, initial=True)

        group.join_timer = self.scheduler.call_later(delay_ms, expire)

    def _try_complete_join(self, group: ClassicGroup) -> None:
        if group.join_failed:
            self._abandon_joins(group, failing=False)
            return
        if group.initial_delay or (group.join_timer is None and not group.completes_on_joins):
            return
        if group.has_all_members_joined():
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup, *, initial: bool = False) -> None:
        """GroupCoordinator.onCompleteJoin (DelayedJoin completed or expired; ``initial``: an InitialDelayedJoin)."""
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None
        group.initial_delay = False
        group.completes_on_joins = False
        for member in [m for m in group.not_yet_rejoined() if not m.is_static]:
            log.info("member_removed_not_rejoined", group_id=group.group_id, member_id=member.member_id)
            group.remove(member.member_id)
        if group.is_state(DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined (only static members remain): wait another rebalance timeout for their sessions to end.
            log.error("rebalance_without_members", group_id=group.group_id)
            group.join_timer = self.scheduler.call_later(group.rebalance_timeout_ms(), lambda: self._complete_join(group))
            self._try_complete_join(group)
            return
        try:
            group.init_next_generation(self.scheduler.now_ms())
        except JoinCompletionFailure as error:
            if self.settings.new_coordinator:
                self._completion_failed_on_new_coordinator(group, error, initial=initial)
                return
            # GroupMetadata.computeSubscribedTopics lets a RuntimeException of the subscription reader through
            # onCompleteJoin, as selectProtocol does MemberMetadata.vote's IllegalArgumentException: the generation
            # (and protocol, for the former) have moved on, the group stays PreparingRebalance with no delayed join
            # left to complete it, and no rebalance answers its members' joins (Kafka 3.9's old coordinator).
            log.error("group_join_completion_failed", group_id=group.group_id, generation_id=group.generation_id,
                      reason=str(error))
            group.join_failed = True
            self._failed_in_request = True
            self._abandon_joins(group, failing=True)
            return
        if group.is_state(EMPTY):
            log.info("group_empty", group_id=group.group_id, generation_id=group.generation_id)
            self._store(group)
            return
        log.info("group_generation_started", group_id=group.group_id, generation_id=group.generation_id,
                 members=group.size, protocol=group.protocol_name, leader=group.leader_id)
        for member in list(group.members.values()):
            result = self._current_generation(group, member.member_id, leader_members=group.is_leader(member.member_id))
            group.invoke_join_callback(member, result)
            self._schedule_heartbeat_expiration(group, member, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync.add(member.member_id)
        generation = group.generation_id
        group.sync_timer = self.scheduler.call_later(group.rebalance_timeout_ms(),
                                                     lambda: self._expire_pending_sync(group, generation))

    def _completion_failed_on_new_coordinator(self, group: ClassicGroup, error: JoinCompletionFailure, *,
                                              initial: bool) -> None:
        """ClassicGroup.computeSubscribedTopics (or selectProtocol) throws inside the new coordinator's write operation,
        which fails as a whole, its records unwritten; the ClassicGroup is no timeline structure, so nothing of it is
        rolled back: the generation (and protocol, when only the subscription failed) have moved on, the group stays
        PreparingRebalance with no join timer, and the JoinGroup being handled gets UNKNOWN_SERVER_ERROR (its member
        still counts as joined; a LeaveGroup's members stay removed). The other members' joins stay pending: the next
        join or removal that finds every member joined completes the rebalance again, unless the failed one was the
        initial rebalance of an Empty group (maybeCompleteJoinPhase skips a group whose previous state is Empty)."""
        log.error("group_join_completion_failed", group_id=group.group_id, generation_id=group.generation_id,
                  reason=str(error))
        group.completes_on_joins = not initial
        self._failed_in_request = True
        answering = self._answering
        if answering is None:
            return
        for member in group.members.values():
            if member.awaiting_join is answering:
                member.awaiting_join = _never_answered
        answering(JoinResult(ErrorCode.UNKNOWN_SERVER_ERROR, UNKNOWN_MEMBER_ID))

    def _abandon_joins(self, group: ClassicGroup, *, failing: bool) -> None:
        """The members' JoinGroups on a group whose join completion failed on Kafka's old coordinator: no delayed join
        is left to answer them, so they stay pending, answered only when their member is removed (UNKNOWN_MEMBER_ID,
        e.g. by a LeaveGroup) or replaced (FENCED_INSTANCE_ID); their members stay awaiting their join, so their
        sessions never expire, as in Kafka. The JoinGroup whose handling made the completion fail (``failing``) gets
        UNKNOWN_SERVER_ERROR (KafkaApis' handleError) and nothing more."""
        answering = self._answering
        if not failing or answering is None:
            return
        for member in group.members.values():
            if member.awaiting_join is answering:
                member.awaiting_join = _never_answered
        answering(JoinResult(ErrorCode.UNKNOWN_SERVER_ERROR, UNKNOWN_MEMBER_ID))

    # --- SyncGroup ---

    def sync(self, group_id: str, generation_id: int, member_id: str, protocol_type: str | None,
             protocol_name: str | None, group_instance_id: str | None, assignments: dict[str, bytes],
             callback: SyncCallback) -> None:
        """GroupCoordinator.handleSyncGroup: ``callback`` is called once, now or when the leader's assignment arrives."""
        if not group_id:
            callback(SyncResult(ErrorCode.INVALID_GROUP_ID))
            return
        group = self.group(group_id)
        if group is None:
            callback(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
            return
        if group.is_state(DEAD):
            callback(SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        error = self._validate_current_member(group, member_id, group_instance_id)
        if not error:
            if generation_id != group.generation_id:
                error = ErrorCode.ILLEGAL_GENERATION
            elif protocol_type is not None and group.protocol_type != protocol_type:
                error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
            elif protocol_name is not None and group.protocol_name != protocol_name:
                error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if error:
            callback(SyncResult(error))
            return
        if group.state == EMPTY:
            callback(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        elif group.state == PREPARING_REBALANCE:
            callback(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.state == COMPLETING_REBALANCE:
            member = group.members[member_id]
            member.awaiting_sync = callback
            self._sync_received(group, member_id)
            if group.is_leader(member_id):
                missing = [m for m in group.members if m not in assignments]
                if missing:
                    log.warning("sync_empty_assignments", group_id=group_id, generation_id=group.generation_id, members=missing)
                log.info("group_assignment_received", group_id=group_id, generation_id=group.generation_id, leader=member_id)
                for m in group.members.values():
                    m.assignment = assignments.get(m.member_id, b"")
                self._store(group)
                self._propagate_assignment(group, ErrorCode.NONE)
                group.transition_to(STABLE, self.scheduler.now_ms())
        else:  # Stable
            self._sync_received(group, member_id)
            member = group.members[member_id]
            callback(SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment))
            self._schedule_heartbeat_expiration(group, member, member.session_timeout_ms)

    def _reset_and_propagate_assignment_error(self, group: ClassicGroup, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: ClassicGroup, error: int) -> None:
        ok = error == ErrorCode.NONE
        for member in list(group.members.values()):
            result = SyncResult(error, group.protocol_type if ok else None, group.protocol_name if ok else None,
                                member.assignment)
            if group.invoke_sync_callback(member, result):
                # Sessions restart once the assignment is out: a member waiting on the leader could not heartbeat.
                self._schedule_heartbeat_expiration(group, member, member.session_timeout_ms)

    def _sync_received(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync and group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None

    def _clear_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync.clear()
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None

    def _expire_pending_sync(self, group: ClassicGroup, generation_id: int) -> None:
        group.sync_timer = None
        if generation_id != group.generation_id or group.state not in (COMPLETING_REBALANCE, STABLE):
            return
        if group.pending_sync:
            late = sorted(group.pending_sync)
            for member_id in late:
                group.remove(member_id)
            log.info("members_removed_no_sync", group_id=group.group_id, members=late)
            self._prepare_rebalance(group, f"removing {late} on pending sync request expiration")

    # --- Heartbeat and session timeouts ---

    def heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int) -> int:
        """GroupCoordinator.handleHeartbeat: the error code; restarts the member's session timeout."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        group = self.group(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_state(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = self._validate_current_member(group, member_id, group_instance_id)
        if error:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.state == EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        member = group.members[member_id]
        self._schedule_heartbeat_expiration(group, member, member.session_timeout_ms)
        return ErrorCode.REBALANCE_IN_PROGRESS if group.state == PREPARING_REBALANCE else ErrorCode.NONE

    def _schedule_heartbeat_expiration(self, group: ClassicGroup, member: ClassicMember, timeout_ms: int) -> None:
        """completeAndScheduleNextExpiration: the heartbeat is satisfied and the next deadline starts now. A member
        waiting on a JoinGroup or SyncGroup (and not new) needs no deadline until it is answered."""
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.cancel()
            member.heartbeat_timer = None
        if not member.is_new and (member.is_awaiting_join or member.is_awaiting_sync):
            return
        member.heartbeat_timer = self.scheduler.call_later(timeout_ms, lambda: self._expire_heartbeat(group, member))

    def _expire_heartbeat(self, group: ClassicGroup, member: ClassicMember) -> None:
        member.heartbeat_timer = None
        if group.is_state(DEAD) or group.members.get(member.member_id) is not member:
            return
        if not member.has_satisfied_heartbeat():
            log.info("member_session_expired", group_id=group.group_id, member_id=member.member_id,
                     session_timeout_ms=member.session_timeout_ms)
            self._remove_member_and_update_group(group, member, f"removing member {member.member_id} on heartbeat expiration")

    def _expire_pending_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_member_timers.pop(member_id, None)
        if group.is_state(DEAD) or not group.is_pending_member(member_id):
            return
        log.info("pending_member_expired", group_id=group.group_id, member_id=member_id)
        self._remove_pending_member(group, member_id)

    def _remove_pending_member(self, group: ClassicGroup, member_id: str) -> None:
        group.remove(member_id)
        if group.is_state(PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _remove_member_and_update_group(self, group: ClassicGroup, member: ClassicMember, reason: str) -> None:
        group.invoke_join_callback(member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, reason)
        elif group.state == PREPARING_REBALANCE:
            self._try_complete_join(group)

    # --- LeaveGroup ---

    def leave(self, group_id: str, members: list[tuple[str, str | None, str | None]]) -> tuple[int, list[int]]:
        """GroupCoordinator.handleLeaveGroup: (top-level error, one error per (member id, instance id, reason))."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        group = self.group(group_id)
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID] * len(members)
        if group.is_state(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        if self.settings.new_coordinator:
            return self._leave_on_new_coordinator(group, members)
        errors = []
        self._failed_in_request = False
        for member_id, instance_id, reason in members:
            if self._failed_in_request:  # a join completion failed on a removal: Kafka's handleError answers
                return ErrorCode.UNKNOWN_SERVER_ERROR, []
            if member_id == UNKNOWN_MEMBER_ID:
                current = group.current_static_member_id(instance_id) if instance_id is not None else None
                if current is None:
                    errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                else:
                    self._member_left(group, current, reason)
                    errors.append(ErrorCode.NONE)
            elif group.is_pending_member(member_id):
                self._remove_pending_member(group, member_id)
                log.info("pending_member_left", group_id=group_id, member_id=member_id)
                errors.append(ErrorCode.NONE)
            else:
                error = self._validate_current_member(group, member_id, instance_id)
                if not error:
                    self._member_left(group, member_id, reason)
                errors.append(error)
        if self._failed_in_request:
            return ErrorCode.UNKNOWN_SERVER_ERROR, []
        return ErrorCode.NONE, errors

    def _leave_on_new_coordinator(self, group: ClassicGroup,
                                  members: list[tuple[str, str | None, str | None]]) -> tuple[int, list[int]]:
        """GroupMetadataManager.classicGroupLeaveToClassicGroup: every named member leaves first, then the group
        rebalances, or completes its join phase, once (the old coordinator does so after each member)."""
        errors = []
        for member_id, instance_id, reason in members:
            if member_id == UNKNOWN_MEMBER_ID:
                current = group.current_static_member_id(instance_id) if instance_id is not None else None
                if current is None:
                    errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                else:
                    self._member_left(group, current, reason, update_group=False)
                    errors.append(ErrorCode.NONE)
            elif group.is_pending_member(member_id):
                group.remove(member_id)
                log.info("pending_member_left", group_id=group.group_id, member_id=member_id)
                errors.append(ErrorCode.NONE)
            else:
                error = self._validate_current_member(group, member_id, instance_id)
                if not error:
                    self._member_left(group, member_id, reason, update_group=False)
                errors.append(error)
        if ErrorCode.NONE in errors:
            self._failed_in_request = False
            if group.state in (STABLE, COMPLETING_REBALANCE):
                self._maybe_prepare_rebalance(group, "explicit LeaveGroup request")
            elif group.state == PREPARING_REBALANCE:
                self._try_complete_join(group)
            if self._failed_in_request:  # the write operation failed as a whole: handleOperationException
                return ErrorCode.UNKNOWN_SERVER_ERROR, []
        return ErrorCode.NONE, errors

    def _member_left(self, group: ClassicGroup, member_id: str, reason: str | None, *, update_group: bool = True) -> None:
        member = group.members[member_id]
        why = reason if reason is not None else "not provided"
        log.info("member_left", group_id=group.group_id, member_id=member_id, group_instance_id=member.group_instance_id,
                 reason=why)
        if update_group:
            self._remove_member_and_update_group(group, member, f"removing member {member_id} on LeaveGroup; client reason: {why}")
        else:
            group.invoke_join_callback(member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, UNKNOWN_MEMBER_ID))
            group.remove(member_id)

    # --- OffsetCommit's member checks (for the offsets part of the coordinator) ---

    def validate_offset_commit(self, group_id: str, generation_id: int, member_id: str,
                               group_instance_id: str | None) -> int:
        """GroupCoordinator.handleCommitOffsets / validateOffsetCommit / doCommitOffsets: 0 when the commit may be
        stored. An unknown group with a negative generation becomes an Empty "simple" group (manual commits);
        a member's valid commit restarts its session timeout, as a heartbeat does."""
        group = self.group(group_id)
        if group is None:
            if group_id in self.groups:
                return ErrorCode.ILLEGAL_GENERATION  # held by a consumer-protocol group; its own checks apply
            if generation_id < 0:
                self.groups[group_id] = ClassicGroup(group_id, self.scheduler.now_ms(), new_coordinator=self.settings.new_coordinator)
                log.info("simple_group_created", group_id=group_id)
                return ErrorCode.NONE
            return ErrorCode.ILLEGAL_GENERATION
        error = self._member_checks(group, generation_id, member_id, group_instance_id, transactional=False)
        if error or (generation_id < 0 and group.is_state(EMPTY)):
            return error
        if group.state in (STABLE, PREPARING_REBALANCE) and member_id in group.members:
            member = group.members[member_id]
            self._schedule_heartbeat_expiration(group, member, member.session_timeout_ms)
        elif group.state == COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def simple_group(self, group_id: str) -> ClassicGroup | None:
        """The classic group of that id, created Empty when there is none (None: a consumer group holds the id)."""
        return self._get_or_create(group_id, True)

    def validate_txn_offset_commit(self, group: ClassicGroup, generation_id: int, member_id: str,
                                   group_instance_id: str | None) -> int:
        """A transactional commit's member checks: no member needed, the group's state not enforced (a commit
        during CompletingRebalance is stored), no session restarted."""
        return self._member_checks(group, generation_id, member_id, group_instance_id, transactional=True)

    def _member_checks(self, group: ClassicGroup, generation_id: int, member_id: str, group_instance_id: str | None, *,
                       transactional: bool) -> int:
        """GroupCoordinator.validateOffsetCommit (and the new coordinator's ClassicGroup.validateOffsetCommit): an
        Empty group takes any commit without a generation; a member id, instance id or generation must match; a
        plain commit without them only to an Empty group."""
        if group.is_state(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_state(EMPTY):
            return ErrorCode.NONE
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
            error = self._validate_current_member(group, member_id, group_instance_id)
            if error:
                return error
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif not transactional and not group.is_state(EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    def close(self) -> None:
        """Cancel every timer; waiting requests are left to their closing connections."""
        for group in self.groups.values():
            if not isinstance(group, ClassicGroup):
                continue
            for timer in [group.join_timer, group.sync_timer, *group.pending_member_timers.values(),
                          *(m.heartbeat_timer for m in group.members.values())]:
                if timer is not None:
                    timer.cancel()
