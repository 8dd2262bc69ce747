"""DescribeConfigs (32) v0-4, AlterConfigs (33) v0-2 and IncrementalAlterConfigs (44) v0-1, as a Kafka 3.9 KRaft
broker (with its controller in the same process) answers them, for TOPIC, BROKER, BROKER_LOGGER and CLIENT_METRICS
resources.

Behaviour. DescribeConfigs is ConfigHelper's: DESCRIBE_CONFIGS on the topic, or on the cluster for BROKER,
BROKER_LOGGER and CLIENT_METRICS resources; the authorized results come first, in request order, then the denied
ones (29 / 31 with the error's default message). An unknown resource type fails the whole request (42 in every result). A topic name
is validated (17), then looked up (3); a BROKER name is empty (the cluster-wide dynamic defaults) or this broker's
id (else 42 with Kafka's message). The entries and their order are cluster.configs' (Kafka's Scala HashMap order).
Named keys come in the order of a Scala HashMap holding only them (ConfigHelper filters into a new one), not in the
order asked or the full listing's.

The two alter APIs are answered in two steps, as the broker and its controller do: the broker first refuses
duplicate resources ("Each resource must appear at most once."), duplicate keys, null values, unknown resource
types and BROKER changes DynamicBrokerConfig refuses (42 with Kafka's message), and applies BROKER_LOGGER
changes itself; the controller then asks ALTER_CONFIGS on the topic (29) or the cluster (31) and validates topic
configs (40 with Kafka's messages; unknown keys "Unknown topic config name: x") before checking that the topic
exists (3). ``validate_only`` checks everything and changes nothing. Results come in request order.

The work is cluster.configs.admin's (ConfigAdmin); this module asks the authorizer (through requests.authz, for
the checks authorizer.api_checks declares) and translates the wire messages. A TOPIC change is kept with the topic
(``Partitions.set_topic_configs``: its logs obey it at once, and it survives a restart with log.dirs); a BROKER change is kept in ``services.broker_configs`` and the topics' logs obey the new
broker defaults at once; client metrics subscriptions are kept there too (cluster.configs.client_metrics).

Version notes. DescribeConfigs v0 has ``is_default`` (Kafka 3.9 leaves it false) instead of ``config_source``; v1 adds
synonyms; v3 adds ``config_type`` and documentation. kafka-shim answers documentation (when asked) with a pointer
to the key's entry in Kafka 3.9's documentation rather than Kafka's prose. AlterConfigs and
IncrementalAlterConfigs versions differ only in encoding (v2 / v1 are flexible).

An emulated ZooKeeper-mode release (before 3.3) alters as its ZkAdminManager did (``ConfigAdmin.alter_zookeeper``,
ReleaseRules.zookeeper_config_alteration / zookeeper_config_preprocessing).
"""

from __future__ import annotations

from typing import Any

from kafka_shim.authorizer.api_checks.releases import TOPIC_DESCRIBE_BEFORE_1_0
from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import (
    AlterConfigsResponse,
    DescribeConfigsResponse,
    IncrementalAlterConfigsResponse,
)
from kafka_shim.shim.cluster.configs.admin import (
    BROKER,
    BROKER_LOGGER,
    CLIENT_METRICS,
    CLUSTER_DENIED,
    TOPIC,
    TOPIC_DENIED,
    AlterResource,
    ConfigAdmin,
    Refused,
)
from kafka_shim.shim.cluster.configs.alter_ops import ConfigOp, OpType
from kafka_shim.shim.cluster.configs.describe import DescribedConfig
from kafka_shim.shim.cluster.configs.dynamic_broker import DynamicBrokerConfigs
from kafka_shim.shim.cluster.configs.scala_order import scala_hashmap_order
from kafka_shim.shim.cluster.configs.topic_configs import topic_config_set
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.handlers import CloseConnection, handles
from kafka_shim.shim.requests.authz import allowed, check
from kafka_shim.shim.requests.context import RequestContext

