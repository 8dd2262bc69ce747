"""Fetch, ListOffsets, OffsetForLeaderEpoch and DeleteRecords: Apache Kafka 3.9 and kafka-shim side by side.

Both brokers hold the same topic with the same records: Kafka gets them from a Produce request (as the SASL admin),
kafka-shim by appending the same batch bytes to its log. Both run their authorizer with the same ACLs; the
requests come from User:ANONYMOUS on each PLAINTEXT listener, allowed or denied per scenario. Each scenario sends
the same request (with each broker's own topic id where the version names topics by id) and compares the answers
field by field, records bytes included: a stored batch is sent as it was produced, offsets and leader epoch
stamped by the broker.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shim.protocol.messages import (
    DeleteRecordsRequest,
    FetchRequest,
    ListOffsetsRequest,
    OffsetForLeaderEpochRequest,
)
from kafka_shim.protocol.records import Compression
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.appending import T0, batch, values
from tests.support.compare import assert_same
from tests.support.fetch_peers import Peers, name_topic_ids

FETCH, LIST_OFFSETS, DELETE_RECORDS, OFFSET_FOR_LEADER_EPOCH = 1, 2, 21, 23
READ, DELETE, DESCRIBE, CLUSTER_ACTION = 3, 6, 8, 10
CLUSTER = 4


@pytest.fixture(scope="module")
def shim_secured() -> Iterator[EmbeddedBroker]:
    config = BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "auto.create.topics.enable": "false",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:admin",
    })
    with EmbeddedBroker(config) as broker:
        yield broker


@pytest.fixture(scope="module")
def peers(oracle, shim_secured) -> Iterator[Peers]:
    both = Peers(oracle, shim_secured)
    both.reset_acls()
    both.topic("fo-data", 2)
    both.produce("fo-data", 0, batch(values("plain", 3, t0=T0)))
    both.produce("fo-data", 0, batch([(b"k%d" % i, b"gz-%d" % i, [("h", b"v")], T0 + 10 + i) for i in range(4)], Compression.GZIP))
    both.produce("fo-data", 0, batch([(None, b"x" * 300, [], T0 + 5)]))
    both.topic("fo-empty", 1)
    both.topic("fo-secret", 1)
    both.produce("fo-secret", 0, batch(values("secret", 2)))
    both.grant("fo-data", READ, DESCRIBE)
    both.grant("fo-empty", READ, DESCRIBE)
    yield both
    both.reset_acls()


def _fetch(peers: Peers, side: int, version: int, parts: list[tuple[str, int, int]], *, max_bytes: int = 1 << 20,
           partition_max_bytes: int = 1 << 20, isolation: int = 0, current_leader_epoch: int = -1) -> FetchRequest:
    topics: dict[str, list] = {}
    for name, partition, offset in parts:
        topics.setdefault(name, []).append(FetchRequest.FetchPartition(
            partition=partition, fetch_offset=offset, partition_max_bytes=partition_max_bytes, log_start_offset=-1,
            current_leader_epoch=current_leader_epoch, last_fetched_epoch=-1))
    return FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, isolation_level=isolation, session_id=0, session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=name, topic_id=peers.topic_ids[name][side] if name in peers.topic_ids else _UNKNOWN_ID,
                                        partitions=ps) for name, ps in topics.items()],
        forgotten_topics_data=[], rack_id="")


_UNKNOWN_ID = __import__("uuid").UUID("00000000-0000-0000-0000-0000000000aa")


@pytest.mark.parametrize("version", [4, 5, 7, 11, 12, 13, 15, 16, 17])
def test_fetch_records_as_stored(peers, version) -> None:
    kafka, _ = peers.same(FETCH, version, lambda side: _fetch(peers, side, version, [("fo-data", 0, 0), ("fo-data", 1, 0), ("fo-empty", 0, 0)]),
                          what=f"Fetch v{version}")
    assert kafka.body.responses[0].partitions[0].records


def _legacy_messages(records: bytes) -> list[tuple]:
    """(magic, offset, timestamp, timestamp type, key, value) of each message in a magic 0/1 message set, through
    kafka-python's reader (which drops the partial message at the end, as clients do)."""
    from kafka.record import MemoryRecords

    out, batches = [], MemoryRecords(records)
    while (b := batches.next_batch()) is not None:
        out += [(b.magic, r.offset, r.timestamp, r.timestamp_type, r.key, r.value) for r in b]
    return out


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_fetch_old_versions_down_converted(peers, version) -> None:
    # Both convert byte for byte: uncompressed batches, and a gzip batch recompressed into a gzip wrapper (the same
    # deflate stream, and the header Java 17's GZIPOutputStream writes).
    _, shim = peers.same(FETCH, version, lambda side: _fetch(peers, side, version, [("fo-data", 0, 3)]),
                        what=f"Fetch v{version} of a gzip batch")
    assert len(_legacy_messages(shim.body.responses[0].partitions[0].records)) == 5  # four from the gzip wrapper, one after it
    peers.same(FETCH, version, lambda side: _fetch(peers, side, version, [("fo-data", 0, 7)]), what=f"Fetch v{version} of an uncompressed batch")


