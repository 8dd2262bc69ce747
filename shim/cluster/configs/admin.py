"""The config APIs' work without the wire: describing and altering TOPIC, BROKER, BROKER_LOGGER and CLIENT_METRICS
resources as a Kafka 3.9 KRaft broker and its controller do.

Kafka's counterparts: ``ConfigHelper.describeConfigs`` (one resource's entries or error), ``ConfigAdminManager``
(the broker's preprocessing of AlterConfigs / IncrementalAlterConfigs: duplicate resources and keys, nulls,
unknown types, BROKER checks, BROKER_LOGGER changes) and the controller (``ControllerApis`` authorizing each
remaining resource, ``ConfigurationControlManager`` applying the operations, ``ControllerConfigurationValidator``
and the topic's existence check). Authorization questions are the caller's (``authorize(resource_type, name)``),
so this module knows nothing of requests; topic changes and new broker properties go out through callbacks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kafka_shim.authorizer.acl_walk import UnparseableAclPrincipal
from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.cluster.configs.alter_ops import (
    BROKER_LIST_DEFAULTS,
    AlterError,
    ConfigOp,
    OpType,
    apply_broker_ops,
    apply_controller_ops,
    apply_topic_ops,
    java_split,
)
from kafka_shim.shim.cluster.configs.broker_configs import BROKER_CONFIGS
from kafka_shim.shim.cluster.configs.broker_describe import describe_broker_configs
from kafka_shim.shim.cluster.configs.client_metrics import describe_client_metrics, validate_client_metrics
from kafka_shim.shim.cluster.configs.definition import ConfigType, ConfigValueError, to_config_string
from kafka_shim.shim.cluster.configs.describe import DescribedConfig, describe_topic_configs
from kafka_shim.shim.cluster.configs.dynamic_broker import (
    BrokerConfigError,
    DynamicBrokerConfigs,
    validate_dynamic_broker_configs,
    validate_reconfiguration,
)
from kafka_shim.shim.cluster.configs.scala_order import scala_hashmap_order
from kafka_shim.shim.cluster.configs.topic_configs import (
    CURRENT_TOPIC_CONFIGS,
    TOPIC_CONFIGS,
    TopicConfigSet,
    parse_topic_configs,
    validate_topic_configs,
)
from kafka_shim.shim.cluster.topics import Topic, invalid_topic_name
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.javacompat.hash_orders import java_concurrent_hash_map_order
from kafka_shim.shim.javacompat.java_hash import java_order, java_string_hash

log = get_logger(__name__)

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS = 2, 4, 8, 16
# Errors.X.message(): the text ApiError carries when no message was given.
TOPIC_DENIED = "Topic authorization failed."
CLUSTER_DENIED = "Cluster authorization failed."
_JAVA_INT = re.compile(r"[+-]?\d+")
_TYPE_NAMES = {TOPIC: "TOPIC", BROKER: "BROKER", BROKER_LOGGER: "BROKER_LOGGER"}  # ConfigResource.Type's names
_ZOOKEEPER_LOG_LEVELS = "TRACE, ERROR, INFO, FATAL, DEBUG, WARN"  # seen from real 2.8.2 and 3.0.2

Authorize = Callable[[int, str], bool]  # (config resource type, resource name) -> allowed


class Refused(Exception):
    """A resource answered with ``code`` and ``message`` (None: Kafka sends no message)."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class AlterResource:
    resource_type: int
    name: str
    ops: list[ConfigOp]


def _controller_switch_fails(resource: AlterResource) -> bool:
    """Whether ConfigurationControlManager.incrementalAlterConfigResource reaches an operation id OpType does not know
    (``OpType.forId`` is null and the switch on it throws). It visits the keys in Java HashMap order and stops at the
    first APPEND or SUBTRACT on a key that is not a LIST (an error for this resource alone); only TOPIC keys are LIST
    keys to the controller's schema (KafkaRaftServer's KafkaConfigSchema has no CLIENT_METRICS definitions)."""
    by_name = {op.name: op.op for op in resource.ops}
    for name in java_order(list(by_name)):
        op = by_name[name]
        if op in (OpType.APPEND, OpType.SUBTRACT):
            if resource.resource_type != TOPIC or TOPIC_CONFIGS.get(name) is None or TOPIC_CONFIGS[name].type is not ConfigType.LIST:
                return False
        elif op not in (OpType.SET, OpType.DELETE):
            return True
    return False


