"""CreateTopics (key 19, v0-7), DeleteTopics (20, v0-6) and CreatePartitions (37, v0-3), as a Kafka 3.9 KRaft broker
answers them (the broker forwards them to its controller: ControllerApis and ReplicationControlManager).

Behaviour. The work and Kafka's messages are in ``partitions.topic_admin``; this module asks the authorizer what
``authorizer.api_checks`` declares and adapts the wire. CreateTopics: CREATE on the cluster (not audited when denied),
else CREATE on each topic (29 "Authorization failed."); DESCRIBE_CONFIGS on the topic decides whether a v5+ answer
carries the topic's configs, partition count and replication factor (else ``topic_config_error_code`` 29).
DeleteTopics: DELETE on the cluster grants everything, else DESCRIBE and DELETE on each topic; an undescribable name
gets 29 whether or not it exists. CreatePartitions: ALTER on each topic (29, no message). Duplicates in one request:
42 "Duplicate topic name.". A CreateTopics that would write more than 10,000 metadata records fails whole with 44
(in CreatePartitions the topic that overflows them, and those after it, get -1); a request
with ``timeout_ms`` of 0 or less fails whole with 7 (its deadline passed before the controller took it up), unless
nothing of it reached the controller.

Version notes. CreateTopics v1+ validate_only and error messages; v4+ lets -1 mean num.partitions /
default.replication.factor (Kafka's broker accepts -1 from any version; its clients refuse to send it below v4);
v5+ returns the configs (tagged topic_config_error_code), v7 the topic id. DeleteTopics v5+ error messages; v6
names topics by name or id; with ``delete.topic.enable=false`` every topic gets 42 below v3 and 73 from v3. An
emulated ZooKeeper-mode release (before 3.3) creates topics as its KafkaApis and ZkAdminManager did
(``TopicAdmin.create_topics_zookeeper``, ReleaseRules.zookeeper_topic_creation).
"""

from __future__ import annotations

import random
from collections.abc import Collection

from kafka_shim.authorizer.api_checks.releases import CREATE_TOPICS_CLUSTER_CREATE
from kafka_shim.authorizer.model import CLUSTER_NAME
from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import CreatePartitionsResponse, CreateTopicsResponse, DeleteTopicsResponse
from kafka_shim.protocol.primitives import ZERO_UUID
from kafka_shim.shim.cluster.configs.topic_configs import topic_config_set
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.partitions.topic_admin import (
    Authorizations,
    BatchTooLarge,
    DeleteResult,
    NewTopic,
    PartitionsIncrease,
    RequestTimedOut,
    TopicAdmin,
    TopicDeletionDisabled,
    TopicRef,
)
from kafka_shim.shim.quotas.metering import MutationQuota
from kafka_shim.shim.requests.authz import allowed, check, filter_by_authorized, hidden_topics, shortcut_allowed
from kafka_shim.shim.requests.context import RequestContext

log = get_logger("kafka_shim.topics")

_CREATE, _DESCRIBE_CONFIGS = check(ApiKey.CREATE_TOPICS, "create"), check(ApiKey.CREATE_TOPICS, "describe_configs")
_DESCRIBE, _DELETE = check(ApiKey.DELETE_TOPICS, "describe"), check(ApiKey.DELETE_TOPICS, "delete")
_ALTER = check(ApiKey.CREATE_PARTITIONS, "topics")

_Created = CreateTopicsResponse.CreatableTopicResult
_CreatedConfig = CreateTopicsResponse.CreatableTopicConfigs
_Deleted = DeleteTopicsResponse.DeletableTopicResult
_Increased = CreatePartitionsResponse.CreatePartitionsTopicResult


def _admin(ctx: RequestContext) -> TopicAdmin:
    config = ctx.services.config
    return TopicAdmin(ctx.services.partitions, num_partitions=config.num_partitions,
                      default_replication_factor=config.default_replication_factor, delete_topic_enable=config.delete_topic_enable,
                      broker_configs=ctx.services.broker_configs, config_set=topic_config_set(ctx.services.release_rules.release))


def _filter(ctx: RequestContext, c):
    """Kafka's filterByAuthorized for one declared check (each distinct name once, its occurrences as ref count)."""
    def names_allowed(names: Collection[str]) -> set[str]:
        return filter_by_authorized(ctx, c, names)
    return names_allowed


