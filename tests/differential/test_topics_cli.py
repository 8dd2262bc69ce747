"""Kafka's own kafka-topics.sh (org.apache.kafka.tools.TopicCommand 3.9) against kafka-shim and Apache Kafka.

Each command runs against both brokers (Kafka as its super user over SASL, kafka-shim with no authorizer) and what
the tool prints is compared: stdout whole, and for failures the exit code and the "Error while executing topic
command" line. Topic ids are masked.
"""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.peers import REAL_KAFKA, RealKafka

TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
_TOPIC_ID = re.compile(r"TopicId: \S+")


@pytest.fixture(scope="module")
def shim_open() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1",
                                                      "auto.create.topics.enable": "false"})) as broker:
        yield broker


def _run(bootstrap: str, *args: str, command_config: str | None = None) -> tuple[int, str, str]:
    extra = ["--command-config", command_config] if command_config else []
    proc = subprocess.run([sys.executable, str(REAL_KAFKA), "run", TOPIC_COMMAND, "--bootstrap-server", bootstrap, *extra, *args],
                          capture_output=True, text=True, timeout=300)
    error = next((line for line in proc.stderr.splitlines() if line.startswith("Error while executing topic command")), "")
    return proc.returncode, _TOPIC_ID.sub("TopicId: <id>", proc.stdout), error


def both(oracle: RealKafka, shim: EmbeddedBroker, *args: str) -> tuple[int, str, str]:
    kafka = _run(f"{oracle.sasl[0]}:{oracle.sasl[1]}", *args, command_config=oracle.info["files"]["admin_properties"])
    ours = _run(shim.bootstrap_servers, *args)
    assert ours == kafka, f"kafka-topics.sh {' '.join(args)}:\n  Kafka      {kafka}\n  kafka-shim {ours}"
    return kafka


def test_create_alter_list_delete(oracle, shim_open) -> None:
    stem = f"cli-{uuid.uuid4().hex[:8]}"
    name = f"{stem}-orders"
    assert both(oracle, shim_open, "--create", "--topic", name, "--partitions", "3", "--replication-factor", "1",
                "--config", "cleanup.policy=compact")[0] == 0
    assert both(oracle, shim_open, "--create", "--topic", name, "--partitions", "3")[0] == 1
    both(oracle, shim_open, "--create", "--topic", f"{stem}-rf", "--partitions", "1", "--replication-factor", "3")
    both(oracle, shim_open, "--create", "--topic", f"{stem}-cfg", "--config", "retention.ms=abc")
    both(oracle, shim_open, "--create", "--topic", f"{stem}-x", "--config", "no.such.config=1")
    both(oracle, shim_open, "--create", "--topic", f"{stem}-default")
    assert both(oracle, shim_open, "--list", "--topic", f"{stem}.*")[1].split() == sorted([name, f"{stem}-default"])
    assert both(oracle, shim_open, "--alter", "--topic", name, "--partitions", "5")[0] == 0
    both(oracle, shim_open, "--alter", "--topic", name, "--partitions", "2")
    both(oracle, shim_open, "--alter", "--topic", f"{stem}-missing", "--partitions", "2")
    assert both(oracle, shim_open, "--delete", "--topic", name)[0] == 0
    both(oracle, shim_open, "--delete", "--topic", f"{stem}-missing")
    both(oracle, shim_open, "--delete", "--topic", f"{stem}-missing", "--if-exists")
    assert both(oracle, shim_open, "--list", "--topic", f"{stem}.*")[1].split() == [f"{stem}-default"]


def test_describe(oracle, shim_open) -> None:
    if shim_open.call(lambda: shim_open.broker.services.api_table.versions(32)) is None:
        pytest.skip("kafka-topics.sh --describe needs DescribeConfigs (32), which this build does not serve")
    stem = f"cli-describe-{uuid.uuid4().hex[:8]}"
    both(oracle, shim_open, "--create", "--topic", f"{stem}-a", "--partitions", "3", "--config", "retention.ms=60000")
    both(oracle, shim_open, "--create", "--topic", f"{stem}-b", "--partitions", "1")
    both(oracle, shim_open, "--describe", "--topic", f"{stem}.*")
