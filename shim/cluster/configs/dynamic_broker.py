"""Dynamic broker configs (KIP-226) as plain state: this broker's and the cluster-wide defaults, checked as Kafka does.

Kafka's counterparts: ``DynamicBrokerConfig`` (which keys may change, and how an alteration is validated before the
broker forwards it: ``validate(props, perBrokerConfig)``) and the controller's config records for BROKER resources
(kept in the metadata log, so they survive a restart). Here they are kept in ``kafka-shim-broker-configs.json`` at
the root of ``log.dirs`` when there is one, else in memory.

The effective broker properties are server.properties, overridden by the cluster-wide defaults, overridden by this
broker's own dynamic configs, as KafkaConfig is rebuilt by Kafka after each change. kafka-shim acts at once on the
keys that shape topics (every ``log.*`` topic default, ``message.max.bytes``, ``compression.*``,
``min.insync.replicas``...: through each topic's effective config); the other dynamic keys (thread counts, listener
TLS material, quotas of the connection acceptor...) are accepted, stored and described as Kafka does, but change
nothing in kafka-shim (it has no thread pools to resize, and its listeners read their TLS files at start).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.cluster.configs.broker_configs import (
    BROKER_CONFIGS,
    BROKER_QUOTA_CONFIGS,
    CLUSTER_LEVEL_LISTENER_KEYS,
    DYNAMIC_SECURITY_CONFIGS,
    LISTENER_PREFIX,
    B,
    R,
    override_properties,
)
from kafka_shim.shim.cluster.configs.definition import (
    ConfigType,
    ConfigValueError,
    parse_and_validate,
    parse_csv_map,
    parse_type,
)
from kafka_shim.shim.cluster.configs.listener_checks import (
    ListenerConfigError,
    check_bound_listeners,
    check_inter_broker_sasl,
    check_listener_reconfigurables,
    check_listener_reconfiguration,
    check_listeners,
)
from kafka_shim.shim.cluster.configs.loggers import BrokerLoggers
from kafka_shim.shim.cluster.configs.scala_order import scala_hashmap_order
from kafka_shim.shim.javacompat.hash_orders import java_concurrent_hash_map_order, java_hash_map_order
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.javacompat.scala_set import scala_set_order

BROKER_CONFIGS_FILE = "kafka-shim-broker-configs.json"
_FILE_VERSION = 1



# DynamicConfig.Broker's ConfigDef defines the dynamic keys by filtering KafkaConfig's into a Scala HashMap, so
# ConfigDef.parse (which reports the first bad value) visits them in that map's order.
_DYNAMIC_PARSE_ORDER = [
    *BROKER_QUOTA_CONFIGS.items(),
    *((name, BROKER_CONFIGS[name]) for name in scala_hashmap_order([n for n, key in BROKER_CONFIGS.items() if key.mode != R])),
]


class BrokerConfigError(Exception):
    """An alteration Kafka's broker refuses before forwarding it: INVALID_REQUEST with ``message``."""

    error_code = ErrorCode.INVALID_REQUEST

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _scala_set(names: list[str]) -> str:
    """Scala's immutable Set built by adding ``names`` in order, as its toString prints it: up to four in that order
    (Set1..Set4), more as a HashSet in its trie's order."""
    distinct = list(dict.fromkeys(names))
    prefix = "Set" if len(distinct) <= 4 else "HashSet"
    return prefix + "(" + ", ".join(scala_set_order(distinct, java_string_hash)) + ")"


def _scala_hash_set(names: list[str]) -> str:
    return "HashSet(" + ", ".join(scala_hashmap_order(names)) + ")"


def _per_broker_only(name: str) -> bool:
    match = LISTENER_PREFIX.fullmatch(name)
    return match is not None and match[1] not in CLUSTER_LEVEL_LISTENER_KEYS


