"""Produce (0) and InitProducerId (22): Apache Kafka 3.9 and kafka-shim, the same request bytes, the answers compared
field by field (the append time of LogAppendTime answers, and timing, aside).

Topics are made on Kafka with CreateTopics and on kafka-shim with Partitions.create_topic, each test with fresh names
so that offsets start at 0 on both. Idempotent batches use a producer id neither broker handed out: Kafka 3.9 accepts
a producer it does not know at any sequence, and so does kafka-shim.
"""

from __future__ import annotations

import random
import struct
import time
import uuid
from collections.abc import Iterator

import crc32c
import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafka_shim.authorizer import (
    MATCH_ANY,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import (
    CreateAclsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    FetchRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    ProduceRequest,
)
from kafka_shim.protocol.records import Compression, build_batch, decode_batches, encode_batch
from kafka_shim.protocol.records.compression import compress
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.compare import assert_same
from tests.support.malformed import legacy_message
from tests.support.peers import _address
from tests.support.wire import Answer, Wire, exchange_both

PRODUCE, FETCH, LIST_OFFSETS, CREATE_TOPICS, INIT_PRODUCER_ID, CREATE_ACLS, DELETE_ACLS = 0, 1, 2, 19, 22, 30, 31
NOW = int(time.time() * 1000)
APPEND_TIME = ("responses.*.partition_responses.*.log_append_time_ms",)


def _name(tag: str) -> str:
    return f"produce-{tag}-{uuid.uuid4().hex[:8]}"


def _batch(values: list[bytes], *, key: bytes | None = b"k", **kw: object) -> bytes:
    return encode_batch(build_batch([(key, v, [("h", b"v")], NOW + i) for i, v in enumerate(values)], **kw))


def _produce(topics: dict[str, dict[int, bytes]], acks: int = -1, transactional_id: str | None = None) -> ProduceRequest:
    return ProduceRequest(transactional_id=transactional_id, acks=acks, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name=name, partition_data=[
            ProduceRequest.PartitionProduceData(index=i, records=r) for i, r in parts.items()])
        for name, parts in topics.items()])


class Pair:
    """Kafka (``kafka``: the PLAINTEXT address the tests use; ``admin``: how to make topics and ACLs) and kafka-shim."""

    def __init__(self, kafka, shim: EmbeddedBroker, secured: bool) -> None:
        self.kafka = kafka
        self.shim = shim
        self.secured = secured
        self.shim_address = _address("PLAINTEXT://" + shim.bootstrap_servers)
        self._cid = 5000

    def _admin(self) -> Wire:
        if not self.secured:
            return Wire(self.kafka.plaintext)
        wire = Wire(self.kafka.sasl)
        wire.sasl_plain("admin", "admin-secret")
        return wire

    def topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> str:
        configs = configs or {}
        request = CreateTopicsRequest(timeout_ms=30000, topics=[CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=1,
            configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])])
        with self._admin() as admin:
            answer = admin.request(CREATE_TOPICS, 5, request)
            assert [t.error_code for t in answer.body.topics] == [0], answer
            deadline = time.monotonic() + 30
            listing = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
                name=name, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=i, timestamp=-1)
                                       for i in range(partitions)])])
            while True:  # Kafka's broker opens the partitions asynchronously; ListOffsets answers 0 once they are led
                answer = admin.request(LIST_OFFSETS, 7, listing)
                if [p.error_code for t in answer.body.topics for p in t.partitions] == [0] * partitions:
                    break
                assert time.monotonic() < deadline, f"Kafka never made {name} ready: {answer}"
                time.sleep(0.05)
        self.shim.call(lambda: self.shim.broker.services.partitions.create_topic(name, partitions, configs))
        return name

    def grant(self, *bindings: AclBinding) -> None:
        creations = [CreateAclsRequest.AclCreation(
            resource_type=int(b.pattern.resource_type), resource_name=b.pattern.name, resource_pattern_type=int(b.pattern.pattern_type),
            principal=b.entry.principal, host=b.entry.host, operation=int(b.entry.operation),
            permission_type=int(b.entry.permission_type)) for b in bindings]
        with self._admin() as admin:
            answer = admin.request(CREATE_ACLS, 3, CreateAclsRequest(creations=creations))
        assert [r.error_code for r in answer.body.results] == [0] * len(creations), answer
        results = self.shim.call(lambda: self.shim.broker.authorizer.create_acls(list(bindings)))
        assert all(r.error is None for r in results), results
        time.sleep(0.5)  # Kafka's broker applies ACLs from its metadata log asynchronously

    def reset_acls(self) -> None:
        with self._admin() as admin:
            admin.request(DELETE_ACLS, 3, DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(
                resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter=None, host_filter=None,
                operation=1, permission_type=1)]))
        self.shim.call(lambda: self.shim.broker.authorizer.delete_acls([MATCH_ANY]))
        time.sleep(0.5)

    def both(self, api_key: int, version: int, body) -> tuple[Answer, Answer]:
        self._cid += 1
        frame = encode_request(api_key, version, self._cid, body)
        return exchange_both(self.kafka.plaintext, self.shim_address, frame, api_key, version)

    def same(self, api_key: int, version: int, body, what: str, ignore: tuple[str, ...] = ()) -> tuple[Answer, Answer]:
        kafka, shim = self.both(api_key, version, body)
        assert_same(kafka, shim, ignore=ignore, what=what)
        return kafka, shim

    def on_one_connection(self, steps: list[tuple[int, int, object]]) -> list[tuple[Answer, Answer]]:
        """Several requests, each broker on one connection (what a producer's retries look like)."""
        with Wire(self.kafka.plaintext) as kafka, Wire(self.shim_address) as shim:
            return [(kafka.request(k, v, b), shim.request(k, v, b)) for k, v, b in steps]


