"""DescribeTransactions (65) and ListTransactions (66) against a real Kafka 3.9: denied, unknown, empty and
not-yet-coordinated ids; state filters; the ids ListTransactions leaves out for want of DESCRIBE; and
kafka-transactions.sh list against kafka-shim."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest

from kafka_shim.protocol.messages import (
    AddPartitionsToTxnRequest,
    CreateTopicsRequest,
    DescribeConfigsRequest,
    DescribeTransactionsRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListTransactionsRequest,
)
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from kafka_shim.shim.testing.handle import KafkaShim
from tests.support.acl_peers import (
    ANONYMOUS,
    CREATE,
    DESCRIBE,
    PREFIXED,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
    Peers,
    acl,
    secured_config,
)
from tests.support.peers import REAL_KAFKA
from tests.support.wire import Wire

DESCRIBE_TXNS, LIST_TXNS, FIND_COORDINATOR, INIT_PID, DESCRIBE_CONFIGS, CREATE_TOPICS, ADD_PARTITIONS = 65, 66, 10, 22, 32, 19, 24
DESCRIBE_CONFIGS_OPERATION = 10


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


@pytest.mark.parametrize("version", [0, 1])
def test_list_transactions_leaves_out_ids_without_describe(peers: Peers, version: int) -> None:
    # Transactions on each broker, made while User:ANONYMOUS may WRITE every id; then it may DESCRIBE some only. The
    # ids fall in __transaction_state partitions all over its 50: Kafka lists them partition by partition.
    prefix = f"lt-{uuid.uuid4().hex[:8]}-"
    seen, hidden = sorted(f"{prefix}seen-{uuid.uuid4().hex[:6]}" for _ in range(6)), prefix + "hidden"
    peers.grant(acl(rtype=TRANSACTIONAL_ID, name=prefix, pattern=PREFIXED, principal=ANONYMOUS, operation=WRITE))
    deadline = time.monotonic() + 90
    for tid in (*seen, hidden):
        init = InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1)
        # FindCoordinator makes __transaction_state; Kafka answers NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS
        # until it has loaded the id's partition.
        while True:
            peers.both(FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=[tid]))
            codes = [a.body.error_code for a in peers.both(INIT_PID, 4, init)]
            if codes == [0, 0]:
                break
            assert time.monotonic() < deadline, f"InitProducerId for {tid} never succeeded on both brokers: {codes}"
            time.sleep(0.2)
    peers.reset()
    peers.grant(acl(rtype=TRANSACTIONAL_ID, name=prefix + "seen-", pattern=PREFIXED, principal=ANONYMOUS, operation=DESCRIBE))
    every = ListTransactionsRequest(state_filters=[], producer_id_filters=[])
    _, shim = peers.same(LIST_TXNS, version, every, f"ListTransactions v{version} with DESCRIBE on some ids",
                         ignore=("transaction_states.*.producer_id",))
    assert sorted(t.transactional_id for t in shim.body.transaction_states) == seen


def test_describe_transactions_leaves_out_topics_without_describe(peers: Peers) -> None:
    # A transaction over two topics, made while User:ANONYMOUS may create and write everything it uses; then it may
    # DESCRIBE the transactional id and one of the topics only.
    prefix = f"dt-{uuid.uuid4().hex[:8]}-"
    tid, shown, hidden = prefix + "txn", prefix + "shown", prefix + "hidden"
    peers.grant(*(acl(rtype=rtype, name=prefix, pattern=PREFIXED, principal=ANONYMOUS, operation=op)
                  for rtype, op in ((TOPIC, CREATE), (TOPIC, WRITE), (TRANSACTIONAL_ID, WRITE))))
    created = peers.both(CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30_000, validate_only=False, topics=[
        CreateTopicsRequest.CreatableTopic(name=n, num_partitions=2, replication_factor=1, assignments=[], configs=[])
        for n in (shown, hidden)]))
    assert [[t.error_code for t in a.body.topics] for a in created] == [[0, 0], [0, 0]]
    init = InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1)
    inits = [_init_when_coordinated(address, tid, init) for address in (peers.oracle.plaintext, peers.shim_address)]
    topics = [AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=n, partitions=[0, 1]) for n in (hidden, shown)]
    for address, answer in zip((peers.oracle.plaintext, peers.shim_address), inits, strict=True):
        with Wire(address) as wire:  # each broker's own producer id
            added = wire.request(ADD_PARTITIONS, 3, AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=tid, v3_and_below_producer_id=answer.body.producer_id,
                v3_and_below_producer_epoch=answer.body.producer_epoch, v3_and_below_topics=topics))
        assert {p.partition_error_code for t in added.body.results_by_topic_v3_and_below for p in t.results_by_partition} == {0}, added
    peers.reset()
    peers.grant(acl(rtype=TRANSACTIONAL_ID, name=tid, principal=ANONYMOUS, operation=DESCRIBE),
                acl(rtype=TOPIC, name=shown, principal=ANONYMOUS, operation=DESCRIBE))
    _, shim = peers.same(DESCRIBE_TXNS, 0, DescribeTransactionsRequest(transactional_ids=[tid]),
                         "DescribeTransactions with DESCRIBE on one of its topics",
                         ignore=("transaction_states.*.producer_id", "transaction_states.*.transaction_start_time_ms"))
    assert [t.topic for t in shim.body.transaction_states[0].topics] == [shown]


def _init_when_coordinated(address: tuple[str, int], tid: str, init: InitProducerIdRequest):
    """InitProducerId once the broker coordinates the id: FindCoordinator makes __transaction_state, and Kafka answers
    NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS (changing nothing) until its partition is loaded."""
    deadline = time.monotonic() + 90
    with Wire(address) as wire:
        while True:
            wire.request(FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=[tid]))
            answer = wire.request(INIT_PID, 4, init)
            if answer.body.error_code == 0:
                return answer
            assert time.monotonic() < deadline, f"InitProducerId never succeeded at {address}: {answer}"
            time.sleep(0.2)


def test_transaction_state_topic_configs(peers: Peers) -> None:
    # FindCoordinator for a transactional id makes __transaction_state, with the configs Kafka gives it.
    tid = f"cfg-{uuid.uuid4().hex[:8]}"
    peers.grant(acl(rtype=TRANSACTIONAL_ID, name=tid, principal=ANONYMOUS, operation=DESCRIBE),
                acl(rtype=TOPIC, name="__transaction_state", principal=ANONYMOUS, operation=DESCRIBE_CONFIGS_OPERATION))
    deadline = time.monotonic() + 60
    while [c.error_code for a in peers.both(FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=[tid]))
           for c in a.body.coordinators] != [0, 0]:
        assert time.monotonic() < deadline, "no transaction coordinator on both brokers"
        time.sleep(0.2)
    body = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=2, resource_name="__transaction_state", configuration_keys=None)], include_synonyms=True)
    _, shim = peers.same(DESCRIBE_CONFIGS, 4, body, "DescribeConfigs of __transaction_state",
                         ignore=("results.*.configs.*.documentation",))
    assert {c.name: c.value for c in shim.body.results[0].configs}["compression.type"] == "uncompressed"


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
