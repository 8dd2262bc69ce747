"""TxnOffsetCommit against a real Kafka 3.9, with the group checks, orders and group lifecycles around it.

Both brokers run the same script as admin over SASL (each with the producer ids it hands out): a v4 commit whose
group partition is not in the transaction (TRANSACTION_ABORTABLE; INVALID_TXN_STATE below v4), a generation given
to a group that does not exist, repeated topics and partitions, OffsetDelete and DeleteGroups while offsets are
pending, then the commit and what is left. In ``new_group_coordinator/`` the same module runs with both brokers on
Kafka's new group coordinator, where a KIP-848 member also commits inside a transaction.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from kafka_shim.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    ConsumerGroupHeartbeatRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    ListGroupsRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.differential.test_transactions import Script, _batch, _compare, _fetch, _produce, _wait_for_partitions
from tests.support.peers import RealKafka
from tests.support.sasl_setup import USERS, listener_address, sasl_properties
from tests.support.wire import Answer

pytestmark = pytest.mark.oracle

OFFSET_FETCH, LIST_GROUPS, DESCRIBE_GROUPS, INIT_PID, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = 9, 16, 15, 22, 25, 26, 28
CREATE_TOPICS, DELETE_GROUPS, OFFSET_DELETE, CONSUMER_HEARTBEAT = 19, 42, 47, 68
PRODUCE, FETCH, ADD_PARTITIONS, DESCRIBE_TXNS = 0, 1, 24, 65
_Topic, _Partition = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic, TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition


@pytest.fixture(scope="module")
def shim_txn(group_protocols: str) -> Iterator[EmbeddedBroker]:
    config = BrokerConfig.from_properties({**sasl_properties(), "group.coordinator.rebalance.protocols": group_protocols,
                                           "group.initial.rebalance.delay.ms": "0", "offsets.topic.replication.factor": "1",
                                           "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1"})
    with EmbeddedBroker(config) as broker:
        yield broker


def _script(address: tuple[str, int]) -> Script:
    run = Script(address)
    run.wire.sasl_plain("admin", USERS["admin"])
    return run


def _commit(txn: str, group: str, pid: int, epoch: int, topics: list[tuple[str, list[int]]], *, generation: int = -1,
            member: str = "") -> TxnOffsetCommitRequest:
    return TxnOffsetCommitRequest(transactional_id=txn, group_id=group, producer_id=pid, producer_epoch=epoch,
                                  generation_id=generation, member_id=member, group_instance_id=None, topics=[
                                      _Topic(name=name, partitions=[_Partition(partition_index=p, committed_offset=10 + p,
                                                                               committed_leader_epoch=-1, committed_metadata="m")
                                                                    for p in parts]) for name, parts in topics])


def _stable_fetch(group: str, topics: list[tuple[str, list[int]]] | None) -> OffsetFetchRequest:
    return OffsetFetchRequest(group_id=group, require_stable=True, topics=None if topics is None else [
        OffsetFetchRequest.OffsetFetchRequestTopic(name=n, partition_indexes=ps) for n, ps in topics])


def _ours(answer: Answer, groups: list[str]) -> Answer:
    # The session's Kafka holds other modules' groups: keep ours, by id.
    answer.body.groups = sorted((g for g in answer.body.groups if g.group_id in groups), key=lambda g: g.group_id)
    return answer


def _conversation(run: Script, names: dict[str, str], new_coordinator: bool) -> None:
    topic, other, txn = names["topic"], names["other"], names["txn"]
    group, missing, deleted = names["group"], names["missing"], names["deleted"]
    ours = [group, missing, deleted, names["member_group"]]
    for name in (topic, other):
        run("create " + name, CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30_000, validate_only=False, topics=[
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=3, replication_factor=1, assignments=[], configs=[])]))
    for g in (missing, deleted, names["member_group"]):
        run.wait_for_coordinator(txn, g)
    run.wait_for_coordinator(txn, group)
    init = run("init", INIT_PID, 4, InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60_000, producer_id=-1,
                                                          producer_epoch=-1)).body
    pid, epoch = init.producer_id, init.producer_epoch
    run("v4, the group's partition not in the transaction", TXN_OFFSET_COMMIT, 4, _commit(txn, group, pid, epoch, [(topic, [0])]))
    run("v3, the group's partition not in the transaction", TXN_OFFSET_COMMIT, 3, _commit(txn, group, pid, epoch, [(topic, [0])]))
    run("groups after commits that failed verification", LIST_GROUPS, 4, ListGroupsRequest(states_filter=[]))
    _ours(run.steps[-1][1], ours)
    for g in (group, missing, deleted):
        run(f"add offsets {g[:2]}", ADD_OFFSETS, 3, AddOffsetsToTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch, group_id=g))
    run("a generation for a group that does not exist", TXN_OFFSET_COMMIT, 3,
        _commit(txn, missing, pid, epoch, [(topic, [0])], generation=5))
    run("repeated topics and partitions", TXN_OFFSET_COMMIT, 3,
        _commit(txn, group, pid, epoch, [(other, [2, 0]), (topic, [0]), (other, [2])]))
    run("pending offsets of another group", TXN_OFFSET_COMMIT, 3, _commit(txn, deleted, pid, epoch, [(topic, [1])]))
    run("stable fetch while pending", OFFSET_FETCH, 7, _stable_fetch(group, [(topic, [0]), (other, [0, 2])]))
    run("OffsetDelete of a pending partition", OFFSET_DELETE, 0, OffsetDeleteRequest(group_id=group, topics=[
        OffsetDeleteRequest.OffsetDeleteRequestTopic(name=other, partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=2)])]))
    run("stable fetch after OffsetDelete", OFFSET_FETCH, 7, _stable_fetch(group, [(topic, [0]), (other, [0, 2])]))
    run("DeleteGroups of a group holding only pending offsets", DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=[deleted]))
    run("stable fetch after DeleteGroups", OFFSET_FETCH, 7, _stable_fetch(deleted, [(topic, [1])]))
    if new_coordinator:
        _member_commits(run, names, pid, epoch)
    run("commit", END_TXN, 3, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch, committed=True))
    run.wait_until_complete(txn)
    run("every offset after the commit", OFFSET_FETCH, 7, _stable_fetch(group, None))
    run("the deleted group after the commit", OFFSET_FETCH, 7, _stable_fetch(deleted, None))
    run("groups after the commit", LIST_GROUPS, 4, ListGroupsRequest(states_filter=[]))
    _ours(run.steps[-1][1], ours)
    run("describe after the commit", DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=[group, missing, deleted],
                                                                              include_authorized_operations=False))


def _member_commits(run: Script, names: dict[str, str], pid: int, epoch: int) -> None:
    """A KIP-848 member commits inside the transaction with its member id and epoch (Java's sendOffsetsToTransaction
    with group.protocol=consumer); a stale epoch is ILLEGAL_GENERATION, an unknown member UNKNOWN_MEMBER_ID."""
    txn, group, topic = names["txn"], names["member_group"], names["topic"]
    run(f"add offsets {group[:2]}", ADD_OFFSETS, 3, AddOffsetsToTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch, group_id=group))
    joined = run.wire.request(CONSUMER_HEARTBEAT, 0, ConsumerGroupHeartbeatRequest(
        group_id=group, member_id="", member_epoch=0, instance_id=None, rack_id=None, rebalance_timeout_ms=30_000,
        subscribed_topic_names=[topic], server_assignor=None, topic_partitions=[])).body
    assert joined.error_code == 0, joined
    member, member_epoch = joined.member_id, joined.member_epoch
    run("a consumer group member's commit", TXN_OFFSET_COMMIT, 3,
        _commit(txn, group, pid, epoch, [(topic, [0])], generation=member_epoch, member=member))
    run("a stale member epoch", TXN_OFFSET_COMMIT, 3,
        _commit(txn, group, pid, epoch, [(topic, [1])], generation=member_epoch + 5, member=member))
    run("an unknown member", TXN_OFFSET_COMMIT, 3, _commit(txn, group, pid, epoch, [(topic, [1])], generation=member_epoch,
                                                           member="not-a-member"))
    run("v2 without member fields", TXN_OFFSET_COMMIT, 2, _commit(txn, group, pid, epoch, [(topic, [1])]))


def test_txn_offset_commits_answer_as_kafka(oracle: RealKafka, shim_txn: EmbeddedBroker, group_protocols: str) -> None:
    suffix = uuid.uuid4().hex[:8]
    names = {"topic": f"toc-{suffix}", "other": f"toc-other-{suffix}", "txn": f"toc-tid-{suffix}", "group": f"g1-{suffix}",
             "missing": f"g2-{suffix}", "deleted": f"g3-{suffix}", "member_group": f"g4-{suffix}"}
    new_coordinator = "consumer" in group_protocols
    kafka, shim = _script(oracle.sasl), _script(listener_address(shim_txn.broker, "SASL_PLAINTEXT"))
    try:
        _conversation(kafka, names, new_coordinator)
        _conversation(shim, names, new_coordinator)
        _compare(kafka, shim)
    finally:
        kafka.close()
        shim.close()


def _other_epochs(run: Script, names: dict[str, str]) -> None:
    """TxnOffsetCommits of other epochs once the producer id has an open transaction in the group's
    ``__consumer_offsets`` partition: Kafka verifies none of them (UnifiedLog.hasOngoingTransaction looks at the id
    alone), so a newer epoch is stored, an older one is refused by the partition's epoch check (47, which on the old
    coordinator also drops the partition's pending offset), and epoch -1 fails in Kafka's record builder
    (UNKNOWN_SERVER_ERROR: the old coordinator's error answers the whole request, the new one's its own partitions).
    The transaction's commit marker is then older than the partition's epoch: Kafka writes the other partitions'
    markers, abandons that one and leaves the transaction in PrepareCommit for good."""
    topic, other, txn, group = names["topic"], names["other"], names["txn"], names["group"]
    for name in (topic, other):
        run("create " + name, CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30_000, validate_only=False, topics=[
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=3, replication_factor=1, assignments=[], configs=[])]))
    run.wait_for_coordinator(txn, group)
    _wait_for_partitions(run, [topic, other], 3)
    pid = run("init", INIT_PID, 4, InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60_000, producer_id=-1,
                                                         producer_epoch=-1)).body.producer_id
    run("add", ADD_PARTITIONS, 3, AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=txn, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=0,
        v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=[0])]))
    run("produce", PRODUCE, 9, _produce(topic, 0, _batch(pid, 0, 0, [b"a"]), txn))
    run("add offsets", ADD_OFFSETS, 3, AddOffsetsToTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=0, group_id=group))
    run("epoch -1 before any commit (verified: fenced)", TXN_OFFSET_COMMIT, 3, _commit(txn, group, pid, -1, [(topic, [0])]))
    run("epoch 0", TXN_OFFSET_COMMIT, 3, _commit(txn, group, pid, 0, [(topic, [0, 1])]))
    run("epoch 1, not verified", TXN_OFFSET_COMMIT, 3, _commit(txn, group, pid, 1, [(topic, [1])]))
    run("epoch 0 again, older than the partition's", TXN_OFFSET_COMMIT, 3, _commit(txn, group, pid, 0, [(topic, [0])]))
    run("epoch -1 with refused topics and partitions", TXN_OFFSET_COMMIT, 3, _commit(
        txn, group, pid, -1, [(f"{topic}-nope", [0]), (topic, [1, 0, 7]), (other, [0]), (topic, [1])]))
    run("epoch -1 v4", TXN_OFFSET_COMMIT, 4, _commit(txn, group, pid, -1, [(topic, [2])]))
    too_large = _commit(txn, group, pid, -1, [(topic, [0, 2])])
    for partition in too_large.topics[0].partitions:
        partition.committed_metadata = "m" * 5000  # past offset.metadata.max.bytes: nothing to build
    run("epoch -1, every metadata too large", TXN_OFFSET_COMMIT, 3, too_large)
    run("stable fetch while open", OFFSET_FETCH, 7, _stable_fetch(group, [(topic, [0, 1, 2])]))
    run("commit", END_TXN, 3, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=0, committed=True))
    _wait_for_markers(run, txn)
    run("describe after the markers", DESCRIBE_TXNS, 0, DescribeTransactionsRequest(transactional_ids=[txn]))
    run("init while stuck", INIT_PID, 4, InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60_000,
                                                               producer_id=-1, producer_epoch=-1))
    run("commit again", END_TXN, 3, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=0, committed=True))
    run("abort while stuck", END_TXN, 3, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=0, committed=False))
    run("stable fetch while stuck", OFFSET_FETCH, 7, _stable_fetch(group, [(topic, [0, 1, 2])]))
    run("read_committed fetch of the data", FETCH, 11, _fetch(topic, 0, 0, 1))


def _wait_for_markers(run: Script, txn: str) -> None:
    """DescribeTransactions until the transaction lists no partition but ``__consumer_offsets`` ones: Kafka answers
    EndTxn before it sends the markers, and drops each partition from the list once its marker is written."""
    deadline = time.monotonic() + 60
    while True:
        state = run.wire.request(DESCRIBE_TXNS, 0, DescribeTransactionsRequest(transactional_ids=[txn])).body.transaction_states[0]
        if all(t.topic == "__consumer_offsets" for t in state.topics):
            return
        assert time.monotonic() < deadline, f"{txn}: markers not written at {run.wire.address}: {state}"
        time.sleep(0.05)


def test_txn_offset_commits_of_other_epochs_in_an_open_transaction(oracle: RealKafka, shim_txn: EmbeddedBroker) -> None:
    suffix = uuid.uuid4().hex[:8]
    names = {"topic": f"toe-{suffix}", "other": f"toe-other-{suffix}", "txn": f"toe-tid-{suffix}", "group": f"ge-{suffix}"}
    kafka, shim = _script(oracle.sasl), _script(listener_address(shim_txn.broker, "SASL_PLAINTEXT"))
    try:
        _other_epochs(kafka, names)
        _other_epochs(shim, names)
        _compare(kafka, shim)
    finally:
        kafka.close()
        shim.close()