def _log_refusals(ctx: RequestContext, api: str, results) -> None:
    """One structured line per refused topic: what the client asked, the code and Kafka's message it got."""
    for r in results:
        if r.error:
            topic_id = getattr(r, "topic_id", ZERO_UUID)
            log.info("topic_request_refused", api=api, topic=r.name, topic_id=None if topic_id == ZERO_UUID else str(topic_id),
                     error_code=r.error, reason=r.message, principal=ctx.principal, client_host=ctx.client_host)


# -- CreateTopics -------------------------------------------------------------------------------------------------------


def create_topics_error_response(request: messages.CreateTopicsRequest, code: int, message: str | None) -> CreateTopicsResponse:
    """Kafka's CreateTopicsRequest.getErrorResponse: every requested topic, in order, with the error."""
    return CreateTopicsResponse(topics=[_Created(name=t.name, error_code=code, error_message=message, configs=[]) for t in request.topics])


@handles(ApiKey.CREATE_TOPICS, 0, 7, error_response=create_topics_error_response)
def create_topics(ctx: RequestContext, request: messages.CreateTopicsRequest) -> CreateTopicsResponse:
    topics = [
        NewTopic(t.name, t.num_partitions, t.replication_factor, [(a.partition_index, list(a.broker_ids)) for a in t.assignments],
                 [(c.name, c.value) for c in t.configs])
        for t in request.topics
    ]
    if ctx.services.release_rules.create_topics_needs_cluster:
        # KIP-277: before 2.0 only CREATE on the cluster let a client create topics, and without it every topic got 31.
        if not allowed(ctx, CREATE_TOPICS_CLUSTER_CREATE, CLUSTER_NAME):
            return create_topics_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
        auth = Authorizations(cluster_wide=True, describable=_filter(ctx, _DESCRIBE_CONFIGS))
    else:
        auth = Authorizations(cluster_wide=shortcut_allowed(ctx, _CREATE), permitted=_filter(ctx, _CREATE),
                              describable=_filter(ctx, _DESCRIBE_CONFIGS))
    validate_only = ctx.api_version >= 1 and request.validate_only
    quota = _mutation_quota(ctx, strict_since=6)
    try:
        if ctx.services.release_rules.zookeeper_topic_creation:
            results = _admin(ctx).create_topics_zookeeper(topics, validate_only, auth, timeout_ms=request.timeout_ms,
                                                          mutation_quota=quota)
        else:
            results = _admin(ctx).create_topics(topics, validate_only, auth, timeout_ms=request.timeout_ms, mutation_quota=quota)
    except RequestTimedOut as exc:
        return create_topics_error_response(request, exc.code, None)
    except BatchTooLarge as exc:
        log.info("create_topics_refused", reason=exc.message, topics=len(topics))
        return create_topics_error_response(request, exc.code, exc.message)
    _log_refusals(ctx, "create_topics", results)
    answer = []
    for r in results:
        entry = _Created(name=r.name, topic_id=r.topic_id, error_code=r.error, error_message=r.message, topic_config_error_code=r.config_error,
                         num_partitions=r.num_partitions, replication_factor=r.replication_factor,
                         configs=[_CreatedConfig(name=c.name, value=c.value, read_only=c.read_only, config_source=int(c.source),
                                                 is_sensitive=c.is_sensitive) for c in r.configs])
        answer.append(entry)
    return _throttled(ctx, CreateTopicsResponse(topics=answer), quota)


# -- DeleteTopics -------------------------------------------------------------------------------------------------------


def _refs(request: messages.DeleteTopicsRequest) -> list[TopicRef]:
    # v0-5 carry topic_names, v6 topics; a decoded request has only its version's field filled.
    return [TopicRef(n) for n in request.topic_names] + [TopicRef(t.name, t.topic_id) for t in request.topics]


def delete_topics_error_response(request: messages.DeleteTopicsRequest, code: int, message: str | None) -> DeleteTopicsResponse:
    """Kafka's DeleteTopicsRequest.getErrorResponse: every requested topic with the error code (and no message)."""
    return DeleteTopicsResponse(responses=[_Deleted(name=r.name, topic_id=r.topic_id, error_code=code, error_message=None)
                                           for r in _refs(request)])


