"""Differences a random probe of Produce, Fetch and the topic APIs found between Apache Kafka 3.9 and kafka-shim
(/tmp/dp-probe), each pinned as the same request to both brokers with the answers compared field by field.
"""

from __future__ import annotations

import uuid

import pytest

from kafka_shim.protocol.messages import FetchRequest, ListOffsetsRequest
from kafka_shim.protocol.records import Compression, build_batch, encode_batch
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.differential.test_produce_apis import APPEND_TIME, NOW, Pair, _name, _produce
from tests.support.acl_peers import Peers
from tests.support.peers import RealKafka

PRODUCE, FETCH, LIST_OFFSETS = 0, 1, 2
ZERO_ID = uuid.UUID(int=0)


@pytest.fixture(scope="module")
def open_pair(oracle_open: RealKafka, shim_peer: EmbeddedBroker) -> Pair:
    return Pair(oracle_open, shim_peer, secured=False)


@pytest.fixture
def secured_pair(peers: Peers, oracle: RealKafka, shim_secured: EmbeddedBroker) -> Pair:
    """Both brokers with an authorizer and no ACLs (``peers`` empties them and waits until Kafka serves that): the
    PLAINTEXT listener's User:ANONYMOUS may read nothing."""
    return Pair(oracle, shim_secured, secured=True)


def _latest(topic: str) -> ListOffsetsRequest:
    return ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])])


@pytest.mark.parametrize("version", [3, 9, 11])
@pytest.mark.parametrize("topic_codec", ["gzip", "producer"])
def test_record_timestamp_below_minus_one(open_pair: Pair, version: int, topic_codec: str) -> None:
    """A record timestamp of -3 passes Kafka's timestamp checks (CreateTime, no bounds). Where the topic's codec makes
    Kafka rebuild the batch, its MemoryRecordsBuilder refuses the timestamp: UNKNOWN_SERVER_ERROR and nothing written;
    kept in place (codec ``producer``), the batch is written."""
    topic = open_pair.topic(_name("negts"), configs={"compression.type": topic_codec})
    batch = encode_batch(build_batch([(b"k", b"a", [], NOW), (b"k", b"b", [], -3)], compression=Compression.NONE))
    kafka, _ = open_pair.same(PRODUCE, version, _produce({topic: {0: batch}}), what=f"Produce v{version}, codec {topic_codec}",
                              ignore=APPEND_TIME)
    assert kafka.body.responses[0].partition_responses[0].error_code == (-1 if topic_codec == "gzip" else 0)
    open_pair.same(LIST_OFFSETS, 7, _latest(topic), what="the end offset after it")


@pytest.mark.parametrize("version", [13, 15, 17])
@pytest.mark.parametrize("session_epoch", [0, -1])
def test_fetch_naming_only_the_zero_topic_id(open_pair: Pair, version: int, session_epoch: int) -> None:
    """Fetch v13+ names topics by id; the zero id names none. Kafka fails the whole request (a NullPointerException
    in its fetch session or response building): UNKNOWN_SERVER_ERROR at the top and, from v13 on, no partitions."""
    body = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
                        session_epoch=session_epoch, topics=[FetchRequest.FetchTopic(topic="", topic_id=ZERO_ID, partitions=[
                            FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])],
                        forgotten_topics_data=[], rack_id="")
    kafka, _ = open_pair.same(FETCH, version, body, what=f"Fetch v{version} (session epoch {session_epoch}) of the zero topic id")
    assert kafka.body.error_code == (-1 if session_epoch == 0 else 0)  # sessionless: UNKNOWN_TOPIC_ID per partition


def _fetch(topic: str, offset: int) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
                        session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                            FetchRequest.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])],
                        forgotten_topics_data=[], rack_id="")


_CONVERSION_REFUSALS = [  # (topic config, fetch version, what Kafka answers)
    ({"compression.type": "zstd"}, 2, 76), ({"compression.type": "zstd"}, 4, 76), ({"compression.type": "zstd"}, 9, 76),
    ({"message.downconversion.enable": "false"}, 2, 35), ({"message.downconversion.enable": "false"}, 4, 1),
]


@pytest.mark.parametrize(("configs", "version", "expected"), _CONVERSION_REFUSALS)
def test_conversion_refusals_over_an_offset_out_of_range(open_pair: Pair, configs: dict[str, str], version: int,
                                                        expected: int) -> None:
    """KafkaApis.maybeConvertFetchedData runs on every partition this broker holds, whatever its error: a zstd topic
    fetched below v10 answers UNSUPPORTED_COMPRESSION_TYPE, one that may not be down-converted fetched below v4
    UNSUPPORTED_VERSION, where the offset alone would be OFFSET_OUT_OF_RANGE."""
    topic = open_pair.topic(_name("convert"), configs=configs)
    kafka, _ = open_pair.same(FETCH, version, _fetch(topic, 1000), what=f"Fetch v{version} out of range, {configs}")
    assert kafka.body.responses[0].partitions[0].error_code == expected


