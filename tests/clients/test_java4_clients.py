"""Apache Kafka's 4.x Java clients, upgraded before the broker, against kafka-shim: they must see what they see
against Kafka 3.9.

The peer is tests/java4 (its own Maven project, kafka-clients pinned in its pom; tests/support/java4.py builds and
runs it): admin calls old and new (listGroups by type, describeClassicGroups, listConsumerGroupOffsets for several
groups, describeTopics paged through DescribeTopicPartitions, updateFeatures, Raft voters, share and streams groups,
client metrics and telemetry, ...), idempotent and transactional producers (4.x clients fall back from KIP-890's
transaction version 2 on a 3.9 broker), read_committed consumers, the KIP-848 consumer protocol (which 3.9 refuses
with its defaults), SASL PLAIN and SCRAM logins, and calls the authorizer denies. Each scenario prints one JSON line.

The expected lines are what Kafka 3.9 answered these clients (tests/java4/expected-kafka-3.9.json). The oracle test
below runs the same probe against a real Kafka 3.9 and compares it with that file too, so the file stays Kafka's;
JAVA4_WRITE_EXPECTED=1 makes that test rewrite it (after a kafka-clients bump, say).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.java4 import PROJECT, clients_version, run_probe
from tests.support.peers import start_real_kafka, stop_real_kafka
from tests.support.sasl_setup import listener_address, sasl_properties

pytestmark = pytest.mark.clients

EXPECTED = PROJECT / "expected-kafka-3.9.json"


def _expected() -> dict[str, dict]:
    expected = json.loads(EXPECTED.read_text())
    assert expected["kafka-clients"] == clients_version(), (
        f"{EXPECTED} was written with kafka-clients {expected['kafka-clients']}, the pom has {clients_version()}: "
        "run the oracle test with JAVA4_WRITE_EXPECTED=1")
    return expected["scenarios"]


def _differences(got: dict[str, dict], expected: dict[str, dict]) -> list[str]:
    out = []
    for scenario in sorted(set(got) | set(expected)):
        seen, wanted = got.get(scenario, {}), expected.get(scenario, {})
        for key in sorted(set(seen) | set(wanted)):
            if seen.get(key) != wanted.get(key):
                out.append(f"{scenario}.{key}:\n  Kafka 3.9: {json.dumps(wanted.get(key))}\n  got:       {json.dumps(seen.get(key))}")
    return out


@pytest.fixture(scope="module")
def shim_like_kafka() -> Iterator[EmbeddedBroker]:
    """kafka-shim configured as scripts/real-kafka configures Kafka 3.9, on ephemeral ports."""
    properties = sasl_properties() | {
        "allow.everyone.if.no.acl.found": "false", "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
    }
    with EmbeddedBroker(BrokerConfig.from_properties(properties)) as broker:
        yield broker


def _address(broker: EmbeddedBroker, listener: str) -> str:
    host, port = listener_address(broker.broker, listener)
    return f"{host}:{port}"


@pytest.fixture(scope="module")
def shim_results(shim_like_kafka: EmbeddedBroker) -> dict[str, dict]:
    return run_probe(_address(shim_like_kafka, "PLAINTEXT"), _address(shim_like_kafka, "SASL_PLAINTEXT"), "java4")


def test_java4_clients_see_what_kafka_39_answers(shim_results: dict[str, dict]) -> None:
    differences = _differences(shim_results, _expected())
    assert not differences, "kafka-shim answered the 4.x Java clients unlike Kafka 3.9:\n" + "\n".join(differences)


def test_java4_clients_what_a_user_sees(shim_results: dict[str, dict]) -> None:
    """The facts a user upgrading to 4.x clients meets first, spelled out (the comparison above has them all)."""
    cluster, txn = shim_results["cluster"], shim_results["transactions"]
    # 3.9 finalizes metadata.version only: no transaction.version, so the 4.x producer stays on TV1 and works
    assert cluster["describeFeatures"]["finalized"] == {"metadata.version": [21, 21]}
    assert [txn[k] for k in ("init", "commit", "abort")] == ["ok", "ok", "ok"]
    assert txn["readCommitted"]["records"] == ["0:committed-1", "1:committed-2"]
    assert txn["commitAfterFence"]["error"].startswith("ProducerFencedException")
    # group.protocol=consumer with 3.9's defaults (group.coordinator.rebalance.protocols=classic): the client says so
    assert shim_results["consumer_protocol"]["consume"]["error"].startswith(
        "UnsupportedVersionException: The cluster does not support the new CONSUMER group protocol.")
    assert shim_results["produce_consume"]["classicConsume"]["committed"] == {"P-pc-0": 3, "P-pc-1": 3}
    # KIP-714 client metrics: subscriptions can be managed, but 3.9 (no telemetry reporter) gives no instance id
    assert shim_results["telemetry"]["listClientMetricsAfter"] == ["P-metrics"]
    assert shim_results["telemetry"]["producerClientInstanceId"] is False
    sasl = shim_results["sasl"]
    assert sasl["SCRAM-SHA-256:admin:admin-secret"] == 1
    assert sasl["PLAIN:alice:wrong"]["error"].startswith("SaslAuthenticationException")
    acls = shim_results["acls"]
    assert acls["aliceProduceDenied"] == {"error": "TopicAuthorizationException: Not authorized to access topics: [P-acl-topic]"}
    assert acls["aliceTransactionalDenied"]["error"].startswith("TransactionalIdAuthorizationException")


@pytest.mark.oracle
def test_kafka_39_answers_the_expected_file(tmp_path: Path) -> None:
    kafka = start_real_kafka(tmp_path / "kafka")
    try:
        got = run_probe(":".join(map(str, kafka.plaintext)), ":".join(map(str, kafka.sasl)), "java4")
    finally:
        stop_real_kafka(kafka)
    if os.environ.get("JAVA4_WRITE_EXPECTED"):
        EXPECTED.write_text(json.dumps({"kafka-clients": clients_version(), "scenarios": got}, indent=1, sort_keys=True) + "\n")
    differences = _differences(got, _expected())
    assert not differences, f"Kafka 3.9 no longer answers as {EXPECTED} says:\n" + "\n".join(differences)
