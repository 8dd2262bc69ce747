"""ConsumerGroupHeartbeat (key 68) and ConsumerGroupDescribe (key 69), v0: KIP-848 consumer groups as Kafka 3.9 serves them.

Behaviour. Both are advertised at v0. With Kafka's default ``group.coordinator.rebalance.protocols=classic`` they are
answered with UNSUPPORTED_VERSION (35) before any ACL check (KafkaApis: the old coordinator cannot serve them):
the heartbeat's answer is the code alone, the describe's one entry per requested group id with the code. With
``consumer`` in that list they are served by the coordinator (``shim/groups/consumer.py``):
- Heartbeat: READ on the group, else 30 (no message); then the coordinator's answer, its errors with Kafka's
  messages (INVALID_REQUEST, GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, ...).
- Describe: DESCRIBE on each group (30 for the denied, listed first as Kafka does), an empty id gets
  INVALID_GROUP_ID with a null id, a missing or classic group GROUP_ID_NOT_FOUND; members with their current and
  target assignments (topic id, name, partitions), the group epoch, assignment epoch, state and assignor;
  ``authorized_operations`` (the KIP-430 group set) for the found groups when asked, else -2147483648.

Version notes. 3.9 walks the requested groups once per ``__consumer_offsets`` partition they map to, and each
walk describes *every* requested id (its KafkaApis passes the whole list to each shard); a group that lives in
another shard is reported there as GROUP_ID_NOT_FOUND. A request naming groups of different shards therefore gets
each group several times, once found and otherwise not; kafka-shim answers the same entries in the same order.
"""

from __future__ import annotations

from kafka_shim.authorizer import ResourceType
from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatResponse
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.groups.consumer import ConsumerGroup, GroupError, Heartbeat, TopicShape
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.javacompat.hash_orders import int_hash_set_order, java_hash_map_order, topic_partition_hash
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.javacompat.scala_set import kafka_uuid_hash
from kafka_shim.shim.requests.authz import allowed, authorized_operations, bitfield, check
from kafka_shim.shim.requests.context import RequestContext
from kafka_shim.shim.requests.coordination import coordinates

log = get_logger("kafka_shim.groups")

_HEARTBEAT_GROUP = check(ApiKey.CONSUMER_GROUP_HEARTBEAT, "group")
_DESCRIBE_GROUPS = check(ApiKey.CONSUMER_GROUP_DESCRIBE, "groups")
_GROUP_BITS = bitfield(ApiKey.CONSUMER_GROUP_DESCRIBE, ResourceType.GROUP)
AUTHORIZED_OPERATIONS_OMITTED = -2147483648
_OFFSETS_TOPIC = "__consumer_offsets"
_NOT_COORDINATOR_MESSAGE = None

_Described = ConsumerGroupDescribeResponse.DescribedGroup
_Member = ConsumerGroupDescribeResponse.Member
_DAssignment = ConsumerGroupDescribeResponse.Assignment
_DTopic = ConsumerGroupDescribeResponse.TopicPartitions
_HAssignment = ConsumerGroupHeartbeatResponse.Assignment
_HTopic = ConsumerGroupHeartbeatResponse.TopicPartitions


def heartbeat_error_response(request: messages.ConsumerGroupHeartbeatRequest, code: int, message: str | None) -> ConsumerGroupHeartbeatResponse:
    """ConsumerGroupHeartbeatRequest.getErrorResponse: the code alone (no message, no member)."""
    return ConsumerGroupHeartbeatResponse(error_code=code)


def describe_error_response(request: messages.ConsumerGroupDescribeRequest, code: int, message: str | None) -> ConsumerGroupDescribeResponse:
    """ConsumerGroupDescribeRequest.getErrorResponse: every requested group id with the code."""
    return ConsumerGroupDescribeResponse(groups=[_Described(group_id=g, error_code=code) for g in request.group_ids])