def test_fetch_old_versions_of_an_lz4_batch(peers) -> None:
    """An lz4 batch down-converted: into a magic 0 wrapper whose lz4 frame carries the header checksum Kafka writes
    for magic 0 (Kafka 0.8's, over the frame's magic number too), and into a magic 1 wrapper with the specified one."""
    peers.topic("fo-lz4", 1)
    peers.produce("fo-lz4", 0, batch([(b"k%d" % i, b"lz-%d" % i * 20, [], T0 + i) for i in range(3)], Compression.LZ4))
    peers.grant("fo-lz4", READ, DESCRIBE)
    for version in (0, 1, 2, 3):
        _, shim = peers.same(FETCH, version, lambda side, version=version: _fetch(peers, side, version, [("fo-lz4", 0, 0)]),
                             what=f"Fetch v{version} of an lz4 batch")
        wrapper = shim.body.responses[0].partitions[0].records
        # offset, size, crc, magic, attributes, [timestamp], null key, value size: the frame starts after them
        frame = wrapper[12 + 4 + 2 + (8 if version >= 2 else 0) + 4 + 4:]
        assert frame[:6] == bytes.fromhex("04224d186040")
        assert frame[6] == (0x1A if version < 2 else 0x82), f"Fetch v{version}: header checksum {frame[6]:#x}"


def test_fetch_old_versions_of_a_snappy_batch(peers) -> None:
    """A snappy batch down-converted: its records become legacy messages recompressed with snappy into one wrapper,
    byte for byte as snappy-java 1.1.10.5 writes them (a message set of a few KiB: snappy sizes its hash table to it,
    where cramjam alone picked other matches)."""
    peers.topic("fo-snappy", 1)
    noise = random.Random("fo-snappy")
    records = [(b"user-%d" % (i % 7), b'{"id": %d, "action": "%s", "score": %d}' % (i, noise.choice([b"view", b"buy"]), noise.randrange(100)),
                [], T0 + i) for i in range(40)]
    peers.produce("fo-snappy", 0, batch(records, Compression.SNAPPY))
    peers.grant("fo-snappy", READ, DESCRIBE)
    for version in (0, 1, 2, 3):
        peers.same(FETCH, version, lambda side, version=version: _fetch(peers, side, version, [("fo-snappy", 0, 0)]),
                   what=f"Fetch v{version} of a snappy batch")


@pytest.mark.parametrize("max_bytes,partition_max_bytes", [(0, 0), (1, 1 << 20), (100, 100), (1 << 20, 80), (500, 1 << 20),
                                                           (1 << 20, -1), (-1, 1 << 20)])
