"""Both brokers, side by side: a real Apache Kafka (scripts/real-kafka) and kafka-shim.

`oracle` runs Kafka as the issue describes it (StandardAuthorizer, SASL users); `oracle_open` runs it with no
authorizer, the configuration kafka-shim serves today. Each comes up once per test session.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from shim.config import BrokerConfig
from shim.embedded import EmbeddedBroker

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


def start_real_kafka(directory: Path, *overrides: str) -> RealKafka:
    args = [sys.executable, str(REAL_KAFKA), "start", "--dir", str(directory)]
    for override in overrides:
        args += ["--override", override]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        pytest.fail(f"real Kafka did not start ({' '.join(args)}):\n{proc.stderr[-6000:]}", pytrace=False)
    urls = {line.split("://", 1)[0]: line for line in proc.stdout.split()}
    info = json.loads((directory / "oracle.json").read_text())
    return RealKafka(directory, _address(urls["PLAINTEXT"]), _address(urls["SASL_PLAINTEXT"]), info)


def stop_real_kafka(kafka: RealKafka) -> None:
    subprocess.run([sys.executable, str(REAL_KAFKA), "stop", "--dir", str(kafka.dir)], capture_output=True, timeout=120)


@pytest.fixture(scope="session")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKafka]:
    kafka = start_real_kafka(tmp_path_factory.mktemp("kafka-authorizer"))
    yield kafka
    stop_real_kafka(kafka)


@pytest.fixture(scope="session")
def oracle_open(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKafka]:
    kafka = start_real_kafka(tmp_path_factory.mktemp("kafka-open"), "authorizer.class.name=")
    yield kafka
    stop_real_kafka(kafka)


@pytest.fixture(scope="session")
def shim_peer() -> Iterator[EmbeddedBroker]:
    """kafka-shim configured like the open oracle: node 1, no authorizer, no auto-creation."""
    config = BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "node.id": "1",
        "auto.create.topics.enable": "false",
    })
    with EmbeddedBroker(config) as broker:
        yield broker


@pytest.fixture(scope="session")
def shim_address(shim_peer: EmbeddedBroker) -> tuple[str, int]:
    return _address("PLAINTEXT://" + shim_peer.bootstrap_servers)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.oracle)


def pytest_terminal_summary(terminalreporter) -> None:
    if REPORTED:
        terminalreporter.section("differences reported, not compared (Kafka vs kafka-shim)")
        for line in REPORTED:
            terminalreporter.write_line(line)
