"""DescribeConfigs (32) v0-4, AlterConfigs (33) v0-2 and IncrementalAlterConfigs (44) v0-1, as a Kafka 3.9 KRaft
broker (with its controller in the same process) answers them, for TOPIC, BROKER, BROKER_LOGGER and CLIENT_METRICS
resources.

Behaviour. DescribeConfigs is ConfigHelper's: DESCRIBE_CONFIGS on the topic, or on the cluster for BROKER,
BROKER_LOGGER and CLIENT_METRICS resources; the authorized results come first, in request order, then the denied ones (29 / 31 with
the error's default message). An unknown resource type fails the whole request (42 in every result). A topic name
is validated (17), then looked up (3); a BROKER name is empty (the cluster-wide dynamic defaults) or this broker's
id (else 42 with Kafka's message). The entries and their order are cluster.configs' (Kafka's Scala HashMap order).

The two alter APIs are answered in two steps, as the broker and its controller do: the broker first refuses
duplicate resources ("Each resource must appear at most once."), duplicate keys, null values, unknown resource
types and BROKER changes DynamicBrokerConfig refuses (42 with Kafka's message), and applies BROKER_LOGGER
changes itself; the controller then asks ALTER_CONFIGS on the topic (29) or the cluster (31) and validates topic
configs (40 with Kafka's messages; unknown keys "Unknown topic config name: x") before checking that the topic
exists (3). ``validate_only`` checks everything and changes nothing. Results come in request order.

A TOPIC change is kept with the topic (``Partitions.set_topic_configs``: its logs obey it at once, and it survives a
restart with log.dirs); a BROKER change is kept in ``services.broker_configs`` and the topics' logs obey the new
broker defaults at once; client metrics subscriptions are kept there too (cluster.configs.client_metrics).

Version notes. DescribeConfigs v0 has ``is_default`` instead of ``config_source`` and no synonyms; v1 adds
synonyms; v3 adds ``config_type`` and documentation. kafka-shim answers documentation (when asked) with a pointer
to the key's entry in Kafka 3.9's documentation rather than Kafka's prose. AlterConfigs and
IncrementalAlterConfigs versions differ only in encoding (v2 / v1 are flexible).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import structlog

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import (
    AlterConfigsResponse,
    DescribeConfigsResponse,
    IncrementalAlterConfigsResponse,
)
from kafka_shim.shim.cluster.configs.alter_ops import (
    AlterError,
    ConfigOp,
    OpType,
    apply_broker_ops,
    apply_controller_ops,
    apply_topic_ops,
)
from kafka_shim.shim.cluster.configs.broker_describe import describe_broker_configs
from kafka_shim.shim.cluster.configs.client_metrics import describe_client_metrics, validate_client_metrics
from kafka_shim.shim.cluster.configs.definition import ConfigValueError
from kafka_shim.shim.cluster.configs.describe import DescribedConfig, describe_topic_configs
from kafka_shim.shim.cluster.configs.dynamic_broker import (
    BrokerConfigError,
    DynamicBrokerConfigs,
    validate_dynamic_broker_configs,
    validate_reconfiguration,
)
from kafka_shim.shim.cluster.configs.loggers import BrokerLoggers
from kafka_shim.shim.cluster.configs.scala_order import scala_hashmap_order
from kafka_shim.shim.cluster.configs.topic_configs import validate_topic_configs
from kafka_shim.shim.cluster.configs.topic_names import invalid_topic_name
from kafka_shim.shim.handlers import CloseConnection, handles
from kafka_shim.shim.requests.authz import allowed, check
from kafka_shim.shim.requests.context import RequestContext

log = structlog.get_logger(__name__)

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS = 2, 4, 8, 16
_TYPE_NAMES = {TOPIC: "TOPIC", BROKER: "BROKER", BROKER_LOGGER: "BROKER_LOGGER", CLIENT_METRICS: "CLIENT_METRICS"}
# Errors.X.message(): the text ApiError carries when no message was given.
TOPIC_DENIED = "Topic authorization failed."
CLUSTER_DENIED = "Cluster authorization failed."
INVALID_REQUEST_DEFAULT = ("This most likely occurs because of a request being malformed by the client library or the "
                           "message was sent to an incompatible broker. See the broker logs for more details.")
_DOCS = "https://kafka.apache.org/39/documentation.html#"
_JAVA_INT = re.compile(r"[+-]?\d+")

_Describe = DescribeConfigsResponse.DescribeConfigsResult
_Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
_Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


class _Refused(Exception):
    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _broker_id(name: str, message: str) -> int:
    """Scala's ``name.toInt`` (Integer.parseInt), or INVALID_REQUEST with ``message``."""
    if _JAVA_INT.fullmatch(name) and -(2**31) <= int(name) < 2**31:
        return int(name)
    raise _Refused(ErrorCode.INVALID_REQUEST, message)