def test_fetch_size_limits(peers, max_bytes, partition_max_bytes) -> None:
    parts = [("fo-data", 0, 0), ("fo-data", 1, 0), ("fo-empty", 0, 0), ("fo-data", 0, 7)]
    for version in (3, 12):
        peers.same(FETCH, version, lambda side, version=version: _fetch(peers, side, version, parts, max_bytes=max_bytes,
                                                                        partition_max_bytes=partition_max_bytes),
                   what=f"Fetch v{version} max_bytes={max_bytes} partition_max_bytes={partition_max_bytes}",
                   ignore=() if version > 3 else ("responses.*.partitions.*.records",))


@pytest.mark.parametrize("offset", [-1, 1, 8, 9, 100])
def test_fetch_offsets_in_and_out_of_range(peers, offset) -> None:
    peers.same(FETCH, 12, lambda side: _fetch(peers, side, 12, [("fo-data", 0, offset)]), what=f"Fetch at offset {offset}")


def test_fetch_denied_unknown_and_epochs(peers) -> None:
    for version in (4, 12, 13):
        peers.same(FETCH, version, lambda side, version=version: _fetch(peers, side, version, [("fo-secret", 0, 0), ("fo-data", 7, 0), ("fo-data", 0, 0),
                                                                              ("fo-missing", 0, 0)]),
                   what=f"Fetch v{version}: denied, unknown partition, unknown topic")
    for epoch in (1, 0, -3):
        peers.same(FETCH, 12, lambda side, epoch=epoch: _fetch(peers, side, 12, [("fo-data", 0, 0)], current_leader_epoch=epoch),
                   what=f"Fetch with current leader epoch {epoch}")
    peers.same(FETCH, 11, lambda side: _fetch(peers, side, 11, [("fo-data", 0, 0)], isolation=1), what="Fetch READ_COMMITTED")
    peers.same(FETCH, 12, lambda side: _fetch(peers, side, 12, [("fo-data", 0, 0), ("fo-data", 1, 0), ("fo-data", 0, 3)]),
               what="Fetch naming a partition twice")


def test_fetch_session_errors(peers) -> None:
    def session(session_id_of, epoch):
        def build(side):
            request = _fetch(peers, side, 12, [("fo-data", 0, 0)])
            request.session_id, request.session_epoch = session_id_of(side), epoch
            return request
        return build

    peers.same(FETCH, 12, session(lambda side: 123456, 1), what="incremental fetch of an unknown session")
    kafka, shim = peers.both(FETCH, 12, session(lambda side: 0, 0))
    created = (kafka.body.session_id, shim.body.session_id)
    assert all(created), created
    peers.same(FETCH, 12, session(lambda side: created[side], 5), what="incremental fetch with a wrong epoch")
    kafka, shim = peers.both(FETCH, 12, session(lambda side: created[side], 1))
    kafka.body.session_id = shim.body.session_id = 0
    kafka.correlation_id = shim.correlation_id
    assert_same(kafka, shim, what="incremental fetch with nothing new: no partitions")


def _offsets(version: int, parts: list[tuple[str, int, int]], isolation: int = 0) -> ListOffsetsRequest:
    topics: dict[str, list] = {}
    for name, partition, timestamp in parts:
        topics.setdefault(name, []).append(ListOffsetsRequest.ListOffsetsPartition(
            partition_index=partition, timestamp=timestamp, current_leader_epoch=-1, max_num_offsets=1))
    return ListOffsetsRequest(replica_id=-1, isolation_level=isolation,
                              topics=[ListOffsetsRequest.ListOffsetsTopic(name=n, partitions=ps) for n, ps in topics.items()])


