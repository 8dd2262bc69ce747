"""DescribeTransactions (65) and ListTransactions (66) against a real Kafka 3.9 holding no transaction of these ids:
denied, unknown, empty and not-yet-coordinated ids; state filters; and kafka-transactions.sh list against kafka-shim."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest

from kafka_shim.protocol.messages import DescribeTransactionsRequest, FindCoordinatorRequest, ListTransactionsRequest
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from kafka_shim.shim.testing.handle import KafkaShim
from tests.support.acl_peers import ANONYMOUS, DESCRIBE, TRANSACTIONAL_ID, Peers, acl, secured_config
from tests.support.peers import REAL_KAFKA

DESCRIBE_TXNS, LIST_TXNS, FIND_COORDINATOR = 65, 66, 10


@pytest.fixture(scope="module")
def shim_secured() -> Iterator[EmbeddedBroker]:
    """As the shared peer, with __transaction_state on one broker as scripts/real-kafka configures Kafka."""
    with EmbeddedBroker(secured_config(**{"transaction.state.log.replication.factor": "1"})) as broker:
        yield broker


def test_describe_transactions(peers: Peers) -> None:
    mine, theirs = f"txn-{uuid.uuid4().hex[:8]}", f"txn-{uuid.uuid4().hex[:8]}"
    body = DescribeTransactionsRequest(transactional_ids=[mine, theirs, "", mine])
    peers.same(DESCRIBE_TXNS, 0, body, "DescribeTransactions denied")
    peers.grant(acl(rtype=TRANSACTIONAL_ID, name="*", principal=ANONYMOUS, operation=DESCRIBE))
    # FindCoordinator for a transactional id makes __transaction_state on both (the real one may have it already);
    # asked until both name a coordinator, so that Kafka's partition is loaded.
    deadline = time.monotonic() + 60
    while True:
        answers = peers.both(FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=[mine, theirs]))
        if all(c.error_code == 0 for a in answers for c in a.body.coordinators) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    # Kafka's coordinator loads a new __transaction_state partition a moment after it leads it (NOT_COORDINATOR
    # meanwhile): compared until the two agree, or 60 s.
    while True:
        try:
            peers.same(DESCRIBE_TXNS, 0, body, "DescribeTransactions")
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.mark.parametrize("filters", [
    ListTransactionsRequest(state_filters=[], producer_id_filters=[987654321]),
    ListTransactionsRequest(state_filters=["Ongoing", "Nope", "ongoing", "Nope"], producer_id_filters=[987654321]),
], ids=["by-producer", "unknown-states"])
@pytest.mark.parametrize("version", [0, 1])
def test_list_transactions(peers: Peers, filters: ListTransactionsRequest, version: int) -> None:
    peers.same(LIST_TXNS, version, filters, f"ListTransactions v{version}")


def test_kafka_transactions_sh_list_and_describe() -> None:
    with KafkaShim() as shim:
        def tool(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, str(REAL_KAFKA), "run", "org.apache.kafka.tools.TransactionsCommand",
                                   "--bootstrap-server", shim.bootstrap_servers, *args], capture_output=True, text=True, timeout=300)

        listed = tool("list")
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.split() == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
        described = tool("describe", "--transactional-id", "nobody")
        assert described.returncode == 1
        assert "TransactionalIdNotFoundException" in described.stderr or "NotCoordinator" in described.stderr or \
            "transactional" in described.stderr.lower()
