"""A long-polling Fetch whose partition goes away: Apache Kafka 3.9 and kafka-shim side by side.

Deleting the topic completes the waiting fetch at once in both (Kafka's ReplicaManager.stopPartitions completes
the delayed fetches of the partitions it stops) with UNKNOWN_TOPIC_OR_PARTITION. DeleteRecords moving the log start
past a waiting fetch's offset does not wake it: both answer OFFSET_OUT_OF_RANGE once the fetch's max_wait_ms has
passed (Kafka checks its delayed fetches on appends only).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import (
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    FetchRequest,
    MetadataRequest,
)
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.appending import batch, values
from tests.support.produce import produce_once_led
from tests.support.wire import Wire

FETCH, PRODUCE, METADATA, CREATE_TOPICS, DELETE_TOPICS, DELETE_RECORDS = 1, 0, 3, 19, 20, 21
LONG_WAIT_MS = 120_000  # far longer than any wake-up may take: an answer before it was woken, not timed out


def _topic(address: tuple[str, int], name: str) -> None:
    with Wire(address, timeout=60) as wire:
        created = wire.request(CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30000, topics=[
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)]))
        assert created.body.topics[0].error_code == 0, created
        deadline = time.monotonic() + 60
        while True:  # Kafka's broker learns of the topic from the controller shortly after the answer
            md = wire.request(METADATA, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)]))
            t = md.body.topics[0]
            if t.error_code == 0 and t.partitions and t.partitions[0].leader_id >= 0:
                break
            assert time.monotonic() < deadline, f"{address} never served {name}: {md}"
            time.sleep(0.05)
        produce_once_led(wire, name, 0, batch(values("w", 5)))


def _start_fetch(address: tuple[str, int], name: str, offset: int, min_bytes: int, max_wait_ms: int) -> Wire:
    """Send a Fetch v12 (by name, sessionless) and leave it waiting."""
    wire = Wire(address, timeout=max_wait_ms / 1000 + 60)
    request = FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=50 << 20, isolation_level=0,
                           session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=name, partitions=[
                               FetchRequest.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])],
                           forgotten_topics_data=[], rack_id="")
    wire.send_frame(encode_request(FETCH, 12, 77, request))
    return wire


def _await_fetch(wire: Wire) -> tuple[int, float]:
    """(the partition's error code, seconds from now until the answer arrived)."""
    started = time.monotonic()
    answer = wire.read_answer(FETCH, 12)
    wire.close()
    assert not answer.closed
    return answer.body.responses[0].partitions[0].error_code, time.monotonic() - started


Waiting = Callable[[], None]


def _kafka_waiting() -> None:
    time.sleep(0.5)  # Kafka shows no purgatory; a fetch that came after the change would answer the same at once


def _shim_waiting(shim: EmbeddedBroker) -> Waiting:
    def waiting() -> None:
        deadline = time.monotonic() + 60
        while not shim.call(lambda: len(shim.broker.services.append_waiters)):
            assert time.monotonic() < deadline, "the fetch never started waiting"
            time.sleep(0.01)
    return waiting


def _delete_topic_while_fetching(address: tuple[str, int], name: str, waiting: Waiting) -> tuple[int, float]:
    _topic(address, name)
    fetch = _start_fetch(address, name, 5, 1, LONG_WAIT_MS)  # at the log end: waits for the next append
    waiting()
    with Wire(address, timeout=60) as admin:
        deleted = admin.request(DELETE_TOPICS, 6, DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=name)],
                                                                      timeout_ms=30000))
        assert deleted.body.responses[0].error_code == 0, deleted
    return _await_fetch(fetch)


def _delete_records_under_fetch(address: tuple[str, int], name: str, max_wait_ms: int, waiting: Waiting) -> tuple[int, float]:
    """(the fetch's error code, seconds from sending the fetch to its answer)."""
    _topic(address, name)
    sent = time.monotonic()
    fetch = _start_fetch(address, name, 0, 50 << 20, max_wait_ms)  # records there, fewer than min_bytes: waits
    waiting()
    with Wire(address, timeout=60) as admin:
        cut = admin.request(DELETE_RECORDS, 2, DeleteRecordsRequest(timeout_ms=30000, topics=[
            DeleteRecordsRequest.DeleteRecordsTopic(name=name, partitions=[
                DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=3)])]))
        assert cut.body.topics[0].partitions[0].error_code == 0, cut
    code, _ = _await_fetch(fetch)
    return code, time.monotonic() - sent


def test_deleting_the_topic_answers_a_waiting_fetch_at_once(oracle_open, shim_peer, shim_address) -> None:
    # One name on both brokers: the session's brokers must keep the same topics, which later all-topics comparisons list.
    name = f"wake-del-{uuid.uuid4().hex[:8]}"
    kafka_code, kafka_wait = _delete_topic_while_fetching(oracle_open.plaintext, name, _kafka_waiting)
    shim_code, shim_wait = _delete_topic_while_fetching(shim_address, name, _shim_waiting(shim_peer))
    assert kafka_code == shim_code == 3
    assert kafka_wait < LONG_WAIT_MS / 2000 and shim_wait < LONG_WAIT_MS / 2000, (kafka_wait, shim_wait)


def test_delete_records_past_a_waiting_fetch_answers_offset_out_of_range_at_max_wait(oracle_open, shim_peer, shim_address) -> None:
    name = f"wake-dr-{uuid.uuid4().hex[:8]}"  # one name on both brokers (see above)
    kafka_code, kafka_wait = _delete_records_under_fetch(oracle_open.plaintext, name, 3000, _kafka_waiting)
    shim_code, shim_wait = _delete_records_under_fetch(shim_address, name, 3000, _shim_waiting(shim_peer))
    assert kafka_code == shim_code == 1
    # Neither answers before the fetch's own time is up (a lower bound: a busy machine only makes it later).
    assert kafka_wait >= 2.9 and shim_wait >= 2.9, (kafka_wait, shim_wait)
