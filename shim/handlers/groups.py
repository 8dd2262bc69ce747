"""JoinGroup (11) v0-9, Heartbeat (12) v0-4, LeaveGroup (13) v0-5, SyncGroup (14) v0-5: the classic group protocol,
as Kafka 3.9's KafkaApis hands them to its (default, Scala) GroupCoordinator.

Behaviour. Checks in Kafka's order (KafkaApis.handleJoinGroupRequest etc.): SyncGroup v5+ without protocol type or name 23
before anything else; then READ on the group (declared in authorizer.api_checks, keys 11-14), else 30 in the
request's getErrorResponse form; an empty group id 24; before ``__consumer_offsets`` exists (no FindCoordinator
has created it) 16, NOT_COORDINATOR, as Kafka answers for a group whose partition it does not lead; then the
coordinator (``shim/groups/classic_coordinator.py``), whose answers are copied field by field. JoinGroup and
SyncGroup wait for the rebalance (the connection's later requests wait too, as Kafka mutes the channel); Heartbeat
and LeaveGroup answer at once.

Version notes. JoinGroup: v0 has no rebalance timeout (the session timeout is used); v4+ a new dynamic member gets
79 with its id first (KIP-394); v5+ ``group_instance_id`` (KIP-345); v7+ protocol type, and an empty protocol name
is null (below v7 a null one is ""); v8+ reason; v9+ ``skip_assignment`` for a restarted static leader.
SyncGroup: v3+ instance id; v5+ protocol type and name, checked against the group's. Heartbeat: v3+ instance id.
LeaveGroup: v0-2 one member id and one error (the first member error when the top level has none); v3+ a batch of
members by id or by instance id, each answered; v5 reasons.
"""

from __future__ import annotations

import asyncio

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse, SyncGroupResponse
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.groups.classic import JoinResult, SyncResult
from kafka_shim.shim.groups.consumer import ConsumerGroup
from kafka_shim.shim.groups.coordinator import GroupCoordinator
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.handlers.consumer_groups import consumer_topics
from kafka_shim.shim.requests.authz import allowed, check
from kafka_shim.shim.requests.context import RequestContext
from kafka_shim.shim.requests.coordination import coordinates

_JOIN, _HEARTBEAT = check(ApiKey.JOIN_GROUP, "group"), check(ApiKey.HEARTBEAT, "group")
_LEAVE, _SYNC = check(ApiKey.LEAVE_GROUP, "group"), check(ApiKey.SYNC_GROUP, "group")
_JoinMember = JoinGroupResponse.JoinGroupResponseMember
log = get_logger("kafka_shim.groups")

# What a client (or its user) can do about a refusal; codes that are part of normal rebalancing are not logged.
_HINTS = {
    ErrorCode.INVALID_SESSION_TIMEOUT: "session.timeout.ms must lie within the broker's group.min.session.timeout.ms and "
                                       "group.max.session.timeout.ms",
    ErrorCode.INCONSISTENT_GROUP_PROTOCOL: "the group's members use another protocol type, or share no assignor with this "
                                           "member (partition.assignment.strategy)",
    ErrorCode.GROUP_MAX_SIZE_REACHED: "the group has group.max.size members already",
    ErrorCode.FENCED_INSTANCE_ID: "another consumer joined with the same group.instance.id and replaced this one",
    ErrorCode.INVALID_GROUP_ID: "a group id may not be empty",
}
_ROUTINE = {ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED, ErrorCode.REBALANCE_IN_PROGRESS,
            ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION}


def _log_refusal(api: str, group_id: str, member_id: str, code: int) -> None:
    if code in _ROUTINE:
        log.debug("group_request_answered", api=api, group_id=group_id, member_id=member_id, error_code=code)
    else:
        log.info("group_request_refused", api=api, group_id=group_id, member_id=member_id, error_code=code,
                 hint=_HINTS.get(code))


def join_group_error_response(request: object, code: int, message: str | None, version: int | None = None) -> JoinGroupResponse:
    """JoinGroupRequest.getErrorResponse: generation -1, empty leader and member id, no members; the protocol name is
    "" below v7 and null from v7 (JoinGroupResponse's constructor); without a version, the v7+ form."""
    return JoinGroupResponse(throttle_time_ms=0, error_code=code, generation_id=-1, protocol_type=None,
                             protocol_name="" if version is not None and version < 7 else None, leader="",
                             skip_assignment=False, member_id="", members=[])


def sync_group_error_response(request: object, code: int, message: str | None) -> SyncGroupResponse:
    return SyncGroupResponse(throttle_time_ms=0, error_code=code, protocol_type=None, protocol_name=None, assignment=b"")


def heartbeat_error_response(request: object, code: int, message: str | None) -> HeartbeatResponse:
    return HeartbeatResponse(throttle_time_ms=0, error_code=code)


