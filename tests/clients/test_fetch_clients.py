"""Real consumers read records that a test appended to kafka-shim's logs: confluent-kafka (librdkafka),
kafka-python, aiokafka and kcat, with assign (no group), over TCP.

The records are appended straight to the partition logs (tests/support/appending.py), as the Produce path does
after validation; end-to-end produce-then-consume tests live with Produce. librdkafka decides its Fetch version
from the broker's Produce range (its MsgVer2 feature needs both), so until a Produce handler is registered these
tests advertise one that is never called.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.records import Compression, supported_compressions
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.handlers import ApiHandler, load_all
from kafka_shim.shim.requests.api_table import ApiTable
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.appending import T0, append_records, create_topic, values

pytestmark = pytest.mark.clients

CODECS = [c for c in Compression if c in supported_compressions()]
RECORDS = [
    (b"key-0", b"value-0", [("h1", b"a"), ("h2", None)], T0),
    (None, b"value-1", [], T0 + 7),
    (b"key-2", None, [("h", b"\x00\xff")], T0 - 1000),
    (b"key-3", b"v" * 5000, [], T0 + 9),
]


def _advertise_produce(broker: EmbeddedBroker) -> None:
    handlers = dict(load_all())
    if ApiKey.PRODUCE in handlers:
        return

    def never(ctx, request):  # pragma: no cover - the tests never produce
        raise RuntimeError("Produce is not served by this test broker")

    handlers[ApiKey.PRODUCE] = ApiHandler(ApiKey.PRODUCE, 0, 11, never)
    services = broker.broker.services
    broker.call(setattr, services, "api_table", ApiTable(handlers))


@pytest.fixture
def broker() -> Iterator[EmbeddedBroker]:
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "3"})
    with EmbeddedBroker(config) as running:
        _advertise_produce(running)
        yield running


def _poll_until(consumer, count: int, timeout: float = 60.0) -> list:
    got, deadline = [], time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is None:
            continue
        assert message.error() is None, message.error()
        got.append(message)
    assert len(got) == count, f"got {len(got)} of {count} records"
    return got


def _consumer(broker: EmbeddedBroker, **extra):
    from confluent_kafka import Consumer

    return Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "unused", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", **extra})


@pytest.mark.parametrize("codec", CODECS, ids=[c.name.lower() for c in CODECS])
def test_confluent_kafka_reads_every_codec_with_keys_headers_timestamps(broker, codec) -> None:
    from confluent_kafka import TIMESTAMP_CREATE_TIME, TopicPartition

    create_topic(broker, "codecs", 2)
    append_records(broker, "codecs", 1, RECORDS, codec)
    append_records(broker, "codecs", 1, values("more", 3), codec)
    consumer = _consumer(broker)
    try:
        consumer.assign([TopicPartition("codecs", 1, 0)])
        got = _poll_until(consumer, len(RECORDS) + 3)
    finally:
        consumer.close()
    assert [m.offset() for m in got] == list(range(7))
    assert [(m.key(), m.value(), m.headers() or [], m.timestamp()) for m in got[:4]] == [
        (k, v, list(h), (TIMESTAMP_CREATE_TIME, t)) for k, v, h, t in RECORDS]
    assert [m.value() for m in got[4:]] == [b"more-0", b"more-1", b"more-2"]


def test_confluent_kafka_log_append_time_offsets_and_watermarks(broker) -> None:
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, TopicPartition

    create_topic(broker, "appended", 1, {"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    append_records(broker, "appended", 0, values("a", 4))
    consumer = _consumer(broker)
    try:
        consumer.assign([TopicPartition("appended", 0, 2)])  # from the middle of the batch
        got = _poll_until(consumer, 2)
        kind, stamp = got[0].timestamp()
        assert kind == TIMESTAMP_LOG_APPEND_TIME and before <= stamp <= int(time.time() * 1000)
        assert [m.offset() for m in got] == [2, 3]
        assert consumer.get_watermark_offsets(TopicPartition("appended", 0), timeout=30) == (0, 4)
        found = consumer.offsets_for_times([TopicPartition("appended", 0, before)], timeout=30)
        assert found[0].offset == 0
        # librdkafka (2.16) does not implement KIP-227: it fetches with session 0, epoch -1, and none is kept.
        assert broker.call(len, broker.broker.services.fetch_sessions) == 0
    finally:
        consumer.close()


def test_long_poll_wakes_on_append_before_max_wait(broker) -> None:
    """A consumer waiting on an empty partition gets a record appended later at once, not after fetch.wait.max.ms."""
    from confluent_kafka import TopicPartition

    create_topic(broker, "waiting", 1)
    wait_ms = 60_000
    consumer = _consumer(broker, **{"fetch.wait.max.ms": wait_ms, "fetch.error.backoff.ms": 10})
    try:
        consumer.assign([TopicPartition("waiting", 0, 0)])
        waiters = broker.broker.services.append_waiters
        deadline = time.monotonic() + 60
        while broker.call(len, waiters) == 0:  # the consumer's fetch is now parked on the empty partition
            assert time.monotonic() < deadline, "the consumer never sent a waiting fetch"
            consumer.poll(0.05)
        appended_at = time.monotonic()
        append_records(broker, "waiting", 0, values("late", 1))
        [message] = _poll_until(consumer, 1, timeout=wait_ms / 1000)
        assert message.value() == b"late-0"
        assert time.monotonic() - appended_at < wait_ms / 2000, "the fetch was answered by its time limit, not the append"
    finally:
        consumer.close()


def test_kafka_python_uses_an_incremental_fetch_session(broker) -> None:
    """kafka-python's FetchSessionHandler (KIP-227; librdkafka does not implement it and fetches sessionless)."""
    from kafka import KafkaConsumer, TopicPartition

    create_topic(broker, "sessions", 3)
    for partition in range(3):
        append_records(broker, "sessions", partition, values(f"p{partition}", 2))
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False, fetch_max_wait_ms=50,
                             consumer_timeout_ms=30000)
    try:
        tps = [TopicPartition("sessions", p) for p in range(3)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        assert sorted(m.value for m in (next(consumer) for _ in range(6))) == sorted(b"p%d-%d" % (p, i) for p in range(3) for i in range(2))
        sessions = broker.broker.services.fetch_sessions
        deadline = time.monotonic() + 60
        while not any(s.epoch > 3 for s in broker.call(lambda: list(sessions.sessions()))):
            assert time.monotonic() < deadline, "kafka-python never continued a fetch session"
            consumer.poll(timeout_ms=100)
        [session] = broker.call(lambda: list(sessions.sessions()))
        assert sorted(key[1] for key in session.partitions) == [0, 1, 2]
        # New records on one partition reach the consumer through the incremental session.
        append_records(broker, "sessions", 2, values("again", 1))
        message = next(consumer)
        assert (message.partition, message.offset, message.value) == (2, 2, b"again-0")
    finally:
        consumer.close()


def test_kafka_python_consumer_with_assign(broker) -> None:
    from kafka import KafkaConsumer, TopicPartition

    create_topic(broker, "kp", 1)
    append_records(broker, "kp", 0, RECORDS, Compression.GZIP)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False, consumer_timeout_ms=30000)
    try:
        tp = TopicPartition("kp", 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got = [next(consumer) for _ in RECORDS]
        assert consumer.end_offsets([tp]) == {tp: 4}
        assert consumer.beginning_offsets([tp]) == {tp: 0}
    finally:
        consumer.close()
    assert [(m.offset, m.key, m.value, m.timestamp, [(k, v) for k, v in m.headers]) for m in got] == [
        (i, k, v, t, list(h)) for i, (k, v, h, t) in enumerate(RECORDS)]


@pytest.mark.parametrize("api_version", [(0, 10, 1), (0, 9)], ids=["fetch-v3-magic-1", "fetch-v1-magic-0"])
def test_kafka_python_old_protocol_gets_down_converted_messages(broker, api_version) -> None:
    from kafka import KafkaConsumer, TopicPartition

    create_topic(broker, "old", 1)
    append_records(broker, "old", 0, values("plain", 3))
    append_records(broker, "old", 0, [(b"k", b"gz-%d" % i, [], T0 + i) for i in range(3)], Compression.GZIP)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False, consumer_timeout_ms=30000,
                             api_version=api_version)
    try:
        tp = TopicPartition("old", 0)
        consumer.assign([tp])
        consumer.seek(tp, 1)
        got = [next(consumer) for _ in range(5)]
    finally:
        consumer.close()
    assert [(m.offset, m.value) for m in got] == [(1, b"plain-1"), (2, b"plain-2"), (3, b"gz-0"), (4, b"gz-1"), (5, b"gz-2")]
    if api_version >= (0, 10):
        assert [m.timestamp for m in got] == [T0 + 1, T0 + 2, T0, T0 + 1, T0 + 2]


