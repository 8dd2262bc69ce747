"""Every topic config Kafka 3.9 accepts (``LogConfig``), with its type, default, validator and broker synonyms.

The table follows ``LogConfig``'s definition order, which is also the order Kafka parses in, so the first invalid
key reported is the one Kafka reports. ``validate_topic_configs`` is what the KRaft controller runs on CreateTopics,
AlterConfigs and IncrementalAlterConfigs for a TOPIC resource (``ControllerConfigurationValidator`` then
``LogConfig.validate``): unknown names, null values, each value's type and range, and the cross-key checks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kafka_shim.shim.cluster.configs.definition import (
    LONG_MAX,
    ConfigType,
    ConfigValueError,
    Range,
    Validator,
    ValidList,
    ValidString,
    Value,
    java_str,
    parse_and_validate,
    to_config_string,
)
from kafka_shim.shim.javacompat.hash_orders import java_concurrent_hash_map_order, java_hash_map_order
from kafka_shim.shim.javacompat.java_hash import java_string_hash

T = ConfigType
HOUR_MS = 60 * 60 * 1000
MINUTE_MS = 60 * 1000
WEEK_MS = 7 * 24 * HOUR_MS


class GzipLevel:
    """CompressionType.GZIP's level validator: 1..9, or -1 for the codec's default."""

    def ensure_valid(self, name: str, value: Value) -> None:
        assert isinstance(value, int)
        if value > 9 or (value < 1 and value != -1):
            raise ConfigValueError.invalid(name, java_str(value), "Value must be between 1 and 9 or equal to -1")

    def __str__(self) -> str:
        return "[1,...,9] or -1"


# MetadataVersion.VERSIONS in 3.9.0; those up to LATEST_PRODUCTION (3.9-IV0) also answer to their release name.
METADATA_VERSIONS = (
    "0.8.0", "0.8.1", "0.8.2", "0.9.0", "0.10.0-IV0", "0.10.0-IV1", "0.10.1-IV0", "0.10.1-IV1", "0.10.1-IV2",
    "0.10.2-IV0", "0.11.0-IV0", "0.11.0-IV1", "0.11.0-IV2", "1.0-IV0", "1.1-IV0", "2.0-IV0", "2.0-IV1", "2.1-IV0",
    "2.1-IV1", "2.1-IV2", "2.2-IV0", "2.2-IV1", "2.3-IV0", "2.3-IV1", "2.4-IV0", "2.4-IV1", "2.5-IV0", "2.6-IV0",
    "2.7-IV0", "2.7-IV1", "2.7-IV2", "2.8-IV0", "2.8-IV1", "3.0-IV0", "3.0-IV1", "3.1-IV0", "3.2-IV0", "3.3-IV0",
    "3.3-IV1", "3.3-IV2", "3.3-IV3", "3.4-IV0", "3.5-IV0", "3.5-IV1", "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2",
    "3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4", "3.8-IV0", "3.9-IV0", "4.0-IV0", "4.0-IV1",
)
_PRODUCTION = METADATA_VERSIONS[: METADATA_VERSIONS.index("3.9-IV0") + 1]
_VERSION_KEYS = frozenset(METADATA_VERSIONS) | {v.split("-IV")[0] for v in _PRODUCTION}


class MetadataVersionValidator:
    """MetadataVersion.fromVersionString: a version, or its first 2 (3 for 0.x) dot-separated parts, is known."""

    def ensure_valid(self, name: str, value: Value) -> None:
        text = str(value)
        parts = text.split(".")
        while len(parts) > 1 and parts[-1] == "":  # Java's split drops trailing empty strings
            parts.pop()
        wanted = 3 if text.startswith("0.") else 2
        key = text if wanted >= len(parts) else ".".join(parts[:wanted])
        if key not in _VERSION_KEYS:
            raise ConfigValueError.invalid(name, text, f"Version {text} is not a valid version")

    def __str__(self) -> str:
        return "[" + ", ".join(METADATA_VERSIONS) + "]"


_REPLICA = re.compile(r"(?:[0-9]+:[0-9]+)?", re.ASCII)


class ThrottledReplicaList:
    """ThrottledReplicaListValidator: ``*`` or ``partition:broker`` pairs (elements trimmed, empties allowed)."""

    def ensure_valid(self, name: str, value: Value) -> None:
        assert isinstance(value, list)
        proposed = [element.strip(" \t\n\r\x0b\f") for element in value]
        if not (all(_REPLICA.fullmatch(p) for p in proposed) or "".join(proposed) == "*"):
            raise ConfigValueError.invalid(
                name, java_str(value),
                f"{name} must be the literal '*' or a list of replicas in the following format: "
                "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
            )

    def __str__(self) -> str:
        return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."


@dataclass(frozen=True)
class Synonym:
    """A broker key that supplies a topic key's default; ``to_ms`` converts its unit (hours, minutes) to ms."""

    name: str
    to_ms: int = 1


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: ConfigType
    default: Value
    validator: Validator | None = None
    # ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS, Kafka's order; the first is the topic key's
    # "server default property".
    synonyms: tuple[Synonym, ...] = ()

    def parse(self, raw: str) -> Value:
        return parse_and_validate(self.name, raw, self.type, self.validator)


