"""Helpers for tests that write records: topics made directly, the stored records read back, and (until
FindCoordinator is served, issue 14) FindCoordinator advertised so that librdkafka compresses with lz4.

librdkafka picks features from ApiVersions: magic 2 needs Produce v3+ *and* Fetch v4+ advertised, else it falls back
to magic 0 message sets (which Produce v3+ refuses with 87, as Kafka does), and lz4 needs FindCoordinator. Tests that
only produce get a stub entry in the API table for an API that has no real handler yet (such a request closes the
connection); the stub drops out by itself once the handler is registered.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import ProduceRequest
from kafka_shim.protocol.records import TimestampType, decode_batches
from kafka_shim.shim.handlers import REGISTRY, ApiHandler, CloseConnection, load_all


@dataclass(frozen=True)
class Stored:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    producer_id: int
    compression: int


def _not_served(ctx, request):
    raise CloseConnection("this API is only advertised by the test broker")


# Kafka 3.9's ranges (shared/kafka-release-apis.json, kraft_broker_apis).
_STUBS = {ApiKey.FETCH: (0, 17), ApiKey.FIND_COORDINATOR: (0, 6)}


@contextmanager
def fetch_advertised() -> Iterator[None]:
    """Advertise Fetch and FindCoordinator while the context lasts, for those that have no real handler yet."""
    load_all()
    added = [key for key in _STUBS if key not in REGISTRY]
    for key in added:
        REGISTRY[key] = ApiHandler(key, *_STUBS[key], _not_served)
    try:
        yield
    finally:
        for key in added:
            REGISTRY.pop(key, None)


def create_topic(embedded, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
    embedded.call(lambda: embedded.broker.services.partitions.create_topic(name, partitions, configs or {}))


def stored_records(embedded, topic: str, partition: int = 0) -> list[Stored]:
    """Every record of the partition's log, decoded from the bytes as stored."""

    def read() -> bytes:
        state = embedded.broker.services.partitions.get(topic, partition)
        return state.log.read(state.log.log_start_offset, 1 << 30).records

    return records_of(embedded.call(read))


def records_of(data: bytes) -> list[Stored]:
    out = []
    for batch in decode_batches(data):
        log_append = batch.timestamp_type is TimestampType.LOG_APPEND_TIME
        for r in batch.records:
            out.append(Stored(batch.base_offset + r.offset_delta,
                              batch.max_timestamp if log_append else batch.base_timestamp + r.timestamp_delta,
                              r.key, r.value, tuple((h.key, h.value) for h in r.headers), batch.producer_id,
                              int(batch.compression)))
    return out


def produce_once_led(wire, topic: str, partition: int, records: bytes, timeout_s: float = 90.0) -> None:
    """Produce ``records`` (acks=-1) over ``wire`` and assert they were written. A real Kafka answers
    NOT_LEADER_OR_FOLLOWER (6) until the controller's record of a new topic (or a re-election) reaches its broker, which
    a busy machine makes take longer: that answer is retried until ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = wire.request(ApiKey.PRODUCE, 9, ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.PartitionProduceData(index=partition, records=records)])]))
        code = answer.body.responses[0].partition_responses[0].error_code
        if code != 6 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert code == 0, answer
