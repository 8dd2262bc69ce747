"""Metadata (key 3), v0-12: brokers, cluster id, controller and topics, as a KRaft broker answers, with Kafka's ACL rules.

Behaviour. What it asks the authorizer is declared in authorizer.api_checks (key 3): DESCRIBE on each requested
topic (explicit list: denied topics get 29; all topics: they are left out, their denials not logged at INFO),
CREATE for topics it would auto-create, and the authorized-operations bitfields. With ``auto.create.topics.enable``
(and v4+'s allow_auto_topic_creation) a describable, creatable topic that does not exist is created with
``num.partitions`` partitions; like a KRaft broker, that answer still says 3 and the next one lists the topic. The answer lists, as Kafka does:
unknown topic ids, then the described topics (existing ones before missing ones), then topics denied creation,
then topics denied description; each part in the order of Kafka's Scala Set for it (javacompat.scala_set).
Whole-request errors use Kafka's getErrorResponse (``metadata_error_response``): every requested topic carries
the code, no brokers.

Version notes. v0: an empty topic list means all topics (later: null does). v4+: allow_auto_topic_creation.
v8-10: cluster authorized operations (v11 dropped them); v8+: topic authorized operations. Below v12 a topic id
or a null name fails the request with 42 (INVALID_REQUEST); v12 resolves ids (unknown ones get 100) and answers a
topic with neither name nor id with -1, as Kafka's null-name failure does.
"""

from __future__ import annotations

from functools import lru_cache

from kafka_shim.authorizer import CLUSTER_NAME, ResourceType
from kafka_shim.authorizer.api_checks import metadata_all_topics
from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import MetadataResponse
from kafka_shim.protocol.primitives import ZERO_UUID
from kafka_shim.shim.cluster.topics import INTERNAL_TOPICS, Topic, invalid_topic_name
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.javacompat.scala_set import ScalaSet, kafka_uuid_hash, scala_set
from kafka_shim.shim.partitions.topic_admin import BatchTooLarge, TopicAdmin, auto_created_topic
from kafka_shim.shim.requests.authz import (
    allowed,
    allowed_names,
    authorized_operations,
    bitfield,
    check,
    filter_by_authorized,
    shortcut_allowed,
)
from kafka_shim.shim.requests.context import RequestContext
from kafka_shim.shim.requests.work import Each, Pure, Steps, run_inline, run_sliced

log = get_logger("kafka_shim.metadata")

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
# Above this many requested topics the answer is built in slices and in the worker thread (shim.requests.work),
# so that a request at socket.request.max.bytes (419,410 names in 4 MiB) does not stall every other client.
LARGE_REQUEST = 1000

# The checks declared for Metadata in authorizer.api_checks.
_DESCRIBE, _DESCRIBE_ALL, _CREATE = check(ApiKey.METADATA, "describe"), check(ApiKey.METADATA, "describe_all"), check(ApiKey.METADATA, "create")
_TOPIC_BITS = bitfield(ApiKey.METADATA, ResourceType.TOPIC)

_Broker = MetadataResponse.MetadataResponseBroker
_Topic = MetadataResponse.MetadataResponseTopic
_Partition = MetadataResponse.MetadataResponsePartition


_INT_MASK = 0xFFFFFFFF


def _java_int_list_hash(values: tuple[int, ...]) -> int:
    h = 1
    for v in values:
        h = (31 * h + v) & _INT_MASK
    return h


def _partition_hash(fields: tuple[int, int, int, tuple[int, ...], tuple[int, ...]]) -> int:
    """MetadataResponsePartition.hashCode (generated: every field in schema order; no error, no offline replicas here)."""
    index, leader, epoch, replicas, isr = fields
    h = 0
    for v in (ErrorCode.NONE, index, leader, epoch):
        h = (31 * h + v) & _INT_MASK
    for values in (replicas, isr, ()):
        h = (31 * h + _java_int_list_hash(values)) & _INT_MASK
    return h


@lru_cache(maxsize=1024)
def _partition_order(partitions: tuple[tuple[int, int, int, tuple[int, ...], tuple[int, ...]], ...]) -> tuple[int, ...]:
    """The positions of a topic's partitions in the order Kafka 3.9 lists them in Metadata.

    KRaftMetadataCache maps the partitions' entry set into a Scala mutable.HashSet of MetadataResponsePartition, so
    the answer follows that set: buckets of ``h ^ h >>> 16`` masked by its table (16 slots, doubled when an insert
    reaches three quarters), ordered by hash within a bucket. Three partitions come as 1, 2, 0.
    """
    return tuple(_scala_mutable_hash_order([_partition_hash(fields) for fields in partitions]))