def test_aiokafka_consumer_with_assign(broker) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    create_topic(broker, "aio", 2)
    append_records(broker, "aio", 1, RECORDS, Compression.NONE)

    async def consume() -> list:
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False)
        await consumer.start()
        try:
            tp = TopicPartition("aio", 1)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            got = []
            while len(got) < len(RECORDS):
                batch = await asyncio.wait_for(consumer.getmany(tp, timeout_ms=1000), 30)
                got += batch.get(tp, [])
            assert await consumer.end_offsets([tp]) == {tp: 4}
            return got
        finally:
            await consumer.stop()

    got = asyncio.run(consume())
    assert [(m.offset, m.key, m.value, m.timestamp, list(m.headers)) for m in got] == [
        (i, k, v, t, list(h)) for i, (k, v, h, t) in enumerate(RECORDS)]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (Debian package kcat)")
def test_kcat_consumes(broker) -> None:
    create_topic(broker, "kc", 1)
    append_records(broker, "kc", 0, [(b"k%d" % i, b"v%d" % i, [], T0 + i) for i in range(5)], Compression.LZ4
                   if Compression.LZ4 in CODECS else Compression.GZIP)
    proc = subprocess.run(["kcat", "-C", "-b", broker.bootstrap_servers, "-t", "kc", "-p", "0", "-o", "1", "-e",
                           "-f", "%o %k %s %T\n"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"{i} k{i} v{i} {T0 + i}" for i in range(1, 5)]


def test_large_records_arrive_whole(broker) -> None:
    """Answers of megabytes (encoded in the worker thread) reach the consumer intact, the first batch whole even
    above fetch.max.bytes."""
    from confluent_kafka import TopicPartition

    create_topic(broker, "large", 1, {"max.message.bytes": "4000000"})
    blobs = [bytes([i]) * 3_000_000 for i in range(4)]
    for i, blob in enumerate(blobs):
        append_records(broker, "large", 0, [(b"big", blob, [], T0 + i)])
    consumer = _consumer(broker, **{"fetch.max.bytes": 1_000_000, "receive.message.max.bytes": 20_000_000})
    try:
        consumer.assign([TopicPartition("large", 0, 0)])
        got = _poll_until(consumer, 4)
    finally:
        consumer.close()
    assert [m.value() for m in got] == blobs
