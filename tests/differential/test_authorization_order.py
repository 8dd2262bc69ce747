"""The order in which a request's names are asked, as Kafka 3.9's authorizer log shows it.

Kafka asks the names of a multi-topic (or multi-group) request through AuthHelper.filterByAuthorized, which counts
them into a Scala hash map first: the decisions, and so the lines of ``kafka-authorizer.log`` and the decisions of a
captured trace, come in the map's order, not the request's. Each case sends the same request as User:ANONYMOUS (no
ACLs, every name denied, every denial logged at INFO) to both brokers and compares the denial lines, in order:
operation, resource, request name and resource ref count.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from structlog.testing import capture_logs

from kafka_shim.protocol.messages import (
    AddPartitionsToTxnRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)
from kafka_shim.protocol.records import build_batch, encode_batch
from kafka_shim.shim.requests.authz import kafka_ask_order
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.acl_peers import ANONYMOUS, Peers, acl, secured_config
from tests.support.peers import RealKafka

AUTHORIZER_LOGGER = "kafka.authorizer.logger"
DENIAL = re.compile(r"is Denied operation = (\w+) from host = \S+ on resource = (\w+:LITERAL:\S+) "
                    r"for request = (\w+) with resourceRefCount = (\d+)")
ZERO_UUID = uuid.UUID(int=0)
TIMEOUT = 60.0
# Three names: Scala's Map3 keeps the mutable map's order; nine: a CHAMP HashMap's.
SHORT, LONG = "zqa", "qwertyuio"


def _names(tag: str, letters: str) -> list[str]:
    """The names in the reverse of the order kafka-shim expects Kafka to ask them: asking in request order, or in a
    wrongly modelled order, shows in the log."""
    names = [f"ask-order-{tag}-{letter}" for letter in letters]
    return [name for name, _ in reversed(kafka_ask_order(names))]


def produce(names: list[str]) -> tuple[int, int, ProduceRequest]:
    batch = encode_batch(build_batch([(b"k", b"v", [], int(time.time() * 1000))]))
    # The first name twice: one check with resourceRefCount = 2.
    entries = [*names, names[0]]
    return 0, 9, ProduceRequest(acks=1, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name=n, partition_data=[ProduceRequest.PartitionProduceData(index=i, records=batch)])
        for i, n in enumerate(entries)])


def fetch(names: list[str]) -> tuple[int, int, FetchRequest]:
    return 1, 12, FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
                               session_epoch=-1, forgotten_topics_data=[], rack_id="", topics=[
                                   FetchRequest.FetchTopic(topic=n, partitions=[FetchRequest.FetchPartition(
                                       partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                                       log_start_offset=-1, partition_max_bytes=1024)]) for n in names])


def list_offsets(names: list[str]) -> tuple[int, int, ListOffsetsRequest]:
    return 2, 8, ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name=n, partitions=[ListOffsetsRequest.ListOffsetsPartition(
            partition_index=0, current_leader_epoch=-1, timestamp=-1)]) for n in names])


def metadata(names: list[str]) -> tuple[int, int, MetadataRequest]:
    return 3, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                                  allow_auto_topic_creation=False)


def create_topics(names: list[str]) -> tuple[int, int, CreateTopicsRequest]:
    return 19, 7, CreateTopicsRequest(timeout_ms=30000, validate_only=False, topics=[
        CreateTopicsRequest.CreatableTopic(name=n, num_partitions=1, replication_factor=1, assignments=[], configs=[])
        for n in names])


def delete_topics(names: list[str]) -> tuple[int, int, DeleteTopicsRequest]:
    return 20, 6, DeleteTopicsRequest(timeout_ms=30000, topics=[DeleteTopicsRequest.DeleteTopicState(name=n, topic_id=ZERO_UUID)
                                                                for n in names])


def delete_records(names: list[str]) -> tuple[int, int, DeleteRecordsRequest]:
    return 21, 2, DeleteRecordsRequest(timeout_ms=30000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name=n, partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=0)]) for n in names])


def offset_for_leader_epoch(names: list[str]) -> tuple[int, int, OffsetForLeaderEpochRequest]:
    return 23, 4, OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
        topic=n, partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1, leader_epoch=0)])
        for n in names])


def delete_groups(names: list[str]) -> tuple[int, int, DeleteGroupsRequest]:
    return 42, 2, DeleteGroupsRequest(groups_names=names)


def create_partitions(names: list[str]) -> tuple[int, int, CreatePartitionsRequest]:
    return 37, 3, CreatePartitionsRequest(timeout_ms=30000, validate_only=False, topics=[
        CreatePartitionsRequest.CreatePartitionsTopic(name=n, count=2, assignments=None) for n in names])


# Requests whose topics are asked only once a group or transactional id is allowed: (resource type, operation) to grant
# User:ANONYMOUS on the id "ask-order-<tag>" first.
GROUP, TRANSACTIONAL_ID = 3, 5
READ, WRITE, DELETE, DESCRIBE = 3, 4, 6, 8


def offset_commit(tag: str, names: list[str]) -> tuple[int, int, OffsetCommitRequest]:
    return 8, 9, OffsetCommitRequest(group_id=f"ask-order-{tag}", generation_id_or_member_epoch=-1, member_id="",
                                     group_instance_id=None, retention_time_ms=-1, topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name=n, partitions=[OffsetCommitRequest.OffsetCommitRequestPartition(
            partition_index=0, committed_offset=0, committed_leader_epoch=-1, committed_metadata="")]) for n in names])


def offset_fetch(tag: str, names: list[str]) -> tuple[int, int, OffsetFetchRequest]:
    return 9, 8, OffsetFetchRequest(require_stable=False, groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
        group_id=f"ask-order-{tag}", topics=[OffsetFetchRequest.OffsetFetchRequestTopics(name=n, partition_indexes=[0])
                                             for n in names])])


def offset_delete(tag: str, names: list[str]) -> tuple[int, int, OffsetDeleteRequest]:
    return 47, 0, OffsetDeleteRequest(group_id=f"ask-order-{tag}", topics=[OffsetDeleteRequest.OffsetDeleteRequestTopic(
        name=n, partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)]) for n in names])


def txn_offset_commit(tag: str, names: list[str]) -> tuple[int, int, TxnOffsetCommitRequest]:
    return 28, 3, TxnOffsetCommitRequest(transactional_id=f"ask-order-{tag}", group_id=f"ask-order-{tag}", producer_id=0,
                                         producer_epoch=0, generation_id=-1, member_id="", group_instance_id=None, topics=[
        TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=n, partitions=[TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
            partition_index=0, committed_offset=0, committed_leader_epoch=-1, committed_metadata="")]) for n in names])


def add_partitions_to_txn(tag: str, names: list[str]) -> tuple[int, int, AddPartitionsToTxnRequest]:
    return 24, 3, AddPartitionsToTxnRequest(v3_and_below_transactional_id=f"ask-order-{tag}", v3_and_below_producer_id=0,
                                            v3_and_below_producer_epoch=0, v3_and_below_topics=[
        AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=n, partitions=[0, 1]) for n in names])


GRANTED_FIRST = {
    offset_commit: [(GROUP, READ)],
    offset_fetch: [(GROUP, DESCRIBE)],
    offset_delete: [(GROUP, DELETE)],
    txn_offset_commit: [(TRANSACTIONAL_ID, WRITE), (GROUP, READ)],
    add_partitions_to_txn: [(TRANSACTIONAL_ID, WRITE)],
}

REQUESTS = [produce, fetch, list_offsets, metadata, create_topics, delete_topics, delete_records, offset_for_leader_epoch,
            delete_groups, create_partitions]


@pytest.fixture(scope="module")
def logged_shim() -> Iterator[tuple[EmbeddedBroker, list[dict]]]:
    """kafka-shim configured as the oracle, its authorizer built while structlog's capture is on (it logs there)."""
    was_configured = structlog.is_configured()
    try:
        with capture_logs() as entries, EmbeddedBroker(secured_config()) as broker:
            yield broker, entries
    finally:
        if not was_configured:  # capture_logs leaves structlog configured, which would print later tests' logs
            structlog.reset_defaults()


