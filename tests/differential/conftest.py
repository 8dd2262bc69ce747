"""Both brokers, side by side: a real Apache Kafka (scripts/real-kafka) and kafka-shim.

`oracle` runs Kafka as the issue describes it (StandardAuthorizer, SASL users); `oracle_open` runs it with no
authorizer, the configuration kafka-shim serves today. Each comes up once per test session.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.acl_peers import ANONYMOUS_MAY_ALTER, Peers, secured_config
from tests.support.peers import REPORTED, RealKafka, _address, start_real_kafka, stop_real_kafka


@pytest.fixture(scope="session")
def group_protocols() -> str:
    """Both brokers' group.coordinator.rebalance.protocols in the group modules: Kafka's default here;
    new_group_coordinator/ runs them again with ``classic,consumer`` (Kafka's new group coordinator for every group)."""
    return "classic"


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
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
    })
    with EmbeddedBroker(config) as broker:
        yield broker


@pytest.fixture(scope="session")
def shim_address(shim_peer: EmbeddedBroker) -> tuple[str, int]:
    return _address("PLAINTEXT://" + shim_peer.bootstrap_servers)


# The ACL peers (tests/support/acl_peers.py). A module that defines fixtures of these names uses its own.
@pytest.fixture(scope="module")
def shim_secured() -> Iterator[EmbeddedBroker]:
    """kafka-shim configured as scripts/real-kafka configures Kafka's authorizer."""
    with EmbeddedBroker(secured_config()) as broker:
        yield broker


@pytest.fixture
def peers(oracle: RealKafka, shim_secured: EmbeddedBroker) -> Iterator[Peers]:
    """Both brokers with no ACLs but those a test grants; emptied again after it."""
    both = Peers(oracle, shim_secured)
    both.reset()
    yield both
    both.reset()


@pytest.fixture
def acl_admin(peers: Peers) -> Peers:
    """User:ANONYMOUS may use the ACL APIs on both brokers (ALLOW ALTER on the cluster)."""
    peers.grant(ANONYMOUS_MAY_ALTER)
    return peers


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
