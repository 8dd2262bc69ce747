"""kafka-shim's broker config table, its BROKER DescribeConfigs entries and its dynamic-config checks against
Kafka 3.9's own code.

``kafkashim.oracle.BrokerConfigProbe`` (tests/oracle) prints KafkaConfig's definitions with DynamicBrokerConfig's
update modes and synonyms, builds the DescribeConfigs result ConfigHelper answers for a BROKER resource (with
static, dynamic per-broker and dynamic default configs), and runs DynamicBrokerConfig.validate, in a JVM with no
broker; each test compares every line with what ``shim/cluster/configs`` answers for the same input.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping

import pytest

from kafka_shim.shim.cluster.configs.broker_configs import BROKER_CONFIGS, synonyms_of
from kafka_shim.shim.cluster.configs.broker_describe import describe_broker_configs
from kafka_shim.shim.cluster.configs.dynamic_broker import BrokerConfigError, validate_dynamic_broker_configs
from tests.support.peers import REAL_KAFKA

RS, US, GS, NULL = "\x1e", "\x1f", "\x1d", "\x00"

# What the probe's KafkaConfig always carries (Kafka needs them to start); kafka-shim is given the same.
BASE = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.quorum.voters": "1@127.0.0.1:9093",
    "controller.listener.names": "CONTROLLER",
    "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
}


def _probe(mode: str, cases: list[list[str]] | None = None) -> list[str]:
    stdin = "".join(RS.join(case) + "\n" for case in cases or [])
    proc = subprocess.run(
        [sys.executable, str(REAL_KAFKA), "run", "kafkashim.oracle.BrokerConfigProbe", mode],
        input=stdin, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.splitlines()


def _section(entries: Mapping[str, str | None]) -> str:
    return US.join(f"{k}{GS}{NULL if v is None else v}" for k, v in entries.items())


def _shown(value: str | None) -> str:
    return NULL if value is None else value.replace("\t", " ").replace("\n", " ")


_KEPT_VALIDATORS = ("Range", "ValidString", "ValidList", "")  # "": the gzip level's anonymous class


def test_every_broker_key_type_default_mode_synonym_and_validator_matches_kafka() -> None:
    ours = [
        f"{key.name}\t{key.type.name}\t{_shown(key.default)}\t{key.mode}\t{str(key.internal).lower()}\t{US.join(synonyms_of(key.name))}"
        f"\t{'' if key.validator is None else key.validator}"
        for key in BROKER_CONFIGS.values()
    ]
    kafka = []
    for line in _probe("defs"):
        head, _, validator = line.rpartition("\t")
        kind, _, text = validator.partition(" ")
        kafka.append(f"{head}\t{text if validator and kind in _KEPT_VALIDATORS else ''}")
    assert kafka == ours


STATIC = [
    {},
    {"log.retention.hours": "24", "message.max.bytes": " 2000", "log.cleanup.policy": "compact, delete",
     "num.io.threads": "4", "auto.create.topics.enable": "false", "some.unknown.key": "x",
     "listener.name.plaintext.sasl.jaas.config": "secret", "ssl.keystore.password": "pw", "log.dirs": "/tmp/x"},
    {"log.retention.ms": "5000", "log.roll.hours": "3", "compression.type": "zstd", "log.flush.interval.ms": "9"},
]
DYNAMIC = [
    ({}, {}),
    ({"log.cleaner.threads": "2", "message.max.bytes": "3000"}, {"message.max.bytes": "4000", "log.retention.ms": "100"}),
    ({"listener.name.plaintext.ssl.keystore.location": "/k", "log.roll.ms": "7"}, {"log.segment.bytes": "20000"}),
]


@pytest.mark.parametrize("name", ["1", ""], ids=["this broker", "cluster default"])
def test_broker_describe_entries_match_kafkas_config_helper(name: str) -> None:
    cases = [(static, per_broker, default) for static in STATIC for per_broker, default in DYNAMIC]
    lines = _probe("describe", [[_section(BASE | s), _section(p), _section(d), name, ""] for s, p, d in cases])
    kafka: list[list[str]] = [[]]
    for line in lines:
        if line == "END":
            kafka.append([])
        elif not line.startswith("RESULT"):
            kafka[-1].append(line)
    for (static, per_broker, default), expected in zip(cases, kafka[:-1], strict=True):
        ours = []
        for entry in describe_broker_configs(BASE | static, per_broker, default, per_broker=bool(name)):
            synonyms = US.join(f"{s.name}|{_shown(s.value)}|{int(s.source)}" for s in entry.synonyms)
            ours.append(f"{entry.name}\t{_shown(entry.value)}\t{int(entry.source)}\t{str(entry.is_sensitive).lower()}"
                        f"\t{str(entry.read_only).lower()}\t{int(entry.config_type)}\t{synonyms}")
        assert ours == expected, (static, per_broker, default)


def test_dynamic_validation_answers_as_kafka() -> None:
    cases = [
        ({"message.max.bytes": "2000"}, True), ({"message.max.bytes": "abc"}, True), ({"num.partitions": "3"}, True),
        ({"num.partitions": "3"}, False), ({"ssl.keystore.location": "/k"}, True), ({"listeners": "PLAINTEXT://:1"}, False),
        ({"listener.name.plaintext.ssl.keystore.location": "/k"}, False), ({"log.retention.ms": "-5"}, False),
        ({"log.segment.bytes": "10"}, False), ({"log.cleanup.policy": "compact,nope"}, True), ({"unknown.key": "1"}, True),
        ({"log.message.timestamp.type": "Bad"}, False), ({"num.io.threads": "x"}, False), ({"log.cleaner.threads": "2"}, False),
        ({"num.io.threads": "0"}, False), ({"compression.gzip.level": "0"}, False), ({"log.cleaner.io.buffer.load.factor": "x"}, False),
        ({"max.connections": "-1"}, False), ({"log.cleanup.policy": ""}, True), ({"compression.type": "GZIP"}, True),
        ({"message.max.bytes": "zstd", "log.cleanup.policy": "2", "num.io.threads": "x", "log.segment.bytes": "1"}, True),
        ({"log.retention.ms": "x", "compression.type": "y", "min.insync.replicas": "0", "background.threads": "z"}, True),
    ]
    kafka = _probe("validate", [[_section(BASE), _section(props), str(per_broker).lower()] for props, per_broker in cases])
    ours = []
    for props, per_broker in cases:
        try:
            validate_dynamic_broker_configs(props, per_broker)
            ours.append("OK")
        except BrokerConfigError as error:
            ours.append("ERR\t" + _shown(error.message))
    kafka = [line if line == "OK" else "ERR\t" + line.split("\t", 2)[2] for line in kafka]
    mismatches = [(case, k, o) for case, k, o in zip(cases, kafka, ours, strict=True) if k != o]
    assert not mismatches, "\n".join(map(str, mismatches))
