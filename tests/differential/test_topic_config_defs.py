"""kafka-shim's topic config table, validation and DescribeConfigs entries against Kafka 3.9's own code.

``kafkashim.oracle.TopicConfigProbe`` (tests/oracle) prints LogConfig's definitions, runs the controller's
``ControllerConfigurationValidator`` and ConfigHelper's ``createTopicConfigEntry`` in a JVM, no broker needed;
each test compares every line with what ``shim/cluster/configs`` answers for the same input.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping

from kafka_shim.shim.cluster.configs.definition import ConfigValueError, to_config_string
from kafka_shim.shim.cluster.configs.describe import describe_topic_configs
from kafka_shim.shim.cluster.configs.topic_configs import BROKER_LOG_CONFIGS, TOPIC_CONFIGS, validate_topic_configs
from tests.support.peers import REAL_KAFKA

RS, US, GS, NULL = "\x1e", "\x1f", "\x1d", "\x00"


def _probe(mode: str, cases: list[list[Mapping[str, str | None]]] | None = None) -> list[str]:
    stdin = "".join(RS.join(_section(s) for s in case) + "\n" for case in cases or [])
    proc = subprocess.run(
        [sys.executable, str(REAL_KAFKA), "run", "kafkashim.oracle.TopicConfigProbe", mode],
        input=stdin, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.splitlines()


def _section(entries: Mapping[str, str | None]) -> str:
    return US.join(f"{k}{GS}{NULL if v is None else v}" for k, v in entries.items())


def _shown(value: str | None) -> str:
    return NULL if value is None else value.replace("\t", " ").replace("\n", " ")


def test_every_name_type_default_validator_and_synonym_matches_kafka() -> None:
    ours = []
    brokers = []
    for key in TOPIC_CONFIGS.values():
        synonyms = US.join(s.name for s in key.synonyms)
        validator = "" if key.validator is None else str(key.validator)
        ours.append(f"topic\t{key.name}\t{key.type.name}\t{_shown(to_config_string(key.default, key.type))}\t{validator}\t{synonyms}")
        for synonym in key.synonyms:
            broker = BROKER_LOG_CONFIGS[synonym.name]
            validator = "" if broker.validator is None else str(broker.validator)
            brokers.append(f"broker\t{broker.name}\t{broker.type.name}\t{_shown(to_config_string(broker.default, broker.type))}\t{validator}")
    assert _probe("defs") == ours + brokers


BROKERS: list[dict[str, str]] = [
    {},
    {"log.retention.hours": "24", "log.segment.bytes": "2048", "log.cleanup.policy": "compact"},
    {"log.retention.ms": "5000", "log.retention.minutes": "3", "log.roll.ms": "100", "log.flush.interval.ms": "9"},
    {"log.retention.minutes": "-3", "log.cleaner.max.compaction.lag.ms": "50", "compression.type": "zstd"},
    {"log.message.timestamp.difference.max.ms": "1000", "log.message.format.version": "2.8", "message.max.bytes": "10"},
    {"remote.log.storage.system.enable": "true", "log.local.retention.ms": "100"},
]

TOPICS: list[dict[str, str | None]] = [
    {},
    {"retention.ms": "100", "cleanup.policy": " compact , delete ", "preallocate": "TRUE"},
    {"min.cleanable.dirty.ratio": ".25", "segment.bytes": " 4096 ", "message.timestamp.type": "LogAppendTime"},
    {"leader.replication.throttled.replicas": "0:1, 1:2", "follower.replication.throttled.replicas": "*"},
    {"message.format.version": "2.8.0", "compression.gzip.level": "9", "max.compaction.lag.ms": "100"},
    {"min.cleanable.dirty.ratio": "1e-5", "retention.bytes": "-100", "local.retention.ms": "10"},
]


def _our_validation(broker: Mapping[str, str], existing: Mapping[str, str], configs: Mapping[str, str | None]) -> str:
    try:
        validate_topic_configs(configs, broker, existing)
    except ConfigValueError as error:
        return "ERR\t" + _shown(error.message)
    return "OK"


def test_validation_answers_as_kafkas_controller() -> None:
    bad = [
        {"preallocate": "yes"}, {"preallocate": " false "}, {"segment.bytes": "13"}, {"segment.bytes": "2147483648"},
        {"segment.bytes": "1e3"}, {"segment.ms": "0"}, {"retention.ms": "-2"}, {"retention.ms": "+7"},
        {"retention.ms": "1_000"}, {"retention.ms": "٣"}, {"retention.ms": "9223372036854775808"},
        {"min.cleanable.dirty.ratio": "1.5"}, {"min.cleanable.dirty.ratio": "-1e10"}, {"min.cleanable.dirty.ratio": "NaN"},
        {"min.cleanable.dirty.ratio": "0x1p-2"}, {"min.cleanable.dirty.ratio": "1d"}, {"min.cleanable.dirty.ratio": "inf"},
        {"min.cleanable.dirty.ratio": "-0.000012"}, {"min.cleanable.dirty.ratio": "12345678.9"},
        {"cleanup.policy": "compact,purge"}, {"cleanup.policy": "compact,"}, {"cleanup.policy": ""},
        {"compression.type": "GZIP"}, {"compression.gzip.level": "0"}, {"compression.gzip.level": "-1"},
        {"compression.zstd.level": "23"}, {"compression.lz4.level": "0"}, {"message.timestamp.type": "createtime"},
        {"message.format.version": "2.9"}, {"message.format.version": "4.0"}, {"message.format.version": "3.9"},
        {"message.format.version": "0.10.0"}, {"message.format.version": "3."}, {"message.format.version": "4.0-IV1"},
        {"leader.replication.throttled.replicas": "0:1, x"}, {"leader.replication.throttled.replicas": "*,*"},
        {"follower.replication.throttled.replicas": "0:1,,2:3"}, {"local.retention.bytes": "-3"},
        {"retention.hours": "1"}, {"retention.ms": None, "segment.ms": None}, {"retention.ms": "x", "segment.bytes": "y"},
        {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, {"min.compaction.lag.ms": "60"},
        {"remote.storage.enable": "true"}, {"remote.storage.enable": "true", "cleanup.policy": "compact"},
        {"remote.storage.enable": "true", "retention.bytes": "100", "local.retention.bytes": "200"},
        {"remote.storage.enable": "true", "retention.ms": "100", "local.retention.ms": "-1"},
        {"remote.storage.enable": "true", "retention.ms": "50"},
        {"remote.storage.enable": "true", "remote.log.copy.disable": "true", "local.retention.ms": "5"},
        {"remote.storage.enable": "false"}, {"remote.storage.enable": "false", "remote.log.delete.on.disable": "true"},
    ]
    cases = [(broker, {}, topic) for broker in BROKERS for topic in TOPICS + bad]
    cases += [(broker, {"remote.storage.enable": "true"}, topic) for broker in BROKERS[:1] for topic in bad[-2:]]
    kafka = _probe("validate", [list(case) for case in cases])
    ours = [_our_validation(*case) for case in cases]
    # Kafka prints the exception class too; kafka-shim answers INVALID_CONFIG for both kinds Kafka maps to it.
    kafka = [line if line == "OK" else "ERR\t" + line.split("\t", 2)[2] for line in kafka]
    mismatches = [(case, k, o) for case, k, o in zip(cases, kafka, ours, strict=True) if k != o]
    assert not mismatches, "\n".join(map(str, mismatches[:20]))


def test_describe_entries_match_kafkas_config_helper() -> None:
    cases = [(broker, topic) for broker in BROKERS for topic in TOPICS if None not in topic.values()]
    kafka_lines = _probe("describe", [list(case) for case in cases])
    kafka: list[dict[str, str]] = [{}]
    for line in kafka_lines:
        if line == "END":
            kafka.append({})
        else:
            kafka[-1][line.split("\t", 1)[0]] = line
    for (broker, overrides), expected in zip(cases, kafka[:-1], strict=True):
        ours = {}
        for entry in describe_topic_configs(overrides, broker):  # type: ignore[arg-type]
            synonyms = US.join(f"{s.name}|{_shown(s.value)}|{int(s.source)}" for s in entry.synonyms)
            ours[entry.name] = (
                f"{entry.name}\t{_shown(entry.value)}\t{int(entry.source)}\t{str(entry.is_sensitive).lower()}"
                f"\t{int(entry.config_type)}\t{synonyms}"
            )
        assert ours == expected, (broker, overrides)
