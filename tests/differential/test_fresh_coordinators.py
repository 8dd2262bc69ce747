"""FindCoordinator on brokers that have never had a coordinator's internal topic, beside a fresh Apache Kafka 3.9.

Kafka asks its controller for a missing ``__consumer_offsets`` / ``__transaction_state`` and answers
COORDINATOR_NOT_AVAILABLE; the topic appears only after the request, so every key of a batched (v4+) request gets
15, not only the first. Both brokers start empty; Kafka is asked as its SASL super user, kafka-shim on a PLAINTEXT
listener without an authorizer, so that only the coordinators' own answers are compared.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafka_shim.protocol.messages import FindCoordinatorRequest
from tests.support.fresh_pair import fresh_pair
from tests.support.wire import Wire

FIND_COORDINATOR = 10
GROUP, TRANSACTION = 0, 1


@pytest.fixture(scope="module")
def wires(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Wire]]:
    shim_properties = {"offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
                       "transaction.state.log.min.isr": "1"}
    with fresh_pair(tmp_path_factory.mktemp("kafka-fresh-coordinators"), shim_properties) as both:
        yield both


def _coordinators(wire: Wire, key_type: int, keys: list[str]) -> list[tuple[str, int, int]]:
    answer = wire.request(FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=key_type, coordinator_keys=keys)).body
    return [(c.key, c.error_code, c.node_id) for c in answer.coordinators]


@pytest.mark.parametrize(("key_type", "keys"), [(TRANSACTION, ["txn-a", "txn-b", "txn-c"]), (GROUP, ["g-1", "g-2", "g-3", "g-4"])])
def test_every_key_of_the_first_batch_waits_for_the_internal_topic(wires: list[Wire], key_type: int, keys: list[str]) -> None:
    first = [_coordinators(wire, key_type, keys) for wire in wires]
    assert first[0] == first[1] == [(key, 15, -1) for key in keys]
    # Then both name themselves for every key (Kafka once it has created and loaded the topic's partitions).
    deadline = time.monotonic() + 120
    for wire in wires:
        while (answer := _coordinators(wire, key_type, keys)) != [(key, 0, 1) for key in keys]:
            assert time.monotonic() < deadline, f"no coordinator at {wire.address}: {answer}"
            time.sleep(0.2)
