"""kafka.shim.authorizer.log.file: the authorizer's decisions in their own file, line for line as Kafka's
kafka-authorizer.log, read back by `kafka-shim import authorizer-log`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer

from kafka_shim.authorizer.audit_file import AuditFile
from kafka_shim.shim.config.broker_config import ConfigError
from kafka_shim.shim.testing.handle import KafkaShim
from kafka_shim.shim.testing.options import ShimOptions
from kafka_shim.traces.format import read_trace
from kafka_shim.traces.importers import cli as import_cli

_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (INFO|DEBUG) Principal = .+ \(kafka\.authorizer\.logger\)$")


def _options(path: Path, level: str = "INFO") -> ShimOptions:
    return ShimOptions.from_marker({"listener": "SASL_PLAINTEXT", "acls": [
        {"resource_type": "topic", "resource_name": "open", "principal": "User:alice", "operation": "Write"}],
        "config": {"kafka.shim.authorizer.log.file": str(path), "kafka.shim.authorizer.log.level": level}})


def _produce(shim: KafkaShim, topic: str) -> KafkaError | None:
    reports = []
    producer = Producer(shim.confluent_config("alice") | {"message.timeout.ms": 30000})
    producer.produce(topic, b"v", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(60)
    assert len(reports) == 1
    return reports[0]


def test_denials_are_written_in_kafkas_layout_and_import_back(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "kafka-authorizer.log"
    with KafkaShim(_options(log)) as shim:
        shim.create_topics({"open": 1, "closed": 1})
        assert _produce(shim, "open") is None
        error = _produce(shim, "closed")
        assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    lines = log.read_text().splitlines()
    assert lines and all(_LINE.match(line) for line in lines), lines
    assert all(" INFO " in line for line in lines)  # INFO: denials only, as Kafka ships it
    # librdkafka asks Metadata first and never sends the Produce: the denial is DESCRIBE on the topic.
    assert any("Principal = User:alice is Denied operation = DESCRIBE from host = 127.0.0.1 on resource = Topic:LITERAL:closed "
               "for request = Metadata with resourceRefCount = 1 based on rule DefaultDeny (kafka.authorizer.logger)" in line
               for line in lines)
    out = tmp_path / "trace"
    assert import_cli.main(["authorizer-log", str(log), "--out", str(out), "--quiet"]) == 0
    rows = [r for r in read_trace(out).to_pylist() if r["kind"] == "authorization"]
    assert len(rows) == len(lines)
    assert {(d["operation"], d["resource_name"], d["allowed"]) for r in rows for d in r["decisions"]} >= {("DESCRIBE", "closed", False)}


def test_debug_adds_the_grants(tmp_path: Path) -> None:
    log = tmp_path / "kafka-authorizer.log"
    with KafkaShim(_options(log, "DEBUG")) as shim:
        shim.create_topic("open")
        assert _produce(shim, "open") is None
    assert any(" DEBUG Principal = User:alice is Allowed operation = WRITE " in line for line in log.read_text().splitlines())


def test_a_log_file_that_cannot_be_written_stops_the_broker_with_the_reason(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="cannot write the authorizer log"):
        KafkaShim(_options(blocker / "kafka-authorizer.log")).start()
    with pytest.raises(ValueError, match="use one of TRACE, DEBUG, INFO"):
        AuditFile(tmp_path / "x.log", "LOUD")
