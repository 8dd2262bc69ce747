"""AlterPartitionReassignments (key 45) and ListPartitionReassignments (key 46), v0: moving partitions' replicas,
as a Kafka 3.9 KRaft broker forwards them to its controller (ControllerApis, ReplicationControlManager).

Behaviour. Alter: ALTER on the CLUSTER, List: DESCRIBE on the CLUSTER, else the request's error form with the
controller's "is not authorized" message (31 at the top and on every listed partition). Alter, per partition in
request order: an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION ("Unable to find a topic named t." /
"Unable to find partition t:N."); a replica list that is empty, names an unregistered broker or one twice is
INVALID_REPLICA_ASSIGNMENT with the controller's message; null replicas cancel an ongoing reassignment, and with
none NO_REASSIGNMENT_IN_PROGRESS (85). The logs are shared, so new replicas on live nodes are in sync at once: the
reassignment completes in the same step (the leader stays if it is kept, else the first live replica leads under a
new epoch); one that adds a stopped node stays ongoing until the node is back (kafka.shim.brokers). List: the
ongoing ones (replicas, adding, removing), all or those of the listed topics' partitions; unknown names are left
out. Alter with ``timeout_ms`` <= 0 is REQUEST_TIMED_OUT, as the controller's deadline has passed; an Alter naming no
topic is answered at once (QuorumController's shortcut): no error, message "" rather than null, whatever the timeout.

Version notes. Kafka 3.9 has v0 of both (flexible).
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import AlterPartitionReassignmentsResponse, ListPartitionReassignmentsResponse
from kafka_shim.shim.cluster.topics import Partition
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.handlers.scram_credentials import controller_not_authorized_message
from kafka_shim.shim.partitions.leadership import LeadershipError, reassign
from kafka_shim.shim.requests.authz import refused_whole
from kafka_shim.shim.requests.context import RequestContext

_Topic = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
_Partition = AlterPartitionReassignmentsResponse.ReassignablePartitionResponse
_Ongoing = ListPartitionReassignmentsResponse.OngoingTopicReassignment
_OngoingPartition = ListPartitionReassignmentsResponse.OngoingPartitionReassignment


def alter_reassignments_error_response(request: messages.AlterPartitionReassignmentsRequest, code: int,
                                       message: str | None) -> AlterPartitionReassignmentsResponse:
    """AlterPartitionReassignmentsRequest.getErrorResponse: the top level and every partition carry the error."""
    return AlterPartitionReassignmentsResponse(throttle_time_ms=0, error_code=code, error_message=message, responses=[
        _Topic(name=t.name, partitions=[_Partition(partition_index=p.partition_index, error_code=code, error_message=message)
                                        for p in t.partitions]) for t in request.topics])


def list_reassignments_error_response(request: messages.ListPartitionReassignmentsRequest, code: int,
                                      message: str | None) -> ListPartitionReassignmentsResponse:
    """ListPartitionReassignmentsRequest.getErrorResponse: the code at the top, the listed partitions bare."""
    return ListPartitionReassignmentsResponse(throttle_time_ms=0, error_code=code, error_message=message, topics=[
        _Ongoing(name=t.name, partitions=[_OngoingPartition(partition_index=p) for p in t.partition_indexes])
        for t in request.topics or []])


@handles(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 0, error_response=alter_reassignments_error_response)
def alter_partition_reassignments(ctx: RequestContext, request: messages.AlterPartitionReassignmentsRequest
                                  ) -> AlterPartitionReassignmentsResponse:
    if refused_whole(ctx, request) is not None:
        return alter_reassignments_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                  controller_not_authorized_message(ctx))
    if not request.topics:
        # QuorumController answers an empty request at once with a fresh response, whose message is the schema's
        # default "" (not the null the controller's own path sets), and before the deadline is looked at.
        return AlterPartitionReassignmentsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message="", responses=[])
    if request.timeout_ms <= 0:
        return alter_reassignments_error_response(request, ErrorCode.REQUEST_TIMED_OUT, None)
    partitions = ctx.services.partitions
    assert partitions is not None
    topics = []
    for t in request.topics:
        answered = []
        for p in t.partitions:
            code, message = ErrorCode.NONE, None
            try:
                reassign(partitions, t.name, p.partition_index, None if p.replicas is None else list(p.replicas))
            except LeadershipError as refused:
                code, message = refused.code, refused.message
            answered.append(_Partition(partition_index=p.partition_index, error_code=code, error_message=message))
        topics.append(_Topic(name=t.name, partitions=answered))
    return AlterPartitionReassignmentsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, responses=topics)


@handles(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0, error_response=list_reassignments_error_response)
def list_partition_reassignments(ctx: RequestContext, request: messages.ListPartitionReassignmentsRequest
                                 ) -> ListPartitionReassignmentsResponse:
    if refused_whole(ctx, request) is not None:
        return list_reassignments_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                 controller_not_authorized_message(ctx))
    known = ctx.services.cluster.topics
    if request.topics is None:
        wanted = [(name, range(len(topic.partitions))) for name, topic in known.items()]
    else:
        wanted = [(t.name, t.partition_indexes) for t in request.topics if t.name in known]
    topics = []
    for name, indexes in wanted:
        parts = known[name].partitions
        ongoing = [_ongoing(parts[i]) for i in indexes if 0 <= i < len(parts) and (parts[i].adding or parts[i].removing)]
        if ongoing:
            topics.append(_Ongoing(name=name, partitions=ongoing))
    return ListPartitionReassignmentsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, topics=topics)


def _ongoing(p: Partition) -> ListPartitionReassignmentsResponse.OngoingPartitionReassignment:
    return _OngoingPartition(partition_index=p.index, replicas=list(p.replicas), adding_replicas=list(p.adding),
                             removing_replicas=list(p.removing))
