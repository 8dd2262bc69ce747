"""confluent-kafka (librdkafka) producers write to kafka-shim; every record is read back from the partition log as
stored: keys, values, headers, timestamps, compression, producer ids and sequence-ordered offsets."""

from __future__ import annotations

import time

import pytest

from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.produce import create_topic, fetch_advertised, stored_records

pytestmark = pytest.mark.clients
FLUSH_TIMEOUT = 60
BASE_TS = 1_700_000_000_000


@pytest.fixture
def broker():
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "auto.create.topics.enable": "false"})
    with fetch_advertised(), EmbeddedBroker(config) as running:
        yield running


def _produce(broker, topic: str, settings: dict, records: list[tuple], partition: int = 0) -> list:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, **settings})
    reports: list = []
    for key, value, headers, timestamp in records:
        producer.produce(topic, key=key, value=value, headers=headers, timestamp=timestamp, partition=partition,
                         on_delivery=lambda err, msg: reports.append((err, msg.offset() if err is None else None)))
    assert producer.flush(FLUSH_TIMEOUT) == 0, "the producer did not finish within the flush timeout"
    return reports


def _records(count: int, tag: str) -> list[tuple]:
    return [(f"{tag}-key-{i}".encode() if i % 3 else None,
             (f"{tag}-value-{i}-" * (i % 7 + 20)).encode(),
             [("trace", f"t{i}".encode()), ("empty", None)] if i % 2 else [],
             BASE_TS + i * 1000)
            for i in range(count)]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_idempotent_producer_every_codec(broker, codec: str) -> None:
    create_topic(broker, "events")
    sent = _records(50, codec)
    reports = _produce(broker, "events", {"enable.idempotence": True, "compression.type": codec, "linger.ms": 5}, sent)
    assert [err for err, _ in reports] == [None] * len(sent)
    stored = stored_records(broker, "events")
    assert [(s.key, s.value, [(k, v) for k, v in s.headers], s.timestamp) for s in stored] == [
        (k, v, [(hk, hv) for hk, hv in h], ts) for k, v, h, ts in sent]
    assert [s.offset for s in stored] == list(range(len(sent)))
    assert sorted(offset for _, offset in reports) == list(range(len(sent)))
    assert {s.producer_id for s in stored} == {stored[0].producer_id} and stored[0].producer_id >= 0
    expected_codec = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}[codec]
    assert {s.compression for s in stored} == {expected_codec}  # compression.type=producer keeps the batch as sent


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks(broker, acks: str) -> None:
    create_topic(broker, "acks")
    sent = _records(20, f"acks{acks}")
    reports = _produce(broker, "acks", {"acks": acks, "enable.idempotence": False}, sent)
    assert [err for err, _ in reports] == [None] * len(sent)
    # With acks=0 the producer is done once the requests are written to the socket: the broker may still be
    # appending them, so wait (generously) until it has.
    deadline = time.monotonic() + 60
    while len(stored := stored_records(broker, "acks")) < len(sent) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [(s.key, s.value, s.timestamp) for s in stored] == [(k, v, ts) for k, v, _, ts in sent]


def test_topic_compression_differs_from_producer(broker) -> None:
    """Kafka recompresses with the topic's codec when compression.type names one: the records stay the same."""
    create_topic(broker, "zipped", configs={"compression.type": "gzip"})
    sent = _records(30, "re")
    reports = _produce(broker, "zipped", {"enable.idempotence": True, "compression.type": "lz4"}, sent)
    assert [err for err, _ in reports] == [None] * len(sent)
    stored = stored_records(broker, "zipped")
    assert [(s.key, s.value, s.timestamp) for s in stored] == [(k, v, ts) for k, v, _, ts in sent]
    assert {s.compression for s in stored} == {1}


def test_log_append_time_topic(broker) -> None:
    create_topic(broker, "stamped", configs={"message.timestamp.type": "LogAppendTime"})
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True})
    delivered: list = []
    producer.produce("stamped", value=b"x", timestamp=BASE_TS, on_delivery=lambda err, msg: delivered.append((err, msg.timestamp())))
    assert producer.flush(FLUSH_TIMEOUT) == 0
    (err, (kind, timestamp)), = delivered
    assert err is None
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME

    assert kind == TIMESTAMP_LOG_APPEND_TIME and timestamp > BASE_TS
    assert [s.timestamp for s in stored_records(broker, "stamped")] == [timestamp]
