"""ElectLeaders (key 43), v0-2: preferred and unclean leader elections, as a Kafka 3.9 KRaft broker forwards them
to its controller (ControllerApis.handleElectLeaders, ReplicationControlManager.electLeaders).

Behaviour. ALTER on the CLUSTER, else the request's error form with the controller's "is not authorized" message:
every listed partition 31, and the top-level code (v1+). Each listed partition: UNKNOWN_TOPIC_OR_PARTITION for an
unknown topic or partition; ELECTION_NOT_NEEDED (84) when the preferred replica already leads (or, unclean, when
the partition has a leader); PREFERRED_LEADER_NOT_AVAILABLE (80) when the preferred replica is stopped or out of
sync; ELIGIBLE_LEADERS_NOT_AVAILABLE (83) when an unclean election finds no live replica; else the leader changes
under a new epoch. ``topic_partitions`` null means every partition of every topic, and then the partitions that
needed no election are left out (each topic is listed, even with no partition). An unknown election type is
INVALID_REQUEST ("Unknown election type N") for the whole request; ``timeout_ms`` <= 0 REQUEST_TIMED_OUT, as the
controller's deadline has passed (checked first, whatever the election type); an empty (not null) list is answered
at once with no error, whatever the election type and timeout (QuorumController's shortcut). On one node the
preferred replica always leads: every election is not needed; a cluster in one process (kafka.shim.brokers) has
leaders to move back (after a stopped node or a moved leader).

Answer order: the request's order; for null, the topics in the order of the controller's table of topics by name
(a TimelineHashMap: by hash slot, grown with the most topics held at once, colliding names latest first).

Version notes. v1 adds election_type (v0 is preferred) and the top-level error code; v2 is flexible.
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import ElectLeadersResponse
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.handlers.scram_credentials import controller_not_authorized_message
from kafka_shim.shim.partitions.leadership import LeadershipError, elect
from kafka_shim.shim.requests.authz import refused_whole
from kafka_shim.shim.requests.context import RequestContext

PREFERRED, UNCLEAN = 0, 1

_Result = ElectLeadersResponse.ReplicaElectionResult
_Partition = ElectLeadersResponse.PartitionResult


def elect_leaders_error_response(request: messages.ElectLeadersRequest, code: int, message: str | None,
                                 version: int = 2) -> ElectLeadersResponse:
    """ElectLeadersRequest.getErrorResponse: every listed partition and (v1+) the top level carry the error."""
    return ElectLeadersResponse(throttle_time_ms=0, error_code=code if version >= 1 else 0, replica_election_results=[
        _Result(topic=t.topic, partition_result=[_Partition(partition_id=p, error_code=code, error_message=message)
                                                 for p in t.partitions])
        for t in request.topic_partitions or []])


@handles(ApiKey.ELECT_LEADERS, 0, 2, error_response=elect_leaders_error_response)
def elect_leaders(ctx: RequestContext, request: messages.ElectLeadersRequest) -> ElectLeadersResponse:
    if refused_whole(ctx, request) is not None:
        return elect_leaders_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, controller_not_authorized_message(ctx),
                                            ctx.api_version)
    if request.topic_partitions is not None and not request.topic_partitions:
        # QuorumController.electLeaders answers an empty (not null) list at once, before the election type or the
        # deadline is looked at: no error whatever they are.
        return ElectLeadersResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, replica_election_results=[])
    if request.timeout_ms <= 0:
        # The controller's event queue fails an event whose deadline has passed before running it, so before the
        # election type is read.
        return elect_leaders_error_response(request, ErrorCode.REQUEST_TIMED_OUT, None, ctx.api_version)
    election = request.election_type if ctx.api_version >= 1 else PREFERRED
    if election not in (PREFERRED, UNCLEAN):
        return elect_leaders_error_response(request, ErrorCode.INVALID_REQUEST, f"Unknown election type {election}", ctx.api_version)
    partitions = ctx.services.partitions
    assert partitions is not None
    unclean = election == UNCLEAN
    results: list[_Result] = []
    if request.topic_partitions is None:
        known = partitions.cluster.topics
        for name in known.kafka_order():
            topic = known[name]
            outcomes = [(p.index, _outcome(partitions, name, p.index, unclean)) for p in topic.partitions]
            results.append(_Result(topic=name, partition_result=[
                _Partition(partition_id=index, error_code=code, error_message=message)
                for index, (code, message) in outcomes if code != ErrorCode.ELECTION_NOT_NEEDED]))
    else:
        for t in request.topic_partitions:
            results.append(_Result(topic=t.topic, partition_result=[
                _Partition(partition_id=p, error_code=code, error_message=message)
                for p in t.partitions for code, message in [_outcome(partitions, t.topic, p, unclean)]]))
    return ElectLeadersResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, replica_election_results=results)


def _outcome(partitions, topic: str, index: int, unclean: bool) -> tuple[int, str | None]:
    try:
        elect(partitions, topic, index, unclean)
    except LeadershipError as refused:
        return refused.code, refused.message
    return ErrorCode.NONE, None