def _enabled(ctx: RequestContext) -> bool:
    groups = ctx.services.groups
    return groups is not None and groups.settings.consumer_protocol_enabled


def _coordinator_loaded(ctx: RequestContext) -> bool:
    """Kafka's coordinator serves a group once its ``__consumer_offsets`` partition is loaded; before anything
    created the topic (FindCoordinator does) there is no such partition and every group op answers 16."""
    return _OFFSETS_TOPIC in ctx.services.cluster.topics


def consumer_topics(ctx: RequestContext) -> dict[str, TopicShape]:
    """Every topic's id and partition count, as the consumer-group coordinator takes them."""
    return {name: TopicShape(t.topic_id, len(t.partitions)) for name, t in ctx.services.cluster.topics.items()}


@handles(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 0, error_response=heartbeat_error_response)
def consumer_group_heartbeat(ctx: RequestContext, request: messages.ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
    if not _enabled(ctx):
        return heartbeat_error_response(request, ErrorCode.UNSUPPORTED_VERSION, None)
    if not allowed(ctx, _HEARTBEAT_GROUP, request.group_id):
        return heartbeat_error_response(request, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    if not _coordinator_loaded(ctx) or not coordinates(ctx, request.group_id):
        return ConsumerGroupHeartbeatResponse(error_code=ErrorCode.NOT_COORDINATOR, error_message=_NOT_COORDINATOR_MESSAGE)
    owned = None
    if request.topic_partitions is not None:
        owned = [(tp.topic_id, list(tp.partitions)) for tp in request.topic_partitions]
    hb = Heartbeat(group_id=request.group_id, member_id=request.member_id, member_epoch=request.member_epoch,
                   instance_id=request.instance_id, rack_id=request.rack_id, rebalance_timeout_ms=request.rebalance_timeout_ms,
                   subscribed_topic_names=request.subscribed_topic_names, server_assignor=request.server_assignor, owned=owned)
    try:
        # Kafka renders the client's address with InetAddress.toString: "/" and the address.
        answer = ctx.services.groups.consumer.heartbeat(hb, consumer_topics(ctx), ctx.header.client_id or "", "/" + ctx.client_host)
    except GroupError as e:
        return ConsumerGroupHeartbeatResponse(error_code=e.code, error_message=e.message)
    response = ConsumerGroupHeartbeatResponse(member_id=answer.member_id, member_epoch=answer.member_epoch,
                                              heartbeat_interval_ms=answer.heartbeat_interval_ms)
    if answer.assignment is not None:
        # Kafka lists the member's assignment as its HashMap of topic ids and HashSets of partitions iterate
        # (GroupMetadataManager.fromAssignmentMap): in bucket order, ties kept in topic id order here.
        assigned = answer.assignment
        response.assignment = _HAssignment(topic_partitions=[
            _HTopic(topic_id=topic_id, partitions=int_hash_set_order(sorted(assigned[topic_id])))
            for topic_id in java_hash_map_order(sorted(assigned), kafka_uuid_hash)])
    return response


def _offsets_partition(ctx: RequestContext, group_id: str) -> int:
    """Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions: the shard that owns the group."""
    h = java_string_hash(group_id)
    h = h - (1 << 32) if h & 0x80000000 else h
    return (0 if h == -(1 << 31) else abs(h)) % ctx.services.groups.settings.offsets_topic_num_partitions


def _describe(ctx: RequestContext, group_id: str, group: ConsumerGroup | None) -> _Described:
    if group is None:
        return _Described(group_id=group_id, error_code=ErrorCode.GROUP_ID_NOT_FOUND)
    cluster = ctx.services.cluster
    manager = ctx.services.groups.consumer
    default = manager.assignor_names[0] if manager.assignor_names else "uniform"

    def topic_partitions(assignment: dict) -> list[_DTopic]:
        # Kafka's member holds a HashMap by topic id (Collectors.toMap over the record's topics) of
        # new HashSet<>(the record's partitions), and lists both as they iterate.
        result = []
        for topic_id in java_hash_map_order(assignment, kafka_uuid_hash):
            topic = cluster.topic_by_id(topic_id)
            if topic is not None:
                result.append(_DTopic(topic_id=topic_id, topic_name=topic.name,
                                      partitions=int_hash_set_order(sorted(assignment[topic_id]))))
        return result

    members = [
        _Member(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=m.subscribed_names_in_kafka_order(),
                subscribed_topic_regex="",
                assignment=_DAssignment(topic_partitions=topic_partitions(dict(m.assigned))),
                target_assignment=_DAssignment(topic_partitions=topic_partitions(group.target.get(m.member_id, {}))))
        for m in group.members_in_kafka_order()
    ]
    return _Described(group_id=group_id, group_state=group.state, group_epoch=group.group_epoch,
                      assignment_epoch=group.assignment_epoch, assignor_name=group.preferred_assignor(default), members=members)


@handles(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 0, error_response=describe_error_response)
def consumer_group_describe(ctx: RequestContext, request: messages.ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
    if not _enabled(ctx):
        return describe_error_response(request, ErrorCode.UNSUPPORTED_VERSION, None)
    denied: list[_Described] = []
    authorized: list[str] = []
    for group_id in request.group_ids:
        if allowed(ctx, _DESCRIBE_GROUPS, group_id):
            authorized.append(group_id)
        else:
            denied.append(_Described(group_id=group_id, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED))
    results: list[_Described] = []
    shards: dict[tuple[str, int], list[str]] = {}
    for group_id in authorized:
        if not group_id:
            results.append(_Described(group_id=None, error_code=ErrorCode.INVALID_GROUP_ID))
        else:
            shards.setdefault((_OFFSETS_TOPIC, _offsets_partition(ctx, group_id)), []).append(group_id)
    coordinator = ctx.services.groups
    if not _coordinator_loaded(ctx):
        for shard in java_hash_map_order(shards, topic_partition_hash, by_compute=True):
            results += [_Described(group_id=g, error_code=ErrorCode.NOT_COORDINATOR) for g in shards[shard]]
        return ConsumerGroupDescribeResponse(groups=denied + results)
    for shard in java_hash_map_order(shards, topic_partition_hash, by_compute=True):
        # Kafka 3.9 hands each shard the whole authorized list; a group answers only in its own shard.
        for group_id in authorized:
            if not coordinates(ctx, group_id):  # another node of the cluster leads the group's shard
                results.append(_Described(group_id=group_id, error_code=ErrorCode.NOT_COORDINATOR))
                continue
            group = coordinator.consumer_group(group_id) if shard[1] == _offsets_partition(ctx, group_id) else None
            results.append(_describe(ctx, group_id, group))
    if request.include_authorized_operations:
        for entry in results:
            if entry.error_code == 0:
                entry.authorized_operations = authorized_operations(ctx, _GROUP_BITS, entry.group_id)
    return _serializable(request, ConsumerGroupDescribeResponse(groups=denied + results))


def _serializable(request: messages.ConsumerGroupDescribeRequest, response: ConsumerGroupDescribeResponse) -> ConsumerGroupDescribeResponse:
    """Kafka's coordinator answers an empty group id with INVALID_GROUP_ID and a null id, which v0 cannot carry:
    serializing the answer throws, and KafkaApis' handleError sends the request's error answer instead,
    UNKNOWN_SERVER_ERROR for every group asked."""
    if all(group.group_id is not None for group in response.groups):
        return response
    log.warning("consumer_group_describe_unserializable", reason="an empty group id was described (INVALID_GROUP_ID "
                "with a null group id, which ConsumerGroupDescribe v0 cannot encode)", answered="UNKNOWN_SERVER_ERROR",
                hint="leave empty group ids out of ConsumerGroupDescribe")
    return describe_error_response(request, ErrorCode.UNKNOWN_SERVER_ERROR, None)
