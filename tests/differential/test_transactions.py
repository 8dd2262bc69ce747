"""Transactions against a real Kafka 3.9, request by request: the same script of InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, Produce, TxnOffsetCommit, OffsetFetch, EndTxn, Fetch, DescribeTransactions and ListTransactions runs
on both brokers (each with the producer id it hands out), and every answer is compared field by field, producer ids
and times aside. Then the same requests denied by ACLs on the secured pair.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from kafka_shim.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    CreateTopicsRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FetchRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    ListTransactionsRequest,
    MetadataRequest,
    OffsetFetchRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)
from kafka_shim.protocol.records import build_batch, decode_batches, encode_batch
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.acl_peers import ANONYMOUS, CLUSTER, GROUP, READ, TOPIC, TRANSACTIONAL_ID, WRITE, Peers, acl
from tests.support.compare import field_diff, normalise
from tests.support.wire import Answer, Wire

PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_FETCH, FIND_COORDINATOR, INIT_PID, CREATE_TOPICS = 0, 1, 2, 3, 9, 10, 22, 19
ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT, DESCRIBE_TXNS, LIST_TXNS = 24, 25, 26, 28, 65, 66
# What legitimately differs between the two brokers' answers: the producer ids each hands out, times.
IGNORED = ("throttle_time_ms", "topics.*.topic_id", "producer_id", "*.producer_id", "*.*.producer_id", "*.*.*.producer_id",
           "*.*.*.*.producer_id", "transaction_states.*.transaction_start_time_ms", "*.log_append_time_ms",
           "*.*.*.log_append_time_ms", "records", "*.*.*.records", "responses.*.partitions.*.records")
_TopicTxn = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic


class Script:
    """Requests to one broker over one connection; each answer kept for comparison."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.wire = Wire(address, timeout=60)
        self.steps: list[tuple[str, Answer]] = []

    def __call__(self, what: str, api_key: int, version: int, body) -> Answer:
        answer = self.wire.request(api_key, version, body)
        assert not answer.closed, f"{what}: the broker closed the connection"
        self.steps.append((what, answer))
        return answer

    def wait_for_coordinator(self, transactional_id: str, group: str) -> None:
        """FindCoordinator until both keys have a coordinator and InitProducerId stops answering NOT_COORDINATOR /
        COORDINATOR_LOAD_IN_PROGRESS (Kafka loads a new __transaction_state partition a moment after creating it)."""
        deadline = time.monotonic() + 90
        while True:
            found = self.wire.request(FIND_COORDINATOR, 4, FindCoordinatorRequest(
                key_type=1, coordinator_keys=[transactional_id]))
            groups = self.wire.request(FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=[group]))
            codes = [c.error_code for a in (found, groups) for c in a.body.coordinators]
            if codes == [0, 0]:
                probe = self.wire.request(INIT_PID, 4, InitProducerIdRequest(
                    transactional_id=f"probe-{transactional_id}", transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1))
                # the group's offsets partition loads a moment later too: an OffsetFetch of no partitions answers
                # NOT_COORDINATOR (16) or COORDINATOR_LOAD_IN_PROGRESS (14) until it has
                offsets = self.wire.request(OFFSET_FETCH, 7, OffsetFetchRequest(group_id=group, topics=[], require_stable=False))
                if probe.body.error_code == 0 and offsets.body.error_code == 0:
                    return
                codes += [probe.body.error_code, offsets.body.error_code]
            assert time.monotonic() < deadline, f"no transaction or group coordinator at {self.wire.address}: {codes}"
            time.sleep(0.2)

    def wait_until_complete(self, transactional_id: str) -> None:
        """DescribeTransactions until the id leaves PrepareCommit / PrepareAbort: Kafka answers EndTxn once the
        prepare record is written and sends the markers afterwards (kafka-shim writes them before answering)."""
        deadline = time.monotonic() + 60
        while True:
            state = self.wire.request(DESCRIBE_TXNS, 0, DescribeTransactionsRequest(
                transactional_ids=[transactional_id])).body.transaction_states[0].transaction_state
            if not state.startswith("Prepare"):
                return
            assert time.monotonic() < deadline, f"{transactional_id} stays in {state} at {self.wire.address}"
            time.sleep(0.05)

    def close(self) -> None:
        self.wire.close()


