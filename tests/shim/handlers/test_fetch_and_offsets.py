"""Fetch, ListOffsets and DeleteRecords over the wire for what the differential scenarios do not reach: topic configs
that change the answer, internal topics, a fetch woken by an append, the session cache setting."""

from __future__ import annotations

import asyncio
import time

from kafka_shim.protocol.messages import DeleteRecordsRequest, FetchRequest, ListOffsetsRequest
from kafka_shim.protocol.records import Compression
from kafka_shim.shim.broker import Broker
from tests.support.acl_helpers import config, connect, running
from tests.support.appending import batch, values

FETCH, LIST_OFFSETS, DELETE_RECORDS = 1, 2, 21


def fetch_request(topic: str, partition: int = 0, offset: int = 0, *, max_wait_ms: int = 0, min_bytes: int = 0,
                  session_epoch: int = -1) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 20, isolation_level=0,
                        session_id=0, session_epoch=session_epoch, forgotten_topics_data=[], rack_id="",
                        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
                            partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20, current_leader_epoch=-1,
                            last_fetched_epoch=-1, log_start_offset=-1)])])


def delete_request(topic: str, offset: int) -> DeleteRecordsRequest:
    return DeleteRecordsRequest(timeout_ms=1000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name=topic, partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=offset)])])


def append(broker: Broker, topic: str, data: bytes, partition: int = 0) -> None:
    partitions = broker.services.partitions
    partitions.get(topic, partition).log.append(data)
    partitions.appended(topic, partition)


async def test_a_waiting_fetch_is_answered_by_the_append() -> None:
    async with running(config(authorizer=False)) as broker:
        broker.services.partitions.create_topic("wait", 1)
        client = await connect(broker)
        try:
            started = time.monotonic()
            pending = asyncio.ensure_future(client.request(FETCH, 12, fetch_request("wait", max_wait_ms=60_000, min_bytes=1), timeout=120))
            while len(broker.services.append_waiters) == 0:
                await asyncio.sleep(0.01)
            append(broker, "wait", batch(values("w", 2)))
            answer = await asyncio.wait_for(pending, 120)
            assert time.monotonic() - started < 30, "answered by max_wait_ms, not by the append"
            partition = answer.responses[0].partitions[0]
            assert (partition.error_code, partition.high_watermark) == (0, 2) and partition.records
            assert len(broker.services.append_waiters) == 0
        finally:
            await client.close()


async def test_delete_records_policy_and_internal_topics() -> None:
    async with running(config(authorizer=False)) as broker:
        partitions = broker.services.partitions
        partitions.create_topic("compacted", 1, {"cleanup.policy": "compact"})
        partitions.create_topic("both", 1, {"cleanup.policy": "compact,delete"})
        partitions.create_topic("__consumer_offsets", 1)
        for topic in ("compacted", "both", "__consumer_offsets"):
            append(broker, topic, batch(values("d", 3)))
        client = await connect(broker)
        try:
            codes = {}
            for topic in ("compacted", "both", "__consumer_offsets"):
                answer = await client.request(DELETE_RECORDS, 2, delete_request(topic, 2))
                p = answer.topics[0].partitions[0]
                codes[topic] = (p.error_code, p.low_watermark)
            assert codes == {"compacted": (44, -1), "both": (0, 2), "__consumer_offsets": (17, -1)}
            assert partitions.get("both", 0).log.log_start_offset == 2
        finally:
            await client.close()


async def test_fetch_v0_to_3_and_topic_configs() -> None:
    async with running(config(authorizer=False)) as broker:
        partitions = broker.services.partitions
        partitions.create_topic("zstd-topic", 1, {"compression.type": "zstd"})
        partitions.create_topic("no-conversion", 1, {"message.downconversion.enable": "false"})
        for topic in ("zstd-topic", "no-conversion"):
            append(broker, topic, batch(values("c", 2)))
        client = await connect(broker)
        try:
            async def code(version: int, topic: str) -> int:
                answer = await client.request(FETCH, version, fetch_request(topic))
                return answer.responses[0].partitions[0].error_code

            assert [await code(v, "zstd-topic") for v in (3, 9, 10)] == [76, 76, 0]
            assert [await code(v, "no-conversion") for v in (1, 3, 4)] == [35, 35, 0]
        finally:
            await client.close()


async def test_zstd_batches_cannot_be_down_converted() -> None:
    async with running(config(authorizer=False)) as broker:
        broker.services.partitions.create_topic("z", 1)
        append(broker, "z", batch(values("z", 2), Compression.ZSTD))
        client = await connect(broker)
        try:
            answer = await client.request(FETCH, 3, fetch_request("z"))
            assert answer.responses[0].partitions[0].error_code == 76
        finally:
            await client.close()


async def test_no_sessions_without_cache_slots() -> None:
    async with running(config(authorizer=False, max_incremental_fetch_session_cache_slots="0")) as broker:
        broker.services.partitions.create_topic("s", 1)
        client = await connect(broker)
        try:
            answer = await client.request(FETCH, 12, fetch_request("s", session_epoch=0))
            assert (answer.error_code, answer.session_id) == (0, 0)
        finally:
            await client.close()


async def test_list_offsets_v0_old_offsets_array() -> None:
    async with running(config(authorizer=False)) as broker:
        broker.services.partitions.create_topic("old", 1)
        append(broker, "old", batch(values("o", 4)))
        client = await connect(broker)
        try:
            def request(timestamp: int, count: int) -> ListOffsetsRequest:
                return ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name="old", partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=timestamp, max_num_offsets=count)])])

            latest = await client.request(LIST_OFFSETS, 0, request(-1, 10))
            earliest = await client.request(LIST_OFFSETS, 0, request(-2, 10))
            assert latest.topics[0].partitions[0].old_style_offsets == [4, 0]
            assert earliest.topics[0].partitions[0].old_style_offsets == [0]
            none = await client.request(LIST_OFFSETS, 0, request(-1, 0))
            assert (none.topics[0].partitions[0].error_code, none.topics[0].partitions[0].old_style_offsets) == (0, [])
            # Kafka sizes its answer array by max_num_offsets: a negative one throws, answered as -1 for the partition
            negative = await client.request(LIST_OFFSETS, 0, request(-1, -1))
            assert (negative.topics[0].partitions[0].error_code, negative.topics[0].partitions[0].old_style_offsets) == (-1, [])
        finally:
            await client.close()


async def test_an_unknown_isolation_level_fails_a_fetch_that_would_read() -> None:
    """FetchParams reads IsolationLevel.forId only for a fetch with a partition to read; it throws on codes other than
    0 and 1, and KafkaApis answers the whole request with UNKNOWN_SERVER_ERROR."""
    async with running(config(authorizer=False)) as broker:
        broker.services.partitions.create_topic("iso", 1)
        client = await connect(broker)
        try:
            for version, level, codes in ((12, 99, (-1, [-1])), (11, -1, (-1, [-1])), (4, 1, (0, [0])),
                                          (12, 99, (0, [3]))):
                request = fetch_request("iso" if codes != (0, [3]) else "missing")
                request.isolation_level = level
                answer = await client.request(FETCH, version, request)
                partitions = [p.error_code for t in answer.responses for p in t.partitions]
                assert (answer.error_code, partitions) == codes, (version, level)
        finally:
            await client.close()