@pytest.mark.parametrize("version", range(1, 10))
def test_list_offsets(peers, version) -> None:
    stamps = [-1, -2, -3, -4, -5, -7, T0, T0 + 2, T0 + 5, T0 + 11, T0 + 99, 0]
    for stamp in stamps:
        peers.same(LIST_OFFSETS, version, lambda side, stamp=stamp: _offsets(version, [("fo-data", 0, stamp), ("fo-data", 1, stamp), ("fo-empty", 0, stamp)]),
                   what=f"ListOffsets v{version} timestamp {stamp}")
    peers.same(LIST_OFFSETS, version, lambda side: _offsets(version, [("fo-secret", 0, -1), ("fo-data", 0, -1), ("fo-data", 0, -2),
                                                                      ("fo-data", 9, -1), ("fo-missing", 0, -1)],
                                                                     isolation=1 if version >= 2 else 0),
               what=f"ListOffsets v{version}: denied, duplicate, unknown")


@pytest.mark.parametrize("isolation", [2, -1])
def test_list_offsets_with_an_unknown_isolation_level(peers, isolation) -> None:
    # Kafka reads the level for each partition past the duplicate and timestamp checks and answers the
    # IllegalArgumentException as -1; a replica's request (no level read) is answered as usual.
    for version in (2, 5, 9):
        kafka, _ = peers.same(LIST_OFFSETS, version, lambda side, version=version: _offsets(version, [
            ("fo-data", 0, -1), ("fo-data", 1, -2), ("fo-data", 1, -2), ("fo-empty", 0, -7), ("fo-missing", 0, -1), ("fo-secret", 0, -1)],
            isolation=isolation), what=f"ListOffsets v{version} isolation level {isolation}")
        assert [p.error_code for t in kafka.body.topics for p in t.partitions] == [-1, 42, 42, 35, 29, 29]
    request = _offsets(5, [("fo-data", 0, -1), ("fo-missing", 0, -1)], isolation=isolation)
    request.replica_id = -2
    peers.same(LIST_OFFSETS, 5, lambda side: request, what=f"a debugging replica's ListOffsets with isolation level {isolation}")


def test_list_offsets_v0(peers) -> None:
    for stamp in (-1, -2, -3):
        peers.same(LIST_OFFSETS, 0, lambda side, stamp=stamp: _offsets(0, [("fo-data", 0, stamp), ("fo-empty", 0, stamp), ("fo-secret", 0, stamp),
                                                              ("fo-missing", 0, stamp)]),
                   what=f"ListOffsets v0 timestamp {stamp}")


@pytest.mark.parametrize("version", range(5))
def test_offset_for_leader_epoch(peers, version) -> None:
    def make(side):
        return OffsetForLeaderEpochRequest(replica_id=-1, topics=[
            OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=name, partitions=[
                OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=p, current_leader_epoch=current, leader_epoch=epoch)
                for p, current, epoch in parts])
            for name, parts in (("fo-data", [(0, -1, 0), (0, -1, 1), (0, -1, -1), (0, -1, -5), (1, -1, 0), (0, 3, 0), (0, -3, 0), (5, -1, 0)]),
                                ("fo-empty", [(0, -1, 0)]), ("fo-secret", [(0, -1, 0)]), ("fo-missing", [(0, -1, 0)]))])
    peers.same(OFFSET_FOR_LEADER_EPOCH, version, make, what=f"OffsetForLeaderEpoch v{version}")