def _batch(producer_id: int, epoch: int, sequence: int, values: list[bytes], transactional: bool = True) -> bytes:
    now = int(time.time() * 1000)
    return encode_batch(build_batch([(None, v, [], now) for v in values], transactional=transactional,
                                    producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence))


def _produce(topic: str, partition: int, records: bytes, transactional_id: str | None) -> ProduceRequest:
    return ProduceRequest(transactional_id=transactional_id, acks=-1, timeout_ms=30_000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=partition, records=records)])])


def _fetch(topic: str, partition: int, offset: int, isolation: int) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=isolation,
                        session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                            FetchRequest.FetchPartition(partition=partition, fetch_offset=offset, log_start_offset=-1,
                                                        partition_max_bytes=1 << 20, current_leader_epoch=-1)])],
                        forgotten_topics_data=[], rack_id="")


def _offset_fetch(group: str, topic: str, stable: bool) -> OffsetFetchRequest:
    return OffsetFetchRequest(group_id=group, require_stable=stable, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=[0, 1])])


def _txn_offsets(txn: str, group: str, pid: int, epoch: int, topic: str, offset: int) -> TxnOffsetCommitRequest:
    return TxnOffsetCommitRequest(transactional_id=txn, group_id=group, producer_id=pid, producer_epoch=epoch,
                                  generation_id=-1, member_id="", group_instance_id=None, topics=[
                                      TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=topic, partitions=[
                                          TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                                              partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
                                              committed_metadata="m")])])


def _topics_and_coordinators(run: Script, names: dict[str, str]) -> None:
    for name in (names["topic"], names["other"]):
        run("create " + name, CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30_000, validate_only=False, topics=[
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=2, replication_factor=1, assignments=[], configs=[])]))
    run.wait_for_coordinator(names["txn"], names["group"])