def _broker_id(name: str, message: str) -> int:
    """Scala's ``name.toInt`` (Integer.parseInt), or INVALID_REQUEST with ``message``."""
    if _JAVA_INT.fullmatch(name) and -(2**31) <= int(name) < 2**31:
        return int(name)
    raise Refused(ErrorCode.INVALID_REQUEST, message)


class ConfigAdmin:
    """One broker's configs as the config APIs see them."""

    def __init__(self, dynamic: DynamicBrokerConfigs, topics: Mapping[str, Topic], node_id: int, *,
                 set_topic_configs: Callable[[str, dict[str, str]], None],
                 broker_properties_changed: Callable[[dict[str, str]], None],
                 config_set: TopicConfigSet = CURRENT_TOPIC_CONFIGS, java_logger_manager: bool = True) -> None:
        self.dynamic = dynamic
        # Kafka 3.7+: BROKER_LOGGER changes are checked by RuntimeLoggerManager (Java), not ConfigAdminManager (Scala)
        self.java_logger_manager = java_logger_manager
        self.config_set = config_set  # the topic keys of the emulated release (kafka.version)
        self.topics = topics
        self.node_id = node_id
        self._set_topic_configs = set_topic_configs
        self._broker_properties_changed = broker_properties_changed

    # -- DescribeConfigs ---------------------------------------------------------------------------------------------

    def describe(self, resource_type: int, name: str) -> list[DescribedConfig]:
        """A granted resource's entries in Kafka's order, or Refused with Kafka's code and message."""
        dynamic, node_id = self.dynamic, self.node_id
        if resource_type == TOPIC:
            invalid = invalid_topic_name(name)
            if invalid is not None:
                raise Refused(ErrorCode.INVALID_TOPIC_EXCEPTION, invalid)
            topic = self.topics.get(name)
            if topic is None:
                raise Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
            entries = describe_topic_configs(topic.configs, dynamic.static, dynamic_broker=dynamic.per_broker,
                                             dynamic_default=dynamic.cluster_default, config_set=self.config_set)
            by_name = {e.name: e for e in entries}
            return [by_name[n] for n in scala_hashmap_order(by_name)]
        if resource_type == BROKER:
            if name and _broker_id(name, f"Broker id must be an integer, but it is: {name}") != node_id:
                raise Refused(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {node_id} or empty string, but received {name}")
            return describe_broker_configs(dynamic.static, dynamic.per_broker, dynamic.cluster_default, bool(name),
                                           self.config_set.broker_defaults())
        if resource_type == BROKER_LOGGER:
            if not name:
                raise Refused(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
            if _broker_id(name, f"Broker id must be an integer, but it is: {name}") != node_id:
                raise Refused(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {node_id} but received {name}")
            return dynamic.loggers.describe()
        if resource_type == CLIENT_METRICS:
            if not name:
                raise Refused(ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty")
            return describe_client_metrics(dynamic.client_metrics.get(name, {}))
        raise ValueError(f"resource type {resource_type} is refused before describing")

    # -- AlterConfigs and IncrementalAlterConfigs ----------------------------------------------------------------------

    def alter(self, resources: Sequence[AlterResource], incremental: bool, validate_only: bool,
              authorize: Authorize) -> list[tuple[int, str | None]]:
        """(code, message) per resource, in request order: the broker's preprocessing, then the controller's part."""
        answered = self._preprocess(resources, incremental, validate_only, authorize)
        # The controller asks once for each forwarded resource.
        try:
            granted = {i: authorize(r.resource_type, r.name) for i, r in enumerate(resources) if i not in answered}
        except UnparseableAclPrincipal as exc:
            # ControllerApis fails on it and answers the forwarded request with its error response; the broker keeps
            # its own answers for the resources it preprocessed.
            log.error("alter_configs_failed_on_unparseable_acl", error=str(exc), acl=str(exc.binding))
            return [answered.get(i, (ErrorCode.UNKNOWN_SERVER_ERROR, None)) for i in range(len(resources))]
        if incremental and any(ok and _controller_switch_fails(resources[i]) for i, ok in granted.items()):
            # The controller's one event for every forwarded resource fails on the first operation id its switch does
            # not know (a NullPointerException): nothing is changed, and ControllerApis answers the forwarded request
            # with its error response, UNKNOWN_SERVER_ERROR without a message for each of its resources, those it
            # refused itself (not authorized) included.
            return [answered.get(i, (ErrorCode.UNKNOWN_SERVER_ERROR, None)) for i in range(len(resources))]
        return [answered[i] if i in answered else self._persist(r, incremental, validate_only, granted[i])
                for i, r in enumerate(resources)]

    def _preprocess(self, resources: Sequence[AlterResource], incremental: bool, validate_only: bool,
                    authorize: Authorize) -> dict[int, tuple[int, str | None]]:
        answered: dict[int, tuple[int, str | None]] = {}
        seen: dict[tuple[int, str], int] = {}
        for index, resource in enumerate(resources):
            key = (resource.resource_type, resource.name)
            earlier = seen.get(key)
            seen[key] = index
            if earlier is not None:
                for i in (earlier, index):
                    answered[i] = (ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
        for index, resource in enumerate(resources):
            if index in answered:
                continue
            try:
                self._preprocess_one(resource, incremental, validate_only, authorize)
            except Refused as refused:
                answered[index] = (refused.code, refused.message)
            except AlterError as error:
                answered[index] = (error.error_code, error.message)
            except UnparseableAclPrincipal as exc:  # a BROKER_LOGGER's check, inside preprocess' catch-all
                log.error("alter_configs_failed_on_unparseable_acl", error=str(exc), acl=str(exc.binding))
                answered[index] = (ErrorCode.UNKNOWN_SERVER_ERROR, None)
            else:
                if resource.resource_type == BROKER_LOGGER:
                    answered[index] = (ErrorCode.NONE, None)
        return answered

    def _preprocess_one(self, resource: AlterResource, incremental: bool, validate_only: bool, authorize: Authorize) -> None:
        ops, kind, name = resource.ops, resource.resource_type, resource.name
        names = [op.name for op in ops]
        if len(set(names)) != len(names):
            raise Refused(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
        nulls = [op.name for op in ops if op.value is None and not (incremental and op.op == OpType.DELETE)]
        if nulls:
            raise Refused(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
        if kind == BROKER_LOGGER and incremental:
            self.dynamic.loggers.alter(authorize(BROKER_LOGGER, name), name, self.node_id, ops, validate_only,
                                       unknown_op_fails_the_switch=self.java_logger_manager)
        elif kind == BROKER:
            if name and _broker_id(name, f"Node id must be an integer, but it is: {name}") != self.node_id:
                raise Refused(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {self.node_id}, but received {name}")
            props = self._broker_configs_after(name, ops, incremental)
            try:
                validate_dynamic_broker_configs(props, bool(name))
                validate_reconfiguration(self.dynamic.effective_properties(), self.dynamic.effective_with(bool(name), props))
            except BrokerConfigError as error:
                raise Refused(error.error_code, error.message) from None
        elif kind not in (TOPIC, CLIENT_METRICS):
            raise Refused(ErrorCode.INVALID_REQUEST, f"Unknown resource type {kind}")

    def _persist(self, resource: AlterResource, incremental: bool, validate_only: bool, granted: bool) -> tuple[int, str | None]:
        kind, name = resource.resource_type, resource.name
        if not granted:
            return ((ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPIC_DENIED) if kind == TOPIC
                    else (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED))
        try:
            if kind == TOPIC:
                self._alter_topic(name, resource.ops, incremental, validate_only)
            elif kind == BROKER:
                self._alter_broker(name, resource.ops, incremental, validate_only)
            else:
                self._alter_client_metrics(name, resource.ops, incremental, validate_only)
        except Refused as refused:
            return refused.code, refused.message
        except AlterError as error:
            return error.error_code, error.message
        except ConfigValueError as error:
            return error.error_code, error.message
        return ErrorCode.NONE, None

    def _alter_topic(self, name: str, ops: list[ConfigOp], incremental: bool, validate_only: bool) -> None:
        topic = self.topics.get(name)
        current = dict(topic.configs) if topic is not None else {}
        if incremental:
            wanted = apply_topic_ops(current, ops)
        else:  # Kafka copies the existing overrides first, then sets the new ones and drops the others
            replacing = {op.name: op.value for op in ops}
            wanted = {name: replacing[name] for name in current if name in replacing} | replacing
        if not name:
            raise Refused(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
        invalid = invalid_topic_name(name)
        if invalid is not None:
            raise Refused(ErrorCode.INVALID_TOPIC_EXCEPTION, invalid)
        validate_topic_configs(wanted, self.dynamic.effective_properties(), current, self.config_set)
        if topic is None:
            raise Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        if not validate_only:
            self._set_topic_configs(name, {k: v for k, v in wanted.items() if v is not None})

    def _broker_configs_after(self, name: str, ops: list[ConfigOp], incremental: bool) -> dict[str, str]:
        if incremental:
            return apply_broker_ops(self.dynamic.configs_of(bool(name)), ops)
        return {op.name: op.value or "" for op in ops}

    def _alter_broker(self, name: str, ops: list[ConfigOp], incremental: bool, validate_only: bool) -> None:
        if validate_only:
            return
        # The broker validated its own reading of the operations; the controller applies them again by its rules
        # (ConfigurationControlManager: an APPEND adds each value once, empty parts of the old value are dropped).
        wanted = (apply_controller_ops(self.dynamic.configs_of(bool(name)), ops, BROKER_LIST_DEFAULTS) if incremental
                  else self._broker_configs_after(name, ops, incremental))
        self.dynamic.replace(bool(name), wanted)
        self._broker_properties_changed(self.dynamic.effective_properties())

    def _alter_client_metrics(self, name: str, ops: list[ConfigOp], incremental: bool, validate_only: bool) -> None:
        current = self.dynamic.client_metrics.get(name, {})
        # The controller's list operations: no client metrics key is a LIST to it, so APPEND/SUBTRACT fail.
        wanted = apply_controller_ops(current, ops, list_keys={}) if incremental else {op.name: op.value or "" for op in ops}
        validate_client_metrics(name, wanted)
        if not validate_only:
            self.dynamic.replace_client_metrics(name, wanted)

    # -- the same, as a ZooKeeper-mode broker did (ReleaseRules.zookeeper_config_alteration) ---------------------------

    def alter_zookeeper(self, resources: Sequence[AlterResource], incremental: bool, validate_only: bool,
                        authorize: Authorize, preprocessed: bool = False) -> list[tuple[int, str | None]]:
        """(code, message) per resource, in request order, as ZkAdminManager answered before 3.3: KafkaApis refused
        unauthorized resources with a bare code, then the broker itself checked each resource in its own order (the
        topic's existence before its values; a value that does not parse is INVALID_REQUEST naming the resource).
        ``preprocessed`` (3.2): duplicates, nulls, BROKER_LOGGER and BROKER checks come first, as 3.9's broker does
        them (ConfigAdminManager.preprocess, new in 3.2); only the rest reaches ZkAdminManager."""
        answered = self._preprocess(resources, incremental, validate_only, authorize) if preprocessed else {}
        results: list[tuple[int, str | None]] = []
        for index, resource in enumerate(resources):
            kind = resource.resource_type
            if index in answered:
                results.append(answered[index])
            elif kind not in (TOPIC, BROKER) and not (incremental and kind == BROKER_LOGGER):
                results.append((ErrorCode.INVALID_REQUEST, f"Unknown resource type {kind}"))  # as the KRaft path
            elif not authorize(kind, resource.name):
                results.append((ErrorCode.TOPIC_AUTHORIZATION_FAILED if kind == TOPIC else ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None))
            else:
                try:
                    self._zookeeper_alter_one(resource, incremental, validate_only)
                except Refused as refused:
                    results.append((refused.code, refused.message))
                else:
                    results.append((ErrorCode.NONE, None))
        return results

    def _zookeeper_alter_one(self, resource: AlterResource, incremental: bool, validate_only: bool) -> None:
        kind, name, ops = resource.resource_type, resource.name, resource.ops
        if incremental:
            names = [op.name for op in ops]
            duplicates = [n for n in dict.fromkeys(names) if names.count(n) > 1]
            if duplicates:
                raise Refused(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys : " + ",".join(duplicates))
            nulls = [f"{_op_name(op.op)}:{op.name}" for op in ops if op.value is None and op.op != OpType.DELETE]
            if nulls:
                raise Refused(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ",".join(nulls))
        # (AlterConfigs with a null value fails as a whole request before this: the handler answers it)
        if kind == BROKER_LOGGER:
            if name:
                self._zookeeper_broker_id(name)  # an empty name is this broker here
            try:
                self.dynamic.loggers.alter(True, str(self.node_id), self.node_id, ops, validate_only, unknown_op_fails_the_switch=False)
            except AlterError as error:
                if error.error_code == ErrorCode.INVALID_CONFIG:  # a ConfigException there
                    # ZkAdminManager listed the valid levels in the order of the Java HashSet holding them
                    message = re.sub(r"Valid log levels are .*", "Valid log levels are " + _ZOOKEEPER_LOG_LEVELS, error.message or "")
                    raise _invalid_value(kind, name, message) from None
                raise Refused(error.error_code, error.message) from None
            return
        if kind == TOPIC:
            topic = self.topics.get(name)
            if incremental:  # the stored overrides (none for an absent topic), changed before the existence check
                wanted = _zookeeper_ops(dict(topic.configs) if topic is not None else {}, ops,
                                        lambda key: TOPIC_CONFIGS.get(key) if self.config_set.accepts(key) else None,
                                        self.config_set.default_string)
            else:
                wanted = {op.name: op.value or "" for op in ops}
            if topic is None:
                raise Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
            self._zookeeper_validate_topic(name, wanted)
            if not validate_only:
                self._set_topic_configs(name, wanted)
            return
        per_broker = self._zookeeper_broker_id(name)
        if incremental:
            wanted = _zookeeper_ops(self.dynamic.configs_of(per_broker), ops, BROKER_CONFIGS.get,
                                    lambda key: to_config_string(BROKER_CONFIGS[key].default, BROKER_CONFIGS[key].type))
        else:
            wanted = {op.name: op.value or "" for op in ops}
        try:  # every refusal of DynamicBrokerConfig.validate is a ConfigException
            validate_dynamic_broker_configs(wanted, per_broker)
            validate_reconfiguration(self.dynamic.effective_properties(), self.dynamic.effective_with(per_broker, wanted))
        except BrokerConfigError as error:
            raise _invalid_value(kind, name, error.message) from None
        if not validate_only:
            self.dynamic.replace(per_broker, wanted)
            self._broker_properties_changed(self.dynamic.effective_properties())

    def _zookeeper_broker_id(self, name: str) -> bool:
        """Whether a BROKER resource names this broker (else the cluster-wide defaults), ZkAdminManager's words."""
        if not name:
            return False
        if _broker_id(name, f"Broker id must be an integer, but it is: {name}") != self.node_id:
            raise Refused(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {self.node_id}, but received {name}")
        return True

    def _zookeeper_validate_topic(self, name: str, configs: dict[str, str]) -> None:
        """LogConfig.validate of these releases: unknown names (INVALID_CONFIG), then parsing against LogConfig's own
        defaults, not the broker's (a ConfigException: INVALID_REQUEST naming the resource), then the values' cross
        checks (INVALID_CONFIG)."""
        for key in java_concurrent_hash_map_order(list(configs), java_string_hash):  # a Properties' order
            if not self.config_set.accepts(key):
                raise Refused(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
        try:
            parse_topic_configs(configs, {})
        except ConfigValueError as error:
            raise _invalid_value(TOPIC, name, error.message) from None
        try:
            validate_topic_configs(configs, {}, None, self.config_set)
        except ConfigValueError as error:
            raise Refused(error.error_code, error.message) from None


def _op_name(op: int) -> str:
    return OpType(op).name if op in OpType._value2member_map_ else str(op)


def _invalid_value(kind: int, name: str, message: str) -> Refused:
    """ZkAdminManager's answer to a ConfigException: INVALID_REQUEST, the resource as ConfigResource.toString names it."""
    return Refused(ErrorCode.INVALID_REQUEST,
                   f"Invalid config value for resource ConfigResource(type={_TYPE_NAMES.get(kind, 'UNKNOWN')}, name='{name}'): {message}")


def _zookeeper_ops(current: Mapping[str, str], ops: Sequence[ConfigOp], key_of: Callable[[str], object],
                   default_of: Callable[[str], str | None]) -> dict[str, str]:
    """ZkAdminManager.prepareIncrementalConfigs, in request order. Unlike 3.9 it keeps duplicates on APPEND, and
    APPEND/SUBTRACT on a key the release does not define fail unexpectedly (a Scala map lookup: -1, no message)."""
    result = dict(current)
    for op in ops:
        if op.op == OpType.SET:
            result[op.name] = op.value or ""
        elif op.op == OpType.DELETE:
            result.pop(op.name, None)
        elif op.op in (OpType.APPEND, OpType.SUBTRACT):
            key = key_of(op.name)
            if key is None:
                raise Refused(ErrorCode.UNKNOWN_SERVER_ERROR, None)
            verb = "append" if op.op == OpType.APPEND else "subtract"
            if key.type is not ConfigType.LIST:  # type: ignore[attr-defined]
                raise Refused(ErrorCode.INVALID_REQUEST, f"Config value {verb} is not allowed for config key: {op.name}")
            old = result.get(op.name)
            parts = java_split(old if old is not None else (default_of(op.name) or ""))
            values = java_split(op.value or "")
            if op.op == OpType.APPEND:
                parts = parts + values
            else:
                for value in values:  # Scala's List.diff: one occurrence per value
                    if value in parts:
                        parts.remove(value)
            result[op.name] = ",".join(parts)
        else:
            raise Refused(ErrorCode.UNKNOWN_SERVER_ERROR, None)
    return result