def _dynamic(ctx: RequestContext) -> DynamicBrokerConfigs:
    services = ctx.services
    if services.broker_configs is None:  # Services built by hand (tests): an in-memory store over the config
        services.broker_configs = DynamicBrokerConfigs(services.config.raw, services.config.node_id)
    return services.broker_configs


def _loggers(ctx: RequestContext) -> BrokerLoggers:
    return _dynamic(ctx).loggers


# -- DescribeConfigs ------------------------------------------------------------------------------------------------

def describe_configs_error_response(request: messages.DescribeConfigsRequest, code: int, message: str | None) -> DescribeConfigsResponse:
    """DescribeConfigsRequest.getErrorResponse: every resource with the error and its default message."""
    text = INVALID_REQUEST_DEFAULT if message is None and code == ErrorCode.INVALID_REQUEST else message
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
            ok = allowed(ctx, cluster_check, "kafka-cluster")
        else:  # Kafka throws while sorting the resources, which fails the whole request
            log.info("describe_configs_refused", reason="unknown resource type", resource_type=resource.resource_type)
            return describe_configs_error_response(request, ErrorCode.INVALID_REQUEST, None)
        (granted if ok else denied).append(resource)
    synonyms = request.include_synonyms and ctx.api_version >= 1
    documentation = request.include_documentation and ctx.api_version >= 3
    results = [_describe_one(ctx, resource, synonyms, documentation) for resource in granted]
    for resource in denied:
        code, text = ((ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPIC_DENIED) if resource.resource_type == TOPIC
                      else (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED))
        results.append(_Describe(error_code=code, error_message=text, resource_type=resource.resource_type,
                                 resource_name=resource.resource_name, configs=[]))
    return DescribeConfigsResponse(results=results)


def _describe_one(ctx: RequestContext, resource: Any, synonyms: bool, documentation: bool) -> Any:
    try:
        error_code, entries = _entries_of(ctx, resource)
    except _Refused as refused:
        log.info("describe_configs_refused", resource_type=resource.resource_type, resource_name=resource.resource_name,
                 error_code=refused.code, error_message=refused.message)
        return _Describe(error_code=refused.code, error_message=refused.message, resource_type=resource.resource_type,
                         resource_name=resource.resource_name, configs=[])
    wanted = resource.configuration_keys
    if wanted:
        entries = [e for e in entries if e.name in wanted]
    anchor = "topicconfigs_" if resource.resource_type == TOPIC else "brokerconfigs_"
    if resource.resource_type == CLIENT_METRICS:  # Kafka leaves these entries' documentation at its default ""
        configs = [_entry(ctx, e, synonyms, "") for e in entries]
    else:
        configs = [_entry(ctx, e, synonyms, _DOCS + anchor + e.name if documentation else None) for e in entries]
    return _Describe(error_code=error_code, error_message="", resource_type=resource.resource_type,
                     resource_name=resource.resource_name, configs=configs)