log = get_logger(__name__)

UNKNOWN_SERVER_ERROR_DEFAULT = "The server experienced an unexpected error when processing the request."
INVALID_REQUEST_DEFAULT = ("This most likely occurs because of a request being malformed by the client library or the "
                           "message was sent to an incompatible broker. See the broker logs for more details.")
_DEFAULT_TEXT = {ErrorCode.UNKNOWN_SERVER_ERROR: UNKNOWN_SERVER_ERROR_DEFAULT, ErrorCode.INVALID_REQUEST: INVALID_REQUEST_DEFAULT}
_DOCS = "https://kafka.apache.org/39/documentation.html#"
CLUSTER_NAME = "kafka-cluster"

_Describe = DescribeConfigsResponse.DescribeConfigsResult
_Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
_Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


def _admin(ctx: RequestContext) -> ConfigAdmin:
    services = ctx.services
    if services.broker_configs is None:  # Services built by hand (tests): an in-memory store over the config
        services.broker_configs = DynamicBrokerConfigs(services.config.raw, services.config.node_id)
    partitions = services.partitions

    def set_topic_configs(name: str, configs: dict[str, str]) -> None:
        if partitions is not None:
            partitions.set_topic_configs(name, configs)
        log.info("topic_configs_altered", topic=name, configs=sorted(configs))

    def broker_properties_changed(properties: dict[str, str]) -> None:
        if partitions is not None:
            partitions.set_broker_properties(properties)
        log.info("broker_configs_altered")

    # A BROKER resource names the node the request reached (one of a cluster in one process, whose nodes share one
    # set of dynamic broker configs).
    return ConfigAdmin(services.broker_configs, services.cluster.topics, ctx.node_id,
                       set_topic_configs=set_topic_configs, broker_properties_changed=broker_properties_changed,
                       config_set=topic_config_set(services.release_rules.release),
                       java_logger_manager=not services.release_rules.logger_unknown_op_refused_by_name)


# -- DescribeConfigs ------------------------------------------------------------------------------------------------

def describe_configs_error_response(request: messages.DescribeConfigsRequest, code: int, message: str | None) -> DescribeConfigsResponse:
    """DescribeConfigsRequest.getErrorResponse: every resource with the error and, without a message, the error's default
    text (it words the error with Errors.message(), not ApiError's, which leaves UNKNOWN_SERVER_ERROR's text out)."""
    text = _DEFAULT_TEXT.get(code) if message is None else message
    return DescribeConfigsResponse(results=[
        _Describe(error_code=code, error_message=text, resource_type=r.resource_type, resource_name=r.resource_name, configs=[])
        for r in request.resources
    ])


@handles(ApiKey.DESCRIBE_CONFIGS, 0, 4, error_response=describe_configs_error_response)
def describe_configs(ctx: RequestContext, request: messages.DescribeConfigsRequest) -> DescribeConfigsResponse:
    topic_check, cluster_check = check(ApiKey.DESCRIBE_CONFIGS, "topics"), check(ApiKey.DESCRIBE_CONFIGS, "cluster")
    granted, denied = [], []
    for resource in request.resources:
        if resource.resource_type == TOPIC:
            ok = allowed(ctx, topic_check, resource.resource_name)
        elif resource.resource_type in (BROKER, BROKER_LOGGER, CLIENT_METRICS):
            ok = allowed(ctx, cluster_check, CLUSTER_NAME)
        else:  # Kafka throws while sorting the resources, which fails the whole request
            log.info("describe_configs_refused", reason="unknown resource type", resource_type=resource.resource_type)
            return describe_configs_error_response(request, ErrorCode.INVALID_REQUEST, None)
        (granted if ok else denied).append(resource)
    admin = _admin(ctx)
    synonyms = request.include_synonyms and ctx.api_version >= 1
    documentation = request.include_documentation and ctx.api_version >= 3
    results = [_describe_one(admin, resource, synonyms, documentation) for resource in granted]
    for resource in denied:
        code, text = (_topic_refusal(ctx, resource.resource_name) if resource.resource_type == TOPIC
                      else (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED))
        results.append(_Describe(error_code=code, error_message=text, resource_type=resource.resource_type,
                                 resource_name=resource.resource_name, configs=[]))
    return DescribeConfigsResponse(results=results)