@pytest.mark.parametrize("version", range(3))
def test_delete_records(peers, version) -> None:
    name = f"fo-delete-{version}"
    peers.topic(name, 2)
    for n in range(3):
        peers.produce(name, 0, batch(values(f"d{n}", 2)))
    peers.grant(name, DELETE, READ)

    def make(offsets):
        return lambda side: DeleteRecordsRequest(timeout_ms=5000, topics=[
            DeleteRecordsRequest.DeleteRecordsTopic(name=name, partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=p, offset=o)
                                                                           for p, o in offsets]),
            DeleteRecordsRequest.DeleteRecordsTopic(name="fo-secret", partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=1)]),
            DeleteRecordsRequest.DeleteRecordsTopic(name="fo-missing", partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=1)]),
        ])
    # ... (1, 1), (1, 0): a partition named twice is one result, deleted to the offset named last
    for offsets in ([(0, 2), (1, 0), (7, 1)], [(0, 1)], [(0, 99)], [(0, -1)], [(0, -2)], [(1, 1), (0, 2), (1, 0)]):
        peers.same(DELETE_RECORDS, version, make(offsets), what=f"DeleteRecords v{version} {offsets}")
    peers.same(FETCH, 12, lambda side: _fetch(peers, side, 12, [(name, 0, 6)]), what="Fetch after DeleteRecords")
    peers.same(FETCH, 12, lambda side: _fetch(peers, side, 12, [(name, 0, 0)]), what="Fetch below the log start offset")
    peers.same(LIST_OFFSETS, 7, lambda side: _offsets(7, [(name, 0, -2), (name, 0, -1), (name, 0, T0)]), what="ListOffsets after DeleteRecords")


def test_delete_records_answer_order_on_random_requests(peers) -> None:
    """Kafka answers DeleteRecords in the order of its Scala maps: topics as a HashMap of names iterates them, and a
    topic's partitions as a mutable HashMap does when some partition was allowed, else as the immutable Map the
    denied and unknown ones were added to (insertion order up to four, a CHAMP trie's from five)."""
    peers.topic("fo-order", 12)
    peers.topic("fo-order-few", 3)
    peers.grant("fo-order", DELETE)
    peers.grant("fo-order-few", DELETE)
    names = [("fo-order", 14), ("fo-order-few", 5), ("fo-secret", 4), ("fo-missing", 3), ("fo-data", 3)]
    rng = random.Random(20261127)
    for round_ in range(30):
        chosen = rng.sample(names, rng.randint(1, 4))
        asked = [(name, rng.sample(range(span), rng.randint(1, min(span, 6)))) for name, span in chosen]
        request = DeleteRecordsRequest(timeout_ms=5000, topics=[
            DeleteRecordsRequest.DeleteRecordsTopic(name=name, partitions=[
                DeleteRecordsRequest.DeleteRecordsPartition(partition_index=p, offset=0) for p in parts])
            for name, parts in asked])
        peers.same(DELETE_RECORDS, 2, lambda side, request=request: request, what=f"DeleteRecords round {round_}: {asked}")


def test_follower_fetch_without_cluster_action(peers) -> None:
    def build(side):
        request = _fetch(peers, side, 12, [("fo-data", 0, 0), ("fo-secret", 0, 0), ("fo-missing", 0, 0)])
        request.replica_id = 1
        return request
    kafka, _ = peers.same(FETCH, 12, build, what="follower fetch without CLUSTER_ACTION")
    assert {p.error_code for t in kafka.body.responses for p in t.partitions} == {29}


def test_waiting_fetch_and_incremental_session(peers) -> None:
    """A full fetch opens a session; an incremental one waits on the empty partition and returns what is produced."""
    peers.topic("fo-session", 2)
    peers.grant("fo-session", READ)

    def full(side):
        request = _fetch(peers, side, 12, [("fo-session", 0, 0), ("fo-session", 1, 0)])
        request.session_epoch = 0
        return request
    kafka, shim = peers.both(FETCH, 12, full)
    sessions = (kafka.body.session_id, shim.body.session_id)
    kafka.body.session_id = shim.body.session_id = 0
    kafka.correlation_id = shim.correlation_id
    assert_same(kafka, shim, what="full fetch opening a session")

    def incremental(epoch, wait_ms):
        def build(side):
            request = _fetch(peers, side, 12, [])
            request.session_id, request.session_epoch, request.max_wait_ms, request.min_bytes = sessions[side], epoch, wait_ms, 1
            return request
        return build
    kafka, shim = peers.both(FETCH, 12, incremental(1, 200))
    assert (kafka.body.session_id, shim.body.session_id) == sessions
    kafka.body.session_id = shim.body.session_id = 0
    kafka.correlation_id = shim.correlation_id
    assert_same(kafka, shim, what="incremental fetch with nothing new, after max_wait_ms")
    peers.produce("fo-session", 1, batch(values("s", 2)))
    kafka, shim = peers.both(FETCH, 12, incremental(2, 200))
    kafka.body.session_id = shim.body.session_id = 0
    kafka.correlation_id = shim.correlation_id
    assert_same(kafka, shim, what="incremental fetch after new records on one partition")
    assert [(t.topic, [p.partition_index for p in t.partitions]) for t in shim.body.responses] == [("fo-session", [1])]