@handles(ApiKey.DELETE_TOPICS, 0, 6, error_response=delete_topics_error_response)
def delete_topics(ctx: RequestContext, request: messages.DeleteTopicsRequest) -> DeleteTopicsResponse:
    rules = ctx.services.release_rules
    auth = Authorizations(cluster_wide=not rules.delete_topics_zookeeper and shortcut_allowed(ctx, _DELETE),
                          permitted=_filter(ctx, _DELETE), describable=_filter(ctx, _DESCRIBE),
                          permission_before_existence=rules.delete_topics_zookeeper)
    quota = _mutation_quota(ctx, strict_since=5)
    refs = _refs(request)
    # KAFKA-5547: an emulated 0.11 answers 3 for a topic it may not describe, or that does not exist, before DELETE
    hidden = hidden_topics(ctx, [r.name for r in refs if r.name is not None], ctx.services.cluster.topics.__contains__)
    try:
        results = _admin(ctx).delete_topics([r for r in refs if r.name not in hidden], auth, timeout_ms=request.timeout_ms,
                                             mutation_quota=quota)
        results = [DeleteResult(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
                   for name in dict.fromkeys(r.name for r in refs) if name in hidden] + results
    except RequestTimedOut as exc:
        return delete_topics_error_response(request, exc.code, None)
    except TopicDeletionDisabled:
        code = ErrorCode.INVALID_REQUEST if ctx.api_version < 3 else ErrorCode.TOPIC_DELETION_DISABLED
        log.info("delete_topics_refused", reason="delete.topic.enable=false", error_code=code)
        return delete_topics_error_response(request, code, None)
    _log_refusals(ctx, "delete_topics", results)
    if not rules.delete_topics_zookeeper:
        # ControllerApis shuffles the answer so that positions reveal nothing: an absent topic and one the principal
        # may not see would otherwise tell themselves apart by where they come (a ZooKeeper broker did not).
        random.shuffle(results)
    # ZooKeeper mode's KafkaApis set only a code on each topic (ReleaseRules.zookeeper_admin_messages)
    bare = rules.zookeeper_admin_messages
    return _throttled(ctx, DeleteTopicsResponse(responses=[
        _Deleted(name=r.name, topic_id=r.topic_id if r.topic_id is not None else ZERO_UUID, error_code=r.error,
                 error_message=None if bare else r.message)
        for r in results
    ]), quota)


# -- CreatePartitions ---------------------------------------------------------------------------------------------------


def create_partitions_error_response(request: messages.CreatePartitionsRequest, code: int,
                                     message: str | None) -> CreatePartitionsResponse:
    """Kafka's CreatePartitionsRequest.getErrorResponse: every requested topic, in order, with the error."""
    return CreatePartitionsResponse(results=[_Increased(name=t.name, error_code=code, error_message=message) for t in request.topics])


@handles(ApiKey.CREATE_PARTITIONS, 0, 3, error_response=create_partitions_error_response)
def create_partitions(ctx: RequestContext, request: messages.CreatePartitionsRequest) -> CreatePartitionsResponse:
    increases = [
        PartitionsIncrease(t.name, t.count, None if t.assignments is None else [list(a.broker_ids) for a in t.assignments])
        for t in request.topics
    ]
    quota = _mutation_quota(ctx, strict_since=3)
    if ctx.services.release_rules.zookeeper_admin_messages:  # ZkAdminManager's checks, words and answer order
        results = _admin(ctx).create_partitions_zookeeper(increases, request.validate_only, _filter(ctx, _ALTER),
                                                          timeout_ms=request.timeout_ms, mutation_quota=quota)
    else:
        try:
            results = _admin(ctx).create_partitions(increases, request.validate_only, _filter(ctx, _ALTER),
                                                    timeout_ms=request.timeout_ms, mutation_quota=quota)
        except RequestTimedOut as exc:
            return create_partitions_error_response(request, exc.code, None)
    _log_refusals(ctx, "create_partitions", results)
    return _throttled(ctx, CreatePartitionsResponse(
        results=[_Increased(name=r.name, error_code=r.error, error_message=r.message) for r in results]), quota)


# -- controller_mutation_rate (KIP-599) ---------------------------------------------------------------------------------


def _mutation_quota(ctx: RequestContext, strict_since: int) -> MutationQuota | None:
    """ControllerMutationQuotaManager.newQuotaFor: strict from ``strict_since`` (refused mutations get 89), permissive
    below (applied, then throttled)."""
    meters = ctx.services.quota_meters
    if meters is None:
        return None
    return meters.mutations.for_request(ctx.principal, ctx.header.client_id, strict=ctx.api_version >= strict_since)


def _throttled(ctx: RequestContext, response, quota: MutationQuota | None):
    """sendResponseMaybeThrottleWithControllerQuota: the quota's throttle time in the answer, and the mute."""
    if quota is not None and quota.throttle_ms > 0:
        ctx.throttle_ms = max(ctx.throttle_ms, quota.throttle_ms)
        response.throttle_time_ms = ctx.throttle_ms
    return response
