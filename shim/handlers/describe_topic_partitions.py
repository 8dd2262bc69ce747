"""DescribeTopicPartitions (key 75), v0: topics and their partitions in pages, as Kafka 3.9's
DescribeTopicPartitionsRequestHandler and KRaftMetadataCache answer it (kafka-topics.sh --describe uses it).

Behaviour. The topics asked for (or every topic, for an empty list) at or after the cursor's topic, in Java String
order, each checked for DESCRIBE (denials logged at INFO), all of them before the page is filled. An explicit list gives undescribable
topics 29 (topic id zero, after the others, in Java HashSet order); the all-topics form leaves them out. A
describable topic that does not exist gets 3 (17 for an illegal name) in an explicit list. Partitions are listed up
to ``min(response_partition_limit, max.request.partition.size.limit = 2000)`` (at least 1), starting at the
cursor's partition for the cursor's topic; the next cursor points at the first partition not listed, or at the
next topic when the page filled exactly. Every listed topic carries its authorized operations (the request has no
flag). A cursor topic missing from an explicit list, or a negative cursor partition, fails the request: every
requested topic gets 42 (Kafka's InvalidRequestException through getErrorResponse). A describable topic named ""
without a cursor fails the request with -1 for every requested topic: Kafka's handler asks the absent cursor for
the start of the topic whose name equals the cursor's default name "", and the NullPointerException goes out
through getErrorResponse.

Version notes. Only v0 exists (Kafka 3.8+, KIP-966); the all-topics form is an empty list, never null.
"""

from __future__ import annotations

from kafka_shim.authorizer import ResourceType
from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import DescribeTopicPartitionsResponse
from kafka_shim.protocol.primitives import ZERO_UUID
from kafka_shim.shim.cluster.topics import INTERNAL_TOPICS, Topic, invalid_topic_name
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.javacompat.java_hash import JavaHashMap
from kafka_shim.shim.javacompat.utf16 import java_sorted, utf16_key
from kafka_shim.shim.requests.authz import allowed, authorized_operations, bitfield, check
from kafka_shim.shim.requests.context import RequestContext

log = get_logger("kafka_shim.describe_topic_partitions")

# Kafka's max.request.partition.size.limit default: the most partitions one answer lists.
MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000

_LISTED, _ALL = check(ApiKey.DESCRIBE_TOPIC_PARTITIONS, "topics"), check(ApiKey.DESCRIBE_TOPIC_PARTITIONS, "all_topics")
_TOPIC_BITS = bitfield(ApiKey.DESCRIBE_TOPIC_PARTITIONS, ResourceType.TOPIC)

_Topic = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponseTopic
_Partition = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponsePartition
_Cursor = DescribeTopicPartitionsResponse.Cursor


def describe_topic_partitions_error_response(request: messages.DescribeTopicPartitionsRequest, code: int,
                                             message: str | None) -> DescribeTopicPartitionsResponse:
    """Kafka's DescribeTopicPartitionsRequest.getErrorResponse: every requested topic with the error, no partitions."""
    return DescribeTopicPartitionsResponse(topics=[_Topic(error_code=code, name=t.name, topic_id=ZERO_UUID, is_internal=False, partitions=[])
                                                   for t in request.topics])


def _partitions(topic: Topic, start: int, budget: int) -> tuple[list[_Partition], int]:
    """The partitions from ``start``, at most ``budget`` of them, and the next index (-1 when none is left)."""
    upper = min(len(topic.partitions), start + budget)
    listed = [
        # KRaftMetadataCache: a leader with no live endpoint (a leaderless fault) is -1 and 5.
        _Partition(error_code=ErrorCode.NONE if p.leader_id >= 0 else ErrorCode.LEADER_NOT_AVAILABLE, partition_index=p.index, leader_id=p.leader_id, leader_epoch=p.leader_epoch,
                   replica_nodes=list(p.replicas), isr_nodes=list(p.isr), eligible_leader_replicas=[], last_known_elr=[],
                   offline_replicas=[])
        for p in topic.partitions[start:upper]
    ]
    return listed, (upper if upper < len(topic.partitions) else -1)


@handles(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 0, error_response=describe_topic_partitions_error_response)
def describe_topic_partitions(ctx: RequestContext, request: messages.DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    known = ctx.services.cluster.topics
    all_topics = not request.topics
    cursor = request.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    floor = utf16_key(cursor_topic)
    candidates = known if all_topics else [t.name for t in request.topics]
    names = java_sorted({n for n in candidates if utf16_key(n) >= floor})
    if not all_topics and cursor is not None and cursor_topic not in names:
        return _invalid(request, f"DescribeTopicPartitionsRequest topic list should contain the cursor topic: {cursor_topic}")
    if cursor is not None and cursor.partition_index < 0:
        return _invalid(request, f"DescribeTopicPartitionsRequest cursor partition must be valid: "
                        f"Cursor(topicName='{cursor_topic}', partitionIndex={cursor.partition_index})")

    remaining = max(min(MAX_REQUEST_PARTITION_SIZE_LIMIT, request.response_partition_limit), 1)
    check_ = _ALL if all_topics else _LISTED
    denied: JavaHashMap[None] = JavaHashMap()  # Kafka keeps them in a HashSet hashed by name
    response = DescribeTopicPartitionsResponse(topics=[], next_cursor=None)
    # Kafka's sorted stream authorizes every topic before the page takes the first one (sorted() is a barrier).
    describable = []
    for name in names:
        if allowed(ctx, check_, name):
            describable.append(name)
        elif not all_topics:
            denied.put(name, None)
    for name in describable:
        if remaining == 0:
            response.next_cursor = _Cursor(topic_name=name, partition_index=0)
            break
        if cursor is None and name == cursor_topic:
            log.info("describe_topic_partitions_failed", reason="a describable topic named \"\" without a cursor "
                     "(Kafka 3.9 fails such a request with UNKNOWN_SERVER_ERROR)")
            return describe_topic_partitions_error_response(request, ErrorCode.UNKNOWN_SERVER_ERROR, None)
        topic = known.get(name)
        if topic is None:
            if not all_topics:
                code = ErrorCode.INVALID_TOPIC_EXCEPTION if invalid_topic_name(name) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                response.topics.append(_Topic(error_code=code, name=name, topic_id=ZERO_UUID, is_internal=name in INTERNAL_TOPICS, partitions=[]))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        listed, following = _partitions(topic, start, remaining)
        response.topics.append(_Topic(error_code=ErrorCode.NONE, name=name, topic_id=topic.topic_id, is_internal=topic.is_internal,
                                      partitions=listed))
        if following != -1:
            response.next_cursor = _Cursor(topic_name=name, partition_index=following)
            break
        remaining -= len(listed)
    for entry in response.topics:
        entry.topic_authorized_operations = authorized_operations(ctx, _TOPIC_BITS, entry.name)
    response.topics += [_Topic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=n, topic_id=ZERO_UUID, is_internal=False, partitions=[])
                        for n in denied.keys()]
    return response


def _invalid(request: messages.DescribeTopicPartitionsRequest, reason: str) -> DescribeTopicPartitionsResponse:
    log.info("describe_topic_partitions_refused", reason=reason)
    return describe_topic_partitions_error_response(request, ErrorCode.INVALID_REQUEST, reason)
