"""Malformed record batches in a Produce request (tests/support/malformed.py): Kafka 3.9 and kafka-shim give the
same answer, field by field, and keep the connection open for the next request.

Produce v9 goes through every check of ProduceRequest.validateRecords; v2 has none of them, so its records reach
the log as sent (magic 0/1 message sets, several batches). Requests of several partitions show which failures
refuse one partition and which the whole request (KafkaApis answers an exception thrown while it walks the
batches with the request's error form: every partition, in the order of ProduceRequest.partitionSizes).
"""

from __future__ import annotations

import time
import uuid

import pytest

from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import CreateTopicsRequest, FetchRequest, ListOffsetsRequest, MetadataRequest, ProduceRequest
from tests.support.appending import T0, batch, values
from tests.support.compare import assert_same
from tests.support.malformed import (
    compressed_kept_batches,
    malformed_batches,
    malformed_message_sets,
    malformed_transactional_batches,
    odd_message_sets,
    transactional_batch,
    whole_read_batch,
    whole_read_records,
)
from tests.support.wire import Answer, Wire

PRODUCE, FETCH, LIST_OFFSETS, METADATA, CREATE_TOPICS = 0, 1, 2, 3, 19
CASES = malformed_batches()
MESSAGE_SET_CASES = malformed_message_sets()
TRANSACTIONAL_CASES = malformed_transactional_batches()
ODD_MESSAGE_SETS = odd_message_sets()
GARBAGE = CASES["garbage"]
COMPRESSED_KEPT = compressed_kept_batches()
WHOLE_READ = whole_read_records()
# Topics on which Kafka reads every record whole (DefaultRecord.readFrom): their configs, and whether the batch sent
# is gzip-compressed.
WHOLE_READ_TOPICS = {
    "compacted": ({"cleanup.policy": "compact"}, False),  # assignOffsetsNonCompressed: every record's key checked
    "recompressed-to-lz4": ({"compression.type": "lz4"}, True),  # a gzip batch rebuilt: records read from the stream
    "compressed-by-the-topic": ({"compression.type": "gzip"}, False),  # an uncompressed batch rebuilt
}


def _topic(address: tuple[str, int], name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
    with Wire(address, timeout=60) as wire:
        created = wire.request(CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30000, topics=[
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1, configs=[
                CreateTopicsRequest.CreatableTopicConfig(name=key, value=value)
                for key, value in (configs or {}).items()])]))
        assert created.body.topics[0].error_code == 0, created
        # Served once every partition answers ListOffsets: Kafka's metadata names the leader a little before its
        # ReplicaManager leads the partition (a Produce then gets NOT_LEADER_OR_FOLLOWER).
        latest = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name=name, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=i, current_leader_epoch=-1,
                                                                           timestamp=-1) for i in range(partitions)])])
        deadline = time.monotonic() + 60
        while True:
            answer = wire.request(LIST_OFFSETS, 7, latest)
            if all(p.error_code == 0 for t in answer.body.topics for p in t.partitions):
                return
            assert time.monotonic() < deadline, f"{address} never served {name}: {answer}"
            time.sleep(0.05)


def _produce(parts: list[tuple[str, int, bytes]], transactional_id: str | None = None, acks: int = -1) -> ProduceRequest:
    topics: dict[str, list[ProduceRequest.PartitionProduceData]] = {}
    for name, index, records in parts:
        topics.setdefault(name, []).append(ProduceRequest.PartitionProduceData(index=index, records=records))
    return ProduceRequest(transactional_id=transactional_id, acks=acks, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name=name, partition_data=data) for name, data in topics.items()])


def _send(address: tuple[str, int], topic: str, parts: list[tuple[str, int, bytes]], version: int,
          malformed: int, transactional_id: str | None) -> tuple[Answer, Answer]:
    """The malformed request's answer, then that of a valid batch to the malformed partition on the same connection
    (it must still serve)."""
    with Wire(address, timeout=60) as wire:
        first = wire.request(PRODUCE, version, _produce(parts, transactional_id))
        second = wire.request(PRODUCE, 9, _produce([(topic, malformed, batch(values("after", 1)))]))
    return first, second