def leave_group_error_response(request: object, code: int, message: str | None) -> LeaveGroupResponse:
    return LeaveGroupResponse(throttle_time_ms=0, error_code=code, members=[])


def _coordinator(ctx: RequestContext) -> GroupCoordinator | None:
    return ctx.services.groups


OFFSETS_TOPIC = "__consumer_offsets"


def _not_coordinator(ctx: RequestContext, group_id: str) -> bool:
    """GroupCoordinator.validateGroupStatus: a valid (non-empty) group id whose ``__consumer_offsets`` partition this
    broker does not lead, because no FindCoordinator has created the topic yet, is NOT_COORDINATOR (16)."""
    partitions = ctx.services.partitions
    if bool(group_id) and partitions is not None and OFFSETS_TOPIC not in partitions.cluster.topics:
        return True
    return not coordinates(ctx, group_id)  # another node of the cluster leads the group's partition


def _consumer_group_for_join(ctx: RequestContext, coordinator: GroupCoordinator,
                             request: messages.JoinGroupRequest) -> ConsumerGroup | None:
    """The KIP-848 group a JoinGroup goes to, or None for the classic path (no such group; an empty one, which
    Kafka 3.9 deletes to make room for a classic group; or a request the classic checks refuse first)."""
    group_id = request.group_id
    if not group_id or coordinator.consumer_group(group_id) is None:
        return None
    settings = coordinator.settings
    if not settings.min_session_timeout_ms <= request.session_timeout_ms <= settings.max_session_timeout_ms:
        return None
    if coordinator.release_empty_consumer_group(group_id):
        return None
    return coordinator.consumer_group(group_id)


def _join_response(result: JoinResult, version: int) -> JoinGroupResponse:
    name = result.protocol_name
    # JoinGroupResponse's constructor: below v7 a null name is sent as ""; from v7 an empty name is sent as null.
    name = ("" if name is None else name) if version < 7 else (None if name == "" else name)
    return JoinGroupResponse(
        throttle_time_ms=0, error_code=result.error, generation_id=result.generation_id,
        protocol_type=result.protocol_type, protocol_name=name, leader=result.leader_id,
        skip_assignment=result.skip_assignment, member_id=result.member_id,
        members=[_JoinMember(member_id=m, group_instance_id=i, metadata=md) for m, i, md in result.members])


@handles(ApiKey.JOIN_GROUP, 0, 9, error_response=join_group_error_response)
async def join_group(ctx: RequestContext, request: messages.JoinGroupRequest) -> JoinGroupResponse:
    version = ctx.api_version
    if not allowed(ctx, _JOIN, request.group_id):
        return _join_response(JoinResult(ErrorCode.GROUP_AUTHORIZATION_FAILED, ""), version)
    coordinator = _coordinator(ctx)
    if coordinator is None:
        return _join_response(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, ""), version)
    if _not_coordinator(ctx, request.group_id):
        return _join_response(JoinResult(ErrorCode.NOT_COORDINATOR, request.member_id), version)
    instance_id = request.group_instance_id if version >= 5 else None
    mixed = _consumer_group_for_join(ctx, coordinator, request)
    if mixed is not None:  # KIP-848: a classic member inside a consumer group (Kafka 3.9's new coordinator)
        return _join_response(coordinator.consumer.classic_join(
            mixed, request.member_id, instance_id, require_known_member_id=version >= 4 and instance_id is None,
            client_id=ctx.header.client_id or "", client_host=f"/{ctx.client_host}",
            rebalance_timeout_ms=request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms,
            session_timeout_ms=request.session_timeout_ms, protocol_type=request.protocol_type,
            protocols=[(p.name, bytes(p.metadata)) for p in request.protocols], topics=consumer_topics(ctx)), version)
    answer: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()

    def respond(result: JoinResult) -> None:
        if not answer.done():
            answer.set_result(result)

    coordinator.classic.join(
        request.group_id, request.member_id, instance_id,
        require_known_member_id=version >= 4 and instance_id is None,
        support_skipping_assignment=version >= 9,
        client_id=ctx.header.client_id or "", client_host=f"/{ctx.client_host}",
        rebalance_timeout_ms=request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms,
        session_timeout_ms=request.session_timeout_ms, protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        reason=request.reason if version >= 8 else None, callback=respond)
    result = await answer
    _log_refusal("JoinGroup", request.group_id, request.member_id, result.error)
    return _join_response(result, version)