def test_old_fetch_versions_and_topic_configs(peers) -> None:
    peers.topic("fo-zstd", 1, {"compression.type": "zstd"})
    peers.topic("fo-noconv", 1, {"message.downconversion.enable": "false"})
    for name in ("fo-zstd", "fo-noconv"):
        peers.produce(name, 0, batch(values("c", 2)))
        peers.grant(name, READ)
    for version in (1, 3, 9):
        peers.same(FETCH, version, lambda side, version=version: _fetch(peers, side, version, [("fo-zstd", 0, 0), ("fo-noconv", 0, 0)]),
                   what=f"Fetch v{version} of a zstd topic and a topic without down-conversion",
                   ignore=("responses.0.partitions.0.records",) if version == 9 else ())


def test_cluster_action_grants_every_topic(peers) -> None:
    """CLUSTER_ACTION on the cluster: OffsetForLeaderEpoch answers every topic; a follower fetch is authorized (and
    refused as an unknown replica, with the leader named from v16)."""
    peers.grant("kafka-cluster", CLUSTER_ACTION, resource_type=CLUSTER)
    try:
        def epochs(side):
            return OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                topic=name, partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1, leader_epoch=0)])
                for name in ("fo-secret", "fo-data", "fo-missing")])
        kafka, _ = peers.same(OFFSET_FOR_LEADER_EPOCH, 4, epochs, what="OffsetForLeaderEpoch with CLUSTER_ACTION")
        assert kafka.body.topics[0].partitions[0].error_code == 0
        for version in (12, 16):
            def follower(side, version=version):
                request = _fetch(peers, side, version, [("fo-data", 0, 0), ("fo-secret", 0, 0), ("fo-missing", 0, 0)], current_leader_epoch=0)
                if version >= 15:
                    request.replica_state = FetchRequest.ReplicaState(replica_id=1, replica_epoch=-1)
                else:
                    request.replica_id = 1
                return request
            peers.same(FETCH, version, follower, what=f"follower fetch v{version} with CLUSTER_ACTION",
                       ignore=("node_endpoints.*.host", "node_endpoints.*.port"))
    finally:
        peers.revoke("kafka-cluster", CLUSTER_ACTION, resource_type=CLUSTER)


_PARTS = st.sampled_from([("fo-data", 0), ("fo-data", 1), ("fo-empty", 0), ("fo-secret", 0), ("fo-data", 5), ("fo-missing", 0)])


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(version=st.sampled_from([4, 7, 11, 12, 13, 17]),
       parts=st.lists(st.tuples(_PARTS, st.integers(-1, 10), st.sampled_from([0, 1, 60, 100, 400, 1 << 20])), min_size=1, max_size=5),
       max_bytes=st.sampled_from([0, 1, 90, 500, 1 << 20]), isolation=st.sampled_from([0, 1]))
def test_random_fetches(peers, version, parts, max_bytes, isolation) -> None:
    def build(side):
        request = _fetch(peers, side, version, [(t, p, offset) for (t, p), offset, _ in parts], max_bytes=max_bytes, isolation=isolation)
        sizes = iter(size for _, _, size in parts)
        for topic in request.topics:
            for partition in topic.partitions:
                partition.partition_max_bytes = next(sizes)
        return request
    peers.same(FETCH, version, build, what=f"Fetch v{version} {parts} max_bytes={max_bytes} isolation={isolation}")


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(version=st.integers(1, 9), parts=st.lists(st.tuples(_PARTS, st.sampled_from([-5, -4, -3, -2, -1, 0, T0, T0 + 3, T0 + 12, T0 + 50])),
                                                 min_size=1, max_size=5))
