"""Command-line producers against kafka-shim: kcat -P (Debian's kcat, librdkafka) and Kafka 3.9's own
kafka-console-producer (kafka.tools.ConsoleProducer, the Java producer: idempotent, acks=all by default).
Each writes; the test reads the partition log back and checks every record."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.peers import REAL_KAFKA
from tests.support.produce import create_topic, fetch_advertised, stored_records

pytestmark = pytest.mark.clients
TOOL_TIMEOUT = 300  # the first Java run may resolve Kafka's jars


@pytest.fixture
def broker():
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "auto.create.topics.enable": "false"})
    with fetch_advertised(), EmbeddedBroker(config) as running:
        yield running


LINES = [f"key-{i}:value {i} " + "x" * i for i in range(40)]


def _expected() -> list[tuple[bytes, bytes]]:
    return [tuple(part.encode() for part in line.split(":", 1)) for line in LINES]


def test_kcat_produces_keys_values_and_headers(broker) -> None:
    kcat = shutil.which("kcat")
    assert kcat is not None, "kcat is missing: scripts/ensure-kcat installs it"
    create_topic(broker, "kcat")
    proc = subprocess.run(
        [kcat, "-b", broker.bootstrap_servers, "-P", "-t", "kcat", "-p", "0", "-K", ":", "-H", "source=kcat",
         "-X", "enable.idempotence=true", "-z", "gzip"],
        input="\n".join(LINES) + "\n", capture_output=True, text=True, timeout=TOOL_TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    stored = stored_records(broker, "kcat")
    assert [(s.key, s.value) for s in stored] == _expected()
    assert {s.headers for s in stored} == {(("source", b"kcat"),)}
    assert {s.compression for s in stored} == {1}


def test_kafka_console_producer(broker) -> None:
    create_topic(broker, "console", 2)
    proc = subprocess.run(
        [sys.executable, str(REAL_KAFKA), "run", "kafka.tools.ConsoleProducer", "--bootstrap-server", broker.bootstrap_servers,
         "--topic", "console", "--property", "parse.key=true", "--property", "key.separator=:",
         "--producer-property", "partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner",
         "--compression-codec", "lz4"],
        input="\n".join(LINES) + "\n", capture_output=True, text=True, timeout=TOOL_TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    stored = stored_records(broker, "console", 0) + stored_records(broker, "console", 1)
    assert sorted((s.key, s.value) for s in stored) == sorted(_expected())
    assert {s.producer_id >= 0 for s in stored} == {True}  # the Java producer is idempotent by default
    assert {s.compression for s in stored} == {3}
