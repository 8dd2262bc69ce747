"""WriteTxnMarkers (key 27), v0-1: the transaction coordinator's request to write COMMIT/ABORT markers on partition
leaders, as a Kafka 3.9 broker answers it (KafkaApis.handleWriteTxnMarkersRequest, ReplicaManager.appendRecords with
origin COORDINATOR).

Behaviour. ALTER on the CLUSTER, else CLUSTER_ACTION on it, else the whole request is refused
(WriteTxnMarkersRequest.getErrorResponse): CLUSTER_AUTHORIZATION_FAILED (31) on every partition of every marker.
Otherwise, per marker, per partition (:func:`kafka_shim.shim.partitions.transactions.write_marker`): a partition
this node holds no log of UNKNOWN_TOPIC_OR_PARTITION (3), one it does not lead NOT_LEADER_OR_FOLLOWER (6), too few
in-sync replicas NOT_ENOUGH_REPLICAS (19), an older producer epoch INVALID_PRODUCER_EPOCH (47), an older
coordinator epoch TRANSACTION_COORDINATOR_FENCED (52), a failing disk KAFKA_STORAGE_ERROR (56), else 0 and the
marker is in the log. A partition named twice in a marker gets one marker and one answer. The answer groups the
partitions per producer id (a producer id named in two markers gets one entry, both markers' partitions in it; a
marker without partitions none) and per topic, in the iteration order of Kafka's hash maps (producer ids by
``Long.hashCode``, topics by ``String.hashCode``, partitions by ``TopicPartition.hashCode``), which is what a client
that reads the answer as Kafka's map sees anyway.

kafka-shim differs: the lead's transaction coordinator calls ``write_marker`` directly; this handler serves the
request when a client (or a test) sends it.

Version notes. Kafka 3.9 has v0-1 (v1 flexible).
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import WriteTxnMarkersResponse
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.javacompat.hash_orders import (
    java_concurrent_hash_map_order,
    java_hash_map_order,
    long_hash,
    scala_mutable_map_order,
    topic_partition_hash,
)
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.partitions.transactions import write_marker
from kafka_shim.shim.requests.authz import refused_whole
from kafka_shim.shim.requests.context import RequestContext

_Result = WriteTxnMarkersResponse.WritableTxnMarkerResult
_Topic = WriteTxnMarkersResponse.WritableTxnMarkerTopicResult
_Partition = WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult
_MASK64 = (1 << 64) - 1


def _answer(errors: dict[int, dict[tuple[str, int], int]], *, concurrent: bool) -> WriteTxnMarkersResponse:
    """WriteTxnMarkersResponse(Map<Long, Map<TopicPartition, Errors>>): per producer id, per topic, in the order of
    Kafka's maps (ConcurrentHashMaps when KafkaApis collected the errors, HashMaps in getErrorResponse)."""
    order = java_concurrent_hash_map_order if concurrent else java_hash_map_order
    markers = []
    for producer_id in order(list(errors), long_hash):
        per_partition = errors[producer_id]
        topics: dict[str, list[_Partition]] = {}
        for topic, partition in order(list(per_partition), topic_partition_hash):
            topics.setdefault(topic, []).append(_Partition(partition_index=partition, error_code=per_partition[(topic, partition)]))
        markers.append(_Result(producer_id=producer_id, topics=[
            _Topic(name=name, partitions=topics[name]) for name in java_hash_map_order(topics, java_string_hash)]))
    return WriteTxnMarkersResponse(markers=markers)


def write_txn_markers_error_response(request: messages.WriteTxnMarkersRequest, code: int, message: str | None) -> WriteTxnMarkersResponse:
    """WriteTxnMarkersRequest.getErrorResponse: the code on every partition of every marker."""
    errors: dict[int, dict[tuple[str, int], int]] = {}
    for marker in request.markers:
        per_partition: dict[tuple[str, int], int] = {}
        for topic in marker.topics:
            for index in topic.partition_indexes:
                per_partition[(topic.name, index)] = code
        errors[marker.producer_id] = per_partition  # HashMap.put: a later marker of the same producer id replaces
    return _answer(errors, concurrent=False)


@handles(ApiKey.WRITE_TXN_MARKERS, 0, 1, error_response=write_txn_markers_error_response)
def write_txn_markers(ctx: RequestContext, request: messages.WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    if refused_whole(ctx, request) is not None:
        return write_txn_markers_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    partitions = ctx.services.partitions
    errors: dict[int, dict[tuple[str, int], int]] = {}
    for marker in request.markers:
        wanted = list(dict.fromkeys((t.name, p) for t in marker.topics for p in t.partition_indexes))
        if not wanted:
            continue
        no_log: dict[tuple[str, int], int] = {}
        appended: dict[tuple[str, int], int] = {}
        for topic, index in wanted:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if partitions is None else write_marker(
                partitions, topic, index, marker.producer_id, marker.producer_epoch, marker.coordinator_epoch,
                marker.transaction_result, node_id=ctx.node_id)
            (no_log if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION else appended)[(topic, index)] = code
        # The order of insertion decides the answer's order between partitions that share a hash bucket: Kafka puts
        # the partitions it has no log for into the producer's map first, then what its append reports, in the order
        # of the Scala map of appended partitions.
        results = errors.setdefault(marker.producer_id, {})
        results.update(no_log)
        results.update((tp, appended[tp]) for tp in scala_mutable_map_order(appended, topic_partition_hash))
    return _answer(errors, concurrent=True)
