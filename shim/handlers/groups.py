"""JoinGroup (11) v0-9, Heartbeat (12) v0-4, LeaveGroup (13) v0-5, SyncGroup (14) v0-5: the classic group protocol,
as Kafka 3.9's KafkaApis hands them to its (default, Scala) GroupCoordinator.

Behaviour. Checks in Kafka's order (KafkaApis.handleJoinGroupRequest etc.): SyncGroup v5+ without protocol type or name 23
before anything else; then READ on the group (declared in authorizer.api_checks, keys 11-14), else 30 in the
request's getErrorResponse form; then the coordinator (``shim/groups/classic_coordinator.py``), whose answers are
copied field by field. JoinGroup and SyncGroup wait for the rebalance (the connection's later requests wait too, as
Kafka mutes the channel); Heartbeat and LeaveGroup answer at once.

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
from kafka_shim.shim.groups.classic import JoinResult, SyncResult
from kafka_shim.shim.groups.coordinator import GroupCoordinator
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.requests.authz import allowed, check
from kafka_shim.shim.requests.context import RequestContext

_JOIN, _HEARTBEAT = check(ApiKey.JOIN_GROUP, "group"), check(ApiKey.HEARTBEAT, "group")
_LEAVE, _SYNC = check(ApiKey.LEAVE_GROUP, "group"), check(ApiKey.SYNC_GROUP, "group")
_JoinMember = JoinGroupResponse.JoinGroupResponseMember


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
    instance_id = request.group_instance_id if version >= 5 else None
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
    return _join_response(await answer, version)


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
    return SyncGroupResponse(throttle_time_ms=0, error_code=result.error, protocol_type=result.protocol_type,
                             protocol_name=result.protocol_name, assignment=result.assignment)


@handles(ApiKey.HEARTBEAT, 0, 4, error_response=heartbeat_error_response)
def heartbeat(ctx: RequestContext, request: messages.HeartbeatRequest) -> HeartbeatResponse:
    if not allowed(ctx, _HEARTBEAT, request.group_id):
        return heartbeat_error_response(request, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    coordinator = _coordinator(ctx)
    if coordinator is None:
        return heartbeat_error_response(request, ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
    code = coordinator.classic.heartbeat(request.group_id, request.member_id,
                                         request.group_instance_id if ctx.api_version >= 3 else None,
                                         request.generation_id)
    return HeartbeatResponse(throttle_time_ms=0, error_code=code)


@handles(ApiKey.LEAVE_GROUP, 0, 5, error_response=leave_group_error_response)
def leave_group(ctx: RequestContext, request: messages.LeaveGroupRequest) -> LeaveGroupResponse:
    version = ctx.api_version
    if not allowed(ctx, _LEAVE, request.group_id):
        return leave_group_error_response(request, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    coordinator = _coordinator(ctx)
    if coordinator is None:
        return leave_group_error_response(request, ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
    if version < 3:
        leaving = [(request.member_id, None, None)]
    else:
        leaving = [(m.member_id, m.group_instance_id, m.reason if version >= 5 else None) for m in request.members]
    top, errors = coordinator.classic.leave(request.group_id, leaving)
    if version < 3:
        # LeaveGroupResponse for v0-2: the top-level error, else the first member error.
        return LeaveGroupResponse(throttle_time_ms=0, error_code=top or next((e for e in errors if e), ErrorCode.NONE))
    return LeaveGroupResponse(throttle_time_ms=0, error_code=top, members=[
        LeaveGroupResponse.MemberResponse(member_id=m, group_instance_id=i, error_code=e)
        for (m, i, _), e in zip(leaving, errors, strict=False)])
