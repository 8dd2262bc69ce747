"""OffsetForLeaderEpoch (key 23), v0-4: where a leader epoch ends, as Kafka 3.9
(KafkaApis.handleOffsetForLeaderEpochRequest, Partition.lastOffsetForLeaderEpoch) answers it on a single node.

Behaviour. CLUSTER_ACTION on the cluster (asked without logging a denial) allows every topic; otherwise DESCRIBE on
each topic: denied topics come after the others, each partition with 29. An unknown topic or partition gets 3; a
current leader epoch (v2+) other than ours 74/75. Every partition here has leader epoch 0 from its creation: asked
for epoch 0 it ends at the log end offset; an older (negative) epoch ends where epoch 0 starts (the log start
offset); a later epoch, -1, or a partition nothing was ever written to: epoch and end offset -1, no error.

Version notes. v0: no leader epoch in the answer. v2: current leader epoch. v3: replica id (a consumer sends -1;
a replica's request is answered the same way).
"""

from __future__ import annotations

from kafka_shim.authorizer.api_checks.releases import LEADER_EPOCH_CLUSTER_ACTION
from kafka_shim.authorizer.model import CLUSTER_NAME
from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import OffsetForLeaderEpochResponse
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.partitions import offsets
from kafka_shim.shim.requests.authz import allowed, allowed_names, check
from kafka_shim.shim.requests.context import RequestContext

_DESCRIBE = check(ApiKey.OFFSET_FOR_LEADER_EPOCH, "topics")
_NO_EPOCH = -1

_Topic = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
_Partition = OffsetForLeaderEpochResponse.EpochEndOffset


def offset_for_leader_epoch_error_response(request: messages.OffsetForLeaderEpochRequest, code: int,
                                           message: str | None) -> OffsetForLeaderEpochResponse:
    """OffsetsForLeaderEpochRequest.getErrorResponse: every partition with the code, epoch and offset -1."""
    return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=[
        _Topic(topic=t.topic, partitions=[_Partition(error_code=code, partition=p.partition, leader_epoch=-1, end_offset=-1)
                                          for p in t.partitions])
        for t in request.topics
    ])


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, 0, 4, error_response=offset_for_leader_epoch_error_response)
def offset_for_leader_epoch(ctx: RequestContext, request: messages.OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    topics = request.topics
    if ctx.services.release_rules.leader_epoch_needs_cluster_action:
        # KAFKA-7394: before 2.1 only brokers asked it: CLUSTER_ACTION, else every partition 31.
        if not allowed(ctx, LEADER_EPOCH_CLUSTER_ACTION, CLUSTER_NAME):
            return offset_for_leader_epoch_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
        readable = {t.topic for t in topics}
    else:
        readable = allowed_names(ctx, _DESCRIBE, [t.topic for t in topics])
    answered = [_Topic(topic=t.topic, partitions=[_end_offset(ctx, t.topic, p) for p in t.partitions])
                for t in topics if t.topic in readable]
    denied = [_Topic(topic=t.topic, partitions=[_Partition(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, partition=p.partition,
                                                           leader_epoch=-1, end_offset=-1) for p in t.partitions])
              for t in topics if t.topic not in readable]
    return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=answered + denied)


def _end_offset(ctx: RequestContext, topic: str, p: messages.OffsetForLeaderEpochRequest.OffsetForLeaderPartition) -> _Partition:
    partitions = ctx.services.partitions
    state = partitions.get(topic, p.partition) if partitions is not None else None
    if state is None:
        return _Partition(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, partition=p.partition, leader_epoch=-1, end_offset=-1)
    leader_epoch = ctx.services.cluster.topics[topic].partitions[p.partition].leader_epoch
    current = p.current_leader_epoch if ctx.api_version >= 2 and p.current_leader_epoch != _NO_EPOCH else None
    error = offsets.leader_epoch_error(current, leader_epoch)
    if error == ErrorCode.NONE and not ctx.services.cluster.leads(topic, p.partition, ctx.node_id):
        error = ErrorCode.NOT_LEADER_OR_FOLLOWER  # a leaderless fault holds it
    if error != ErrorCode.NONE:
        return _Partition(error_code=error, partition=p.partition, leader_epoch=-1, end_offset=-1)
    epoch, end = offsets.end_offset_for_epoch(state.log, leader_epoch, p.leader_epoch, state.epoch_cache)
    return _Partition(error_code=ErrorCode.NONE, partition=p.partition, leader_epoch=epoch, end_offset=end)