@pytest.fixture(scope="module")
def open_pair(oracle_open, shim_peer) -> Pair:
    return Pair(oracle_open, shim_peer, secured=False)


@pytest.fixture(scope="module")
def shim_secured() -> Iterator[EmbeddedBroker]:
    config = BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "auto.create.topics.enable": "false",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:admin",
        "offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
    })
    with EmbeddedBroker(config) as broker:
        yield broker


@pytest.fixture
def secured_pair(oracle, shim_secured) -> Iterator[Pair]:
    pair = Pair(oracle, shim_secured, secured=True)
    pair.reset_acls()
    yield pair
    pair.reset_acls()


def _acl(rtype: ResourceType, name: str, operation: AclOperation, pattern: PatternType = PatternType.LITERAL,
         permission: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry("User:ANONYMOUS", "*", operation, permission))


# -- Produce errors, no authorizer -------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [2, 3, 7, 8, 9, 11])
def test_written_and_unknown_partitions(open_pair: Pair, version: int) -> None:
    topic = open_pair.topic(_name("known"), 2)
    body = _produce({topic: {0: _batch([b"a", b"b"]), 1: _batch([b"c"]), 7: _batch([b"x"])}, _name("absent"): {0: _batch([b"y"])}})
    kafka, _ = open_pair.same(PRODUCE, version, body, what=f"Produce v{version} to known and unknown partitions")
    assert sorted(p.error_code for t in kafka.body.responses for p in t.partition_responses) == [0, 0, 3, 3]


@pytest.mark.parametrize("partitions", [3, 6, 13])
def test_partition_order_of_larger_answers(open_pair: Pair, partitions: int) -> None:
    """Kafka answers in the order of its hash maps: from five partitions on, a CHAMP trie's order."""
    first, second = open_pair.topic(_name("many"), partitions), open_pair.topic(_name("more"), 2)
    body = _produce({first: {i: _batch([b"v%d" % i]) for i in range(partitions + 2)}, second: {1: _batch([b"a"]), 0: _batch([b"b"])},
                     _name("absent"): {0: _batch([b"c"]), 1: _batch([b"d"])}})
    open_pair.same(PRODUCE, 9, body, what=f"Produce to {partitions + 6} partitions")


def test_bad_crc(open_pair: Pair) -> None:
    topic = open_pair.topic(_name("crc"))
    data = bytearray(_batch([b"a"]))
    data[-1] ^= 0xFF
    kafka, _ = open_pair.same(PRODUCE, 9, _produce({topic: {0: bytes(data)}}), what="a batch with a bad CRC")
    assert kafka.body.responses[0].partition_responses[0].error_code == 2