def _script(run: Script, names: dict[str, str]) -> None:
    """The whole conversation: the same requests on both brokers, built with each broker's own producer ids."""
    topic, other, txn, group = names["topic"], names["other"], names["txn"], names["group"]
    _topics_and_coordinators(run, names)
    first = run("init", INIT_PID, 4, InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60_000,
                                                            producer_id=-1, producer_epoch=-1)).body
    pid = first.producer_id
    run("init bad timeout", INIT_PID, 4, InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=3_600_000,
                                                                producer_id=-1, producer_epoch=-1))
    second = run("init again (KIP-360)", INIT_PID, 4, InitProducerIdRequest(
        transactional_id=txn, transaction_timeout_ms=60_000, producer_id=pid, producer_epoch=first.producer_epoch)).body
    epoch = second.producer_epoch
    run("end on Empty", END_TXN, 3, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch, committed=True))
    run("end unknown id", END_TXN, 3, EndTxnRequest(transactional_id=txn + "-x", producer_id=pid, producer_epoch=epoch, committed=True))

    def add(what: str, version: int, partitions: list[tuple[str, list[int]]], *, p: int = pid, e: int = epoch) -> Answer:
        return run(what, ADD_PARTITIONS, version, AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=txn, v3_and_below_producer_id=p, v3_and_below_producer_epoch=e,
            v3_and_below_topics=[_TopicTxn(name=n, partitions=ps) for n, ps in partitions]))

    add("add with an unknown partition", 3, [(topic, [0, 9])])
    add("add with an old epoch v3", 3, [(topic, [0])], e=epoch - 1)
    add("add with an old epoch v1", 1, [(topic, [0])], e=epoch - 1)
    add("add with another producer id", 3, [(topic, [0])], p=pid + 1000)
    add("add", 3, [(topic, [0, 1])])
    add("add again", 3, [(topic, [1])])
    # The coordinator's answer is errorResponseForTransaction: the request's own topics, repeats and empty lists kept.
    add("add repeating a topic and a partition, with an empty topic", 3, [(topic, [1, 1]), (other, []), (topic, [0])])
    add("add repeating a partition v0", 0, [(topic, [0, 0])])
    run("add offsets", ADD_OFFSETS, 3, AddOffsetsToTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch,
                                                              group_id=group))
    run("produce", PRODUCE, 9, _produce(topic, 0, _batch(pid, epoch, 0, [b"a", b"b"]), txn))
    run("produce to a partition not added v9", PRODUCE, 9, _produce(other, 0, _batch(pid, epoch, 0, [b"x"]), txn))
    run("produce to a partition not added v11", PRODUCE, 11, _produce(other, 1, _batch(pid, epoch, 0, [b"x"]), txn))
    run("produce with an old epoch", PRODUCE, 9, _produce(topic, 1, _batch(pid, epoch - 1, 0, [b"z"]), txn))
    run("fetch read_committed while open", FETCH, 11, _fetch(topic, 0, 0, 1))
    run("list offsets read_committed while open", LIST_OFFSETS, 5, ListOffsetsRequest(
        replica_id=-1, isolation_level=1, topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1)])]))
    run("txn offset commit", TXN_OFFSET_COMMIT, 3, _txn_offsets(txn, group, pid, epoch, topic, 2))
    run("offset fetch stable while open", OFFSET_FETCH, 7, _offset_fetch(group, topic, True))
    run("offset fetch unstable while open", OFFSET_FETCH, 7, _offset_fetch(group, topic, False))
    run("describe while open", DESCRIBE_TXNS, 0, DescribeTransactionsRequest(transactional_ids=[txn]))
    run("list ongoing", LIST_TXNS, 1, ListTransactionsRequest(state_filters=["Ongoing"], producer_id_filters=[pid]))
    run("commit", END_TXN, 3, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch, committed=True))
    run.wait_until_complete(txn)
    run("commit again", END_TXN, 3, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch, committed=True))
    run("abort after commit", END_TXN, 3, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch, committed=False))
    run("end with an old epoch v1", END_TXN, 1, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch - 1, committed=True))
    run("offset fetch stable after commit", OFFSET_FETCH, 7, _offset_fetch(group, topic, True))
    run("fetch read_committed after commit", FETCH, 11, _fetch(topic, 0, 0, 1))
    # An aborted transaction: its records stay in the log, listed as aborted to read_committed consumers.
    add("add for the abort", 3, [(topic, [0])])
    run("produce to abort", PRODUCE, 9, _produce(topic, 0, _batch(pid, epoch, 2, [b"gone"]), txn))
    run("abort", END_TXN, 3, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch, committed=False))
    run.wait_until_complete(txn)
    run("fetch read_committed after abort", FETCH, 11, _fetch(topic, 0, 0, 1))
    run("fetch read_uncommitted after abort", FETCH, 11, _fetch(topic, 0, 0, 0))
    run("describe after abort", DESCRIBE_TXNS, 0, DescribeTransactionsRequest(transactional_ids=[txn]))
    # A new producer for the id while a transaction is open fences the old one.
    add("add before fencing", 3, [(topic, [1])])
    run("produce before fencing", PRODUCE, 9, _produce(topic, 1, _batch(pid, epoch, 0, [b"zombie"]), txn))
    run("init fences", INIT_PID, 4, InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60_000,
                                                           producer_id=-1, producer_epoch=-1))
    fence_deadline = time.monotonic() + 30
    while True:  # Kafka answers CONCURRENT_TRANSACTIONS until its markers are written
        retried = run.wire.request(INIT_PID, 4, InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60_000,
                                                                      producer_id=-1, producer_epoch=-1))
        if retried.body.error_code != 51 or time.monotonic() > fence_deadline:
            break
        time.sleep(0.1)
    run.steps.append(("init after fencing", retried))
    run("zombie produces", PRODUCE, 9, _produce(topic, 1, _batch(pid, epoch, 1, [b"late"]), txn))
    run("zombie commits", END_TXN, 3, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch, committed=True))
    run("zombie adds", ADD_PARTITIONS, 3, AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=txn, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[_TopicTxn(name=topic, partitions=[0])]))
    run("fetch read_committed after fencing", FETCH, 11, _fetch(topic, 1, 0, 1))
    run("describe after fencing", DESCRIBE_TXNS, 0, DescribeTransactionsRequest(transactional_ids=[txn]))


