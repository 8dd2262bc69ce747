"""DescribeConfigs for a topic: effective values, their sources and synonyms, as Kafka 3.9's ConfigHelper gives them."""

from __future__ import annotations

import pytest

from kafka_shim.shim.cluster.configs.definition import ConfigSource, ConfigType
from kafka_shim.shim.cluster.configs.describe import ConfigSynonym, DescribedConfig, describe_topic_configs
from kafka_shim.shim.cluster.configs.topic_configs import TOPIC_CONFIGS, ConfigKey, TopicConfigSet

S = ConfigSource


def _by_name(overrides: dict[str, str], broker: dict[str, str]) -> dict[str, DescribedConfig]:
    keys = TopicConfigSet(tuple(TOPIC_CONFIGS))  # the table as the test left it (a made-up key included)
    return {entry.name: entry for entry in describe_topic_configs(overrides, broker, config_set=keys)}


def _synonyms(entry: DescribedConfig) -> list[tuple[str, str | None, ConfigSource]]:
    return [(s.name, s.value, s.source) for s in entry.synonyms]


def test_every_topic_key_is_described_in_kafkas_order() -> None:
    described = describe_topic_configs({}, {})
    assert [entry.name for entry in described] == list(TOPIC_CONFIGS)
    assert not any(entry.is_sensitive or entry.read_only for entry in described)


def test_a_default_names_the_broker_default_behind_it() -> None:
    entry = _by_name({}, {})["segment.bytes"]
    assert (entry.value, entry.source, entry.config_type) == ("1073741824", S.DEFAULT_CONFIG, ConfigType.INT)
    assert _synonyms(entry) == [("log.segment.bytes", "1073741824", S.DEFAULT_CONFIG)]


def test_a_topic_override_comes_first_then_the_broker_keys() -> None:
    entry = _by_name({"segment.bytes": " 2048 "}, {"log.segment.bytes": "4096"})["segment.bytes"]
    assert (entry.value, entry.source) == ("2048", S.TOPIC_CONFIG)
    assert _synonyms(entry) == [
        ("segment.bytes", "2048", S.TOPIC_CONFIG),
        ("log.segment.bytes", "4096", S.STATIC_BROKER_CONFIG),
        ("log.segment.bytes", "1073741824", S.DEFAULT_CONFIG),
    ]


def test_a_static_broker_value_is_the_source_when_no_override() -> None:
    entry = _by_name({}, {"log.cleanup.policy": "compact"})["cleanup.policy"]
    assert (entry.value, entry.source) == ("compact", S.STATIC_BROKER_CONFIG)
    assert _synonyms(entry) == [
        ("log.cleanup.policy", "compact", S.STATIC_BROKER_CONFIG),
        ("log.cleanup.policy", "delete", S.DEFAULT_CONFIG),
    ]


def test_values_are_shown_normalized() -> None:
    described = _by_name({"cleanup.policy": " compact , delete ", "preallocate": "TRUE", "min.cleanable.dirty.ratio": ".25"}, {})
    assert described["cleanup.policy"].value == "compact,delete"
    assert described["preallocate"].value == "true"
    assert described["min.cleanable.dirty.ratio"].value == "0.25"
    assert described["cleanup.policy"].synonyms[0] == ConfigSynonym("cleanup.policy", "compact,delete", S.TOPIC_CONFIG)


def test_retention_ms_lists_its_broker_synonyms_in_kafkas_order() -> None:
    entry = _by_name({}, {"log.retention.ms": "5000", "log.retention.hours": "2"})["retention.ms"]
    assert (entry.value, entry.source) == ("5000", S.STATIC_BROKER_CONFIG)
    assert _synonyms(entry) == [
        ("log.retention.ms", "5000", S.STATIC_BROKER_CONFIG),
        ("log.retention.hours", "2", S.STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", S.DEFAULT_CONFIG),
    ]


def test_without_the_primary_broker_key_kafka_reports_no_broker_synonyms() -> None:
    # Kafka drops synonyms up to the first one named log.retention.ms: with only log.retention.hours set, the value
    # is the broker's but the source is DEFAULT_CONFIG and the list is empty. Same for segment.ms / log.roll.hours.
    described = _by_name({}, {"log.retention.hours": "24", "log.roll.hours": "1"})
    assert (described["retention.ms"].value, described["retention.ms"].source) == ("86400000", S.DEFAULT_CONFIG)
    assert described["retention.ms"].synonyms == []
    assert (described["segment.ms"].value, described["segment.ms"].source) == ("3600000", S.DEFAULT_CONFIG)
    assert described["segment.ms"].synonyms == []


def test_keys_without_a_broker_synonym() -> None:
    described = _by_name({"remote.storage.enable": "false"}, {})
    assert described["leader.replication.throttled.replicas"].value == ""
    assert described["leader.replication.throttled.replicas"].synonyms == []
    assert _synonyms(described["remote.storage.enable"]) == [("remote.storage.enable", "false", S.TOPIC_CONFIG)]


def test_a_sensitive_key_never_shows_its_value(monkeypatch: pytest.MonkeyPatch) -> None:
    # No 3.9 topic key is a PASSWORD; a made-up one shows how Kafka hides it: value null, is_sensitive, and no
    # value in its synonyms either.
    monkeypatch.setitem(TOPIC_CONFIGS, "secret.key", ConfigKey("secret.key", ConfigType.PASSWORD, None))
    entry = _by_name({"secret.key": "hunter2"}, {})["secret.key"]
    assert (entry.value, entry.is_sensitive, entry.source, entry.config_type) == (None, True, S.TOPIC_CONFIG, ConfigType.PASSWORD)
    assert _synonyms(entry) == [("secret.key", None, S.TOPIC_CONFIG)]