@pytest.mark.parametrize(("configs", "version", "expected"), _CONVERSION_REFUSALS[:4])
def test_conversion_refusals_over_a_denied_topic(secured_pair: Pair, configs: dict[str, str], version: int,
                                                expected: int) -> None:
    """The same step turns TOPIC_AUTHORIZATION_FAILED into these refusals: a client without READ learns the codec."""
    topic = secured_pair.topic(_name("denied"), configs=configs)
    kafka, _ = secured_pair.same(FETCH, version, _fetch(topic, 0), what=f"Fetch v{version} without READ, {configs}")
    assert kafka.body.responses[0].partitions[0].error_code == expected


def _two_topic_fetch(topic: str, other: str, offset: int) -> FetchRequest:
    """Partition 0 of ``topic`` twice (a request may repeat a partition) and partition 0 of ``other``."""
    part = FetchRequest.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
    return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
                        session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[part, part]),
                                                  FetchRequest.FetchTopic(topic=other, partitions=[part])],
                        forgotten_topics_data=[], rack_id="")


@pytest.mark.parametrize("version", [0, 1, 3])
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_down_converting_a_timestamp_below_minus_one(open_pair: Pair, version: int, codec: Compression) -> None:
    """Kafka writes a record stamped -3 (kept in place), but Fetch v0-3 must rebuild it as a magic 0/1 message, and
    its MemoryRecordsBuilder refuses the timestamp. In the first converted batch (converted while the request is
    handled): UNKNOWN_SERVER_ERROR for every requested partition, repeats included. In a later one (converted while
    the answer is sent): the connection closes. Below the fetch offset, an uncompressed record is not converted; a
    compressed batch is converted whole."""
    topic, other = open_pair.topic(_name("v1ts")), open_pair.topic(_name("other"))
    good = encode_batch(build_batch([(b"k", b"a", [], NOW)], compression=codec))
    bad = encode_batch(build_batch([(b"k", b"b", [], -3), (b"k", b"c", [], NOW)], compression=codec))
    for batch in (good, bad):
        kafka, _ = open_pair.same(PRODUCE, 9, _produce({topic: {0: batch}}), what="writing the batches")
        assert kafka.body.responses[0].partition_responses[0].error_code == 0
    kafka, _ = open_pair.same(FETCH, version, _two_topic_fetch(topic, other, 1), what=f"Fetch v{version} from the bad batch")
    assert [p.error_code for t in kafka.body.responses for p in t.partitions] == [-1, -1, -1]
    kafka, _ = open_pair.same(FETCH, version, _two_topic_fetch(topic, other, 0), what=f"Fetch v{version} from the good batch")
    assert kafka.closed
    kafka, _ = open_pair.same(FETCH, version, _two_topic_fetch(topic, other, 2), what=f"Fetch v{version} past the bad record")
    if codec is Compression.NONE:  # answered as usual: the repeat merged, ``other`` has no offset 2
        assert [p.error_code for t in kafka.body.responses for p in t.partitions] == [0, 1]
    else:  # a compressed batch is converted whole, whatever the offset
        assert [p.error_code for t in kafka.body.responses for p in t.partitions] == [-1, -1, -1]


@pytest.mark.parametrize("version", [1, 3])
def test_a_zstd_batch_in_the_same_chunk_wins(open_pair: Pair, version: int) -> None:
    """RecordsUtil.downConvert refuses a chunk holding a zstd batch before it converts any batch of it: the record
    stamped -3 ahead of the zstd batch is never rebuilt, and the answer ends in an overflow message instead of the
    connection closing."""
    topic, other = open_pair.topic(_name("zchunk")), open_pair.topic(_name("other"))
    good = encode_batch(build_batch([(b"k", b"a", [], NOW)]))
    bad = encode_batch(build_batch([(b"k", b"b", [], -3)]))
    zstd = encode_batch(build_batch([(b"k", b"c", [], NOW)], compression=Compression.ZSTD))
    for batch in (good, bad, zstd):
        open_pair.same(PRODUCE, 9, _produce({topic: {0: batch}}), what="writing the batches")
    kafka, _ = open_pair.same(FETCH, version, _two_topic_fetch(topic, other, 0), what=f"Fetch v{version} of all three")
    assert not kafka.closed and kafka.body.responses[0].partitions[0].error_code == 0