def _entries_of(ctx: RequestContext, resource: Any) -> tuple[int, list[DescribedConfig]]:
    name, node_id = resource.resource_name, ctx.services.config.node_id
    if resource.resource_type == TOPIC:
        invalid = invalid_topic_name(name)
        if invalid is not None:
            raise _Refused(ErrorCode.INVALID_TOPIC_EXCEPTION, invalid)
        topic = ctx.services.cluster.topics.get(name)
        if topic is None:
            raise _Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
        dynamic = _dynamic(ctx)
        entries = describe_topic_configs(topic.configs, dynamic.static, dynamic_broker=dynamic.per_broker,
                                         dynamic_default=dynamic.cluster_default)
        by_name = {e.name: e for e in entries}
        return ErrorCode.NONE, [by_name[n] for n in scala_hashmap_order(by_name)]
    if resource.resource_type == BROKER:
        dynamic = _dynamic(ctx)
        if not name:
            return ErrorCode.NONE, describe_broker_configs(dynamic.static, dynamic.per_broker, dynamic.cluster_default, False)
        if _broker_id(name, f"Broker id must be an integer, but it is: {name}") != node_id:
            raise _Refused(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {node_id} or empty string, but received {name}")
        return ErrorCode.NONE, describe_broker_configs(dynamic.static, dynamic.per_broker, dynamic.cluster_default, True)
    if resource.resource_type == BROKER_LOGGER:
        if not name:
            raise _Refused(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
        if _broker_id(name, f"Broker id must be an integer, but it is: {name}") != node_id:
            raise _Refused(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {node_id} but received {name}")
        return ErrorCode.NONE, _loggers(ctx).describe()
    if not name:  # CLIENT_METRICS
        raise _Refused(ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty")
    return ErrorCode.NONE, describe_client_metrics(_dynamic(ctx).client_metrics.get(name, {}))


def _entry(ctx: RequestContext, e: DescribedConfig, synonyms: bool, documentation: str | None) -> Any:
    return _Entry(
        name=e.name, value=e.value, read_only=e.read_only, is_default=False,  # Kafka never sets it
        config_source=int(e.source), is_sensitive=e.is_sensitive,
        synonyms=[_Synonym(name=s.name, value=s.value, source=int(s.source)) for s in e.synonyms] if synonyms else [],
        config_type=int(e.config_type), documentation=documentation,
    )


# -- AlterConfigs and IncrementalAlterConfigs -----------------------------------------------------------------------

def _preprocess(ctx: RequestContext, resources: Sequence[Any], ops_of: Callable[[Any], list[ConfigOp]],
                incremental: bool, validate_only: bool) -> dict[int, tuple[int, str | None]]:
    """The broker's part (ConfigAdminManager.preprocess): index of each resource it answers -> (code, message)."""
    answered: dict[int, tuple[int, str | None]] = {}
    seen: dict[tuple[int, str], int] = {}
    for index, resource in enumerate(resources):
        earlier = seen.get((resource.resource_type, resource.resource_name))
        seen[(resource.resource_type, resource.resource_name)] = index
        if earlier is not None:
            for i in (earlier, index):
                answered[i] = (ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
    for index, resource in enumerate(resources):
        if index in answered:
            continue
        try:
            _preprocess_one(ctx, resource, ops_of(resource), incremental, validate_only)
        except _Refused as refused:
            answered[index] = (refused.code, refused.message)
        except AlterError as error:
            answered[index] = (error.error_code, error.message)
        else:
            if resource.resource_type == BROKER_LOGGER:
                answered[index] = (ErrorCode.NONE, None)
    return answered


def _preprocess_one(ctx: RequestContext, resource: Any, ops: list[ConfigOp], incremental: bool, validate_only: bool) -> None:
    names = [op.name for op in ops]
    if len(set(names)) != len(names):
        raise _Refused(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [op.name for op in ops if op.value is None and not (incremental and op.op == OpType.DELETE)]
    if nulls:
        raise _Refused(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
    kind, name = resource.resource_type, resource.resource_name
    if kind == BROKER_LOGGER and incremental:
        cluster_ok = allowed(ctx, check(ApiKey.INCREMENTAL_ALTER_CONFIGS, "cluster"), "kafka-cluster")
        _loggers(ctx).alter(cluster_ok, name, ctx.services.config.node_id, ops, validate_only)
    elif kind == BROKER:
        if name:
            _check_node_id(name, ctx.services.config.node_id)
        dynamic = _dynamic(ctx)
        props = apply_broker_ops(dynamic.configs_of(bool(name)), ops) if incremental else {op.name: op.value or "" for op in ops}
        try:
            validate_dynamic_broker_configs(props, bool(name))
            validate_reconfiguration(dynamic.effective_properties(), dynamic.effective_with(bool(name), props))
        except BrokerConfigError as error:
            raise _Refused(error.error_code, error.message) from None
    elif kind not in (TOPIC, CLIENT_METRICS):
        raise _Refused(ErrorCode.INVALID_REQUEST, f"Unknown resource type {kind}")


def _check_node_id(name: str, node_id: int) -> None:
    if _broker_id(name, f"Node id must be an integer, but it is: {name}") != node_id:
        raise _Refused(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {node_id}, but received {name}")


def _persist(ctx: RequestContext, resource: Any, ops: list[ConfigOp], incremental: bool, validate_only: bool,
             api_key: int) -> tuple[int, str | None]:
    """The controller's part: ALTER_CONFIGS, then the new configs validated and (unless validate_only) kept."""
    kind, name = resource.resource_type, resource.resource_name
    if kind == TOPIC:
        if not allowed(ctx, check(api_key, "topics"), name):
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPIC_DENIED
    elif not allowed(ctx, check(api_key, "cluster"), "kafka-cluster"):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED
    try:
        if kind == TOPIC:
            _alter_topic(ctx, name, ops, incremental, validate_only)
        elif kind == BROKER:
            _alter_broker(ctx, name, ops, incremental, validate_only)
        else:
            _alter_client_metrics(ctx, name, ops, incremental, validate_only)
    except _Refused as refused:
        return refused.code, refused.message
    except AlterError as error:
        return error.error_code, error.message
    except ConfigValueError as error:
        return error.error_code, error.message
    return ErrorCode.NONE, None


def _alter_topic(ctx: RequestContext, name: str, ops: list[ConfigOp], incremental: bool, validate_only: bool) -> None:
    topic = ctx.services.cluster.topics.get(name)
    current = dict(topic.configs) if topic is not None else {}
    wanted = apply_topic_ops(current, ops) if incremental else {op.name: op.value for op in ops}
    if not name:
        raise _Refused(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
    invalid = invalid_topic_name(name)
    if invalid is not None:
        raise _Refused(ErrorCode.INVALID_TOPIC_EXCEPTION, invalid)
    validate_topic_configs(wanted, _dynamic(ctx).effective_properties(), current)
    if topic is None:
        raise _Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    if not validate_only:
        ctx.services.partitions.set_topic_configs(name, {k: v for k, v in wanted.items() if v is not None})
        log.info("topic_configs_altered", topic=name, configs=sorted(wanted))


def _alter_broker(ctx: RequestContext, name: str, ops: list[ConfigOp], incremental: bool, validate_only: bool) -> None:
    dynamic = _dynamic(ctx)
    per_broker = bool(name)
    wanted = apply_broker_ops(dynamic.configs_of(per_broker), ops) if incremental else {op.name: op.value or "" for op in ops}
    if validate_only:
        return
    dynamic.replace(per_broker, wanted)
    if ctx.services.partitions is not None:
        ctx.services.partitions.set_broker_properties(dynamic.effective_properties())
    log.info("broker_configs_altered", resource=name or "<cluster default>", configs=sorted(wanted))


def _alter_client_metrics(ctx: RequestContext, name: str, ops: list[ConfigOp], incremental: bool, validate_only: bool) -> None:
    dynamic = _dynamic(ctx)
    current = dynamic.client_metrics.get(name, {})
    # The controller's list operations: no client metrics key counts as a LIST for it, so APPEND/SUBTRACT fail.
    wanted = apply_controller_ops(current, ops, list_keys={}) if incremental else {op.name: op.value or "" for op in ops}
    validate_client_metrics(name, wanted)
    if not validate_only:
        dynamic.replace_client_metrics(name, wanted)
        log.info("client_metrics_subscription_altered", subscription=name, configs=sorted(wanted))


def _alter(ctx: RequestContext, request: Any, ops_of: Callable[[Any], list[ConfigOp]], incremental: bool,
           api_key: int) -> list[tuple[Any, int, str | None]]:
    resources = list(request.resources)
    answered = _preprocess(ctx, resources, ops_of, incremental, request.validate_only)
    results = []
    for index, resource in enumerate(resources):
        if index in answered:
            code, message = answered[index]
        else:
            code, message = _persist(ctx, resource, ops_of(resource), incremental, request.validate_only, api_key)
        if code != ErrorCode.NONE:
            log.info("config_alteration_refused", resource_type=resource.resource_type, resource_name=resource.resource_name,
                     error_code=code, error_message=message, principal=ctx.principal)
        results.append((resource, code, message))
    return results


def _legacy_ops(resource: Any) -> list[ConfigOp]:
    return [ConfigOp(c.name, OpType.SET, c.value) for c in resource.configs]


def _incremental_ops(resource: Any) -> list[ConfigOp]:
    return [ConfigOp(c.name, c.config_operation, c.value) for c in resource.configs]


def alter_configs_error_response(request: messages.AlterConfigsRequest, code: int, message: str | None) -> AlterConfigsResponse:
    """AlterConfigsRequest.getErrorResponse: every resource with the error (Kafka keys them by resource in a HashMap;
    kafka-shim keeps the request's order)."""
    return AlterConfigsResponse(responses=[
        AlterConfigsResponse.AlterConfigsResourceResponse(error_code=code, error_message=message, resource_type=r.resource_type,
                                                          resource_name=r.resource_name)
        for r in request.resources
    ])


def incremental_alter_configs_error_response(request: messages.IncrementalAlterConfigsRequest, code: int,
                                             message: str | None) -> IncrementalAlterConfigsResponse:
    """IncrementalAlterConfigsRequest.getErrorResponse: every resource, in request order, with the error."""
    return IncrementalAlterConfigsResponse(responses=[
        IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(error_code=code, error_message=message,
                                                                     resource_type=r.resource_type, resource_name=r.resource_name)
        for r in request.resources
    ])


@handles(ApiKey.ALTER_CONFIGS, 0, 2, error_response=alter_configs_error_response)
def alter_configs(ctx: RequestContext, request: messages.AlterConfigsRequest) -> AlterConfigsResponse:
    keys = [(r.resource_type, r.resource_name) for r in request.resources]
    if len(set(keys)) != len(keys):
        # Kafka 3.9 fails while building this answer (AlterConfigsResponse keys a map by resource, and its
        # error path does the same) and never answers; closing is the honest equivalent.
        raise CloseConnection("AlterConfigs naming a resource twice: Kafka 3.9 never answers it")
    results = _alter(ctx, request, _legacy_ops, False, ApiKey.ALTER_CONFIGS)
    return AlterConfigsResponse(responses=[
        AlterConfigsResponse.AlterConfigsResourceResponse(error_code=code, error_message=message,
                                                          resource_type=r.resource_type, resource_name=r.resource_name)
        for r, code, message in results
    ])


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, error_response=incremental_alter_configs_error_response)
def incremental_alter_configs(ctx: RequestContext, request: messages.IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
    results = _alter(ctx, request, _incremental_ops, True, ApiKey.INCREMENTAL_ALTER_CONFIGS)
    return IncrementalAlterConfigsResponse(responses=[
        IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(error_code=code, error_message=message,
                                                                     resource_type=r.resource_type, resource_name=r.resource_name)
        for r, code, message in results
    ])