def _compare(parts_of, version: int, what: str, partitions: int = 1, malformed: int = 0,
             transactional_id: str | None = None) -> None:
    name = f"malformed-{uuid.uuid4().hex[:8]}"
    answers = []
    for address in (oracle_address, shim_address_):
        _topic(address, name, partitions)
        answers.append(_send(address, name, parts_of(name), version, malformed, transactional_id))
    (kafka, kafka_next), (shim, shim_next) = answers
    assert not kafka.closed and not shim.closed
    assert any(p.error_code != 0 for t in kafka.body.responses for p in t.partition_responses), kafka
    assert_same(kafka, shim, what=what)
    # Nothing of the malformed request was written: the valid batch lands at offset 0 on both.
    assert_same(kafka_next, shim_next, what=f"{what}, then a valid batch")
    assert shim_next.body.responses[0].partition_responses[0].base_offset == 0


oracle_address: tuple[str, int]
shim_address_: tuple[str, int]


@pytest.fixture(autouse=True)
def _peers(oracle_open, shim_address) -> None:
    global oracle_address, shim_address_
    oracle_address, shim_address_ = oracle_open.plaintext, shim_address


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_batch(case: str) -> None:
    _compare(lambda name: [(name, 0, CASES[case])], 9, case)


@pytest.mark.parametrize("case", sorted(MESSAGE_SET_CASES))
def test_malformed_message_set_v2(case: str) -> None:
    # Produce v2 answers carry no log start offset nor message: a good partition beside shows whether the whole
    # request failed.
    good = batch(values("g", 2))
    _compare(lambda name: [(name, 0, MESSAGE_SET_CASES[case]), (name, 1, good)], 2, f"{case} (Produce v2)", partitions=2)


@pytest.mark.parametrize("case", ["garbage", "then-garbage", "absurd-batch-length", "then-absurd-batch-length",
                                  "batch-length-14-cut", "bad-crc", "first-17-bytes-wrong-magic"])
def test_malformed_among_good_partitions(case: str) -> None:
    good = batch(values("g", 2))
    _compare(lambda name: [(name, 0, good), (name, 2, CASES[case]), (name, 1, good), (name, 3, good),
                           (f"{name}-missing", 0, good)], 9, f"{case} beside good partitions", partitions=4, malformed=2)


@pytest.mark.parametrize("case", sorted(TRANSACTIONAL_CASES))
def test_malformed_transactional_batch(case: str) -> None:
    _compare(lambda name: [(name, 0, TRANSACTIONAL_CASES[case])], 9, case, transactional_id="malformed-txn")


@pytest.mark.parametrize("version", [3, 6, 7])
def test_unknown_codec_by_version(version: int) -> None:
    # Produce v3-v6 ask the first batch's codec in validateRecords (to refuse zstd); v7+ only the log does.
    _compare(lambda name: [(name, 0, CASES["unknown-codec"])], version, f"unknown-codec (Produce v{version})")


@pytest.mark.parametrize("transactional_first", [True, False])
def test_which_first_batches_kafka_reads(transactional_first: bool) -> None:
    # Kafka reads each partition's first batch for its transactional bit and stops at the first that has it: a
    # garbage partition after that one is not read then (the transactional id is refused first), one before is.
    def parts(name: str) -> list[tuple[str, int, bytes]]:
        txn, junk = (name, 0, transactional_batch()), (name, 1, GARBAGE)
        return [txn, junk] if transactional_first else [junk, txn]

    _compare(parts, 9, f"transactional batch {'before' if transactional_first else 'after'} garbage", partitions=2,
             malformed=1)


@pytest.mark.parametrize("case", ["garbage", "absurd-batch-length", "bad-crc"])
def test_malformed_batch_with_acks_0(case: str) -> None:
    # No answer is read with acks=0; a failed request closes the connection instead (the whole-request failures as
    # well as a refused partition). A Metadata request behind it tells which: answered, or the connection closed.
    name = f"malformed-{uuid.uuid4().hex[:8]}"
    after = []
    for address in (oracle_address, shim_address_):
        _topic(address, name)
        with Wire(address, timeout=60) as wire:
            wire.send_frame(encode_request(PRODUCE, 9, 7, _produce([(name, 0, CASES[case])], acks=0), client_id="differential"))
            after.append(wire.request(METADATA, 12, MetadataRequest(topics=[])))
    assert after[0].closed and after[1].closed, after


