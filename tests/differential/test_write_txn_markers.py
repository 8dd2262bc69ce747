"""WriteTxnMarkers (27) against a real Kafka 3.9 partition leader: refused without ALTER or CLUSTER_ACTION on the
cluster (31 on every partition of every marker), then markers for a producer with no open transaction there, for
unknown topics and partitions, several producers and topics in one request, in Kafka's answer order (hash maps of
producer ids and topic partitions)."""

from __future__ import annotations

import uuid

import pytest

from kafka_shim.protocol.messages import CreateTopicsRequest, WriteTxnMarkersRequest
from tests.support.acl_peers import ALTER, ANONYMOUS, CLUSTER, CREATE, Peers, acl

CREATE_TOPICS, WRITE_TXN_MARKERS = 19, 27
CLUSTER_ACTION = 9
W = WriteTxnMarkersRequest


@pytest.fixture
def topic(peers: Peers) -> str:
    return _created(peers, f"markers-{uuid.uuid4().hex[:8]}")


def _created(peers: Peers, name: str) -> str:
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=CREATE))
    kafka, shim = peers.both(CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30000, topics=[
        CreateTopicsRequest.CreatableTopic(name=name, num_partitions=3, replication_factor=1)]))
    codes = (kafka.body.topics[0].error_code, shim.body.topics[0].error_code)
    assert codes in ((0, 0), (36, 36)), codes  # 36: made by an earlier test of this session
    return name


def _markers(*markers: tuple[int, bool, list[tuple[str, list[int]]]]) -> W:
    return W(markers=[W.WritableTxnMarker(producer_id=pid, producer_epoch=0, transaction_result=committed, coordinator_epoch=0,
                                          topics=[W.WritableTxnMarkerTopic(name=n, partition_indexes=ps) for n, ps in topics])
                      for pid, committed, topics in markers])


@pytest.mark.parametrize("version", [0, 1])
def test_refused_without_alter_or_cluster_action(peers: Peers, topic: str, version: int) -> None:
    body = _markers((1000, True, [(topic, [0, 1]), ("nowhere", [0])]), (1001, False, [(topic, [2])]))
    kafka, _ = peers.same(WRITE_TXN_MARKERS, version, body, f"WriteTxnMarkers v{version} without ALTER or CLUSTER_ACTION")
    assert {p.error_code for m in kafka.body.markers for t in m.topics for p in t.partitions} == {31}


# A name whose partitions share hash buckets with markers-nowhere's partition 0 (in Kafka's ConcurrentHashMap of topic
# partitions, and its HashMap of topic names): the answer order then depends on the order Kafka put them in, the
# partitions it found no log for first. Found when the random name of the test below was this one.
TIED = "markers-b10a6b99"


@pytest.mark.parametrize("operation", [ALTER, CLUSTER_ACTION], ids=["alter", "cluster-action"])
def test_unknown_partitions_are_put_first_in_kafkas_maps(peers: Peers, operation: int) -> None:
    test_markers_for_producers_without_an_open_transaction(peers, _created(peers, TIED), operation)


@pytest.mark.parametrize("operation", [ALTER, CLUSTER_ACTION], ids=["alter", "cluster-action"])
def test_markers_for_producers_without_an_open_transaction(peers: Peers, topic: str, operation: int) -> None:
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=operation))
    body = _markers((7001, True, [(topic, [0, 2]), ("markers-nowhere", [0]), (topic, [9])]),
                    (7002, False, [(topic, [1])]), (7003, True, [(topic, [0])]))
    for version in (0, 1):
        kafka, _ = peers.same(WRITE_TXN_MARKERS, version, body, f"WriteTxnMarkers v{version} with the right on the cluster")
        codes = {p.error_code for m in kafka.body.markers for t in m.topics for p in t.partitions}
        assert codes == {0, 3}, "markers written where the partition exists, 3 where it does not"
