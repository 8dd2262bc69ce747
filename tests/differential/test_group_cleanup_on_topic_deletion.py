"""Kafka 3.9 (the old group coordinator, its default) and kafka-shim after a topic deletion: the coordinator's
cleanupGroupMetadata pass (GroupCoordinator.handleDeletedPartitions) runs over every group it holds, so an Empty group
without offsets goes then even if it had nothing of the deleted topic. A random differential probe of the release
emulation (/tmp/kraft-probe, /tmp/old-probe) saw kafka-shim still list such groups after long runs against 2.8.2,
3.5.2 and 3.7.2; the source is the same from 2.8 to 3.9.

Two such groups: one a JoinGroup made without ever getting a member (v4+ answers MEMBER_ID_REQUIRED to an empty member
id, the group stays Empty), and one whose only offsets were a transaction's, aborted. Both are listed on both brokers
before the deletion.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import (
    AddOffsetsToTxnRequest,
    DeleteTopicsRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    JoinGroupRequest,
    ListGroupsRequest,
    TxnOffsetCommitRequest,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.differential.test_kraft_release_findings import ADMIN, COORDINATOR_NOT_READY, GROUP, Pair
from tests.support.compare import assert_same
from tests.support.peers import REPORTED, start_real_kafka, stop_real_kafka
from tests.support.sasl_setup import listener_address, sasl_properties
from tests.support.wire import Answer, Wire

PREFIX = "group-cleanup"


def shim_config() -> BrokerConfig:
    return BrokerConfig.from_properties(sasl_properties() | {
        "super.users": "User:admin;User:broker",
        "allow.everyone.if.no.acl.found": "false",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
    })


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    started = time.monotonic()
    kafka = start_real_kafka(tmp_path_factory.mktemp("kafka-group-cleanup"))
    REPORTED.append(f"group cleanup: Kafka 3.9 started in {time.monotonic() - started:.1f}s")
    try:
        with EmbeddedBroker(shim_config()) as shim:
            yield Pair(kafka, listener_address(shim.broker, "SASL_PLAINTEXT"))
    finally:
        stop_real_kafka(kafka)


def _listed(address: tuple[str, int], groups: set[str]) -> Answer:
    with Wire(address) as wire:
        wire.sasl_plain(*ADMIN)
        answer = wire.request(ApiKey.LIST_GROUPS, 4, ListGroupsRequest(states_filter=[]))
    answer.body.groups = sorted((g for g in answer.body.groups if g.group_id in groups), key=lambda g: g.group_id)
    return answer


def _join_without_member(pair: Pair, group: str) -> None:
    pair.coordinator(group, GROUP)
    body = JoinGroupRequest(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
                            protocol_type="consumer", protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")])
    answers = []
    pair.cid += 1
    frame = encode_request(ApiKey.JOIN_GROUP, 5, pair.cid, body, client_id="group-cleanup")
    for address in pair.addresses:  # repeated while the group's coordinator is still loading (bounded)
        deadline = time.monotonic() + 30
        with Wire(address) as wire:
            wire.sasl_plain(*ADMIN)
            while (answer := wire.exchange(frame, ApiKey.JOIN_GROUP, 5)).body.error_code in COORDINATOR_NOT_READY:
                assert time.monotonic() < deadline, (address, answer)
                time.sleep(0.1)
        answers.append(answer)
    kafka, shim = answers
    assert_same(kafka, shim, ignore=("member_id",), what="JoinGroup v5 with no member id")
    assert kafka.body.error_code == 79  # MEMBER_ID_REQUIRED


def _aborted_offsets_only(pair: Pair, group: str, topic: str, transactional_id: str) -> None:
    pair.coordinator(group, GROUP)
    producers = pair.init_transaction(transactional_id)

    def add(side: int) -> AddOffsetsToTxnRequest:
        return AddOffsetsToTxnRequest(transactional_id=transactional_id, producer_id=producers[side][0],
                                      producer_epoch=producers[side][1], group_id=group)

    def commit(side: int) -> TxnOffsetCommitRequest:
        return TxnOffsetCommitRequest(transactional_id=transactional_id, group_id=group, producer_id=producers[side][0],
                                      producer_epoch=producers[side][1], generation_id=-1, member_id="", topics=[
                                          TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=topic, partitions=[
                                              TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0,
                                                                                                    committed_offset=1)])])

    def abort(side: int) -> EndTxnRequest:
        return EndTxnRequest(transactional_id=transactional_id, producer_id=producers[side][0],
                             producer_epoch=producers[side][1], committed=False)

    for key, version, body_of, codes in ((ApiKey.ADD_OFFSETS_TO_TXN, 3, add, lambda b: [b.error_code]),
                                         (ApiKey.TXN_OFFSET_COMMIT, 3, commit,
                                          lambda b: [p.error_code for t in b.topics for p in t.partitions]),
                                         (ApiKey.END_TXN, 3, abort, lambda b: [b.error_code])):
        kafka, shim = pair.each(key, version, body_of)
        assert_same(kafka, shim, what=f"{ApiKey(key).name} v{version}")
        assert codes(kafka.body) == [0], kafka
    # the abort is complete once the transaction is CompleteAbort (its markers written, the group's offsets dropped)
    for address in pair.addresses:
        deadline = time.monotonic() + 30
        with Wire(address) as wire:
            wire.sasl_plain(*ADMIN)
            while wire.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, DescribeTransactionsRequest(
                    transactional_ids=[transactional_id])).body.transaction_states[0].transaction_state != "CompleteAbort":
                assert time.monotonic() < deadline, (address, "the transaction never completed its abort")
                time.sleep(0.05)


def test_topic_deletion_removes_every_empty_group_without_offsets(pair: Pair) -> None:
    empty_groups_after_topic_deletion(pair, PREFIX, with_transaction=True)


def empty_groups_after_topic_deletion(pair: Pair, prefix: str, with_transaction: bool) -> None:
    """The groups are listed on both before a topic none of them had offsets of is deleted, by neither after.
    ``with_transaction``: the aborted transaction's group too (DescribeTransactions, to see the abort through, is 3.0+)."""
    joined, aborted = f"{prefix}-joined", f"{prefix}-aborted"
    kept_topic, deleted_topic = f"{prefix}-topic", f"{prefix}-deleted"
    pair.create_topic(kept_topic)
    pair.create_topic(deleted_topic)
    _join_without_member(pair, joined)
    groups = {joined}
    if with_transaction:
        _aborted_offsets_only(pair, aborted, kept_topic, f"{prefix}-tx")
        groups.add(aborted)
    kafka, shim = (_listed(address, groups) for address in pair.addresses)
    assert_same(kafka, shim, what="ListGroups v4 before the deletion")
    assert sorted(g.group_id for g in kafka.body.groups) == sorted(groups)

    kafka_answer, shim_answer = pair.both(ApiKey.DELETE_TOPICS, 4, DeleteTopicsRequest(topic_names=[deleted_topic],
                                                                                        timeout_ms=30000))
    assert_same(kafka_answer, shim_answer, what="DeleteTopics v4")
    # Kafka's broker runs the cleanup once it applies the deletion's metadata, a moment after the answer: wait
    # (bounded) for it there, then kafka-shim must list the same
    deadline = time.monotonic() + 30
    while (kafka := _listed(pair.kafka.sasl, groups)).body.groups:
        assert time.monotonic() < deadline, f"Kafka kept {kafka.body.groups} after the topic deletion"
        time.sleep(0.1)
    assert_same(kafka, _listed(pair.shim_sasl, groups), what="ListGroups v4 after a topic deletion")