def _topic_refusal(ctx: RequestContext, name: str) -> tuple[int, str | None]:
    """The answer for a topic resource whose config check failed. KAFKA-5547: an emulated 0.11 said 29 only for a topic
    the principal may describe and 3 otherwise, both without a message (its ApiError(error, null))."""
    if not ctx.services.release_rules.topics_hidden_as_unknown:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPIC_DENIED
    if allowed(ctx, TOPIC_DESCRIBE_BEFORE_1_0, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, None
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None


def _describe_one(admin: ConfigAdmin, resource: Any, synonyms: bool, documentation: bool) -> Any:
    kind, name = resource.resource_type, resource.resource_name
    try:
        entries = admin.describe(kind, name)
    except Refused as refused:
        log.info("describe_configs_refused", resource_type=kind, resource_name=name, error_code=refused.code,
                 error_message=refused.message)
        return _Describe(error_code=refused.code, error_message=refused.message, resource_type=kind, resource_name=name, configs=[])
    wanted = resource.configuration_keys
    if wanted and kind != CLIENT_METRICS:  # ConfigHelper lists a subscription's every stored key, whatever was asked
        # ConfigHelper filters the listed map into a new Scala mutable.HashMap: the entries asked for come in that
        # smaller map's order, whatever order they were asked in.
        by_name = {e.name: e for e in entries if e.name in wanted}
        entries = [by_name[n] for n in scala_hashmap_order(by_name)]
    anchor = "topicconfigs_" if kind == TOPIC else "brokerconfigs_"
    if kind in (CLIENT_METRICS, BROKER_LOGGER):  # Kafka leaves these entries' documentation at its default ""
        configs = [_entry(e, synonyms, "") for e in entries]
    else:
        configs = [_entry(e, synonyms, _DOCS + anchor + e.name if documentation else None) for e in entries]
    return _Describe(error_code=ErrorCode.NONE, error_message="", resource_type=kind, resource_name=name, configs=configs)


def _entry(e: DescribedConfig, synonyms: bool, documentation: str | None) -> Any:
    return _Entry(
        name=e.name, value=e.value, read_only=e.read_only, is_default=False,  # Kafka never sets it
        config_source=int(e.source), is_sensitive=e.is_sensitive,
        synonyms=[_Synonym(name=s.name, value=s.value, source=int(s.source)) for s in e.synonyms] if synonyms else [],
        config_type=int(e.config_type), documentation=documentation,
    )


# -- AlterConfigs and IncrementalAlterConfigs -----------------------------------------------------------------------

def _alter(ctx: RequestContext, request: Any, resources: list[AlterResource], incremental: bool) -> list[tuple[int, str | None]]:
    topic_check, cluster_check = check(ctx.api_key, "topics"), check(ctx.api_key, "cluster")

    def authorize(resource_type: int, name: str) -> bool:
        if resource_type == TOPIC:
            return allowed(ctx, topic_check, name)
        return allowed(ctx, cluster_check, CLUSTER_NAME)

    admin = _admin(ctx)
    if ctx.services.release_rules.zookeeper_config_alteration:
        results = admin.alter_zookeeper(resources, incremental, request.validate_only, authorize,
                                        preprocessed=not ctx.services.release_rules.zookeeper_config_preprocessing)
    else:
        results = admin.alter(resources, incremental, request.validate_only, authorize)
    if ctx.services.release_rules.topics_hidden_as_unknown:
        # (the ZooKeeper-mode path words a refusal with no message)
        results = [_topic_refusal(ctx, r.name) if r.resource_type == TOPIC and result[0] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
                   and result[1] in (TOPIC_DENIED, None) else result for r, result in zip(resources, results, strict=True)]
    if ctx.services.release_rules.zookeeper_admin_messages:
        # ZooKeeper mode's KafkaApis refused a resource with a bare code (configsAuthorizationApiError), where KRaft's
        # controller words it
        refusals = {(ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPIC_DENIED), (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED)}
        results = [(code, None) if (code, message) in refusals else (code, message) for code, message in results]
    for resource, (code, message) in zip(resources, results, strict=True):
        if code != ErrorCode.NONE:
            log.info("config_alteration_refused", resource_type=resource.resource_type, resource_name=resource.name,
                     error_code=code, error_message=message, principal=ctx.principal)
    return results


def alter_configs_error_response(request: messages.AlterConfigsRequest, code: int, message: str | None) -> AlterConfigsResponse:
    """AlterConfigsRequest.getErrorResponse: every resource with the error (Kafka keys them by resource in a HashMap;
    kafka-shim keeps the request's order)."""
    return AlterConfigsResponse(responses=[
        AlterConfigsResponse.AlterConfigsResourceResponse(error_code=code, error_message=message, resource_type=r.resource_type,
                                                          resource_name=r.resource_name)
        for r in request.resources
    ])


@handles(ApiKey.ALTER_CONFIGS, 0, 2, error_response=alter_configs_error_response)
def alter_configs(ctx: RequestContext, request: messages.AlterConfigsRequest) -> AlterConfigsResponse:
    keys = [(r.resource_type, r.resource_name) for r in request.resources]
    if len(set(keys)) != len(keys):
        # Kafka 3.9 fails while building this answer (AlterConfigsResponse keys a map by resource, and its
        # error path does the same) and never answers; closing is the honest equivalent.
        raise CloseConnection("AlterConfigs naming a resource twice: Kafka 3.9 never answers it")
    if ctx.services.release_rules.zookeeper_config_preprocessing and any(c.value is None for r in request.resources for c in r.configs):
        # a ZooKeeper-mode broker failed while reading such a request (a config entry refuses a null value): every
        # resource UNKNOWN_SERVER_ERROR, no message
        log.info("alter_configs_refused", reason="null value")
        return alter_configs_error_response(request, ErrorCode.UNKNOWN_SERVER_ERROR, None)
    resources = [AlterResource(r.resource_type, r.resource_name, [ConfigOp(c.name, OpType.SET, c.value) for c in r.configs])
                 for r in request.resources]
    results = _alter(ctx, request, resources, incremental=False)
    return AlterConfigsResponse(responses=[
        AlterConfigsResponse.AlterConfigsResourceResponse(error_code=code, error_message=message,
                                                          resource_type=r.resource_type, resource_name=r.resource_name)
        for r, (code, message) in zip(request.resources, results, strict=True)
    ])


def incremental_alter_configs_error_response(request: messages.IncrementalAlterConfigsRequest, code: int,
                                             message: str | None) -> IncrementalAlterConfigsResponse:
    """IncrementalAlterConfigsRequest.getErrorResponse: every resource, in request order, with the error."""
    return IncrementalAlterConfigsResponse(responses=[
        IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(error_code=code, error_message=message,
                                                                     resource_type=r.resource_type, resource_name=r.resource_name)
        for r in request.resources
    ])


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, error_response=incremental_alter_configs_error_response)
def incremental_alter_configs(ctx: RequestContext, request: messages.IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
    resources = [AlterResource(r.resource_type, r.resource_name, [ConfigOp(c.name, c.config_operation, c.value) for c in r.configs])
                 for r in request.resources]
    results = _alter(ctx, request, resources, incremental=True)
    return IncrementalAlterConfigsResponse(responses=[
        IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(error_code=code, error_message=message,
                                                                     resource_type=r.resource_type, resource_name=r.resource_name)
        for r, (code, message) in zip(request.resources, results, strict=True)
    ])
