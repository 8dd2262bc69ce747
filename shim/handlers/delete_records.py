"""DeleteRecords (key 21), v0-2: move partitions' log start offsets up, as Kafka 3.9
(KafkaApis.handleDeleteRecordsRequest, Partition.deleteRecordsOnLeader) does on a single node.

Behaviour. DELETE on each topic (asked once per name): denied partitions get 29, then unknown topics or partitions
3, each with low watermark -1. For the others: an internal topic gets INVALID_TOPIC_EXCEPTION (17); a topic whose
``cleanup.policy`` does not include ``delete`` POLICY_VIOLATION (44); an offset of -1 means the high watermark;
another negative offset, or one above the high watermark, OFFSET_OUT_OF_RANGE (1), low watermark -1. Otherwise the
log start offset becomes the offset (never lower than it was) and the answer's low watermark is the new log start
offset: a single node has no followers to wait for, so ``timeout_ms`` is never waited. Whole segments below the
new start go at the next retention pass; fetches below it get OFFSET_OUT_OF_RANGE at once, long-polling ones
included (Kafka 3.9 answers them the same 1, but only at their max_wait_ms or at the partition's next append).

Answer order is Kafka's, which its Scala collections decide (KafkaApis: ``authorized ++ unauthorized ++
nonExisting``, then ``groupBy(topic)``): topics as an immutable HashMap of names iterates them (CHAMP order);
within a topic, when some partition was allowed, as a fresh ``mutable.HashMap`` iterates (the partitions' maps stay
mutable all the way), else in the order of the immutable Map the denied and unknown partitions were added to
(insertion order up to four partitions in all, CHAMP order from five on). Compared with Kafka 3.9 on random requests.

Version notes. v2 is the flexible form of v1; v1 is v0's.
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import DeleteRecordsResponse
from kafka_shim.shim.cluster.topics import INTERNAL_TOPICS
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.javacompat.hash_orders import scala_mutable_map_order, topic_partition_hash
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.javacompat.scala_set import scala_set
from kafka_shim.shim.log.errors import LogError
from kafka_shim.shim.requests.authz import allowed_names, check, hidden_topics
from kafka_shim.shim.requests.context import RequestContext

_DELETE = check(ApiKey.DELETE_RECORDS, "topics")
INVALID_LOW_WATERMARK = -1

_Topic = DeleteRecordsResponse.DeleteRecordsTopicResult
_Partition = DeleteRecordsResponse.DeleteRecordsPartitionResult


def delete_records_error_response(request: messages.DeleteRecordsRequest, code: int, message: str | None) -> DeleteRecordsResponse:
    """DeleteRecordsRequest.getErrorResponse: every partition with the code and low watermark -1."""
    return DeleteRecordsResponse(throttle_time_ms=0, topics=[
        _Topic(name=t.name, partitions=[_failed(p.partition_index, code) for p in t.partitions]) for t in request.topics
    ])


def _failed(partition: int, code: int) -> _Partition:
    return _Partition(partition_index=partition, low_watermark=INVALID_LOW_WATERMARK, error_code=code)


@handles(ApiKey.DELETE_RECORDS, 0, 2, error_response=delete_records_error_response)
def delete_records(ctx: RequestContext, request: messages.DeleteRecordsRequest) -> DeleteRecordsResponse:
    topics = ctx.services.cluster.topics
    hidden = hidden_topics(ctx, [t.name for t in request.topics], topics.__contains__)
    deletable = allowed_names(ctx, _DELETE, [t.name for t in request.topics if t.name not in hidden])
    done: dict[_Key, _Partition] = {}
    denied: dict[_Key, _Partition] = {}
    unknown: dict[_Key, _Partition] = {}
    # KafkaApis keeps the partitions in maps: a partition named twice (in one topic entry or two) is one result,
    # deleted to the offset named last.
    offsets = {(t.name, p.partition_index): p.offset for t in request.topics for p in t.partitions}
    for (name, index), offset in offsets.items():
        if name in hidden:
            unknown[name, index] = _failed(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        elif name not in deletable:
            denied[name, index] = _failed(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        elif name not in topics or not 0 <= index < len(topics[name].partitions):
            unknown[name, index] = _failed(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        else:
            done[name, index] = _delete(ctx, name, index, offset)
    results = {**done, **denied, **unknown}
    return DeleteRecordsResponse(throttle_time_ms=0, topics=[
        _Topic(name=name, partitions=[results[key] for key in keys]) for name, keys in _kafka_order(done, denied, unknown)])


_Key = tuple[str, int]


def _kafka_order(done: dict[_Key, _Partition], denied: dict[_Key, _Partition],
                 unknown: dict[_Key, _Partition]) -> list[tuple[str, list[_Key]]]:
    """The topics and their partitions in the order KafkaApis.handleDeleteRecordsRequest answers them."""
    if done:
        # ReplicaManager hands back a mutable.HashMap, so the merge and each topic's group are mutable HashMaps.
        merged = [*done, *denied, *unknown]
    else:
        # Map.empty ++ unauthorized ++ nonExisting: an immutable Map, each part added in its mutable.HashMap order.
        merged = scala_mutable_map_order(denied, topic_partition_hash) + scala_mutable_map_order(unknown, topic_partition_hash)
    by_topic: dict[str, list[_Key]] = {}
    for key in merged:
        by_topic.setdefault(key[0], []).append(key)
    if done:
        ordered = {name: scala_mutable_map_order(keys, topic_partition_hash) for name, keys in by_topic.items()}
    elif len(merged) <= 4:
        ordered = by_topic  # Map1..Map4 and their builder keep insertion order
    else:
        ordered = {name: list(scala_set(keys, topic_partition_hash, hashed=True)) for name, keys in by_topic.items()}
    return [(name, ordered[name]) for name in scala_set(ordered, java_string_hash, hashed=True)]


def _delete(ctx: RequestContext, topic: str, partition: int, offset: int) -> _Partition:
    """ReplicaManager.deleteRecordsOnLocalLog for one partition."""
    if topic in INTERNAL_TOPICS:
        return _failed(partition, ErrorCode.INVALID_TOPIC_EXCEPTION)
    partitions = ctx.services.partitions
    state = partitions.get(topic, partition) if partitions is not None else None
    if state is None:
        return _failed(partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if not ctx.services.cluster.leads(topic, partition, ctx.node_id):
        return _failed(partition, ErrorCode.NOT_LEADER_OR_FOLLOWER)  # a leaderless fault holds it
    policy = partitions.topic_values(topic).get("cleanup.policy", ["delete"])
    if "delete" not in (policy if isinstance(policy, list) else str(policy).split(",")):
        return _failed(partition, ErrorCode.POLICY_VIOLATION)
    try:
        low_watermark = state.log.delete_records(offset)
    except LogError as exc:
        return _failed(partition, exc.error_code)
    partitions.logs.checkpoint()  # the new log start offset survives a restart
    # A fetch waiting below the new log start is not woken: Kafka checks its delayed fetches on appends only, so it
    # answers 1 at its max_wait_ms (or at the partition's next append).
    return _Partition(partition_index=partition, low_watermark=low_watermark, error_code=ErrorCode.NONE)