@pytest.mark.parametrize("min_isr", ["1", "2", "3"])
def test_acks_all_with_min_insync_replicas_above_the_replication_factor(open_pair: Pair, min_isr: str) -> None:
    # Partition.effectiveMinIsr (3.7+): on a topic of one replica, min.insync.replicas counts as at most 1.
    topic = open_pair.topic(_name(f"min-isr-{min_isr}"), configs={"min.insync.replicas": min_isr})
    kafka, _ = open_pair.same(PRODUCE, 9, _produce({topic: {0: _batch([b"v"])}}, acks=-1), what=f"acks=-1, min.insync.replicas={min_isr}")
    assert kafka.body.responses[0].partition_responses[0].error_code == 0


def test_too_large_for_max_message_bytes_and_segment_bytes(open_pair: Pair) -> None:
    small = open_pair.topic(_name("small"), configs={"max.message.bytes": "200"})
    kafka, _ = open_pair.same(PRODUCE, 9, _produce({small: {0: _batch([b"x" * 300])}}), what="a batch above max.message.bytes")
    assert kafka.body.responses[0].partition_responses[0].error_code == 10


def _with_crc(data: bytearray) -> bytes:
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


@pytest.mark.parametrize(("codec", "at"), [(Compression.NONE, 61), (Compression.NONE, 64), (Compression.GZIP, 70), (Compression.ZSTD, 70)])
def test_unreadable_records_under_a_valid_crc(open_pair: Pair, codec: Compression, at: int) -> None:
    topic = open_pair.topic(_name("garbled"))
    data = bytearray(_batch([b"a" * 50, b"b" * 50], compression=codec))
    data[at : at + 4] = b"\xff\xfe\xfd\xfc"  # inside the (compressed) records: a record's length, its fields, the codec's frame
    open_pair.same(PRODUCE, 9, _produce({topic: {0: _with_crc(data)}}), what=f"unreadable {codec.name} records")


@pytest.mark.parametrize("case", ["base-offset", "control", "two-batches-v3", "zstd-v6", "legacy-v3", "count"])
def test_invalid_batches(open_pair: Pair, case: str) -> None:
    topic = open_pair.topic(_name("invalid"))
    version = 9
    if case == "base-offset":
        records = _batch([b"a"], base_offset=5)
    elif case == "control":
        records = _batch([b"a"], control=True)
    elif case == "two-batches-v3":
        records, version = _batch([b"a"]) + _batch([b"b"]), 3
    elif case == "zstd-v6":
        records, version = _batch([b"a"], compression=Compression.ZSTD), 6
    elif case == "legacy-v3":
        builder = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
        builder.append(0, timestamp=NOW, key=b"k", value=b"v")
        records, version = bytes(builder.build()), 3
    else:
        data = bytearray(_batch([b"a", b"b"]))
        struct.pack_into(">i", data, 57, 3)
        struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
        records = bytes(data)
    kafka, _ = open_pair.same(PRODUCE, version, _produce({topic: {0: records}}), what=f"Produce v{version}: {case}")
    assert kafka.body.responses[0].partition_responses[0].error_code != 0


@pytest.mark.parametrize("version", [7, 8, 11])
def test_record_errors_of_a_compacted_topic(open_pair: Pair, version: int) -> None:
    topic = open_pair.topic(_name("compact"), configs={"cleanup.policy": "compact"})
    records = encode_batch(build_batch([(None, b"a", [], NOW), (b"k", b"b", [], NOW), (None, b"c", [], NOW)]))
    kafka, _ = open_pair.same(PRODUCE, version, _produce({topic: {0: records}}), what="records without keys on a compacted topic")
    assert kafka.body.responses[0].partition_responses[0].error_code == 87


def test_timestamps_out_of_bounds(open_pair: Pair) -> None:
    topic = open_pair.topic(_name("bounds"), configs={"message.timestamp.before.max.ms": "60000"})
    records = encode_batch(build_batch([(b"k", b"a", [], NOW - 3_600_000), (b"k", b"b", [], NOW)]))
    # The record error's text quotes each broker's clock ("should be within [now - 60000, ...]").
    kafka, _ = open_pair.same(PRODUCE, 9, _produce({topic: {0: records}}), what="a timestamp before message.timestamp.before.max.ms",
                              ignore=("responses.*.partition_responses.*.record_errors.*.batch_index_error_message",))
    assert kafka.body.responses[0].partition_responses[0].error_code == 32