def _plain(answer: Answer, producer_ids: dict[int, str]) -> object:
    body = answer.body.to_dict()
    for key in ("responses",):
        for t in body.get(key, []):
            for p in t.get("partitions", []):
                # Records: compared as their batches' shape (count, control, transactional), not their bytes.
                records = p.get("records")
                if records:
                    p["records_shape"] = [(b.last_offset_delta + 1, b.is_control, b.is_transactional)
                                          for b in decode_batches(records)]
                for aborted in p.get("aborted_transactions") or []:
                    aborted["producer_id"] = producer_ids.get(aborted["producer_id"], aborted["producer_id"])
    return normalise(body, IGNORED)


def _compare(kafka: Script, shim: Script) -> None:
    assert [w for w, _ in kafka.steps] == [w for w, _ in shim.steps]
    kafka_pid = next(a.body.producer_id for w, a in kafka.steps if w == "init")
    shim_pid = next(a.body.producer_id for w, a in shim.steps if w == "init")
    problems = []
    for (what, a), (_, b) in zip(kafka.steps, shim.steps, strict=True):
        diff = field_diff(_plain(a, {kafka_pid: "P"}), _plain(b, {shim_pid: "P"}))
        if diff:
            problems.append(f"{what}:\n    " + "\n    ".join(diff))
    assert not problems, "Kafka and kafka-shim disagree:\n  " + "\n  ".join(problems)


@pytest.fixture(scope="module")
def open_pair(oracle_open, shim_peer: EmbeddedBroker) -> Iterator[tuple[Callable[[], Script], Callable[[], Script]]]:
    host, port = shim_peer.bootstrap_servers.rsplit(":", 1)
    yield (lambda: Script(oracle_open.plaintext)), (lambda: Script((host, int(port))))


def _on_both(open_pair, script: Callable[[Script, dict[str, str]], None], prefix: str) -> None:
    """The script on Kafka, then on kafka-shim, under fresh names; the answers compared step by step."""
    kafka_script, shim_script = open_pair
    suffix = uuid.uuid4().hex[:8]
    names = {"topic": f"{prefix}-{suffix}", "other": f"{prefix}-other-{suffix}", "txn": f"tid-{prefix}-{suffix}",
             "group": f"g-{prefix}-{suffix}"}
    kafka, shim = kafka_script(), shim_script()
    try:
        script(kafka, names)
        script(shim, names)
        _compare(kafka, shim)
    finally:
        kafka.close()
        shim.close()


def test_a_whole_transaction_script_answers_as_kafka(open_pair) -> None:
    _on_both(open_pair, _script, "txn")


# -- denied ------------------------------------------------------------------------------------------------------------

def _add_v3(txn: str, topics: list[tuple[str, list[int]]]) -> AddPartitionsToTxnRequest:
    return AddPartitionsToTxnRequest(v3_and_below_transactional_id=txn, v3_and_below_producer_id=1,
                                     v3_and_below_producer_epoch=0,
                                     v3_and_below_topics=[_TopicTxn(name=n, partitions=ps) for n, ps in topics])