def validate_dynamic_broker_configs(props: Mapping[str, str], per_broker: bool) -> None:
    """DynamicBrokerConfig.validateConfigs: what the resource's dynamic configs may hold, Kafka's checks in its order.

    ``props`` is every dynamic config the resource will hold after the alteration, in the order Kafka puts them in
    its Properties (the stored ones, then the request's), whose iteration order the sets in the messages keep.
    Keys Kafka does not know are allowed (Kafka stores them too); values are parsed with the key's type and checked
    by its validator (the broker quota keys first: DynamicConfig.Broker defines them before KafkaConfig's).
    """
    names = java_concurrent_hash_map_order(props, java_string_hash)
    non_dynamic = [name for name in names if name in BROKER_CONFIGS and BROKER_CONFIGS[name].mode == R]
    if non_dynamic:
        raise BrokerConfigError("Cannot update these configs dynamically: " + _scala_set(non_dynamic))
    security = [name for name in DYNAMIC_SECURITY_CONFIGS if name in props]
    if security:
        raise BrokerConfigError(
            "These security configs can be dynamically updated only per-listener using the listener prefix: "
            + _scala_hash_set(security)
        )
    base_props: dict[str, str] = {}
    for name, value in props.items():
        match = LISTENER_PREFIX.fullmatch(name)
        base_props[match[1] if match else name] = value
    for name, key in _DYNAMIC_PARSE_ORDER:
        if name in base_props and key.type is not ConfigType.PASSWORD:
            try:
                parse_and_validate(name, base_props[name], key.type, key.validator)
            except ConfigValueError as error:
                raise BrokerConfigError(error.message) from None
    if not per_broker:
        per_broker_keys = [name for name in names if name in BROKER_CONFIGS and BROKER_CONFIGS[name].mode == B]
        per_broker_keys += [name for name in names if _per_broker_only(name)]
        if per_broker_keys:
            raise BrokerConfigError(
                "Cannot update these configs at default cluster level, broker id must be specified: " + _scala_set(per_broker_keys)
            )


# DynamicThreadPool.ReconfigurableConfigs: a running broker's pools may at most halve or double at once. (Each
# listener's acceptor checks its own num.network.threads the same way: listener_checks.check_listener_reconfigurables.)
THREAD_POOL_KEYS = ("num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads")


# The MetricsReporter classes with a public no-argument constructor on a Kafka 3.9 broker's class path.
LOADABLE_METRICS_REPORTERS = frozenset({"org.apache.kafka.common.metrics.JmxReporter",
                                        "org.apache.kafka.tools.PushHttpMetricsReporter"})

_HOUR_MS = 60 * 60 * 1000
_MIB = 1024 * 1024


def validate_config_values(properties: Mapping[str, str], current: Mapping[str, str] | None = None) -> None:
    """KafkaConfig.validateValues' checks that dynamic keys can fail, in its order. Kafka builds a KafkaConfig from the
    new effective properties before asking any reconfigurable, and its exceptions reach the client unwrapped:
    ``requirement failed: ...``, or ``/ by zero`` for zero cleaner threads (an integer division). The listeners, then
    the per-IP connection overrides, are parsed first, as the constructor reads them before it validates. The listener
    rules apply only where ``current`` (the configuration now in force) keeps them (listener_checks)."""
    try:
        check_bound_listeners(current if current is not None else properties, properties)
    except ListenerConfigError as error:
        raise BrokerConfigError(error.message) from None
    ip_overrides = connections_per_ip_overrides(str(properties.get("max.connections.per.ip.overrides", "")))
    roll_ms = _number(properties, "log.roll.ms")
    if (roll_ms if roll_ms is not None else _HOUR_MS * _int_value(properties, "log.roll.hours")) < 1:
        raise BrokerConfigError("requirement failed: log.roll.ms must be greater than or equal to 1")
    jitter_ms = _number(properties, "log.roll.jitter.ms")
    if (jitter_ms if jitter_ms is not None else _HOUR_MS * _int_value(properties, "log.roll.jitter.hours")) < 0:
        raise BrokerConfigError("requirement failed: log.roll.jitter.ms must be greater than or equal to 0")
    if _number(properties, "log.retention.ms") == 0:  # negative values mean unlimited (-1)
        raise BrokerConfigError("requirement failed: log.retention.ms must be unlimited (-1) or, greater than or equal to 1")
    threads = _int_value(properties, "log.cleaner.threads")
    if threads == 0:
        raise BrokerConfigError("/ by zero")
    dedupe = _int_value(properties, "log.cleaner.dedupe.buffer.size")
    per_thread = abs(dedupe) // abs(threads) * (1 if (dedupe < 0) == (threads < 0) else -1)  # Java's division: toward 0
    if per_thread <= _MIB:
        raise BrokerConfigError("requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.")
    try:
        check_listeners(current if current is not None else properties, properties)
        check_inter_broker_sasl(current if current is not None else properties, properties)
    except ListenerConfigError as error:
        raise BrokerConfigError(error.message) from None
    if _int_value(properties, "max.connections.per.ip") == 0 and not ip_overrides:
        raise BrokerConfigError("requirement failed: max.connections.per.ip can be set to zero only if "
                                "max.connections.per.ip.overrides property is set.")
    invalid = [address for address in scala_hashmap_order(list(ip_overrides)) if not _VALID_HOST.fullmatch(address)]
    if invalid:
        raise BrokerConfigError(f"max.connections.per.ip.overrides contains invalid addresses : {','.join(invalid)}")