def test_log_append_time_topic(open_pair: Pair) -> None:
    topic = open_pair.topic(_name("lat"), configs={"message.timestamp.type": "LogAppendTime"})
    kafka, shim = open_pair.same(PRODUCE, 9, _produce({topic: {0: _batch([b"a"])}}), what="a LogAppendTime topic", ignore=APPEND_TIME)
    for answer in (kafka, shim):
        assert answer.body.responses[0].partition_responses[0].log_append_time_ms >= NOW


# Codec 3 (lz4): at magic 0 the frame carries Kafka 0.8's header checksum, as sarama at 0.8-0.9 writes it.
@pytest.mark.parametrize(("magic", "codec"), [(0, 0), (1, 0), (1, 1), (0, 3), (1, 3)])
def test_magic_0_and_1_message_sets(open_pair: Pair, magic: int, codec: int) -> None:
    topic = open_pair.topic(_name("legacy"))
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec if codec != 3 else 0, batch_size=1 << 20)
    for i in range(3):
        builder.append(i, timestamp=NOW + i, key=b"k", value=b"v%d" % i)
    records = bytes(builder.build())
    if codec == 3:  # kafka-python needs xxhash for magic 0 lz4: the wrapper is made here
        frame = compress(Compression.LZ4, records, magic)
        assert frame[6] == (0x1A if magic == 0 else 0x82)  # the frame header's checksum byte
        records = legacy_message(magic, frame, offset=2, timestamp=NOW + 2, attributes=3)
    for version in (0, 2):
        open_pair.same(PRODUCE, version, _produce({topic: {0: records}}), what=f"magic {magic} codec {codec}, Produce v{version}")


def test_topic_compression_differs(open_pair: Pair) -> None:
    topic = open_pair.topic(_name("gzip"), configs={"compression.type": "gzip"})
    for codec in (Compression.NONE, Compression.LZ4, Compression.GZIP):
        open_pair.same(PRODUCE, 9, _produce({topic: {0: _batch([b"a", b"b"], compression=codec)}}), what=f"{codec.name} to a gzip topic")


@pytest.mark.parametrize("codec", ["zstd", "gzip", "lz4", "snappy"])
def test_a_topic_codec_compresses_to_kafkas_bytes(open_pair: Pair, codec: str) -> None:
    """An uncompressed batch to a topic with compression.type=<codec> is stored as Kafka's own compressor writes it:
    the same bytes, CRC included (zstd: libzstd 1.5.6's choices, as zstd-jni's in Kafka 3.9, and its framing)."""
    topic = open_pair.topic(_name(codec), configs={"compression.type": codec, "max.message.bytes": "4000000"})
    noise = random.Random(codec)
    shapes = [
        [b"value-%d" % i for i in range(5)],
        [(b"lorem ipsum %d dolor " % i) * 30 for i in range(100)],
        [(b"abc%d" % (i % 7)) * 500 + noise.randbytes(200) for i in range(200)],
        [noise.randbytes(3000) for _ in range(100)],
    ]
    for values in shapes:
        open_pair.same(PRODUCE, 9, _produce({topic: {0: _batch(values)}}), what=f"{len(values)} records to a {codec} topic")
    kafka, shim = _stored(open_pair, topic)
    assert len(decode_batches(kafka)) == len(shapes) and shim == kafka