def test_denied_transaction_requests_answer_as_kafka(peers: Peers) -> None:
    txn, group = f"tid-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    topics = [("diff-topic", [0, 1]), ("__consumer_offsets", [0]), ("other", [2])]
    peers.same(INIT_PID, 4, InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=1000, producer_id=-1,
                                                  producer_epoch=-1), "InitProducerId without WRITE on the id")
    repeated = [("diff-topic", [0, 0, 1]), ("other", []), ("diff-topic", [1])]
    for version in (0, 3):
        peers.same(ADD_PARTITIONS, version, _add_v3(txn, topics), f"AddPartitionsToTxn v{version} without WRITE on the id")
        peers.same(ADD_PARTITIONS, version, _add_v3(txn, repeated),
                   f"AddPartitionsToTxn v{version} without WRITE on the id, topics and partitions repeated, one empty")
    peers.same(ADD_PARTITIONS, 4, AddPartitionsToTxnRequest(transactions=[AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
        transactional_id=txn, producer_id=1, producer_epoch=0, verify_only=True, topics=[_TopicTxn(name="t", partitions=[0])])]),
        "AddPartitionsToTxn v4 without CLUSTER_ACTION")
    peers.same(ADD_OFFSETS, 3, AddOffsetsToTxnRequest(transactional_id=txn, producer_id=1, producer_epoch=0, group_id=group),
               "AddOffsetsToTxn without WRITE on the id")
    peers.same(END_TXN, 3, EndTxnRequest(transactional_id=txn, producer_id=1, producer_epoch=0, committed=True),
               "EndTxn without WRITE on the id")
    peers.same(TXN_OFFSET_COMMIT, 3, _txn_offsets(txn, group, 1, 0, "diff-topic", 5), "TxnOffsetCommit without WRITE on the id")
    peers.grant(acl(rtype=TRANSACTIONAL_ID, name=txn, principal=ANONYMOUS, operation=WRITE))
    # Topics: WRITE on none of them (internal ones are never authorized): 29 for all, nothing attempted.
    peers.same(ADD_PARTITIONS, 3, _add_v3(txn, topics), "AddPartitionsToTxn v3 without WRITE on the topics")
    peers.same(ADD_OFFSETS, 3, AddOffsetsToTxnRequest(transactional_id=txn, producer_id=1, producer_epoch=0, group_id=group),
               "AddOffsetsToTxn without READ on the group")
    peers.same(TXN_OFFSET_COMMIT, 3, _txn_offsets(txn, group, 1, 0, "diff-topic", 5), "TxnOffsetCommit without READ on the group")
    peers.grant(acl(rtype=TOPIC, name="diff-topic", principal=ANONYMOUS, operation=WRITE),
                acl(rtype=GROUP, name=group, principal=ANONYMOUS, operation=READ))
    # One writable topic that does not exist on either broker: 3 for it, 29 / 55 for the others.
    peers.same(ADD_PARTITIONS, 3, _add_v3(txn, topics), "AddPartitionsToTxn v3 with one writable, unknown topic")
    peers.same(TXN_OFFSET_COMMIT, 3, _txn_offsets(txn, group, 1, 0, "diff-topic", 5), "TxnOffsetCommit without READ on the topic")
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=READ))  # not CLUSTER_ACTION
    peers.same(ADD_PARTITIONS, 4, AddPartitionsToTxnRequest(transactions=[AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
        transactional_id=txn, producer_id=1, producer_epoch=0, verify_only=True, topics=[_TopicTxn(name="t", partitions=[0])])]),
        "AddPartitionsToTxn v4 with READ but not CLUSTER_ACTION on the cluster")


def test_add_partitions_v4_naming_no_transaction(oracle_open, shim_peer: EmbeddedBroker) -> None:
    # Kafka sends a v4+ answer once every transaction has its result, so with none it never answers; kafka-shim closes.
    request = AddPartitionsToTxnRequest(transactions=[])
    for version in (4, 5):
        with Wire(oracle_open.plaintext, timeout=3) as wire:
            try:
                kafka: Answer | None = wire.request(ADD_PARTITIONS, version, request)
            except TimeoutError:
                kafka = None
        host, port = shim_peer.bootstrap_servers.rsplit(":", 1)
        with Wire((host, int(port)), timeout=10) as wire:
            shim = wire.request(ADD_PARTITIONS, version, request)
        assert kafka is None or kafka.closed, f"Kafka answered: {kafka}"
        assert shim.closed, f"kafka-shim answered AddPartitionsToTxn v{version} naming no transaction: {shim}"