def _mutable_hash_set(names: ScalaSet[str]) -> ScalaSet[str]:
    """The names as KafkaApis' ``topics.partition(...)`` leaves them when Metadata asks for all topics: the image's
    key set is a Java set wrapped as a Scala mutable.Set, and partition builds a mutable.HashSet of those kept."""
    order = _scala_mutable_hash_order([java_string_hash(n) for n in names])
    return ScalaSet(tuple(names.items[i] for i in order), java_string_hash, hashed=False)


def _scala_mutable_hash_order(hashes: list[int]) -> list[int]:
    """The positions of elements (given their Java hashCodes, unsigned) in the order a Scala 2.13 mutable.HashSet or
    HashMap filled with them in that order iterates: buckets of ``h ^ h >>> 16`` masked by the table (16 slots,
    doubled before an insert that would reach three quarters), ascending signed hash within a bucket."""
    slots = 16
    for count in range(1, len(hashes) + 1):
        if count >= int(slots * 0.75):
            slots *= 2
    keys = []
    for position, h in enumerate(hashes):
        improved = h ^ (h >> 16)
        signed = improved - (1 << 32) if improved >= 1 << 31 else improved
        keys.append((improved & (slots - 1), signed, position))
    return [position for _, _, position in sorted(keys)]


def _describe(topic: Topic, down: set[int] | frozenset[int] = frozenset()) -> _Topic:
    fields = tuple((p.index, p.leader_id, p.leader_epoch, tuple(p.replicas), tuple(p.isr)) for p in topic.partitions)
    return _Topic(
        error_code=ErrorCode.NONE,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.is_internal,
        partitions=[
            _Partition(
                # KRaftMetadataCache: a leader with no live endpoint (a leaderless fault) is -1 and 5.
                error_code=ErrorCode.NONE if p.leader_id >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
                partition_index=p.index,
                leader_id=p.leader_id,
                leader_epoch=p.leader_epoch,
                replica_nodes=list(p.replicas),
                isr_nodes=list(p.isr),
                # KRaftMetadataCache.getOfflineReplicas: replicas on a fenced (stopped) broker.
                offline_replicas=[r for r in p.replicas if r in down] if down else [],
            )
            for p in (topic.partitions[i] for i in _partition_order(fields))
        ],
    )


def _missing(name: str, created: int | None = None) -> _Topic:
    # A KRaft broker answers 3 for an absent topic whether or not it auto-creates it
    # (creation is asynchronous), and 17 for a name that could never exist.
    error = ErrorCode.INVALID_TOPIC_EXCEPTION if invalid_topic_name(name) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if created is not None:
        error = created  # ZooKeeper mode's own creation (_auto_create)
    return _Topic(error_code=error, name=name, topic_id=ZERO_UUID, is_internal=name in INTERNAL_TOPICS)


def metadata_error_response(request: messages.MetadataRequest, code: int, message: str | None) -> MetadataResponse:
    """Kafka's MetadataRequest.getErrorResponse: every requested topic carries the error, and no brokers."""
    topics = [
        _Topic(error_code=code, name=t.name if t.name is not None else "", topic_id=getattr(t, "topic_id", ZERO_UUID), is_internal=False)
        for t in request.topics or []
    ]
    return MetadataResponse(topics=topics, cluster_id=None, controller_id=-1)


@lru_cache(maxsize=64)
def _broker_entry(node_id: int, host: str, port: int, rack: str | None) -> _Broker:
    """This broker's entry, built once per advertised address (it depends on nothing else)."""
    return _Broker(node_id=node_id, host=host, port=port, rack=rack)


def live_brokers(ctx: RequestContext) -> list[_Broker]:
    """Every live node as the listener the request came in on advertises it (one node: this broker)."""
    endpoints, rack, name = ctx.services.endpoints, ctx.services.config.rack, ctx.listener.name
    return [_broker_entry(node, *endpoints.advertised(name, node), rack) for node in ctx.services.cluster.live_nodes]