def _fetch(topic: str) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
                        session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
                            partition=0, fetch_offset=0, partition_max_bytes=1 << 20, log_start_offset=-1,
                            current_leader_epoch=-1, last_fetched_epoch=-1)])], forgotten_topics_data=[], rack_id="")


def _answers_and_kept(records: bytes, version: int, *then: bytes, configs: dict[str, str] | None = None,
                      offset_at: int | None = None) -> list[tuple[Answer, ...]]:
    """On each broker: the Produce of ``records`` to a new topic (with ``configs``), a Produce of each of ``then``,
    a Fetch of what the partition kept, and with ``offset_at`` a ListOffsets for that timestamp (it reads the stored
    records' timestamps)."""
    name = f"malformed-{uuid.uuid4().hex[:8]}"
    answers = []
    for address in (oracle_address, shim_address_):
        _topic(address, name, configs=configs)
        with Wire(address, timeout=60) as wire:
            exchanged = (wire.request(PRODUCE, version, _produce([(name, 0, records)])),
                         *(wire.request(PRODUCE, 9, _produce([(name, 0, more)])) for more in then),
                         wire.request(FETCH, 11, _fetch(name)))
            if offset_at is not None:
                exchanged += (wire.request(LIST_OFFSETS, 7, ListOffsetsRequest(
                    replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(name=name, partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1,
                                                                timestamp=offset_at)])])),)
            answers.append(exchanged)
    return answers


@pytest.mark.parametrize("case", sorted(ODD_MESSAGE_SETS))
def test_odd_but_readable_message_sets_are_kept(case: str) -> None:
    # Kafka reads a magic 0/1 message by its lengths: bytes after the value are ignored, a negative length is null.
    (kafka, kafka_fetch), (shim, shim_fetch) = _answers_and_kept(ODD_MESSAGE_SETS[case], 2)
    assert kafka.body.responses[0].partition_responses[0].error_code == 0, kafka
    assert_same(kafka, shim, what=case)
    assert_same(kafka_fetch, shim_fetch, what=f"{case}: the records kept")


@pytest.mark.parametrize("case", sorted(COMPRESSED_KEPT))
def test_compressed_batch_kept_in_place(case: str) -> None:
    # A topic that keeps the producer's codec reads the batch partially (DefaultRecord.readPartiallyFrom): some
    # broken records pass, offsets out of order fail with UNKNOWN_SERVER_ERROR; what is kept reads back the same.
    answers = _answers_and_kept(COMPRESSED_KEPT[case], 9, batch(values("after", 1)))
    (kafka, kafka_next, kafka_fetch), (shim, shim_next, shim_fetch) = answers
    assert not shim.closed and not kafka.closed
    assert_same(kafka, shim, what=case)
    assert_same(kafka_next, shim_next, what=f"{case}, then a valid batch")
    assert_same(kafka_fetch, shim_fetch, what=f"{case}: what was kept")


@pytest.mark.parametrize("topic", sorted(WHOLE_READ_TOPICS))
@pytest.mark.parametrize("case", sorted(WHOLE_READ))
def test_records_kafka_reads_whole(case: str, topic: str) -> None:
    # Where Kafka needs every record (DefaultRecord.readFrom) it reads leniently: a key size below -1 is null (a
    # compacted topic then refuses the record), header keys are bytes until a rebuilt batch writes them with invalid
    # UTF-8 replaced, extra bits of a long varint are dropped. Answers and what each partition kept are the same.
    configs, gzipped = WHOLE_READ_TOPICS[topic]
    answers = _answers_and_kept(whole_read_batch(WHOLE_READ[case], gzipped=gzipped), 9, batch(values("after", 1)),
                                configs=configs, offset_at=T0)
    (kafka, kafka_next, kafka_fetch, kafka_found), (shim, shim_next, shim_fetch, shim_found) = answers
    assert not shim.closed and not kafka.closed
    assert_same(kafka, shim, what=f"{case} on a {topic} topic")
    assert_same(kafka_next, shim_next, what=f"{case} on a {topic} topic, then a valid batch")
    assert_same(kafka_fetch, shim_fetch, what=f"{case} on a {topic} topic: what was kept")
    assert_same(kafka_found, shim_found, what=f"{case} on a {topic} topic: the offset for a timestamp")