def test_small_batches_to_a_snappy_topic_are_kafkas_bytes(open_pair: Pair) -> None:
    """Records of 8 KiB or less (a batch's, or the last 32 KiB xerial block of a larger one) recompressed for a snappy
    topic: snappy-java's snappy 1.1.10 sizes its hash table to them, so its matches (and Kafka's bytes) are its own."""
    topic = open_pair.topic(_name("snappy-small"), configs={"compression.type": "snappy", "max.message.bytes": "4000000"})
    noise = random.Random("snappy-small")
    words = [bytes(noise.choices(b"abcdefghij", k=noise.randrange(2, 9))) for _ in range(40)]
    shapes = [
        [b'{"user": "user-%d", "action": "%s"}' % (i % 5, noise.choice([b"view", b"buy", b"click"])) for i in range(12)],
        [b" ".join(noise.choices(words, k=20)) for _ in range(40)],
        [b"key-%d value-%d " % (noise.randrange(1000), noise.randrange(100)) * 4 for _ in range(60)],
        [noise.randbytes(20) + b"-" * noise.randrange(40) + noise.choice(words) * 5 for _ in range(80)],
        [b" ".join(noise.choices(words, k=120)) for _ in range(45)],  # about 35 KiB: a short last xerial block
    ]
    for values in shapes:
        open_pair.same(PRODUCE, 9, _produce({topic: {0: _batch(values)}}), what=f"{len(values)} records to a snappy topic")
    kafka, shim = _stored(open_pair, topic)
    assert len(decode_batches(kafka)) == len(shapes) and shim == kafka


def _stored(open_pair: Pair, topic: str) -> tuple[bytes, bytes]:
    """Partition 0's batches on Kafka and on kafka-shim, as a Fetch returns them."""
    fetch = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 24, isolation_level=0, session_id=0,
                         session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
                             partition=0, fetch_offset=0, log_start_offset=-1, partition_max_bytes=1 << 24,
                             current_leader_epoch=-1)])], forgotten_topics_data=[], rack_id="")
    kafka, shim = open_pair.both(FETCH, 12, fetch)
    return bytes(kafka.body.responses[0].partitions[0].records), bytes(shim.body.responses[0].partitions[0].records)


def test_invalid_acks_and_acks_0(open_pair: Pair) -> None:
    topic = open_pair.topic(_name("acks"))
    kafka, _ = open_pair.same(PRODUCE, 9, _produce({topic: {0: _batch([b"a"])}, _name("none"): {0: _batch([b"b"])}}, acks=2),
                              what="acks=2")
    assert [p.error_code for t in kafka.body.responses for p in t.partition_responses] == [21, 3]
    kafka, shim = open_pair.both(PRODUCE, 9, _produce({_name("none"): {0: _batch([b"b"])}}, acks=0))
    assert kafka.closed and shim.closed


def test_idempotent_duplicates_gaps_and_old_epochs(open_pair: Pair) -> None:
    topic = open_pair.topic(_name("idem"))
    pid = 900_000 + uuid.uuid4().int % 100_000

    def batch(values: list[bytes], epoch: int, seq: int) -> ProduceRequest:
        return _produce({topic: {0: _batch(values, producer_id=pid, producer_epoch=epoch, base_sequence=seq)}})

    steps = [batch([b"a", b"b"], 0, 0), batch([b"c"], 0, 2), batch([b"a", b"b"], 0, 0),  # a retry: the first offsets again
             batch([b"x"], 0, 9),  # a gap: 45
             batch([b"d"], 1, 0), batch([b"e"], 0, 3),  # a new epoch, then the old one: 47
             batch([b"f"], 1, 1), batch([b"d"], 1, 0)]
    answers = open_pair.on_one_connection([(PRODUCE, 9, s) for s in steps])
    for index, (kafka, shim) in enumerate(answers):
        assert_same(kafka, shim, what=f"idempotent step {index}")
    codes = [k.body.responses[0].partition_responses[0].error_code for k, _ in answers]
    assert codes == [0, 0, 0, 45, 0, 47, 0, 0]


@pytest.mark.parametrize("version", [3, 9, 11])
def test_transactional_batch_without_a_coordinator(open_pair: Pair, version: int) -> None:
    topic = open_pair.topic(_name("txn"))
    records = _batch([b"a"], producer_id=12345, producer_epoch=0, base_sequence=0, transactional=True)
    open_pair.same(PRODUCE, version, _produce({topic: {0: records}}, transactional_id="diff-tx"), what="a transactional batch")
    open_pair.same(PRODUCE, version, _produce({topic: {0: records}}), what="a transactional batch without a transactional id")


