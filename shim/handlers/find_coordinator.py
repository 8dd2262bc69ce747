"""FindCoordinator (key 10), v0-6: which broker coordinates a group or a transactional id, as a Kafka 3.9 KRaft broker
answers (KafkaApis.handleFindCoordinatorRequest / getCoordinator).

Behaviour, per key (v4+ batch their keys and answer each; v0-3 carry one key and one answer):

- Key type 0 (group): DESCRIBE on the GROUP, else 30; key type 1 (transactional id): DESCRIBE on the
  TRANSACTIONAL_ID, else 53 (declared in authorizer.api_checks, key 10). Key type 2 (share group, KIP-932) is 42
  below v6; at v6 it needs CLUSTER_ACTION on the cluster (else 31) and then answers 15, as 3.9 has no share
  coordinator. Any other key type fails the whole request with 42 (CoordinatorType.forId throws
  InvalidRequestException).
- The coordinator is this broker when the internal topic (``__consumer_offsets`` for groups, ``__transaction_state``
  for transactional ids) exists. When it does not, the broker asks for it to be created, as Kafka's
  AutoTopicCreationManager does (``offsets.topic.num.partitions`` / ``offsets.topic.replication.factor``,
  ``transaction.state.log.*``, compacted; no ACL is asked, the broker creates it itself), and answers 15
  (COORDINATOR_NOT_AVAILABLE); clients ask again. The topic counts from the next request on: every key of a v4+
  batch that found it missing gets 15, as in Kafka, where the topic appears only after the request. With Kafka's
  default replication factor of 3 a single broker cannot create it and the answer stays 15: set
  ``offsets.topic.replication.factor=1`` as Kafka's shipped server.properties (and kafka-shim's example config) do.
- A key whose partition (abs(hashCode) % the count the coordinators fixed at the broker's start, ``ClusterState``)
  the topic lacks, because it was made by hand with fewer partitions, gets 15 as well.
- Errors carry node id -1, host "" and port -1 (Node.noNode).

Version notes. v0 asks for a group only; v1+ key type; v1-3: ``error_message`` is Kafka's default message of the
code ("NONE" on success, as Errors.NONE.message()). v4+ batch their keys: a key's answer has an empty message (the
field's default; getCoordinator sets none), except when the whole request fails (42 for an unknown key type), where
every key carries the code's message. v5 is v4's (TRANSACTION_ABORTABLE for clients).

A transactional id's coordinator is reported although kafka-shim has no transaction coordinator yet (issue 17);
InitProducerId still answers 16 for transactional ids.
"""

from __future__ import annotations

from kafka_shim.authorizer import CLUSTER_NAME
from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import FindCoordinatorResponse
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.partitions.topic_admin import BatchTooLarge, TopicAdmin, auto_created_topic
from kafka_shim.shim.requests.authz import allowed, check
from kafka_shim.shim.requests.context import RequestContext

log = get_logger("kafka_shim.find_coordinator")

GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2
GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC = "__consumer_offsets", "__transaction_state"
_GROUP, _TXN = check(ApiKey.FIND_COORDINATOR, "group"), check(ApiKey.FIND_COORDINATOR, "transaction")
_SHARE = check(ApiKey.FIND_COORDINATOR, "share")
_NO_NODE = (-1, "", -1)

# Errors.<code>.message() of the codes this API answers (Kafka's default exception messages).
_MESSAGES = {
    ErrorCode.NONE: "NONE",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.INVALID_REQUEST: "This most likely occurs because of a request being malformed by the client library "
                               "or the message was sent to an incompatible broker. See the broker logs for more details.",
}
_Coordinator = FindCoordinatorResponse.Coordinator


def find_coordinator_error_response(request: messages.FindCoordinatorRequest, code: int, message: str | None,
                                    version: int | None = None) -> FindCoordinatorResponse:
    """FindCoordinatorRequest.getErrorResponse: v0-3 one error with no node; v4+ the error for every key. Without
    the version (the API table's generic refusal), a request with coordinator keys is taken for v4+."""
    text = _MESSAGES.get(code)
    keys = list(getattr(request, "coordinator_keys", None) or [])
    if version is None:
        version = 4 if keys else 0
    if version >= 4:
        return FindCoordinatorResponse(throttle_time_ms=0, coordinators=[
            _Coordinator(key=k, node_id=-1, host="", port=-1, error_code=code, error_message=text) for k in keys])
    return FindCoordinatorResponse(throttle_time_ms=0, error_code=code, error_message=text, node_id=-1, host="", port=-1)


class _UnknownKeyType(Exception):
    pass


