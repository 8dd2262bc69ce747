"""A broker's configs as DescribeConfigs reports them for a BROKER resource (Kafka 3.9's ConfigHelper).

For this broker's id: every key of server.properties (and of the dynamic configs) plus every non-internal
KafkaConfig key, in the order of the Scala HashMap Kafka iterates. The value is the effective one (this broker's
dynamic config, else the cluster-wide default, else server.properties, else KafkaConfig's default), parsed and
printed as ConfigDef does (a key Kafka does not know has an unknown type and is shown as sensitive). Synonyms are
looked up in the dynamic per-broker, dynamic default, static and default maps, in that order, for each of the key's
synonym names (``log.retention.ms``/``minutes``/``hours``...), then dropped up to the first named after the key.
For the empty name (the cluster-wide defaults): only the keys set there, with only DYNAMIC_DEFAULT_BROKER_CONFIG
synonyms. ``read_only`` is true for keys that cannot change dynamically.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from kafka_shim.shim.cluster.configs.broker_configs import BROKER_CONFIGS, BROKER_QUOTA_CONFIGS, override_properties, synonyms_of
from kafka_shim.shim.cluster.configs.definition import ConfigSource, ConfigType, ConfigValueError, parse_type, to_config_string
from kafka_shim.shim.cluster.configs.describe import ConfigSynonym, DescribedConfig
from kafka_shim.shim.cluster.configs.scala_order import scala_hashmap_order

# KafkaConfig's defaults as DynamicBrokerConfig.staticDefaultConfigs holds them (keys with a non-null default).
STATIC_DEFAULTS = {name: key.default for name, key in BROKER_CONFIGS.items() if key.default is not None}


@lru_cache(maxsize=4096)
def _shown(name: str, raw: str | None) -> str | None:
    """The value as KafkaConfig parses it and ConfigHelper prints it (a STRING as trimmed, others re-printed)."""
    key = BROKER_CONFIGS[name]
    if raw is None:
        return None
    try:
        value = parse_type(name, raw, key.type)
    except ConfigValueError:
        return raw  # refused at start-up or alteration already; shown as given
    if key.type in (ConfigType.STRING, ConfigType.CLASS):
        return str(value)
    return to_config_string(value, key.type)


@lru_cache(maxsize=4096)
def config_type_of(name: str) -> ConfigType:
    """KafkaConfig.configType: the key's own type (a broker quota key's too), else that of its first known synonym
    (listener.name.<l>.ssl.* keys have their base key's type), else unknown."""
    if name in BROKER_QUOTA_CONFIGS:
        return BROKER_QUOTA_CONFIGS[name].type
    for candidate in (name, *synonyms_of(name)):
        if candidate in BROKER_CONFIGS:
            return BROKER_CONFIGS[candidate].type
    return ConfigType.UNKNOWN


def static_broker_configs(properties: Mapping[str, str]) -> dict[str, str]:
    """server.properties as KafkaConfig keeps it (KafkaConfig.populateSynonyms: node.id and broker.id stand for
    each other, so the one not given is added with the other's value)."""
    static = dict(properties)
    if "node.id" in static and "broker.id" not in static:
        static["broker.id"] = static["node.id"]
    elif "broker.id" in static and "node.id" not in static:
        static["node.id"] = static["broker.id"]
    return static


def describe_broker_configs(static: Mapping[str, str], dynamic_broker: Mapping[str, str],
                            dynamic_default: Mapping[str, str], per_broker: bool,
                            release_defaults: Mapping[str, str] | None = None) -> list[DescribedConfig]:
    """The entries of this broker (``per_broker``) or of the cluster-wide default resource. ``release_defaults``: an
    emulated release's own defaults of keys whose default changed with each release (TopicConfigSet.broker_defaults)."""
    static = static_broker_configs(static)
    defaults = {**STATIC_DEFAULTS, **release_defaults} if release_defaults else STATIC_DEFAULTS
    sources = [(dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
               (dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
               (static, ConfigSource.STATIC_BROKER_CONFIG),
               (defaults, ConfigSource.DEFAULT_CONFIG)]
    if per_broker:
        effective = override_properties(static, dynamic_default, dynamic_broker)
        keys = [*effective, *(name for name, key in BROKER_CONFIGS.items() if not key.internal)]
    else:
        effective = dict(dynamic_default)
        keys = list(dynamic_default)
    described = []
    for name in scala_hashmap_order(keys):
        key = BROKER_CONFIGS.get(name)
        kind = config_type_of(name)
        sensitive = kind.sensitive
        if sensitive:
            value = None
        elif not per_broker:
            value = effective[name]  # ConfigHelper passes the stored string as it is
        elif key is None:
            value = effective.get(name)  # a listener-prefixed key: the string as configured
        else:
            value = _shown(name, effective.get(name, defaults.get(name, key.default)))
        names = synonyms_of(name)
        synonyms = [
            ConfigSynonym(synonym, None if sensitive else properties[synonym], source)
            for properties, source in sources
            for synonym in names
            if synonym in properties
        ]
        while synonyms and synonyms[0].name != name:  # Kafka's dropWhile(_.name != name)
            synonyms.pop(0)
        if not per_broker:
            synonyms = [s for s in synonyms if s.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
        source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
        read_only = key is None or not key.dynamic
        described.append(DescribedConfig(name, value, source, kind, sensitive, read_only, synonyms))
    return described