# -- InitProducerId ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("txn", "timeout", "pid", "epoch"), [
    ("diff-tx", 60000, -1, -1), ("", 60000, -1, -1), ("diff-tx", 0, -1, -1), ("diff-tx", 900001, -1, -1), (None, 60000, 5, -1),
], ids=["transactional", "empty-id", "zero-timeout", "timeout-above-max", "id-without-epoch"])
def test_init_producer_id_errors(open_pair: Pair, txn, timeout, pid, epoch) -> None:
    open_pair.same(INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=timeout, producer_id=pid,
                                                              producer_epoch=epoch), what="InitProducerId")


def _kafka_ready_for_producer_ids(pair: Pair) -> None:
    """Kafka's broker fetches its first block of producer ids from the controller on the first request and answers
    COORDINATOR_LOAD_IN_PROGRESS (14) until it arrives; kafka-shim allocates in process and never does."""
    deadline = time.monotonic() + 30
    with Wire(pair.kafka.sasl if pair.secured else pair.kafka.plaintext) as wire:
        if pair.secured:
            wire.sasl_plain("admin", "admin-secret")
        while wire.request(INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1)).body.error_code == 14:
            assert time.monotonic() < deadline, "Kafka never handed out a producer id"
            time.sleep(0.1)


def _transaction_coordinators_ready(pair: Pair, transactional_id: str) -> None:
    """__transaction_state on both (Kafka makes it at a FindCoordinator, as the admin here; kafka-shim is asked
    directly, its listener being unauthenticated), and Kafka's partition loaded."""
    pair.shim.call(lambda: pair.shim.broker.create_internal_topics(["__transaction_state"]))
    deadline = time.monotonic() + 90
    with pair._admin() as wire:
        while True:
            found = wire.request(10, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=[transactional_id])).body
            probe = wire.request(INIT_PRODUCER_ID, 4, InitProducerIdRequest(
                transactional_id=f"ready-{transactional_id}", transaction_timeout_ms=60000)).body
            if found.coordinators[0].error_code == 0 and probe.error_code == 0:
                return
            assert time.monotonic() < deadline, "Kafka's transaction coordinator never became ready"
            time.sleep(0.1)


def test_init_producer_id_for_an_idempotent_producer(open_pair: Pair) -> None:
    _kafka_ready_for_producer_ids(open_pair)
    open_pair.same(INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000),
                   what="InitProducerId without a transactional id", ignore=("producer_id",))


# -- with the authorizer -----------------------------------------------------------------------------------------------


def test_denied_topics_and_transactional_ids(secured_pair: Pair) -> None:
    allowed, denied = secured_pair.topic(_name("allowed")), secured_pair.topic(_name("denied"))
    secured_pair.grant(_acl(ResourceType.TOPIC, allowed, AclOperation.WRITE))
    kafka, _ = secured_pair.same(PRODUCE, 9, _produce({allowed: {0: _batch([b"a"])}, denied: {0: _batch([b"b"])}}),
                                 what="one topic writable, one not")
    assert [p.error_code for t in kafka.body.responses for p in t.partition_responses] == [0, 29]
    txn = _batch([b"t"], producer_id=4242, producer_epoch=0, base_sequence=0, transactional=True)
    kafka, _ = secured_pair.same(PRODUCE, 9, _produce({allowed: {0: txn}, denied: {0: _batch([b"c"])}}, transactional_id="diff-tx"),
                                 what="transactional batches without WRITE on the transactional id")
    assert {p.error_code for t in kafka.body.responses for p in t.partition_responses} == {53}


KIP_679 = {
    "nothing": [],
    "prefixed-write": [_acl(ResourceType.TOPIC, "pay", AclOperation.WRITE, PatternType.PREFIXED)],
    "dominated-by-deny": [_acl(ResourceType.TOPIC, "pay", AclOperation.WRITE, PatternType.PREFIXED),
                          _acl(ResourceType.TOPIC, "p", AclOperation.WRITE, PatternType.PREFIXED, AclPermissionType.DENY)],
    "literal-star-deny": [_acl(ResourceType.TOPIC, "orders", AclOperation.WRITE),
                          _acl(ResourceType.TOPIC, "*", AclOperation.WRITE, permission=AclPermissionType.DENY)],
    "idempotent-write": [_acl(ResourceType.CLUSTER, "kafka-cluster", AclOperation.IDEMPOTENT_WRITE)],
    "transactional-write": [_acl(ResourceType.TRANSACTIONAL_ID, "diff-tx", AclOperation.WRITE)],
}