@handles(ApiKey.FIND_COORDINATOR, 0, 6, error_response=find_coordinator_error_response)
def find_coordinator(ctx: RequestContext, request: messages.FindCoordinatorRequest) -> FindCoordinatorResponse:
    version = ctx.api_version
    key_type = request.key_type if version >= 1 else GROUP_KEY
    try:
        if version >= 4:
            # Kafka asks the controller for a missing internal topic and answers 15 for every key of the batch: the
            # topic appears only after the request (AutoTopicCreationManager), so no key of it sees the topic.
            existed = _internal_topics(ctx)
            answers = [(key, *_coordinator_for(ctx, version, key_type, key, existed)) for key in request.coordinator_keys]
            return FindCoordinatorResponse(throttle_time_ms=0, coordinators=[
                _Coordinator(key=key, node_id=node, host=host, port=port, error_code=code, error_message="")
                for key, code, (node, host, port) in answers])
        code, (node, host, port) = _coordinator_for(ctx, version, key_type, request.key, _internal_topics(ctx))
    except _UnknownKeyType:
        log.info("find_coordinator_unknown_key_type", key_type=key_type, error_code=ErrorCode.INVALID_REQUEST,
                 hint="key type 0 is a group, 1 a transactional id")
        return find_coordinator_error_response(request, ErrorCode.INVALID_REQUEST, None, version)
    if code:
        return find_coordinator_error_response(request, code, None, version)
    return FindCoordinatorResponse(throttle_time_ms=0, error_code=code, error_message=_MESSAGES[code],
                                   node_id=node, host=host, port=port)


def _internal_topics(ctx: RequestContext) -> frozenset[str]:
    """The coordinators' internal topics that exist as the request arrives."""
    partitions = ctx.services.partitions
    if partitions is None:
        return frozenset()
    return frozenset(t for t in (GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC) if t in partitions.cluster.topics)


def _coordinator_for(ctx: RequestContext, version: int, key_type: int, key: str,
                     existed: frozenset[str]) -> tuple[int, tuple[int, str, int]]:
    """KafkaApis.getCoordinator: (error code, (node id, host, port)); ``existed``: the internal topics that existed
    when the request arrived."""
    if key_type == GROUP_KEY and not allowed(ctx, _GROUP, key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, _NO_NODE
    if key_type == TRANSACTION_KEY and not allowed(ctx, _TXN, key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, _NO_NODE
    if key_type == SHARE_KEY:
        if version < 6:
            return ErrorCode.INVALID_REQUEST, _NO_NODE
        if not allowed(ctx, _SHARE, CLUSTER_NAME):
            return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _NO_NODE
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, _NO_NODE  # 3.9 has no share coordinator
    if key_type == GROUP_KEY:
        topic = GROUP_METADATA_TOPIC
    elif key_type == TRANSACTION_KEY:
        topic = TRANSACTION_STATE_TOPIC
    else:
        raise _UnknownKeyType(key_type)
    partitions = ctx.services.partitions
    if partitions is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, _NO_NODE
    if topic not in existed:
        if topic not in partitions.cluster.topics:
            _create_internal_topic(ctx, topic)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, _NO_NODE
    node = ctx.services.cluster.coordinator(topic, key)
    if node is None or node < 0 or node in ctx.services.cluster.down:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, _NO_NODE  # its partition has no leader (a fault)
    host, port = ctx.services.endpoints.advertised(ctx.listener.name, node)
    return ErrorCode.NONE, (node, host, port)


def _create_internal_topic(ctx: RequestContext, topic: str) -> None:
    """What AutoTopicCreationManager asks the controller for; the answer comes on a later FindCoordinator."""
    partitions = ctx.services.partitions
    assert partitions is not None
    config = ctx.services.config
    admin = TopicAdmin(partitions, num_partitions=config.num_partitions,
                       default_replication_factor=config.default_replication_factor)
    wanted = auto_created_topic(topic, partitions.broker_properties, config.num_partitions,
                                config.default_replication_factor)
    try:
        results = admin.create_topics([wanted], False)
    except BatchTooLarge as exc:
        log.warning("internal_topic_creation_failed", topic=topic, error_code=exc.code, reason=exc.message)
        return
    for r in results:
        if r.error:
            key = "offsets.topic.replication.factor" if topic == GROUP_METADATA_TOPIC else "transaction.state.log.replication.factor"
            log.warning("internal_topic_creation_failed", topic=r.name, error_code=r.error, reason=r.message,
                        hint=f"a single broker needs {key}=1 (Kafka's default is 3)"
                        if r.error == ErrorCode.INVALID_REPLICATION_FACTOR else None)
        else:
            log.info("internal_topic_created", topic=r.name, partitions=wanted.num_partitions)