@pytest.fixture
def peers(oracle: RealKafka, logged_shim: tuple[EmbeddedBroker, list[dict]]) -> Iterator[Peers]:
    both = Peers(oracle, logged_shim[0])
    both.reset()
    yield both
    both.reset()


def _denials(lines: list[str], tag: str) -> list[tuple[str, ...]]:
    return [match.groups() for line in lines if tag in line and (match := DENIAL.search(line))]


def _kafka_denials(log: Path, tag: str, expected: int) -> list[tuple[str, ...]]:
    """Kafka's denial lines for this tag, once as many as kafka-shim logged have been written (or the bound passed)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        found = _denials(log.read_text(errors="replace").splitlines(), tag)
        if len(found) >= expected or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


@pytest.mark.parametrize("letters", [SHORT, LONG], ids=["3-names", "9-names"])
@pytest.mark.parametrize("build", REQUESTS, ids=[b.__name__ for b in REQUESTS])
def test_names_are_asked_in_kafkas_order(peers: Peers, logged_shim, build, letters: str) -> None:
    tag = uuid.uuid4().hex[:10]
    names = _names(tag, letters)
    api_key, version, body = build(names)
    kafka, shim = peers.both(api_key, version, body)
    entries = list(logged_shim[1])
    assert not kafka.closed and not shim.closed, (kafka, shim)
    shim_lines = _denials([e["event"] for e in entries if e.get("logger") == AUTHORIZER_LOGGER], tag)
    kafka_lines = _kafka_denials(Path(peers.oracle.info["files"]["authorizer_log"]), tag, len(shim_lines))
    assert len({line[1] for line in kafka_lines}) >= len(letters), f"Kafka denied fewer names than asked: {kafka_lines}"
    assert shim_lines == kafka_lines


@pytest.mark.parametrize("letters", [SHORT, LONG], ids=["3-names", "9-names"])
@pytest.mark.parametrize("build", list(GRANTED_FIRST), ids=[b.__name__ for b in GRANTED_FIRST])
def test_topics_after_a_granted_id_are_asked_in_kafkas_order(peers: Peers, logged_shim, build, letters: str) -> None:
    tag = uuid.uuid4().hex[:10]
    peers.grant(*(acl(rtype=rtype, name=f"ask-order-{tag}", principal=ANONYMOUS, operation=op) for rtype, op in GRANTED_FIRST[build]))
    api_key, version, body = build(tag, _names(tag, letters))
    kafka, shim = peers.both(api_key, version, body)
    entries = list(logged_shim[1])
    assert not kafka.closed and not shim.closed, (kafka, shim)
    shim_lines = _denials([e["event"] for e in entries if e.get("logger") == AUTHORIZER_LOGGER], tag)
    kafka_lines = _kafka_denials(Path(peers.oracle.info["files"]["authorizer_log"]), tag, len(shim_lines))
    assert {line[1] for line in kafka_lines} >= {f"Topic:LITERAL:{n}" for n in _names(tag, letters)}, kafka_lines
    assert shim_lines == kafka_lines