def cluster_authorized_operations(ctx: RequestContext, api_key: int) -> int:
    """Kafka's ClusterAuthorizedOperations when asked for: 0 without DESCRIBE on the cluster, else the bitfield."""
    if not allowed(ctx, check(api_key, "cluster_operations"), CLUSTER_NAME):
        return 0
    return authorized_operations(ctx, bitfield(api_key, ResourceType.CLUSTER), CLUSTER_NAME)


@handles(ApiKey.METADATA, 0, 12, error_response=metadata_error_response)
def metadata(ctx: RequestContext, request: messages.MetadataRequest) -> MetadataResponse:
    steps = _answer(ctx, request)
    if request.topics is not None and len(request.topics) > LARGE_REQUEST:
        return run_sliced(steps)  # an awaitable: dispatch answers when it is done, other clients are served meanwhile
    return run_inline(steps)


def _unnamed_or_by_id(requested: list) -> bool:
    return any(t.name is None or t.topic_id != ZERO_UUID for t in requested)


def _unnamed(requested: list) -> bool:
    return any(t.name is None for t in requested)


def _absent(names: ScalaSet[str], found: list[Topic | None]) -> ScalaSet[str]:
    missing = {n for n, topic in zip(names, found, strict=True) if topic is None}
    return names.where(missing.__contains__)


def _all_missing(names: ScalaSet[str], created: dict[str, int] | None = None) -> list[_Topic]:
    return [_missing(n, (created or {}).get(n)) for n in names]


def _auto_create(ctx: RequestContext, absent: ScalaSet[str], created: dict[str, int]) -> list[str]:
    """Create the missing topics Kafka's AutoTopicCreationManager would, and answer them in its order.

    A KRaft broker sends a CreateTopics (num.partitions, default.replication.factor, no configs) to its controller
    and answers this request at once with 3 for each, the topic being there by the next Metadata; here the topic is
    created before the answer, and the answer is still 3. Illegal names come first (17, never created), then the
    others in the order of the Scala mutable.HashMap that holds them. A creation the controller would refuse (a
    replication factor above the live brokers) leaves the topic missing, as in Kafka. ``__consumer_offsets`` and
    ``__transaction_state`` are created as their coordinators size them (``offsets.topic.*``,
    ``transaction.state.log.*``; the default replication factor of 3 is more than one broker holds, so by default
    they are not).

    A ZooKeeper-mode broker (before 3.3 as presented) creates the topics itself (AutoTopicCreationManager's
    createTopicsInZk, through ZkAdminManager) and answers each in ``created``: LEADER_NOT_AVAILABLE (5) once created,
    else ZkAdminManager's code.
    """
    invalid = [n for n in absent if invalid_topic_name(n)]
    valid = [n for n in absent if not invalid_topic_name(n)]
    creatable = [valid[i] for i in _scala_mutable_hash_order([java_string_hash(n) for n in valid])]
    partitions = ctx.services.partitions
    config = ctx.services.config
    if creatable and partitions is not None:
        admin = TopicAdmin(partitions, num_partitions=config.num_partitions, default_replication_factor=config.default_replication_factor)
        wanted = [auto_created_topic(n, partitions.broker_properties, config.num_partitions, config.default_replication_factor)
                  for n in creatable]
        try:
            results = admin.create_topics(wanted, False)
        except BatchTooLarge as exc:
            log.info("auto_topic_creation_failed", topics=creatable, error_code=exc.code, reason=exc.message)
            results = []
        for r in results:
            if ctx.services.release_rules.zookeeper_topic_creation:
                created[r.name] = r.error or ErrorCode.LEADER_NOT_AVAILABLE
            if r.error:
                log.info("auto_topic_creation_failed", topic=r.name, error_code=r.error, reason=r.message)
            else:
                log.info("auto_topic_created", topic=r.name, principal=ctx.principal, partitions=len(partitions.cluster.topics[r.name].partitions))
    return invalid + creatable