def test_random_list_offsets(peers, version, parts) -> None:
    peers.same(LIST_OFFSETS, version, lambda side: _offsets(version, [(t, p, stamp) for (t, p), stamp in parts]),
               what=f"ListOffsets v{version} {parts}")


@pytest.mark.parametrize("version", [7, 12, 13])
def test_incremental_session_updates_and_forgets(peers, version) -> None:
    """A session over four partitions: incremental fetches that move an offset, add one, forget one; each answer
    carries exactly the partitions Kafka's carries."""
    sessions: list[int] = [0, 0]
    epoch = [0]

    def build(parts, forget=()):
        def make(side):
            request = _fetch(peers, side, version, parts)
            request.session_id, request.session_epoch = sessions[side], epoch[0]
            request.forgotten_topics_data = [FetchRequest.ForgottenTopic(
                topic=name, topic_id=peers.topic_ids[name][side], partitions=[p]) for name, p in forget]
            return request
        return make

    def step(parts, forget=(), what=""):
        kafka, shim = peers.both(FETCH, version, build(parts, forget))
        if epoch[0] == 0:
            sessions[:] = [kafka.body.session_id, shim.body.session_id]
            assert all(sessions), sessions
        kafka.body.session_id = shim.body.session_id = 0
        kafka.correlation_id = shim.correlation_id
        for answer, side in ((kafka, 0), (shim, 1)):
            name_topic_ids(answer, {ids[side]: name for name, ids in peers.topic_ids.items()})
        assert_same(kafka, shim, what=f"v{version} session epoch {epoch[0]}: {what}")
        epoch[0] += 1
        return shim

    step([("fo-data", 0, 0), ("fo-data", 1, 0), ("fo-empty", 0, 0)], what="full fetch")
    step([], what="nothing changed")
    step([("fo-data", 0, 3)], what="one offset moved back into the records")
    step([("fo-secret", 0, 0)], what="a denied partition added")
    last = step([], forget=[("fo-data", 0)], what="a partition forgotten")
    # Only the denied partition is answered again (errors always are); the others have nothing new.
    assert [(t.topic or t.topic_id, [p.partition_index for p in t.partitions]) for t in last.body.responses] == [("fo-secret", [0])]


_ZERO_ID = __import__("uuid").UUID(int=0)
_ID_RANGE = (2**31 - 1) // 8  # Kafka's session ids per fetch session cache shard


@pytest.mark.parametrize("session_id", [-2**31, -_ID_RANGE, -_ID_RANGE + 1, -1, 8 * _ID_RANGE - 1, 8 * _ID_RANGE, 2**31 - 1])
@pytest.mark.parametrize("epoch", [-1, 0, 1])
def test_fetch_session_ids_outside_the_cache_shards(peers, session_id, epoch) -> None:
    """Kafka picks a session's cache shard by dividing its id (Java's division, toward zero): an id past the eight
    shards throws there, and the whole fetch gets UNKNOWN_SERVER_ERROR (v12: in every partition too)."""
    def build(side):
        request = _fetch(peers, side, 12, [("fo-data", 0, 0)])
        request.session_id, request.session_epoch = session_id, epoch
        return request
    kafka, shim = peers.both(FETCH, 12, build)
    kafka.body.session_id = shim.body.session_id = 0  # a new session's id is random
    kafka.correlation_id = shim.correlation_id
    assert_same(kafka, shim, what=f"Fetch v12 session {session_id} epoch {epoch}")


