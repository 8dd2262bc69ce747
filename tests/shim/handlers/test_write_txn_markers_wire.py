"""WriteTxnMarkers (27) over the wire: the authorization, the per-partition answers, and what a READ_COMMITTED Fetch and
ListOffsets then see (the transactional batches written by hand, as the produce path commits them once the
coordinator verified them)."""

from __future__ import annotations

from kafka_shim.protocol.messages import FetchRequest, ListOffsetsRequest, WriteTxnMarkersRequest
from kafka_shim.protocol.records import build_batch, decode_batches, encode_batch
from kafka_shim.shim.broker import Broker
from kafka_shim.shim.partitions.append import append_records
from tests.support.acl_helpers import binding, config, connect, grant, running

FETCH, LIST_OFFSETS, WRITE_TXN_MARKERS = 1, 2, 27
CLUSTER, CLUSTER_ACTION, ALTER = 4, 9, 7
NOW = 1_700_000_000_000
W = WriteTxnMarkersRequest


def marker(pid: int, committed: bool, *topics: tuple[str, list[int]], epoch: int = 0, coordinator_epoch: int = 0) -> W.WritableTxnMarker:
    return W.WritableTxnMarker(producer_id=pid, producer_epoch=epoch, transaction_result=committed, coordinator_epoch=coordinator_epoch,
                               topics=[W.WritableTxnMarkerTopic(name=t, partition_indexes=p) for t, p in topics])


def errors(answer) -> dict[int, dict[tuple[str, int], int]]:
    return {m.producer_id: {(t.name, p.partition_index): p.error_code for t in m.topics for p in t.partitions} for m in answer.markers}


def transactional(broker: Broker, topic: str, pid: int, seq: int, count: int = 1, partition: int = 0) -> int:
    records = encode_batch(build_batch([(b"k", b"v", [], NOW)] * count, transactional=True, producer_id=pid, producer_epoch=0,
                                       base_sequence=seq))
    result = append_records(broker.services.partitions, topic, partition, records, now_ms=NOW)
    assert result.error == 0, result
    return result.base_offset


def fetch(topic: str, isolation: int) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=isolation, session_id=0,
                        session_epoch=-1, forgotten_topics_data=[], rack_id="", topics=[FetchRequest.FetchTopic(
                            topic=topic, partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20,
                                                                                 current_leader_epoch=-1, last_fetched_epoch=-1,
                                                                                 log_start_offset=-1)])])


def latest(topic: str, isolation: int) -> ListOffsetsRequest:
    return ListOffsetsRequest(replica_id=-1, isolation_level=isolation, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1, current_leader_epoch=-1)])])


async def test_markers_end_transactions_and_move_the_lso() -> None:
    async with running(config(authorizer=False)) as broker:
        broker.services.partitions.create_topic("m", 2)
        heard: list[tuple] = []
        broker.services.partitions.add_marker_listener(lambda *args: heard.append(args))
        transactional(broker, "m", 1000, 0, count=2)  # 0-1
        transactional(broker, "m", 2000, 0)  # 2
        client = await connect(broker)
        try:
            answer = await client.request(LIST_OFFSETS, 2, latest("m", 1))
            assert answer.topics[0].partitions[0].offset == 0
            answer = await client.request(WRITE_TXN_MARKERS, 1, W(markers=[
                marker(1000, False, ("m", [0, 1, 0, 9]), ("nope", [0])),
                marker(2000, True, ("m", [0]), epoch=-1)]))
            assert errors(answer) == {1000: {("m", 0): 0, ("m", 1): 0, ("m", 9): 3, ("nope", 0): 3},
                                      2000: {("m", 0): 47}}  # 47: epoch -1 is older than 0
            assert heard == [("m", 0, 1000, False), ("m", 1, 1000, False)]
            answer = await client.request(FETCH, 12, fetch("m", 1))
            partition = answer.responses[0].partitions[0]
            assert (partition.high_watermark, partition.last_stable_offset) == (4, 2)
            assert [(t.producer_id, t.first_offset) for t in partition.aborted_transactions] == [(1000, 0)]
            assert [b.base_offset for b in decode_batches(partition.records)] == [0]  # up to the LSO: 2000 is open at 2
            uncommitted = (await client.request(FETCH, 12, fetch("m", 0))).responses[0].partitions[0]
            assert uncommitted.last_stable_offset == 2 and uncommitted.aborted_transactions is None
            answer = await client.request(WRITE_TXN_MARKERS, 0, W(markers=[marker(2000, True, ("m", [0]), coordinator_epoch=3)]))
            assert errors(answer) == {2000: {("m", 0): 0}}
            answer = await client.request(WRITE_TXN_MARKERS, 0, W(markers=[marker(2000, True, ("m", [0]), coordinator_epoch=2)]))
            assert errors(answer) == {2000: {("m", 0): 52}}
            for isolation, offset in ((1, 5), (0, 5)):
                answer = await client.request(LIST_OFFSETS, 2, latest("m", isolation))
                assert answer.topics[0].partitions[0].offset == offset
            partition = (await client.request(FETCH, 12, fetch("m", 1))).responses[0].partitions[0]
            assert (partition.high_watermark, partition.last_stable_offset) == (5, 5)
            empty = await client.request(WRITE_TXN_MARKERS, 1, W(markers=[]))
            assert empty.markers == []
        finally:
            await client.close()


async def test_cluster_action_or_alter_is_needed() -> None:
    async with running(config()) as broker:
        broker.services.partitions.create_topic("m", 1)
        client = await connect(broker)
        try:
            body = W(markers=[marker(5, True, ("m", [0]), ("x", [1, 2])), marker(6, False, ("m", [0]))])
            answer = await client.request(WRITE_TXN_MARKERS, 1, body)
            assert errors(answer) == {5: {("m", 0): 31, ("x", 1): 31, ("x", 2): 31}, 6: {("m", 0): 31}}
            assert broker.services.partitions.get("m", 0).log.log_end_offset == 0
            grant(broker, binding(rtype=CLUSTER, name="kafka-cluster", operation=CLUSTER_ACTION))
            answer = await client.request(WRITE_TXN_MARKERS, 1, body)
            assert errors(answer) == {5: {("m", 0): 0, ("x", 1): 3, ("x", 2): 3}, 6: {("m", 0): 0}}
        finally:
            await client.close()
