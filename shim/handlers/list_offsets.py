"""ListOffsets (key 2), v0-9: a partition's earliest, latest, by-timestamp or max-timestamp offset, as Kafka 3.9
(KafkaApis.handleListOffsetRequest, Partition.fetchOffsetForTimestamp) answers.

Behaviour. DESCRIBE on each topic (asked once per name, with its number of occurrences): denied topics come after
the others with 29 (v1+: timestamp and offset -1). For allowed topics, in request order: a partition named twice
gets INVALID_REQUEST (42) at each place (v1+); a negative timestamp other than the special ones, or one the
version may not send (-3 max timestamp from v7, -4 earliest local from v8, -5 latest tiered from v9), gets
UNSUPPORTED_VERSION (35); an unknown topic or partition 3; a current leader epoch other than ours 74/75. Latest
(-1) is the last offset a consumer may fetch (the high watermark, or under READ_COMMITTED the last stable offset:
the first offset of the earliest open transaction; the log end for a replica); earliest (-2) the log start offset;
a timestamp the first record at or after it; max timestamp (-3) the first record with the largest timestamp; a
timestamp or max timestamp found at or past the last fetchable offset counts as not found (so READ_COMMITTED does
not see into an open transaction); nothing found: offset and timestamp -1 with no error. Leader epochs (v4+): the current one for latest, the epoch the
log start offset was written in for earliest (-1 when the epoch cache starts after it), whatever the found batch
carries by timestamp.

Version notes. v0 answers the old offsets array (``max_num_offsets`` segment start offsets whose segment was last
modified at or before the timestamp, newest first, the log end offset counting as modified now); negative
timestamps below -2 give 35. v2: isolation level (a consumer's level other than 0 and 1: -1, timestamp and offset -1, for
each partition past the duplicate and timestamp checks, as Kafka's IsolationLevel.forId throws there). v4: current leader epoch and the answer's leader epoch.
"""

from __future__ import annotations

from collections import Counter

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import ListOffsetsResponse
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.partitions import offsets
from kafka_shim.shim.requests.authz import allowed_names, check
from kafka_shim.shim.requests.context import RequestContext

_DESCRIBE = check(ApiKey.LIST_OFFSETS, "topics")
logger = get_logger("kafka_shim.list_offsets")
CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2
_NO_EPOCH = -1

_Topic = ListOffsetsResponse.ListOffsetsTopicResponse
_Partition = ListOffsetsResponse.ListOffsetsPartitionResponse


def list_offsets_error_response(request: messages.ListOffsetsRequest, code: int, message: str | None) -> ListOffsetsResponse:
    """ListOffsetsRequest.getErrorResponse: every partition with the code, timestamp and offset -1."""
    return ListOffsetsResponse(throttle_time_ms=0, topics=[
        _Topic(name=t.name, partitions=[_Partition(partition_index=p.partition_index, error_code=code, timestamp=-1, offset=-1)
                                        for p in t.partitions])
        for t in request.topics
    ])


@handles(ApiKey.LIST_OFFSETS, 0, 9, error_response=list_offsets_error_response)
def list_offsets(ctx: RequestContext, request: messages.ListOffsetsRequest) -> ListOffsetsResponse:
    version = ctx.api_version
    topics = request.topics
    readable = allowed_names(ctx, _DESCRIBE, [t.name for t in topics])
    answer_partition = _v0 if version == 0 else _v1
    duplicates = {tp for tp, n in Counter((t.name, p.partition_index) for t in topics for p in t.partitions).items() if n > 1}
    answered = [
        _Topic(name=t.name, partitions=[answer_partition(ctx, request, t.name, p, duplicates) for p in t.partitions])
        for t in topics if t.name in readable
    ]
    # KAFKA-5547: an emulated 0.11 answers a topic it may not describe as unknown (3), 1.0+ as unauthorized (29)
    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if ctx.services.release_rules.topics_hidden_as_unknown else ErrorCode.TOPIC_AUTHORIZATION_FAILED
    denied = [
        _Topic(name=t.name, partitions=[_error(version, p.partition_index, code) for p in t.partitions])
        for t in topics if t.name not in readable
    ]
    return ListOffsetsResponse(throttle_time_ms=0, topics=answered + denied)


def _error(version: int, partition: int, code: int) -> _Partition:
    if version == 0:
        return _Partition(partition_index=partition, error_code=code)
    return _Partition(partition_index=partition, error_code=code, timestamp=-1, offset=-1)