def _other_epochs(run: Script, names: dict[str, str]) -> None:
    """Produces of another epoch to a partition where the producer id has an open transaction: Kafka verifies none of
    them (UnifiedLog.hasOngoingTransaction looks at the id alone), so the log's epoch and sequence checks answer;
    and a Produce that needs no verification is answered in the plain produce order."""
    topic, other, txn = names["topic"], names["other"], names["txn"]
    _topics_and_coordinators(run, names)
    pid = run("init", INIT_PID, 4, InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60_000,
                                                          producer_id=-1, producer_epoch=-1)).body.producer_id
    run("KIP-360 init", INIT_PID, 4, InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60_000,
                                                           producer_id=pid, producer_epoch=0))
    run("add", ADD_PARTITIONS, 3, _add_v3_with(txn, pid, 1, [(topic, [1]), (other, [0])]))
    run("produce at epoch 1", PRODUCE, 9, _produce(topic, 1, _batch(pid, 1, 0, [b"a"]), txn))
    run("produce to the other topic", PRODUCE, 9, _produce(other, 0, _batch(pid, 1, 0, [b"o"]), txn))
    run("an older epoch", PRODUCE, 9, _produce(topic, 1, _batch(pid, 0, 1, [b"b"]), txn))
    run("a newer epoch, sequence 1", PRODUCE, 9, _produce(topic, 1, _batch(pid, 2, 1, [b"c"]), txn))
    several = ProduceRequest(transactional_id=txn, acks=-1, timeout_ms=30_000, topic_data=[
        ProduceRequest.TopicProduceData(name=other, partition_data=[
            ProduceRequest.PartitionProduceData(index=5, records=_batch(pid, 1, 1, [b"x"])),
            ProduceRequest.PartitionProduceData(index=0, records=_batch(pid, 1, 1, [b"y"]))]),
        ProduceRequest.TopicProduceData(name=f"{topic}-nope", partition_data=[
            ProduceRequest.PartitionProduceData(index=3, records=_batch(pid, 1, 1, [b"z"]))]),
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=1, records=_batch(pid, 1, 1, [b"w"]))])])
    run("several partitions, none to verify", PRODUCE, 9, several)
    run("a newer epoch, sequence 0", PRODUCE, 9, _produce(topic, 1, _batch(pid, 2, 0, [b"d"]), txn))


def _add_v3_with(txn: str, pid: int, epoch: int, topics: list[tuple[str, list[int]]]) -> AddPartitionsToTxnRequest:
    return AddPartitionsToTxnRequest(v3_and_below_transactional_id=txn, v3_and_below_producer_id=pid,
                                     v3_and_below_producer_epoch=epoch,
                                     v3_and_below_topics=[_TopicTxn(name=name, partitions=parts) for name, parts in topics])


def test_produces_of_another_epoch_inside_an_open_transaction(open_pair) -> None:
    _on_both(open_pair, _other_epochs, "txe")


def _held_back_sequences(run: Script, names: dict[str, str]) -> None:
    """A transactional Produce refused because its partition is not in the transaction leaves a verification entry
    there (Kafka's VerificationStateEntry) holding the lowest sequence tried: until a transactional batch of the
    producer is written to the partition, a batch of a higher sequence is OUT_OF_ORDER_SEQUENCE_NUMBER (45), the
    producer's plain (idempotent) batches too; a newer epoch replaces the entry's sequence."""
    topic, other, txn = names["topic"], names["other"], names["txn"]
    _topics_and_coordinators(run, names)
    _wait_for_partitions(run, [topic, other], 2)
    pid = run("init", INIT_PID, 4, InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60_000,
                                                          producer_id=-1, producer_epoch=-1)).body.producer_id
    run("sequence 3, the partition not added", PRODUCE, 9, _produce(topic, 0, _batch(pid, 0, 3, [b"a"]), txn))
    run("sequence 1, the partition not added", PRODUCE, 9, _produce(topic, 0, _batch(pid, 0, 1, [b"a"]), txn))
    run("sequence 4, the partition not added, v11", PRODUCE, 11, _produce(topic, 0, _batch(pid, 0, 4, [b"a"]), txn))
    run("add", ADD_PARTITIONS, 3, _add_v3_with(txn, pid, 0, [(topic, [0])]))
    run("sequence 2, above the lowest tried", PRODUCE, 9, _produce(topic, 0, _batch(pid, 0, 2, [b"a", b"b"]), txn))
    run("sequence 1, the lowest tried", PRODUCE, 9, _produce(topic, 0, _batch(pid, 0, 1, [b"a"]), txn))
    run("sequence 2, once written", PRODUCE, 9, _produce(topic, 0, _batch(pid, 0, 2, [b"a"]), txn))
    run("another partition, not added", PRODUCE, 9, _produce(other, 0, _batch(pid, 0, 0, [b"a"]), txn))
    run("a plain batch of the producer, sequence 3", PRODUCE, 9,
        _produce(other, 0, _batch(pid, 0, 3, [b"a"], transactional=False), None))
    run("a plain batch of the producer, sequence 0", PRODUCE, 9,
        _produce(other, 0, _batch(pid, 0, 0, [b"a"], transactional=False), None))
    run("a plain batch of the producer, sequence 1", PRODUCE, 9,
        _produce(other, 0, _batch(pid, 0, 1, [b"a"], transactional=False), None))
    run("abort", END_TXN, 3, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=0, committed=False))
    run.wait_until_complete(txn)
    run("sequence 4 again, not added", PRODUCE, 9, _produce(other, 1, _batch(pid, 0, 4, [b"a"]), txn))
    run("KIP-360 init", INIT_PID, 4, InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60_000,
                                                           producer_id=pid, producer_epoch=0))
    run("add at the new epoch", ADD_PARTITIONS, 3, _add_v3_with(txn, pid, 1, [(other, [1])]))
    run("sequence 7 at the new epoch", PRODUCE, 9, _produce(other, 1, _batch(pid, 1, 7, [b"a"]), txn))
    run("sequence 8 at the new epoch", PRODUCE, 9, _produce(other, 1, _batch(pid, 1, 8, [b"a"]), txn))