def _key(name: str, kind: ConfigType, default: Value, validator: Validator | None, *synonyms: str | Synonym) -> ConfigKey:
    return ConfigKey(name, kind, default, validator, tuple(s if isinstance(s, Synonym) else Synonym(s) for s in synonyms))


COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

TOPIC_CONFIGS: dict[str, ConfigKey] = {
    key.name: key
    for key in (
        _key("segment.bytes", T.INT, 1024 * 1024 * 1024, Range(14), "log.segment.bytes"),
        _key("segment.ms", T.LONG, WEEK_MS, Range(1), "log.roll.ms", Synonym("log.roll.hours", HOUR_MS)),
        _key("segment.jitter.ms", T.LONG, 0, Range(0), "log.roll.jitter.ms", Synonym("log.roll.jitter.hours", HOUR_MS)),
        _key("segment.index.bytes", T.INT, 10 * 1024 * 1024, Range(4), "log.index.size.max.bytes"),
        _key("flush.messages", T.LONG, LONG_MAX, Range(1), "log.flush.interval.messages"),
        _key("flush.ms", T.LONG, LONG_MAX, Range(0), "log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
        _key("retention.bytes", T.LONG, -1, None, "log.retention.bytes"),
        _key(
            "retention.ms", T.LONG, WEEK_MS, Range(-1),
            "log.retention.ms", Synonym("log.retention.minutes", MINUTE_MS), Synonym("log.retention.hours", HOUR_MS),
        ),
        _key("max.message.bytes", T.INT, 1048588, Range(0), "message.max.bytes"),
        _key("index.interval.bytes", T.INT, 4096, Range(0), "log.index.interval.bytes"),
        _key("delete.retention.ms", T.LONG, 24 * HOUR_MS, Range(0), "log.cleaner.delete.retention.ms"),
        _key("min.compaction.lag.ms", T.LONG, 0, Range(0), "log.cleaner.min.compaction.lag.ms"),
        _key("max.compaction.lag.ms", T.LONG, LONG_MAX, Range(1), "log.cleaner.max.compaction.lag.ms"),
        _key("file.delete.delay.ms", T.LONG, 60000, Range(0), "log.segment.delete.delay.ms"),
        _key("min.cleanable.dirty.ratio", T.DOUBLE, 0.5, Range(0, 1), "log.cleaner.min.cleanable.ratio"),
        _key("cleanup.policy", T.LIST, ["delete"], ValidList(("compact", "delete")), "log.cleanup.policy"),
        _key("unclean.leader.election.enable", T.BOOLEAN, False, None, "unclean.leader.election.enable"),
        _key("min.insync.replicas", T.INT, 1, Range(1), "min.insync.replicas"),
        _key("compression.type", T.STRING, "producer", ValidString(COMPRESSION_TYPES), "compression.type"),
        _key("compression.gzip.level", T.INT, -1, GzipLevel(), "compression.gzip.level"),
        _key("compression.lz4.level", T.INT, 9, Range(1, 17), "compression.lz4.level"),
        _key("compression.zstd.level", T.INT, 3, Range(-131072, 22), "compression.zstd.level"),
        _key("preallocate", T.BOOLEAN, False, None, "log.preallocate"),
        _key("message.format.version", T.STRING, "3.0-IV1", MetadataVersionValidator(), "log.message.format.version"),
        _key(
            "message.timestamp.type", T.STRING, "CreateTime", ValidString(("CreateTime", "LogAppendTime")),
            "log.message.timestamp.type",
        ),
        _key(
            "message.timestamp.difference.max.ms", T.LONG, LONG_MAX, Range(0),
            "log.message.timestamp.difference.max.ms",
        ),
        _key("message.timestamp.before.max.ms", T.LONG, LONG_MAX, Range(0), "log.message.timestamp.before.max.ms"),
        _key("message.timestamp.after.max.ms", T.LONG, LONG_MAX, Range(0), "log.message.timestamp.after.max.ms"),
        _key("leader.replication.throttled.replicas", T.LIST, [], ThrottledReplicaList()),
        _key("follower.replication.throttled.replicas", T.LIST, [], ThrottledReplicaList()),
        _key("message.downconversion.enable", T.BOOLEAN, True, None, "log.message.downconversion.enable"),
        _key("remote.storage.enable", T.BOOLEAN, False, None),
        _key("local.retention.ms", T.LONG, -2, Range(-2), "log.local.retention.ms"),
        _key("local.retention.bytes", T.LONG, -2, Range(-2), "log.local.retention.bytes"),
        _key("remote.log.copy.disable", T.BOOLEAN, False, None),
        _key("remote.log.delete.on.disable", T.BOOLEAN, False, None),
    )
}

# -- the topic keys of older releases (kafka.version) -------------------------------------------------------------------

# (first release line, keys), from LogConfig's public definitions at each release's tag (internal ones are never
# listed); a release has the keys of every entry at or before it. The message.format.version default was the
# release's latest inter-broker protocol before 3.0, and 3.0-IV1 from 3.0 on.
_ADDED_KEYS: tuple[tuple[tuple[int, int], tuple[str, ...]], ...] = (
    ((2, 0), ("message.downconversion.enable",)),  # KIP-283
    ((2, 3), ("max.compaction.lag.ms",)),  # KIP-354
    ((3, 6), ("message.timestamp.before.max.ms", "message.timestamp.after.max.ms",  # KIP-937
              "remote.storage.enable", "local.retention.ms", "local.retention.bytes")),  # KIP-405, public in 3.6
    ((3, 8), ("compression.gzip.level", "compression.lz4.level", "compression.zstd.level")),  # KIP-390
    ((3, 9), ("remote.log.copy.disable", "remote.log.delete.on.disable")),  # KIP-950
)
_TIERED_STORAGE_KEYS = ("remote.storage.enable", "local.retention.ms", "local.retention.bytes")  # KIP-405 (internal 3.0-3.5)
_MESSAGE_FORMAT_DEFAULTS = {
    (0, 11): "0.11.0-IV2", (1, 0): "1.0-IV0", (1, 1): "1.1-IV0", (2, 0): "2.0-IV1", (2, 1): "2.1-IV2", (2, 2): "2.2-IV1",
    (2, 3): "2.3-IV1", (2, 4): "2.4-IV1", (2, 5): "2.5-IV0", (2, 6): "2.6-IV0", (2, 7): "2.7-IV2", (2, 8): "2.8-IV1",
}
# The latest inter-broker protocol of each release (ApiVersion / MetadataVersion at its tag), KafkaConfig's default
# of inter.broker.protocol.version; the differential suite judges 2.8 and 3.0.
_LATEST_INTER_BROKER_PROTOCOL = {
    **_MESSAGE_FORMAT_DEFAULTS, (3, 0): "3.0-IV1", (3, 1): "3.1-IV0", (3, 2): "3.2-IV0", (3, 3): "3.3-IV3", (3, 4): "3.4-IV0",
    (3, 5): "3.5-IV2", (3, 6): "3.6-IV2", (3, 7): "3.7-IV4", (3, 8): "3.8-IV0",
}


@dataclass(frozen=True)
class TopicConfigSet:
    """The topic keys one release lists and accepts, in LogConfig's order, and its message.format.version default."""

    names: tuple[str, ...]
    message_format_version: str = "3.0-IV1"
    # the release's latest inter-broker protocol, the default of inter.broker.protocol.version
    inter_broker_protocol_version: str = "3.9-IV0"
    # a ZooKeeper-mode broker (the releases presented as one, before 3.3) lists a new topic's configs in the order of
    # a Scala mutable.HashMap (ZkAdminManager), KRaft's controller by name
    zookeeper: bool = False
    # keys LogConfig defined as internal: accepted, never listed (3.0-3.5's tiered storage keys)
    internal: tuple[str, ...] = ()

    def accepts(self, name: str) -> bool:
        return name in self.names or name in self.internal

    def broker_defaults(self) -> dict[str, str]:
        """The broker keys whose default was the release's own (described on the broker and as topic synonyms)."""
        return {"log.message.format.version": self.message_format_version,
                "inter.broker.protocol.version": self.inter_broker_protocol_version}

    def default_string(self, name: str) -> str | None:
        """A key's own default as Kafka writes it."""
        if name == "message.format.version":
            return self.message_format_version
        key = TOPIC_CONFIGS[name]
        return to_config_string(key.default, key.type)


def topic_config_set(release: tuple[int, int]) -> TopicConfigSet:
    """The topic keys of a release line (``(2, 8)``); Kafka 3.9's for 3.9 and later."""
    missing = {name for since, names in _ADDED_KEYS if release < since for name in names}
    internal = _TIERED_STORAGE_KEYS if (3, 0) <= release < (3, 6) else ()
    return TopicConfigSet(tuple(name for name in TOPIC_CONFIGS if name not in missing),
                          _MESSAGE_FORMAT_DEFAULTS.get(release, "3.0-IV1"), _LATEST_INTER_BROKER_PROTOCOL.get(release, "3.9-IV0"),
                          zookeeper=release < (3, 3), internal=internal)


CURRENT_TOPIC_CONFIGS = topic_config_set((3, 9))

# The broker (KafkaConfig) keys the topic keys fall back to: type, default (None: no default, so the key is
# absent unless server.properties sets it) and validator, as KafkaConfig defines them.
BROKER_LOG_CONFIGS: dict[str, ConfigKey] = {
    key.name: key
    for key in (
        _key("log.segment.bytes", T.INT, 1024 * 1024 * 1024, Range(14)),
        _key("log.roll.ms", T.LONG, None, None),
        _key("log.roll.hours", T.INT, 168, Range(1)),
        _key("log.roll.jitter.ms", T.LONG, None, None),
        _key("log.roll.jitter.hours", T.INT, 0, Range(0)),
        _key("log.index.size.max.bytes", T.INT, 10 * 1024 * 1024, Range(4)),
        _key("log.flush.interval.messages", T.LONG, LONG_MAX, Range(1)),
        _key("log.flush.interval.ms", T.LONG, None, None),
        _key("log.flush.scheduler.interval.ms", T.LONG, LONG_MAX, None),
        _key("log.retention.bytes", T.LONG, -1, None),
        _key("log.retention.ms", T.LONG, None, None),
        _key("log.retention.minutes", T.INT, None, None),
        _key("log.retention.hours", T.INT, 168, None),
        _key("message.max.bytes", T.INT, 1048588, Range(0)),
        _key("log.index.interval.bytes", T.INT, 4096, Range(0)),
        _key("log.cleaner.delete.retention.ms", T.LONG, 24 * HOUR_MS, Range(0)),
        _key("log.cleaner.min.compaction.lag.ms", T.LONG, 0, Range(0)),
        _key("log.cleaner.max.compaction.lag.ms", T.LONG, LONG_MAX, Range(1)),
        _key("log.segment.delete.delay.ms", T.LONG, 60000, Range(0)),
        _key("log.cleaner.min.cleanable.ratio", T.DOUBLE, 0.5, Range(0, 1)),
        _key("log.cleanup.policy", T.LIST, ["delete"], ValidList(("compact", "delete"))),
        _key("unclean.leader.election.enable", T.BOOLEAN, False, None),
        _key("min.insync.replicas", T.INT, 1, Range(1)),
        _key("compression.type", T.STRING, "producer", ValidString(COMPRESSION_TYPES)),
        _key("compression.gzip.level", T.INT, -1, GzipLevel()),
        _key("compression.lz4.level", T.INT, 9, Range(1, 17)),
        _key("compression.zstd.level", T.INT, 3, Range(-131072, 22)),
        _key("log.preallocate", T.BOOLEAN, False, None),
        _key("log.message.format.version", T.STRING, "3.0-IV1", MetadataVersionValidator()),
        _key("log.message.timestamp.type", T.STRING, "CreateTime", ValidString(("CreateTime", "LogAppendTime"))),
        _key("log.message.timestamp.difference.max.ms", T.LONG, LONG_MAX, Range(0)),
        _key("log.message.timestamp.before.max.ms", T.LONG, LONG_MAX, Range(0)),
        _key("log.message.timestamp.after.max.ms", T.LONG, LONG_MAX, Range(0)),
        _key("log.message.downconversion.enable", T.BOOLEAN, True, None),
        _key("log.local.retention.ms", T.LONG, -2, Range(-2)),
        _key("log.local.retention.bytes", T.LONG, -2, Range(-2)),
        _key("remote.log.storage.system.enable", T.BOOLEAN, False, None),
    )
}


def broker_log_defaults(properties: Mapping[str, str]) -> dict[str, Value]:
    """The broker's value for each topic key (KafkaConfig.extractLogConfigMap) from server.properties.

    Raises ConfigValueError for a broker value Kafka would refuse at start-up. Topic keys the broker has no
    synonym for (remote.storage.enable, remote.log.*, the throttled replica lists) are left to their defaults.
    """

    def broker(name: str) -> Value:
        key = BROKER_LOG_CONFIGS[name]
        return key.parse(properties[name]) if name in properties else key.default

    values: dict[str, Value] = {}
    for topic_key in TOPIC_CONFIGS.values():
        for synonym in topic_key.synonyms:
            value = broker(synonym.name)
            if value is not None:  # a null default (log.retention.ms, log.roll.ms...) defers to the next synonym
                values[topic_key.name] = value * synonym.to_ms if synonym.to_ms != 1 else value
                break
    if values["retention.ms"] < 0:  # KafkaConfig.logRetentionTimeMillis: any negative means unlimited
        values["retention.ms"] = -1
    # KRaft's inter-broker protocol is always 3.0 or later, where the broker's log.message.format.version is ignored.
    values["message.format.version"] = "3.0-IV1"
    # While log.message.timestamp.difference.max.ms is deprecated, it stands in for before/after left at their default.
    for bound in ("message.timestamp.before.max.ms", "message.timestamp.after.max.ms"):
        if values[bound] == LONG_MAX:
            values[bound] = values["message.timestamp.difference.max.ms"]
    return values


def remote_storage_system_enabled(properties: Mapping[str, str]) -> bool:
    key = BROKER_LOG_CONFIGS["remote.log.storage.system.enable"]
    return bool(key.parse(properties[key.name])) if key.name in properties else False


def parse_topic_configs(overrides: Mapping[str, str], broker_defaults: Mapping[str, Value]) -> dict[str, Value]:
    """Every topic key's value: the override parsed and validated, else the broker's, else Kafka's default.

    Parses in LogConfig's order, so the error raised is the one Kafka reports first.
    """
    values: dict[str, Value] = {}
    for name, key in TOPIC_CONFIGS.items():
        if name in overrides:
            values[name] = key.parse(overrides[name])
        else:
            values[name] = broker_defaults.get(name, key.default)
    return values


def validate_topic_configs(
    configs: Mapping[str, str | None],
    broker_properties: Mapping[str, str],
    existing: Mapping[str, str] | None = None,
    config_set: TopicConfigSet = CURRENT_TOPIC_CONFIGS,
) -> dict[str, Value]:
    """Checks a topic's complete set of config overrides as Kafka's controller does; returns every effective value.

    ``configs`` is what the topic will hold (for an alteration: the existing overrides, then the keys added: the order
    Kafka fills its HashMap in, which decides the order of colliding keys);
    ``existing`` is what it holds now (only remote.storage.enable's transition looks at it). Raises
    ConfigValueError (INVALID_CONFIG) with Kafka's message.
    """
    # Kafka holds the configs in a HashMap, copies the non-null ones into a Properties (a ConcurrentHashMap) and
    # names the first unknown key that one iterates, so the key named depends on the hashes of all of them.
    in_kafka_order = java_hash_map_order(configs, java_string_hash)
    nulls = [name for name in in_kafka_order if configs[name] is None]  # unreached: CreateTopics refuses them first
    if nulls:
        raise ConfigValueError("Null value not supported for topic configs: " + ",".join(nulls))
    for name in java_concurrent_hash_map_order(in_kafka_order, java_string_hash):
        if not config_set.accepts(name):
            raise ConfigValueError(f"Unknown topic config name: {name}")
    overrides = {name: value for name, value in configs.items() if value is not None}
    values = parse_topic_configs(overrides, broker_log_defaults(broker_properties))
    _check_compaction_lag(values)
    if values["remote.storage.enable"]:
        _check_remote_storage(values, remote_storage_system_enabled(broker_properties))
    else:
        was_enabled = (existing or {}).get("remote.storage.enable", "false").lower() == "true"
        if was_enabled and not values["remote.log.delete.on.disable"]:
            raise ConfigValueError(
                "It is invalid to disable remote storage without deleting remote data. If you want to keep the remote "
                "data and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. If "
                "you want to disable remote storage and delete all remote data, please set "
                "`remote.storage.enable=false,remote.log.delete.on.disable=true`."
            )
    return values


def _check_compaction_lag(values: Mapping[str, Value]) -> None:
    low, high = values["min.compaction.lag.ms"], values["max.compaction.lag.ms"]
    assert isinstance(low, int) and isinstance(high, int)
    if low > high:
        raise ConfigValueError(
            f"conflict topic config setting min.compaction.lag.ms ({low}) > max.compaction.lag.ms ({high})"
        )


def _check_remote_storage(values: Mapping[str, Value], system_enabled: bool) -> None:
    """LogConfig's checks for a topic with remote.storage.enable=true, in Kafka's order."""
    if not system_enabled:
        raise ConfigValueError(
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
        )
    policy = values["cleanup.policy"]
    assert isinstance(policy, list)
    if "compact" in ",".join(policy).lower():
        raise ConfigValueError("Remote log storage is unsupported for the compacted topics")
    _check_local_retention(values, "bytes", unlimited_total=lambda total: total <= -1)
    _check_local_retention(values, "ms", unlimited_total=lambda total: total == -1)
    if values["remote.log.copy.disable"]:
        for unit in ("bytes", "ms"):
            local, total = values[f"local.retention.{unit}"], values[f"retention.{unit}"]
            if local != -2 and local != total:
                raise ConfigValueError(
                    f"When `remote.log.copy.disable` is set to true, the `local.retention.{unit}` and `retention.{unit}` "
                    "must be set to the identical value because there will be no more logs copied to the remote storage."
                )


def _check_local_retention(values: Mapping[str, Value], unit: str, unlimited_total) -> None:
    total, local = values[f"retention.{unit}"], values[f"local.retention.{unit}"]
    assert isinstance(total, int) and isinstance(local, int)
    name = f"local.retention.{unit}"
    if unlimited_total(total) or local == -2:
        return
    if local == -1:
        raise ConfigValueError.invalid(name, str(local), f"Value must not be -1 as retention.{unit} value is set as {total}.")
    if local > total:
        raise ConfigValueError.invalid(name, str(local), f"Value must not be more than retention.{unit} property value: {total}")
