"""DescribeQuorum (key 55), v0-2: the KRaft metadata quorum as a Kafka 3.9 combined broker+controller describes it
(the broker forwards it; ControllerApis.handleDescribeQuorum, KafkaRaftClient.handleDescribeQuorumRequest,
RaftUtil.singletonDescribeQuorumResponse).

Behaviour. DESCRIBE on the cluster (the declared check), else the request's getErrorResponse: top-level 31 with
the error's default message (v2) and no topics. A request that does not name exactly ``__cluster_metadata``
partition 0 gets UNKNOWN_TOPIC_OR_PARTITION (3) with Kafka's message in every partition it names. Otherwise the
controller node (the lowest live one) is the quorum's only voter and leader, at epoch 1 (the first epoch of a
freshly formatted node, what Kafka reports until it restarts); the other live nodes of a kafka-shim cluster are
brokers, which Kafka lists as observers.

kafka-shim keeps no metadata log, so the high watermark and every log end offset are 0: the quorum is caught up
(lag 0) on an empty log, rather than an invented offset that would look like Kafka's ever-growing one. The leader's
fetch and caught-up times are now, as Kafka reports its leader's; observers are reported the same (always caught
up). v2's replica directory ids are zero, as a statically configured quorum (``controller.quorum.voters``,
kraft.version 0) reports them. The voter's node entry lists its controller endpoint as the static quorum names it:
the first of ``controller.listener.names`` with the voter's host and port from ``controller.quorum.voters``; with no
such configuration (kafka-shim needs none) it has no listeners.

Version notes. v1 adds the fetch and caught-up timestamps, v2 (flexible) error messages, directory ids and nodes.
"""

from __future__ import annotations

import time

from kafka_shim.authorizer.model import CLUSTER_NAME
from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import DescribeQuorumResponse
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.requests.authz import allowed, check
from kafka_shim.shim.requests.context import RequestContext

_DESCRIBE = check(ApiKey.DESCRIBE_QUORUM, "cluster")
METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
LEADER_EPOCH = 1
METADATA_END_OFFSET = 0
# Errors.message() of the codes this API answers with (Kafka's default texts).
_MESSAGES = {
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.ILLEGAL_SASL_STATE: "Request is not valid given the current SASL state.",  # the SASL gate's error form
}

_Topic = DescribeQuorumResponse.TopicData
_Partition = DescribeQuorumResponse.PartitionData
_Replica = DescribeQuorumResponse.ReplicaState
_Node = DescribeQuorumResponse.Node
_Listener = DescribeQuorumResponse.Listener


def describe_quorum_error_response(request: messages.DescribeQuorumRequest, code: int, message: str | None) -> DescribeQuorumResponse:
    """DescribeQuorumRequest.getErrorResponse: the code with its default message (not the exception's), no topics."""
    return DescribeQuorumResponse(error_code=code, error_message=_MESSAGES.get(ErrorCode(code), message), topics=[])


def _is_metadata_partition(request: messages.DescribeQuorumRequest) -> bool:
    """RaftUtil.hasValidTopicPartition: exactly one topic, the metadata topic, with exactly its partition 0."""
    topics = request.topics
    return (len(topics) == 1 and topics[0].topic_name == METADATA_TOPIC and len(topics[0].partitions) == 1
            and topics[0].partitions[0].partition_index == METADATA_PARTITION)


def _unknown_partitions(request: messages.DescribeQuorumRequest) -> DescribeQuorumResponse:
    """DescribeQuorumRequest.getPartitionLevelErrorResponse with UNKNOWN_TOPIC_OR_PARTITION."""
    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return DescribeQuorumResponse(error_code=ErrorCode.NONE, topics=[
        _Topic(topic_name=t.topic_name, partitions=[
            _Partition(partition_index=p.partition_index, error_code=code, error_message=_MESSAGES[code]) for p in t.partitions
        ]) for t in request.topics
    ])


@handles(ApiKey.DESCRIBE_QUORUM, 0, 2, error_response=describe_quorum_error_response)
def describe_quorum(ctx: RequestContext, request: messages.DescribeQuorumRequest) -> DescribeQuorumResponse:
    if not allowed(ctx, _DESCRIBE, CLUSTER_NAME):
        return describe_quorum_error_response(request, _DESCRIBE.error_code, None)
    if not _is_metadata_partition(request):
        return _unknown_partitions(request)
    cluster = ctx.services.cluster
    leader = cluster.controller()
    now = int(time.time() * 1000)

    def replica(node: int) -> _Replica:
        return _Replica(replica_id=node, log_end_offset=METADATA_END_OFFSET, last_fetch_timestamp=now, last_caught_up_timestamp=now)

    partition = _Partition(partition_index=METADATA_PARTITION, error_code=ErrorCode.NONE, leader_id=leader,
                           leader_epoch=LEADER_EPOCH, high_watermark=METADATA_END_OFFSET, current_voters=[replica(leader)],
                           observers=[replica(n) for n in cluster.live_nodes if n != leader])
    response = DescribeQuorumResponse(error_code=ErrorCode.NONE, topics=[_Topic(topic_name=METADATA_TOPIC, partitions=[partition])])
    if ctx.api_version >= 2:  # the voters' nodes exist from v2
        response.nodes = [_Node(node_id=leader, listeners=_voter_listeners(ctx, leader))]
    return response


def _voter_listeners(ctx: RequestContext, node: int) -> list[DescribeQuorumResponse.Listener]:
    """A static quorum's voter endpoint (VoterSet.fromInetSocketAddresses): named after the first controller listener,
    at the address ``controller.quorum.voters`` gives the node ("id@host:port", comma separated)."""
    raw = ctx.services.config.raw
    names = raw.get("controller.listener.names", "").strip()
    if not names:
        return []
    for voter in raw.get("controller.quorum.voters", "").split(","):
        node_id, _, address = voter.strip().partition("@")
        host, _, port = address.rpartition(":")
        if node_id.strip() == str(node) and host and port.isdigit():
            return [_Listener(name=names.split(",")[0].strip().upper(), host=host.strip("[]"), port=int(port))]
    return []