def _by_zero_id(peers: Peers, side: int, version: int, epoch: int, session_id: int = 0, forget: bool = False,
                zero_partitions: tuple[int, ...] = (0,), then: tuple[str, ...] = ()) -> FetchRequest:
    """``fo-data`` partition 0, then ``zero_partitions`` of the zero topic id, then partition 0 of each of ``then``."""
    request = _fetch(peers, side, version, [("fo-data", 0, 0)])
    zero = [FetchRequest.FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1 << 20, log_start_offset=-1,
                                        current_leader_epoch=-1, last_fetched_epoch=-1) for p in zero_partitions]
    if forget:
        request.topics = []
        request.forgotten_topics_data = [FetchRequest.ForgottenTopic(topic="", topic_id=_ZERO_ID, partitions=[0])]
    else:
        request.topics.append(FetchRequest.FetchTopic(topic="", topic_id=_ZERO_ID, partitions=zero))
        request.topics += _fetch(peers, side, version, [(name, 0, 0) for name in then]).topics
    request.session_id, request.session_epoch = session_id, epoch
    return request


@pytest.mark.parametrize("version", [13, 17])
def test_fetch_naming_the_zero_topic_id(peers, version) -> None:
    """The zero topic id has no name: a fetch without a session answers UNKNOWN_TOPIC_ID for it, but Kafka cannot
    keep it in a session (CachedPartition hashes the missing name): a full fetch that opens a session, or an
    incremental one adding or forgetting it, gets UNKNOWN_SERVER_ERROR, and the session stays at its epoch."""
    def same(build, what):
        kafka, shim = peers.both(FETCH, version, build)
        kafka.body.session_id = shim.body.session_id = 0
        kafka.correlation_id = shim.correlation_id
        for answer, side in ((kafka, 0), (shim, 1)):
            name_topic_ids(answer, {ids[side]: name for name, ids in peers.topic_ids.items()})
        assert_same(kafka, shim, what=f"v{version}: {what}")
        return kafka, shim

    same(lambda side: _by_zero_id(peers, side, version, -1), "sessionless fetch naming the zero id")
    # Kafka groups the answer's partitions by topic, comparing a zero id's topic by its (missing) name: a partition
    # after one of the zero id fails the whole fetch; the denied and unknown come after the partitions read.
    for zero_partitions, then in (((0, 1), ()), ((0,), ("fo-missing",)), ((0,), ("fo-secret",)), ((), ("fo-missing",))):
        kafka, _ = same(lambda side, z=zero_partitions, t=then: _by_zero_id(peers, side, version, -1, zero_partitions=z, then=t),
                        f"sessionless fetch naming the zero id's partitions {zero_partitions}, then {then}")
        assert kafka.body.error_code == (-1 if (zero_partitions and then) or len(zero_partitions) > 1 else 0)
    kafka, _ = same(lambda side: _by_zero_id(peers, side, version, 0), "full fetch naming the zero id")
    assert kafka.body.error_code == -1
    opened = [0, 0]

    def full(side):
        request = _fetch(peers, side, version, [("fo-data", 0, 0)])
        request.session_epoch = 0
        return request
    kafka, shim = peers.both(FETCH, version, full)
    opened[:] = [kafka.body.session_id, shim.body.session_id]
    assert all(opened), opened
    same(lambda side: _by_zero_id(peers, side, version, 1, opened[side]), "incremental fetch adding the zero id")
    same(lambda side: _by_zero_id(peers, side, version, 1, opened[side], forget=True), "incremental fetch forgetting the zero id")
    kafka, shim = same(lambda side: _fetch_in_session(peers, side, version, opened[side], 1), "the session, still at epoch 1")
    assert kafka.body.error_code == 0


def _fetch_in_session(peers: Peers, side: int, version: int, session_id: int, epoch: int) -> FetchRequest:
    request = _fetch(peers, side, version, [])
    request.session_id, request.session_epoch = session_id, epoch
    return request