def test_a_produce_refused_verification_holds_back_higher_sequences(open_pair) -> None:
    _on_both(open_pair, _held_back_sequences, "txs")


def _verify_only(run: Script, names: dict[str, str]) -> None:
    """AddPartitionsToTxn v4 ``verify_only`` (what a partition leader asks the coordinator): Kafka answers from a Scala
    Map of the partitions' errors, so beyond four partitions in the immutable HashMap's order. Up to four it keeps
    the order of a mutable HashSet of (partition, error) pairs, which hashes the Errors enum by identity: that
    order changes from one Kafka JVM to the next, so those answers are compared sorted."""
    topic, other, txn = names["topic"], names["other"], names["txn"]
    for name in (topic, other):
        run("create " + name, CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30_000, validate_only=False, topics=[
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=8, replication_factor=1, assignments=[], configs=[])]))
    run.wait_for_coordinator(txn, names["group"])
    _wait_for_partitions(run, [topic, other], 8)
    pid = run("init", INIT_PID, 4, InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60_000,
                                                          producer_id=-1, producer_epoch=-1)).body.producer_id

    def verify(what: str, topics: list[tuple[str, list[int]]], producer_id: int = pid, *, sort: bool = False) -> None:
        answer = run(what, ADD_PARTITIONS, 4, AddPartitionsToTxnRequest(transactions=[
            AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
                transactional_id=txn, producer_id=producer_id, producer_epoch=0, verify_only=True,
                topics=[_TopicTxn(name=name, partitions=parts) for name, parts in topics])]))
        for result in answer.body.results_by_transaction if sort else []:
            result.topic_results.sort(key=lambda t: t.name)  # topics sharing a HashMap bucket follow that order too
            for topic_result in result.topic_results:
                topic_result.results_by_partition.sort(key=lambda p: p.partition_index)

    verify("none added", [(topic, list(range(8)))])
    verify("another producer id", [(topic, list(range(8))[::-1])], pid + 1000)
    run("add", ADD_PARTITIONS, 3, _add_v3_with(txn, pid, 0, [(topic, [0, 1, 2, 5]), (other, [3])]))
    verify("some added", [(topic, list(range(8))[::-1]), (other, [2, 3])])
    verify("four partitions", [(other, [2, 3]), (topic, [1, 0])], sort=True)


def _wait_for_partitions(run: Script, topics: list[str], count: int) -> None:
    """Metadata until every topic shows ``count`` partitions: a Kafka broker learns of new partitions from its
    metadata log a moment after CreateTopics answers, and until then AddPartitionsToTxn answers them 3."""
    deadline = time.monotonic() + 60
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name) for name in topics],
                              allow_auto_topic_creation=False)
    while True:
        known = run.wire.request(METADATA, 12, request).body.topics
        if all(t.error_code == 0 and len(t.partitions) == count for t in known):
            return
        assert time.monotonic() < deadline, f"{topics} never all showed {count} partitions at {run.wire.address}"
        time.sleep(0.05)


def test_verify_only_answers_list_partitions_in_kafkas_order(open_pair) -> None:
    _on_both(open_pair, _verify_only, "txv")


