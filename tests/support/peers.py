"""The real Kafka peer of the differential tests: starting and stopping it, and what both brokers are compared on.

A plain module (not the conftest), so that tests import it by a name no other test folder uses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REAL_KAFKA = ROOT / "scripts" / "real-kafka"
# Differences that are reported rather than asserted (e.g. API version ranges), printed at the end.
REPORTED: list[str] = []


@dataclass(frozen=True)
class RealKafka:
    dir: Path
    plaintext: tuple[str, int]
    sasl: tuple[str, int]
    info: dict


def _address(url: str) -> tuple[str, int]:
    host, port = url.split("://", 1)[1].rsplit(":", 1)
    return host, int(port)


def start_real_kafka(directory: Path, *overrides: str, version: str | None = None, log_levels: tuple[str, ...] = (),
                     mode: str | None = None) -> RealKafka:
    """Start scripts/real-kafka in ``directory``: the pom's Kafka (3.9, KRaft), or ``version`` (e.g. "2.8.2", which the
    script runs in ZooKeeper mode with the same listeners and users). ``log_levels``: LOGGER=LEVEL, e.g.
    "kafka.request.logger=DEBUG" for Kafka's request log (logs/kafka-request.log). ``mode``: "kraft" or "zookeeper"
    (REAL_KAFKA_MODE), e.g. to run 3.3 or 3.4 in KRaft mode (PLAIN users only there)."""
    args = [sys.executable, str(REAL_KAFKA), "start", "--dir", str(directory)]
    for override in overrides:
        args += ["--override", override]
    for level in log_levels:
        args += ["--log-level", level]
    env = dict(os.environ)
    if version is not None:
        env["REAL_KAFKA_VERSION"] = version
    if mode is not None:
        env["REAL_KAFKA_MODE"] = mode
    proc = subprocess.run(args, capture_output=True, text=True, timeout=900, env=env)
    if proc.returncode != 0:
        pytest.fail(f"real Kafka did not start ({' '.join(args)}):\n{proc.stderr[-6000:]}", pytrace=False)
    urls = {line.split("://", 1)[0]: line for line in proc.stdout.split()}
    info = json.loads((directory / "oracle.json").read_text())
    return RealKafka(directory, _address(urls["PLAINTEXT"]), _address(urls["SASL_PLAINTEXT"]), info)


def restart_real_kafka(kafka: RealKafka, *, kill: bool = False, pause_s: float = 0) -> None:
    """Stop the broker (a controlled shutdown, or SIGKILL) and start it again on the same data and ports, after
    ``pause_s`` seconds stopped."""
    args = [sys.executable, str(REAL_KAFKA), "restart", "--dir", str(kafka.dir), *(["--kill"] if kill else []),
            *(["--pause", str(pause_s)] if pause_s else [])]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"real Kafka did not restart ({' '.join(args)}):\n{proc.stderr[-6000:]}", pytrace=False)


def stop_real_kafka(kafka: RealKafka) -> None:
    subprocess.run([sys.executable, str(REAL_KAFKA), "stop", "--dir", str(kafka.dir)], capture_output=True, timeout=120)




INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")
# What scripts/real-kafka gives the judge, so that the internal topics are made alike on both sides.
INTERNAL_TOPIC_PROPERTIES = {"offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
                              "transaction.state.log.min.isr": "1"}


def mirror_internal_topics(kafka: RealKafka, shim) -> None:
    """Give a kafka-shim peer the internal topics the session's Kafka already has.

    The session's Kafka outlives each module's kafka-shim, and group or transaction tests make Kafka create
    ``__consumer_offsets`` / ``__transaction_state`` (a FindCoordinator does). Without them on the fresh kafka-shim, the
    two would answer differently for reasons that have nothing to do with the API under test (a CreateTopics of an
    internal name, an all-topics Metadata). ``shim`` is an EmbeddedBroker.
    """
    from kafka_shim.protocol.messages import MetadataRequest
    from kafka_shim.shim.partitions.topic_admin import auto_created_topic
    from tests.support.wire import Wire

    with Wire(kafka.sasl) as admin:
        admin.sasl_plain("admin", "admin-secret")
        answer = admin.request(3, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in INTERNAL_TOPICS]))
    present = {t.name: len(t.partitions) for t in answer.body.topics if t.error_code == 0}

    def create() -> None:
        partitions = shim.broker.services.partitions
        for name, count in present.items():
            if name not in partitions.cluster.topics:
                wanted = auto_created_topic(name, INTERNAL_TOPIC_PROPERTIES, 1, 1)
                partitions.create_topic(name, count, dict(wanted.configs))

    shim.call(create)
