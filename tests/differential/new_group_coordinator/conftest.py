"""The group modules again, with both brokers on ``group.coordinator.rebalance.protocols=classic,consumer``: Kafka 3.9
then runs its new group coordinator (group-coordinator/, Java) for classic groups and committed offsets too, whose
answers differ from the old one's in orders, duplicates and when an empty group goes (found by a probe that ran the
group modules in this mode)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.peers import RealKafka, start_real_kafka, stop_real_kafka

PROTOCOLS = "classic,consumer"


@pytest.fixture(scope="session")
def group_protocols() -> str:
    return PROTOCOLS


@pytest.fixture(scope="session")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKafka]:
    kafka = start_real_kafka(tmp_path_factory.mktemp("kafka-new-group-coordinator"), f"group.coordinator.rebalance.protocols={PROTOCOLS}")
    yield kafka
    stop_real_kafka(kafka)
