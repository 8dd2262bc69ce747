"""DescribeProducers (key 61), v0: the active producers of partitions, as a Kafka 3.9 broker answers it
(KafkaApis.handleDescribeProducersRequest, Partition.activeProducerState); `kafka-transactions.sh
describe-producers` reads it.

Behaviour. Per topic, in request order: an illegal name INVALID_TOPIC_EXCEPTION (17) with Kafka's message; READ on
the topic, else TOPIC_AUTHORIZATION_FAILED (29) on each of its partitions; an unknown topic 3. Per partition: an
unknown partition 3; one this node holds no replica of (a cluster in one process) NOT_LEADER_OR_FOLLOWER; else
every producer id the partition's producer state holds (idempotent producers, until the
``producer.id.expiration.check.interval.ms`` check after ``producer.id.expiration.ms`` of idleness): epoch, last sequence, last timestamp, coordinator epoch, the first offset of its
open transaction (-1: none). A follower answers too, as in Kafka (the log is there).

Version notes. Kafka 3.9 has v0 (flexible).
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import DescribeProducersResponse
from kafka_shim.shim.cluster.topics import invalid_topic_name
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.javacompat.hash_orders import java_hash_map_order, long_hash
from kafka_shim.shim.partitions.append import expire_idle_producers
from kafka_shim.shim.requests.authz import allowed, check
from kafka_shim.shim.requests.context import RequestContext

_READ = check(ApiKey.DESCRIBE_PRODUCERS, "topics")
_Topic = DescribeProducersResponse.TopicResponse
_Partition = DescribeProducersResponse.PartitionResponse
_Producer = DescribeProducersResponse.ProducerState


def describe_producers_error_response(request: messages.DescribeProducersRequest, code: int,
                                      message: str | None) -> DescribeProducersResponse:
    """DescribeProducersRequest.getErrorResponse: every requested partition with the code, no message."""
    return DescribeProducersResponse(throttle_time_ms=0, topics=[
        _Topic(name=t.name, partitions=[_Partition(partition_index=p, error_code=code) for p in t.partition_indexes])
        for t in request.topics])


@handles(ApiKey.DESCRIBE_PRODUCERS, 0, 0, error_response=describe_producers_error_response)
def describe_producers(ctx: RequestContext, request: messages.DescribeProducersRequest) -> DescribeProducersResponse:
    topics = []
    # 2.8 (ReleaseRules.describe_producers_bare_codes): no name check, and its refusals carry no message
    bare = ctx.services.release_rules.describe_producers_bare_codes
    for t in request.topics:
        invalid = None if bare else invalid_topic_name(t.name)
        if invalid is not None:
            error: tuple[int, str | None] | None = (ErrorCode.INVALID_TOPIC_EXCEPTION, invalid)
        elif not allowed(ctx, _READ, t.name):  # KafkaApis asks per topic entry, in request order (a repeat asks again)
            error = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
        elif t.name not in ctx.services.cluster.topics:
            error = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        else:
            error = None
        if bare and error is not None:
            error = (error[0], None)
        topics.append(_Topic(name=t.name, partitions=[
            _Partition(partition_index=p, error_code=error[0], error_message=error[1]) if error is not None
            else _active(ctx, t.name, p) for p in t.partition_indexes]))
    return DescribeProducersResponse(throttle_time_ms=0, topics=topics)


def _active(ctx: RequestContext, topic: str, index: int) -> DescribeProducersResponse.PartitionResponse:
    known = ctx.services.cluster.topics[topic]
    partitions = ctx.services.partitions
    state = partitions.get(topic, index) if partitions is not None else None
    if state is None or not 0 <= index < len(known.partitions):
        return _Partition(partition_index=index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if ctx.node_id not in known.partitions[index].replicas:
        return _Partition(partition_index=index, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER)
    expire_idle_producers(partitions, state, partitions.logs.clock())  # as Kafka's scheduler would have by now
    # ProducerStateManager keeps its producers in a java.util.HashMap by producer id, which the answer walks.
    by_id = {e.producer_id: e for e in state.producers.entries()}
    return _Partition(partition_index=index, error_code=ErrorCode.NONE, active_producers=[
        _Producer(producer_id=e.producer_id, producer_epoch=e.epoch, last_sequence=e.last_seq, last_timestamp=e.last_timestamp,
                  coordinator_epoch=e.coordinator_epoch,
                  current_txn_start_offset=-1 if e.current_txn_first_offset is None else e.current_txn_first_offset)
        for e in (by_id[pid] for pid in java_hash_map_order(by_id, long_hash))])
