"""AddRaftVoter (key 80) and RemoveRaftVoter (key 81), v0: KIP-853's voter changes, as a Kafka 3.9 broker forwards
them to its controller (ControllerApis, KafkaRaftClient, Add/RemoveVoterHandler); `kafka-metadata-quorum.sh
add-controller / remove-controller` send them.

Behaviour. ALTER on the CLUSTER, else 31 with the error's default text. Then, in the Raft client's order: a
cluster id that is not this cluster's INCONSISTENT_CLUSTER_ID (104) with Kafka's message; a voter without an id
or a directory id INVALID_REQUEST; AddRaftVoter without an endpoint for the controller listener (the first of
``controller.listener.names``, else CONTROLLER) INVALID_REQUEST naming the endpoints sent; and then, since a
kafka-shim node stands for a static single-voter quorum (``controller.quorum.voters``, kraft.version 0),
UNSUPPORTED_VERSION: "Cluster doesn't support adding (removing) voter because the kraft.version feature is 0".

Version notes. Kafka 3.9 has v0 of both (flexible).
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import AddRaftVoterResponse, RemoveRaftVoterResponse
from kafka_shim.protocol.primitives import ZERO_UUID
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.handlers.configs import UNKNOWN_SERVER_ERROR_DEFAULT
from kafka_shim.shim.javacompat.java_hash import JavaHashMap
from kafka_shim.shim.requests.authz import refused_whole
from kafka_shim.shim.requests.context import RequestContext

_AUTHORIZATION_FAILED = "Cluster authorization failed."


def _default_text(code: int, message: str | None) -> str | None:
    """Errors.message(): the code's own text where the caller gives none (an unexpected failure's included)."""
    if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
        return _AUTHORIZATION_FAILED
    return message if message is not None else (UNKNOWN_SERVER_ERROR_DEFAULT if code == ErrorCode.UNKNOWN_SERVER_ERROR else None)


def add_raft_voter_error_response(request: messages.AddRaftVoterRequest, code: int, message: str | None) -> AddRaftVoterResponse:
    """AddRaftVoterRequest.getErrorResponse: the code and its default text."""
    return AddRaftVoterResponse(throttle_time_ms=0, error_code=code,
                                error_message=_default_text(code, message))


def remove_raft_voter_error_response(request: messages.RemoveRaftVoterRequest, code: int, message: str | None) -> RemoveRaftVoterResponse:
    """RemoveRaftVoterRequest.getErrorResponse: the code and its default text."""
    return RemoveRaftVoterResponse(throttle_time_ms=0, error_code=code,
                                   error_message=_default_text(code, message))


@handles(ApiKey.ADD_RAFT_VOTER, 0, 0, error_response=add_raft_voter_error_response)
def add_raft_voter(ctx: RequestContext, request: messages.AddRaftVoterRequest) -> AddRaftVoterResponse:
    if refused_whole(ctx, request) is not None:
        return add_raft_voter_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    code, message = _common_checks(ctx, request, "Add")
    if code == ErrorCode.NONE:
        endpoints = {listener.name.upper(): (listener.host, listener.port) for listener in request.listeners}
        listener = _controller_listener(ctx)
        if listener not in endpoints:
            code, message = ErrorCode.INVALID_REQUEST, (f"Add voter request didn't include the endpoint ({_endpoints_text(endpoints)}) "
                                                        f"for the default listener ListenerName({listener})")
        else:
            code, message = ErrorCode.UNSUPPORTED_VERSION, "Cluster doesn't support adding voter because the kraft.version feature is 0"
    return AddRaftVoterResponse(throttle_time_ms=0, error_code=code, error_message=message)


@handles(ApiKey.REMOVE_RAFT_VOTER, 0, 0, error_response=remove_raft_voter_error_response)
def remove_raft_voter(ctx: RequestContext, request: messages.RemoveRaftVoterRequest) -> RemoveRaftVoterResponse:
    if refused_whole(ctx, request) is not None:
        return remove_raft_voter_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    code, message = _common_checks(ctx, request, "Remove")
    if code == ErrorCode.NONE:
        code, message = ErrorCode.UNSUPPORTED_VERSION, "Cluster doesn't support removing voter because the kraft.version feature is 0"
    return RemoveRaftVoterResponse(throttle_time_ms=0, error_code=code, error_message=message)


def _common_checks(ctx: RequestContext, request, verb: str) -> tuple[int, str | None]:
    """KafkaRaftClient's checks before the handler: the cluster id, then the voter's id and directory id."""
    cluster_id = ctx.services.cluster.cluster_id
    if request.cluster_id is not None and request.cluster_id != cluster_id:
        return ErrorCode.INCONSISTENT_CLUSTER_ID, f'The given id "{request.cluster_id}" doesn\'t match the cluster id "{cluster_id}"'
    if request.voter_id < 0 or request.voter_directory_id == ZERO_UUID:
        return ErrorCode.INVALID_REQUEST, f"{verb} voter request didn't include a valid voter"
    return ErrorCode.NONE, None


def _controller_listener(ctx: RequestContext) -> str:
    names = ctx.services.config.raw.get("controller.listener.names", "").strip()
    return names.split(",")[0].strip().upper() if names else "CONTROLLER"


def _endpoints_text(endpoints: dict[str, tuple[str, int]]) -> str:
    """Endpoints.toString: a ``new HashMap<>(size)`` of ListenerName (hashed as its name) to unresolved addresses."""
    ordered: JavaHashMap[tuple[str, int]] = JavaHashMap(len(endpoints))
    for name, address in endpoints.items():
        ordered.put(name, address)
    inner = ", ".join(f"ListenerName({name})={host}/<unresolved>:{port}" for name, (host, port) in ordered.items())
    return f"Endpoints(endpoints={{{inner}}})"