def _partition_error(ctx: RequestContext, topic: str, partition: int, current_leader_epoch: int | None) -> tuple[int, object]:
    """(error, partition state): Kafka's getPartitionOrException, then the leader-epoch check."""
    partitions = ctx.services.partitions
    state = partitions.get(topic, partition) if partitions is not None else None
    if state is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    leader_epoch = ctx.services.cluster.topics[topic].partitions[partition].leader_epoch
    error = offsets.leader_epoch_error(current_leader_epoch, leader_epoch)
    if error == ErrorCode.NONE and not ctx.services.cluster.leads(topic, partition, ctx.node_id):
        error = ErrorCode.NOT_LEADER_OR_FOLLOWER  # a leaderless fault holds it
    return error, state


def _v0(ctx: RequestContext, request: messages.ListOffsetsRequest, topic: str, p, duplicates: set) -> _Partition:
    if p.timestamp < offsets.EARLIEST:
        return _error(0, p.partition_index, ErrorCode.UNSUPPORTED_VERSION)
    error, state = _partition_error(ctx, topic, p.partition_index, None)
    if error != ErrorCode.NONE:
        return _error(0, p.partition_index, error)
    if p.max_num_offsets < 0:  # legacyFetchOffsetsBefore sizes its array min(max_num_offsets, n): Java throws
        return _error(0, p.partition_index, ErrorCode.UNKNOWN_SERVER_ERROR)
    log = state.log  # type: ignore[attr-defined]
    found = offsets.legacy_offsets_before(log, p.timestamp, p.max_num_offsets)
    if request.replica_id == CONSUMER_REPLICA_ID:
        found = offsets.for_consumer(found, log.high_watermark)
    return _Partition(partition_index=p.partition_index, error_code=ErrorCode.NONE, old_style_offsets=found)


def _v1(ctx: RequestContext, request: messages.ListOffsetsRequest, topic: str, p, duplicates: set) -> _Partition:
    version = ctx.api_version
    if (topic, p.partition_index) in duplicates:
        return _error(version, p.partition_index, ErrorCode.INVALID_REQUEST)
    if p.timestamp < 0 and version < offsets.SPECIAL_TIMESTAMP_MIN_VERSION.get(p.timestamp, 1 << 15):
        return _error(version, p.partition_index, ErrorCode.UNSUPPORTED_VERSION)
    if request.replica_id == CONSUMER_REPLICA_ID and version >= 2 and request.isolation_level not in (0, 1):
        # Kafka reads the level (IsolationLevel.forId, which throws) for each partition past those checks, existing
        # or not, and answers the exception as UNKNOWN_SERVER_ERROR.
        logger.warning("list_offsets_failed", topic=topic, partition=p.partition_index, error_code=ErrorCode.UNKNOWN_SERVER_ERROR,
                    reason=f"Unknown isolation level {request.isolation_level}")
        return _error(version, p.partition_index, ErrorCode.UNKNOWN_SERVER_ERROR)
    current = p.current_leader_epoch if version >= 4 and p.current_leader_epoch != _NO_EPOCH else None
    error, state = _partition_error(ctx, topic, p.partition_index, current)
    if error != ErrorCode.NONE:
        return _error(version, p.partition_index, error)
    log = state.log  # type: ignore[attr-defined]
    if request.replica_id == CONSUMER_REPLICA_ID:
        # Partition.fetchOffsetForTimestamp: READ_COMMITTED (v2+) sees up to the last stable offset, for LATEST, a
        # timestamp and MAX_TIMESTAMP alike; READ_UNCOMMITTED up to the high watermark. EARLIEST is not bounded.
        read_committed = version >= 2 and request.isolation_level == 1
        last_fetchable = state.last_stable_offset if read_committed else log.high_watermark  # type: ignore[attr-defined]
    else:
        last_fetchable = log.log_end_offset
    leader_epoch = ctx.services.cluster.topics[topic].partitions[p.partition_index].leader_epoch
    found = offsets.offset_for_timestamp(log, p.timestamp, leader_epoch, last_fetchable, state.epoch_cache)  # type: ignore[attr-defined]
    if found is None:
        return _error(version, p.partition_index, ErrorCode.NONE)
    entry = _Partition(partition_index=p.partition_index, error_code=ErrorCode.NONE, timestamp=found.timestamp, offset=found.offset)
    if version >= 4 and found.leader_epoch is not None:
        entry.leader_epoch = found.leader_epoch
    return entry