@pytest.mark.parametrize("case", sorted(KIP_679))
def test_init_producer_id_authorization(secured_pair: Pair, case: str) -> None:
    _kafka_ready_for_producer_ids(secured_pair)
    if KIP_679[case]:
        secured_pair.grant(*KIP_679[case])
    for txn in (None, "diff-tx"):
        request = InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60000)
        if txn is not None:
            # Both coordinate the id once __transaction_state exists: a FindCoordinator (as the admin, whatever this
            # case grants) makes it on each, and Kafka then loads its partition.
            _transaction_coordinators_ready(secured_pair, txn)
        secured_pair.same(INIT_PRODUCER_ID, 4, request, what=f"InitProducerId ({case}, transactional id {txn!r})",
                          ignore=("producer_id",))



# -- random produce requests -------------------------------------------------------------------------------------------


def _flavour(kind: str, seq: int, pid: int) -> bytes | None:
    values = [b"r%d" % seq, b"s%d" % seq]
    if kind == "plain":
        return _batch(values)
    if kind == "idempotent":
        return _batch(values, producer_id=pid, producer_epoch=0, base_sequence=seq)
    if kind == "gzip":
        return _batch(values, compression=Compression.GZIP)
    if kind == "keyless":
        return _batch(values, key=None)
    if kind == "bad-crc":
        data = bytearray(_batch(values))
        data[-1] ^= 1
        return bytes(data)
    if kind == "base-offset":
        return _batch(values, base_offset=3)
    if kind == "two-batches":
        return _batch(values) + _batch([b"t"])
    if kind == "lz4":
        return _batch(values, compression=Compression.LZ4)
    if kind == "legacy":
        builder = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
        for i, value in enumerate(values):
            builder.append(i, timestamp=NOW + i, key=b"k", value=value)
        return bytes(builder.build())
    if kind == "transactional":
        return _batch(values, producer_id=pid + 50_000, producer_epoch=0, base_sequence=seq, transactional=True)
    return _batch(values, control=True)


KINDS = ["plain", "idempotent", "gzip", "lz4", "keyless", "bad-crc", "base-offset", "two-batches", "legacy", "transactional",
         "control"]


def test_random_produce_requests(open_pair: Pair) -> None:
    """Random requests over a fixed set of topics (one compacted, one small) and unknown ones, sent to both brokers
    in the same order: every answer, offsets included, must match, so both logs grow alike."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    plain, compact = open_pair.topic(_name("rand"), 5), open_pair.topic(_name("rand-compact"), 1, {"cleanup.policy": "compact"})
    small = open_pair.topic(_name("rand-small"), 1, {"max.message.bytes": "150"})
    stamped = open_pair.topic(_name("rand-lat"), 1, {"message.timestamp.type": "LogAppendTime", "compression.type": "gzip"})
    absent = _name("rand-absent")
    pid = 700_000 + uuid.uuid4().int % 100_000
    targets = [(plain, i) for i in range(6)] + [(compact, 0), (small, 0), (stamped, 0), (absent, 0)]
    sequence = {"next": 0}

    # No shrinking: both logs grow with every example, so replaying a smaller one would not be the same question.
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), phases=(Phase.generate,), database=None)
    @given(parts=st.lists(st.tuples(st.sampled_from(targets), st.sampled_from(KINDS)), min_size=1, max_size=16),
           version=st.sampled_from([2, 3, 5, 8, 9, 11]), acks=st.sampled_from([-1, 1, -1, 1, 2]),
           transactional_id=st.sampled_from([None, None, "rand-tx"]))
    def check(parts, version, acks, transactional_id) -> None:
        topics: dict[str, dict[int, bytes | None]] = {}
        for (topic, index), kind in parts:
            seq = sequence["next"]
            if kind == "idempotent":
                sequence["next"] += 2
            topics.setdefault(topic, {})[index] = _flavour(kind, seq, pid + index)
        transactional_id = transactional_id if version >= 3 else None
        open_pair.same(PRODUCE, version, _produce(topics, acks=acks, transactional_id=transactional_id),
                       what=f"Produce v{version} acks={acks} transactional id {transactional_id}: {parts}", ignore=APPEND_TIME)

    check()