def _answer(ctx: RequestContext, request: messages.MetadataRequest) -> Steps[MetadataResponse]:
    """The answer; its request-sized steps are yielded (shim.requests.work): pure ones as ``Pure``, state lookups as ``Each``."""
    version = ctx.api_version
    services = ctx.services
    state = services.cluster
    requested = request.topics
    if version < 12 and requested and (yield Pure(_unnamed_or_by_id, requested)):
        return metadata_error_response(request, ErrorCode.INVALID_REQUEST, None)

    all_topics = metadata_all_topics(request, version)
    unknown_ids: list[_Topic] = []
    by_id = False
    if all_topics:
        # Kafka starts from its metadata image's topic names; the partition into describable and not (below) puts them
        # into a Scala mutable.HashSet, whose order is the answer's.
        names = ScalaSet(tuple(state.topics), java_string_hash, hashed=False)
    else:
        ids = scala_set((t.topic_id for t in requested if t.topic_id != ZERO_UUID), kafka_uuid_hash) if version >= 12 else None
        if ids:
            # With any topic id present, Kafka resolves the ids and ignores the names.
            by_id = True
            unknown_ids = [_Topic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=i) for i in ids.where(lambda i: state.topic_by_id(i) is None)]
            names = scala_set((t.name for t in map(state.topic_by_id, ids) if t is not None), java_string_hash, hashed=ids.hashed)
        elif (yield Pure(_unnamed, requested)):
            # v12 lets a topic carry neither a name nor an id; Kafka fails on the null name (ErrorCode.UNKNOWN_SERVER_ERROR).
            return metadata_error_response(request, ErrorCode.UNKNOWN_SERVER_ERROR, None)
        else:
            names = yield Pure(scala_set, (t.name for t in requested), java_string_hash)

    authorized, undescribable = names, ()
    if services.authorizer is not None and names:
        describable = allowed_names(ctx, _DESCRIBE_ALL if all_topics else _DESCRIBE, names)
        if len(describable) < len(names):
            authorized = names.where(describable.__contains__)
            undescribable = names.where(lambda n: n not in describable)
    if all_topics:
        authorized = _mutable_hash_set(authorized)
    create_denied: tuple[str, ...] | ScalaSet[str] = ()
    may_create = services.config.auto_create_topics and _CREATE.applies_to(request, version)
    if services.authorizer is not None and may_create:
        missing = authorized.where(lambda n: n not in state.topics)
        if missing and not shortcut_allowed(ctx, _CREATE):
            # KIP-277: before 2.0 only CREATE on the cluster let Metadata create topics.
            creatable = set() if services.release_rules.create_topics_needs_cluster else filter_by_authorized(ctx, _CREATE, missing)
            if len(creatable) < len(missing):
                create_denied = missing.where(lambda n: n not in creatable)
                authorized = authorized.where(lambda n: n not in create_denied)

    topics_by_name = state.topics
    found = yield Each(topics_by_name.get, authorized)
    down = state.down
    described = [_describe(topic, down) for topic in found if topic is not None]
    if len(described) < len(authorized):
        absent = (yield Pure(_absent, authorized, found)) if described else authorized
        created: dict[str, int] = {}
        if may_create:
            absent = _auto_create(ctx, absent, created)
        described += yield Pure(_all_missing, absent, created)
    if version >= 8 and request.include_topic_authorized_operations:
        for entry in described:
            entry.topic_authorized_operations = authorized_operations(ctx, _TOPIC_BITS, entry.name)
    topics = unknown_ids + described if unknown_ids else described
    for n in create_denied:
        topics.append(_Topic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=n, topic_id=ZERO_UUID, is_internal=n in INTERNAL_TOPICS))
    if not all_topics:
        # Kafka never reveals whether an undescribable topic exists; asked by id, the id is no secret. (KAFKA-5547: an
        # emulated 0.11 says unknown, 3; 1.0+ unauthorized, 29.)
        refused = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if services.release_rules.topics_hidden_as_unknown
                   else ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        for n in undescribable:
            topics.append(_Topic(error_code=refused, name=None if by_id else n,
                                 topic_id=topics_by_name[n].topic_id if by_id else ZERO_UUID, is_internal=False))

    response = MetadataResponse(
        brokers=live_brokers(ctx),
        cluster_id=state.cluster_id,
        # A KRaft broker names a random live broker as "controller"; kafka-shim the lowest live one.
        controller_id=state.controller(),
        topics=topics,
    )
    if 8 <= version <= 10 and request.include_cluster_authorized_operations:
        response.cluster_authorized_operations = cluster_authorized_operations(ctx, ApiKey.METADATA)
    return response
