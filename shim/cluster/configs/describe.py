"""A topic's configs as DescribeConfigs reports them: effective value, source, synonyms, sensitivity.

Mirrors Kafka 3.9's ``ConfigHelper.createTopicConfigEntry``: the value is the topic's effective one (override, else
the broker's, else Kafka's default). The synonyms are the topic override (TOPIC_CONFIG), then the broker keys behind
it as server.properties sets them (STATIC_BROKER_CONFIG), then as KafkaConfig defaults them (DEFAULT_CONFIG, only
keys with a non-null default); like Kafka, the broker part is dropped up to the first entry named after the topic
key's primary broker synonym, so e.g. ``retention.ms`` with only ``log.retention.hours`` set reports DEFAULT_CONFIG
and no broker synonyms. The source is the first synonym's, DEFAULT_CONFIG when there is none.
With dynamic broker configs (KIP-226), the broker part lists this broker's dynamic keys (DYNAMIC_BROKER_CONFIG),
then the cluster-wide ones (DYNAMIC_DEFAULT_BROKER_CONFIG), then the static and default ones, as Kafka's
ConfigHelper.configSynonyms does; the value is computed from all of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kafka_shim.shim.cluster.configs.broker_configs import override_properties
from kafka_shim.shim.cluster.configs.definition import ConfigSource, ConfigType, to_config_string
from kafka_shim.shim.cluster.configs.topic_configs import (
    BROKER_LOG_CONFIGS,
    CURRENT_TOPIC_CONFIGS,
    TOPIC_CONFIGS,
    TopicConfigSet,
    broker_log_defaults,
    parse_topic_configs,
)


@dataclass(frozen=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True)
class DescribedConfig:
    name: str
    value: str | None  # None for a sensitive key
    source: ConfigSource
    config_type: ConfigType
    is_sensitive: bool
    read_only: bool = False  # no topic key is read-only
    synonyms: list[ConfigSynonym] = field(default_factory=list)


def describe_topic_configs(overrides: Mapping[str, str], broker_properties: Mapping[str, str], *,
                           dynamic_broker: Mapping[str, str] | None = None,
                           dynamic_default: Mapping[str, str] | None = None,
                           config_set: TopicConfigSet = CURRENT_TOPIC_CONFIGS) -> list[DescribedConfig]:
    """Every topic key of the release in LogConfig's order. ``overrides`` are the topic's stored (already validated)
    configs; ``broker_properties`` are server.properties, ``dynamic_*`` the broker's dynamic configs (KIP-226)."""
    dynamic = [(dynamic_broker or {}, ConfigSource.DYNAMIC_BROKER_CONFIG),
               (dynamic_default or {}, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]
    effective = override_properties(broker_properties, dynamic_default or {}, dynamic_broker or {})
    values = parse_topic_configs(overrides, broker_log_defaults(effective))
    if "message.format.version" not in overrides:
        values["message.format.version"] = config_set.message_format_version
    described = []
    for name in config_set.names:
        key = TOPIC_CONFIGS[name]
        sensitive = key.type.sensitive
        shown = None if sensitive else to_config_string(values[name], key.type)
        synonyms = _broker_synonyms(name, [*dynamic, (broker_properties, ConfigSource.STATIC_BROKER_CONFIG)], sensitive,
                                    config_set.broker_defaults())
        if name in overrides:
            synonyms.insert(0, ConfigSynonym(name, shown, ConfigSource.TOPIC_CONFIG))
        source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
        described.append(DescribedConfig(name, shown, source, key.type, sensitive, synonyms=synonyms))
    return described


def _broker_synonyms(topic_key: str, sources: list[tuple[Mapping[str, str], ConfigSource]],
                     sensitive: bool, release_defaults: Mapping[str, str]) -> list[ConfigSynonym]:
    names = [synonym.name for synonym in TOPIC_CONFIGS[topic_key].synonyms]
    if not names:
        return []
    found = [
        ConfigSynonym(name, None if sensitive else properties[name], source)
        for properties, source in sources
        for name in names
        if name in properties
    ]
    for name in names:
        key = BROKER_LOG_CONFIGS[name]
        if name in release_defaults:
            found.append(ConfigSynonym(name, release_defaults[name], ConfigSource.DEFAULT_CONFIG))
        elif key.default is not None:
            found.append(ConfigSynonym(name, None if sensitive else to_config_string(key.default, key.type), ConfigSource.DEFAULT_CONFIG))
    primary = names[0]
    while found and found[0].name != primary:  # Kafka's dropWhile(_.name != name)
        found.pop(0)
    return found