def _timed_out(run: Script, names: dict[str, str]) -> None:
    """A transaction left open past its timeout (a Kafka Streams thread paused longer than its
    ``transaction.timeout.ms``): the coordinator's timer (every
    ``transaction.abort.timed.out.transaction.cleanup.interval.ms``, 10 s) fences it with a bumped epoch and aborts
    it; then the stale producer's requests at its old epoch (Produce 47, AddPartitionsToTxn / EndTxn 90...), its
    KIP-360 recovery with that epoch (refused, 90) and a new producer's transaction."""
    topic, txn, group = names["topic"], names["txn"], names["group"]
    _topics_and_coordinators(run, names)
    _wait_for_partitions(run, [topic], 2)
    pid = run("init", INIT_PID, 4, InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=1000,
                                                          producer_id=-1, producer_epoch=-1)).body.producer_id
    run("add", ADD_PARTITIONS, 3, _add_v3_with(txn, pid, 0, [(topic, [0])]))
    run("add offsets", ADD_OFFSETS, 3, AddOffsetsToTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=0,
                                                              group_id=group))
    run("produce", PRODUCE, 9, _produce(topic, 0, _batch(pid, 0, 0, [b"a", b"b"]), txn))
    deadline = time.monotonic() + 60
    while True:  # the coordinator's timer aborts it within one interval (10 s) after the timeout
        state = run.wire.request(DESCRIBE_TXNS, 0, DescribeTransactionsRequest(
            transactional_ids=[txn])).body.transaction_states[0].transaction_state
        if state == "CompleteAbort":
            break
        assert time.monotonic() < deadline, f"{txn} was never aborted at {run.wire.address}: {state}"
        time.sleep(0.2)
    run("describe after the timeout", DESCRIBE_TXNS, 0, DescribeTransactionsRequest(transactional_ids=[txn]))
    run("fetch read_committed after the timeout", FETCH, 11, _fetch(topic, 0, 0, 1))
    run("stale produce", PRODUCE, 9, _produce(topic, 0, _batch(pid, 0, 1, [b"late"]), txn))
    run("stale produce v11", PRODUCE, 11, _produce(topic, 0, _batch(pid, 0, 1, [b"late"]), txn))
    run("stale add", ADD_PARTITIONS, 3, _add_v3_with(txn, pid, 0, [(topic, [1])]))
    run("stale add offsets", ADD_OFFSETS, 3, AddOffsetsToTxnRequest(transactional_id=txn, producer_id=pid,
                                                                    producer_epoch=0, group_id=group))
    run("stale txn offset commit", TXN_OFFSET_COMMIT, 3, _txn_offsets(txn, group, pid, 0, topic, 2))
    run("stale commit", END_TXN, 3, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=0, committed=True))
    run("stale abort", END_TXN, 3, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=0, committed=False))
    run("stale abort v1", END_TXN, 1, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=0, committed=False))
    # KIP-360 recovery with the epoch the timeout fenced is refused (PRODUCER_FENCED): only a new producer goes on.
    run("KIP-360 init with the stale epoch", INIT_PID, 4, InitProducerIdRequest(
        transactional_id=txn, transaction_timeout_ms=60_000, producer_id=pid, producer_epoch=0))
    epoch = run("init a new producer", INIT_PID, 4, InitProducerIdRequest(
        transactional_id=txn, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1)).body.producer_epoch
    run("describe after the new producer", DESCRIBE_TXNS, 0, DescribeTransactionsRequest(transactional_ids=[txn]))
    run("add at the new epoch", ADD_PARTITIONS, 3, _add_v3_with(txn, pid, epoch, [(topic, [0])]))
    run("produce at the new epoch", PRODUCE, 9, _produce(topic, 0, _batch(pid, epoch, 0, [b"c"]), txn))
    run("commit at the new epoch", END_TXN, 3, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch,
                                                             committed=True))
    run.wait_until_complete(txn)
    run("fetch read_committed after the commit", FETCH, 11, _fetch(topic, 0, 0, 1))


def test_a_transaction_aborted_by_its_timeout(open_pair) -> None:
    _on_both(open_pair, _timed_out, "txto")