_VALID_HOST = re.compile(r"[0-9a-zA-Z\-%._:]*")  # Utils.VALID_HOST_CHARACTERS


def connections_per_ip_overrides(raw: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides`` as KafkaConfig reads it (Csv.parseCsvMap, then each count's toInt), with
    the exceptions Kafka's broker answers: a pair without ``:`` fails String.substring, a count Integer.parseInt."""
    try:
        pairs = parse_csv_map("max.connections.per.ip.overrides", raw)
    except ConfigValueError as error:
        raise BrokerConfigError(error.message) from None
    counts: dict[str, int] = {}
    for address in java_hash_map_order(pairs, java_string_hash):
        try:
            count = parse_type("max.connections.per.ip.overrides", pairs[address], ConfigType.INT)
        except ConfigValueError:
            raise BrokerConfigError(f'For input string: "{pairs[address]}"') from None
        assert isinstance(count, int)
        counts[address] = count
    return counts


def validate_reconfiguration(current: Mapping[str, str], proposed: Mapping[str, str]) -> None:
    """The new effective configs' own checks (``validate_config_values``), then the reconfigurable components' checks
    against the current ones (DynamicBrokerConfig.processReconfiguration wraps their ConfigException as Kafka
    prints it): each listener's own reconfigurables (its overrides parsed, its connection quotas and network threads;
    SocketServer registers them first, when it is built), the metric reporters' classes, the thread pools, the log
    cleaner (registered last, when the broker's metadata is published), then the listeners (a KRaft broker's
    advertised endpoints never change)."""
    validate_config_values(proposed, current)
    try:
        check_listener_reconfigurables(current, proposed)
    except ListenerConfigError as error:
        raise _invalid_dynamic(error.message) from None
    changed = [name for name, value in proposed.items() if current.get(name) != value]
    if "metric.reporters" in changed:  # DynamicMetricsReporters loads every class named
        reporters = parse_type("metric.reporters", str(proposed["metric.reporters"]), ConfigType.LIST)
        assert isinstance(reporters, list)
        if any(reporter not in LOADABLE_METRICS_REPORTERS for reporter in reporters):
            raise _invalid_dynamic(f"Validation of dynamic config update of Set({', '.join(scala_hashmap_order(changed))}) "
                                   "failed with class class kafka.server.DynamicMetricsReporters")
    for name in THREAD_POOL_KEYS:
        old, new = _int_value(current, name), _int_value(proposed, name)
        if new == old:
            continue
        failed = f"Dynamic thread count update validation failed for {name}={new}"
        if new <= 0:
            reason = f"{failed}, value should be at least 1"
        elif new < old // 2:
            reason = f"{failed}, value should be at least half the current value {old}"
        elif new > old * 2:
            reason = f"{failed}, value should not be greater than double the current value {old}"
        else:
            continue
        raise _invalid_dynamic(reason)
    old_threads, new_threads = _int_value(current, "log.cleaner.threads"), _int_value(proposed, "log.cleaner.threads")
    if new_threads != old_threads:  # LogCleaner.validateReconfiguration
        if new_threads < 1:
            raise _invalid_dynamic("Log cleaner threads should be at least 1")
        if new_threads < old_threads // 2:
            raise _invalid_dynamic(f"Log cleaner threads cannot be reduced to less than half the current value {old_threads}")
        if new_threads > old_threads * 2:
            raise _invalid_dynamic(f"Log cleaner threads cannot be increased to more than double the current value {old_threads}")
    try:  # DynamicListenerConfig, the next reconfigurable to validate
        check_listener_reconfiguration(current, proposed)
    except ListenerConfigError as error:
        raise _invalid_dynamic(error.message) from None


def _invalid_dynamic(reason: str) -> BrokerConfigError:
    return BrokerConfigError(f"Invalid value org.apache.kafka.common.config.ConfigException: {reason} "
                             "for configuration Invalid dynamic configuration")


def _number(properties: Mapping[str, str], name: str) -> int | None:
    raw = properties.get(name)
    if raw is None or not str(raw).strip():
        return None
    try:
        return int(str(raw).strip())
    except ValueError:
        return None


def _int_value(properties: Mapping[str, str], name: str) -> int:
    raw = properties.get(name, BROKER_CONFIGS[name].default)
    try:
        return int(str(raw).strip())
    except ValueError:
        return int(BROKER_CONFIGS[name].default or 0)


class DynamicBrokerConfigs:
    """This broker's dynamic configs and the cluster-wide defaults, over the static server.properties."""

    def __init__(self, static: Mapping[str, str], node_id: int, data_dir: Path | None = None) -> None:
        self.static = dict(static)
        self.node_id = node_id
        self.per_broker: dict[str, str] = {}
        self.cluster_default: dict[str, str] = {}
        self._file = data_dir / BROKER_CONFIGS_FILE if data_dir is not None else None
        self.loggers = BrokerLoggers()  # KIP-412 levels, not kept across restarts (as in Kafka)
        self.client_metrics: dict[str, dict[str, str]] = {}  # KIP-714 subscriptions by name

    def effective_with(self, per_broker: bool, configs: Mapping[str, str]) -> dict[str, str]:
        """The effective properties if the resource's dynamic configs became ``configs``."""
        if per_broker:
            return override_properties(self.static, self.cluster_default, configs)
        return override_properties(self.static, configs, self.per_broker)

    def configs_of(self, per_broker: bool) -> dict[str, str]:
        return dict(self.per_broker if per_broker else self.cluster_default)

    def effective_properties(self) -> dict[str, str]:
        """server.properties overridden by the cluster defaults, then by this broker's own dynamic configs."""
        return override_properties(self.static, self.cluster_default, self.per_broker)

    def replace(self, per_broker: bool, configs: Mapping[str, str]) -> None:
        """Store a resource's complete set of dynamic configs (already validated)."""
        if per_broker:
            self.per_broker = dict(configs)
        else:
            self.cluster_default = dict(configs)
        self._save()

    def replace_client_metrics(self, name: str, configs: Mapping[str, str]) -> None:
        """Store a client metrics subscription's complete configs (already validated); empty ones are forgotten."""
        if configs:
            self.client_metrics[name] = dict(configs)
        else:
            self.client_metrics.pop(name, None)
        self._save()

    def load(self) -> None:
        if self._file is None or not self._file.exists():
            return
        try:
            document = json.loads(self._file.read_text(encoding="utf-8"))
            if document.get("version") != _FILE_VERSION:
                raise ValueError(f"version {document.get('version')!r}, expected {_FILE_VERSION}")
            self.per_broker = {str(k): str(v) for k, v in document["broker"].items()}
            self.cluster_default = {str(k): str(v) for k, v in document["cluster_default"].items()}
            self.client_metrics = {str(name): {str(k): str(v) for k, v in configs.items()}
                                   for name, configs in document.get("client_metrics", {}).items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"cannot read {self._file}: {exc}; fix or remove the file") from None

    def _save(self) -> None:
        if self._file is None:
            return
        document = {"version": _FILE_VERSION, "broker": self.per_broker, "cluster_default": self.cluster_default,
                    "client_metrics": self.client_metrics}
        tmp = self._file.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=1)
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(self._file)
