"""Metadata (key 3): brokers, cluster id, controller and topics, as a KRaft broker answers."""

from __future__ import annotations

from protocol.messages import MetadataResponse
from protocol.primitives import ZERO_UUID
from shim.context import RequestContext
from shim.errors import INVALID_REQUEST, INVALID_TOPIC_EXCEPTION, NONE, UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION
from shim.handlers import handles
from shim.state import INTERNAL_TOPICS, Topic, topic_name_error

METADATA_KEY = 3
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
# With no authorizer configured, Kafka reports every operation the resource type supports.
ALL_TOPIC_OPERATIONS = 3576
ALL_CLUSTER_OPERATIONS = 8096

_Broker = MetadataResponse.MetadataResponseBroker
_Topic = MetadataResponse.MetadataResponseTopic
_Partition = MetadataResponse.MetadataResponsePartition


def _describe(topic: Topic, topic_ops: int) -> _Topic:
    return _Topic(
        error_code=NONE,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.is_internal,
        partitions=[
            _Partition(
                error_code=NONE,
                partition_index=p.index,
                leader_id=p.leader_id,
                leader_epoch=p.leader_epoch,
                replica_nodes=list(p.replicas),
                isr_nodes=list(p.isr),
                offline_replicas=[],
            )
            for p in topic.partitions
        ],
        topic_authorized_operations=topic_ops,
    )


def _missing(name: str, topic_ops: int) -> _Topic:
    # A KRaft broker answers 3 for an absent topic whether or not it auto-creates it
    # (creation is asynchronous), and 17 for a name that could never exist.
    error = INVALID_TOPIC_EXCEPTION if topic_name_error(name) else UNKNOWN_TOPIC_OR_PARTITION
    return _Topic(error_code=error, name=name, topic_id=ZERO_UUID, is_internal=name in INTERNAL_TOPICS, topic_authorized_operations=topic_ops)


def _invalid_request(request: object) -> MetadataResponse:
    """Kafka's generic Metadata error response: every requested topic carries the error."""
    topics = [
        _Topic(error_code=INVALID_REQUEST, name=t.name if t.name is not None else "", topic_id=t.topic_id, is_internal=False)
        for t in request.topics or []
    ]
    return MetadataResponse(topics=topics, cluster_id=None, controller_id=-1)


def _broker_entry(ctx: RequestContext) -> _Broker:
    """This broker as the listener the request came in on advertises it (built once per listener)."""
    entries = ctx.broker.metadata_cache.setdefault("broker_entries", {})
    entry = entries.get(ctx.listener.name)
    if entry is None:
        host, port = ctx.broker.advertised_address(ctx.listener.name)
        entry = entries[ctx.listener.name] = _Broker(node_id=ctx.broker.state.node_id, host=host, port=port, rack=ctx.broker.config.rack)
    return entry


@handles(METADATA_KEY, 0, 12)
def metadata(ctx: RequestContext, request: object) -> MetadataResponse:
    version = ctx.api_version
    broker = ctx.broker
    state = broker.state
    requested = request.topics
    if version < 12 and requested and any(t.name is None or t.topic_id != ZERO_UUID for t in requested):
        return _invalid_request(request)

    topic_ops = ALL_TOPIC_OPERATIONS if version >= 8 and request.include_topic_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED
    all_topics = requested is None or (version == 0 and not requested)
    topics: list[_Topic] = []
    if all_topics:
        topics = [_describe(t, topic_ops) for t in state.topics.values()]
    else:
        for wanted in requested:
            if wanted.name is None:
                found = state.topic_by_id(wanted.topic_id)
                if found is None:
                    topics.append(_Topic(error_code=UNKNOWN_TOPIC_ID, name=None, topic_id=wanted.topic_id))
                else:
                    topics.append(_describe(found, topic_ops))
                continue
            found = state.topics.get(wanted.name)
            topics.append(_describe(found, topic_ops) if found is not None else _missing(wanted.name, topic_ops))

    response = MetadataResponse(
        brokers=[_broker_entry(ctx)],
        cluster_id=state.cluster_id,
        # A KRaft broker names a random live broker as "controller"; with one broker, itself.
        controller_id=state.node_id,
        topics=topics,
    )
    if 8 <= version <= 10 and request.include_cluster_authorized_operations:
        response.cluster_authorized_operations = ALL_CLUSTER_OPERATIONS
    return response