@handles(ApiKey.SYNC_GROUP, 0, 5, error_response=sync_group_error_response)
async def sync_group(ctx: RequestContext, request: messages.SyncGroupRequest) -> SyncGroupResponse:
    version = ctx.api_version
    if version >= 5 and (request.protocol_type is None or request.protocol_name is None):
        return sync_group_error_response(request, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, None)
    if not allowed(ctx, _SYNC, request.group_id):
        return sync_group_error_response(request, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    coordinator = _coordinator(ctx)
    if coordinator is None:
        return sync_group_error_response(request, ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
    if _not_coordinator(ctx, request.group_id):
        return sync_group_error_response(request, ErrorCode.NOT_COORDINATOR, None)
    mixed = coordinator.consumer_group(request.group_id) if request.group_id else None
    if mixed is not None:
        result = coordinator.consumer.classic_sync(
            mixed, request.member_id, request.group_instance_id if version >= 3 else None, request.generation_id,
            request.protocol_type if version >= 5 else None, request.protocol_name if version >= 5 else None,
            {t.topic_id: name for name, t in ctx.services.cluster.topics.items()})
        return SyncGroupResponse(throttle_time_ms=0, error_code=result.error, protocol_type=result.protocol_type,
                                 protocol_name=result.protocol_name, assignment=result.assignment)
    answer: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()

    def respond(result: SyncResult) -> None:
        if not answer.done():
            answer.set_result(result)

    # A member named twice: the last assignment wins (Kafka builds a Map from the list).
    assignments = {a.member_id: bytes(a.assignment) for a in request.assignments}
    coordinator.classic.sync(
        request.group_id, request.generation_id, request.member_id,
        request.protocol_type if version >= 5 else None, request.protocol_name if version >= 5 else None,
        request.group_instance_id if version >= 3 else None, assignments, respond)
    result = await answer
    _log_refusal("SyncGroup", request.group_id, request.member_id, result.error)
    return SyncGroupResponse(throttle_time_ms=0, error_code=result.error, protocol_type=result.protocol_type,
                             protocol_name=result.protocol_name, assignment=result.assignment)


@handles(ApiKey.HEARTBEAT, 0, 4, error_response=heartbeat_error_response)
def heartbeat(ctx: RequestContext, request: messages.HeartbeatRequest) -> HeartbeatResponse:
    if not allowed(ctx, _HEARTBEAT, request.group_id):
        return heartbeat_error_response(request, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    coordinator = _coordinator(ctx)
    if coordinator is None:
        return heartbeat_error_response(request, ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
    if _not_coordinator(ctx, request.group_id):
        return heartbeat_error_response(request, ErrorCode.NOT_COORDINATOR, None)
    mixed = coordinator.consumer_group(request.group_id) if request.group_id else None
    if mixed is not None:
        code = coordinator.consumer.classic_heartbeat(mixed, request.member_id,
                                                      request.group_instance_id if ctx.api_version >= 3 else None,
                                                      request.generation_id)
        return HeartbeatResponse(throttle_time_ms=0, error_code=code)
    code = coordinator.classic.heartbeat(request.group_id, request.member_id,
                                         request.group_instance_id if ctx.api_version >= 3 else None,
                                         request.generation_id)
    _log_refusal("Heartbeat", request.group_id, request.member_id, code)
    return HeartbeatResponse(throttle_time_ms=0, error_code=code)


@handles(ApiKey.LEAVE_GROUP, 0, 5, error_response=leave_group_error_response)
def leave_group(ctx: RequestContext, request: messages.LeaveGroupRequest) -> LeaveGroupResponse:
    version = ctx.api_version
    if not allowed(ctx, _LEAVE, request.group_id):
        return leave_group_error_response(request, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    coordinator = _coordinator(ctx)
    if coordinator is None:
        return leave_group_error_response(request, ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
    if _not_coordinator(ctx, request.group_id):
        return leave_group_error_response(request, ErrorCode.NOT_COORDINATOR, None)
    if version < 3:
        leaving = [(request.member_id, None, None)]
    else:
        leaving = [(m.member_id, m.group_instance_id, m.reason if version >= 5 else None) for m in request.members]
    mixed = coordinator.consumer_group(request.group_id) if request.group_id else None
    if mixed is not None:
        top, errors = ErrorCode.NONE, [e for _, e in coordinator.consumer.classic_leave(mixed, [(m, i) for m, i, _ in leaving])]
    else:
        top, errors = coordinator.classic.leave(request.group_id, leaving)
    if version < 3:
        # LeaveGroupResponse for v0-2: the top-level error, else the first member error.
        return LeaveGroupResponse(throttle_time_ms=0, error_code=top or next((e for e in errors if e), ErrorCode.NONE))
    return LeaveGroupResponse(throttle_time_ms=0, error_code=top, members=[
        LeaveGroupResponse.MemberResponse(member_id=m, group_instance_id=i, error_code=e)
        for (m, i, _), e in zip(leaving, errors, strict=False)])
