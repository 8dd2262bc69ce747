"""End to end with real clients: what one client library writes, another reads back unchanged.

Producers and consumers of different libraries are crossed on purpose (librdkafka writes, kafka-python reads, and
the other way round), so a record survives only if kafka-shim stored and served it exactly as Kafka would. The
durability case runs the broker as a process with a data directory and kills it with SIGKILL.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.clients

ROOT = Path(__file__).resolve().parents[2]
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def _topic(broker, partitions: int = 1) -> str:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    broker.call(broker.broker.services.partitions.create_topic, name, partitions)
    return name


def _confluent_produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes, list, int]], **conf) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, **conf})
    errors: list = []
    for key, value, headers, timestamp in records:
        producer.produce(topic, value, key=key, headers=headers, timestamp=timestamp,
                         on_delivery=lambda err, _msg: err is not None and errors.append(err))
    assert producer.flush(60) == 0
    assert errors == []


def _confluent_consume(bootstrap: str, topic: str, count: int, partitions: int = 1) -> list:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "e2e", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list = []
    try:
        for _ in range(120):
            for message in consumer.consume(count - len(got), timeout=1.0):
                assert message.error() is None, message.error()
                got.append(message)
            if len(got) >= count:
                break
    finally:
        consumer.close()
    return got


def _records(n: int) -> list[tuple[bytes | None, bytes, list, int]]:
    base = 1_700_000_000_000
    return [(None if i % 5 == 0 else f"key-{i}".encode(), f"value-{i}-".encode() * (1 + i % 7),
             [("h", f"{i}".encode()), ("dup", b"a"), ("dup", b"b")] if i % 2 else [], base + i) for i in range(n)]


@pytest.mark.parametrize("codec", CODECS)
def test_idempotent_librdkafka_producer_round_trips_every_codec(broker, codec: str) -> None:
    topic = _topic(broker)
    records = _records(300)
    _confluent_produce(broker.bootstrap_servers, topic, records, **{"enable.idempotence": True, "compression.type": codec,
                                                                     "linger.ms": 20})
    got = _confluent_consume(broker.bootstrap_servers, topic, len(records))
    assert [(m.key(), m.value(), m.headers() or [], m.timestamp()[1]) for m in got] == [
        (k, v, h, ts) for k, v, h, ts in records
    ]
    assert [m.offset() for m in got] == list(range(len(records)))


def test_kafka_python_reads_what_librdkafka_wrote_and_back(broker) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = _topic(broker)
    records = _records(50)
    _confluent_produce(broker.bootstrap_servers, topic, records, **{"compression.type": "lz4"})
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, compression_type="gzip", acks="all")
    for i in range(50, 80):
        producer.send(topic, key=f"k{i}".encode(), value=f"kp-{i}".encode(), headers=[("src", b"kafka-python")])
    producer.flush(timeout=30)
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False,
                             consumer_timeout_ms=30_000)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    seen = []
    for message in consumer:
        seen.append(message)
        if len(seen) == 80:
            break
    consumer.close()
    assert [m.value for m in seen[:50]] == [r[1] for r in records]
    assert [m.value for m in seen[50:]] == [f"kp-{i}".encode() for i in range(50, 80)]
    assert seen[60].headers == [("src", b"kafka-python")]
    # and librdkafka reads kafka-python's gzip batches
    assert [m.value() for m in _confluent_consume(broker.bootstrap_servers, topic, 80)][50:] == [m.value for m in seen[50:]]


def test_aiokafka_produces_and_consumes(broker) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    topic = _topic(broker, partitions=3)

    async def run() -> list:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True,
                                    compression_type="zstd")
        await producer.start()
        try:
            for i in range(60):
                await producer.send_and_wait(topic, f"a-{i}".encode(), key=f"{i % 3}".encode(), partition=i % 3)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False,
                                    auto_offset_reset="earliest")
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(3)])
            await consumer.seek_to_beginning()
            got: list = []
            while len(got) < 60:
                batches = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 60)
                for messages in batches.values():
                    got.extend(messages)
            return got
        finally:
            await consumer.stop()

    got = asyncio.run(run())
    by_partition = {p: [m.value for m in got if m.partition == p] for p in range(3)}
    assert by_partition == {p: [f"a-{i}".encode() for i in range(60) if i % 3 == p] for p in range(3)}


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by scripts/ensure-kcat (scripts/test runs it)")
def test_kcat_lists_produces_and_consumes(broker) -> None:
    topic = _topic(broker, partitions=2)
    lines = "".join(f"k{i}:v{i}\n" for i in range(100))
    subprocess.run(["kcat", "-b", broker.bootstrap_servers, "-P", "-t", topic, "-K:", "-p", "1"], input=lines.encode(),
                   check=True, timeout=60)
    listing = subprocess.run(["kcat", "-b", broker.bootstrap_servers, "-L", "-t", topic], capture_output=True, text=True,
                             check=True, timeout=60).stdout
    assert f'topic "{topic}" with 2 partitions' in listing
    out = subprocess.run(["kcat", "-b", broker.bootstrap_servers, "-C", "-t", topic, "-p", "1", "-o", "beginning", "-e",
                          "-f", "%k=%s@%o\n"], capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.splitlines() == [f"k{i}=v{i}@{i}" for i in range(100)]


def _serve(data_dir: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", "--override",
                             "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={data_dir}", "--log-level", "warning"],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    line = proc.stdout.readline().strip()
    assert "://" in line, f"kafka-shim serve printed {line!r}"
    return proc, line.split("://", 1)[1]


def test_nothing_acknowledged_is_lost_after_kill_9(tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    proc, bootstrap = _serve(tmp_path)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the answer is in
        admin.create_topics([NewTopic("durable", 2, 1)])["durable"].result(timeout=30)
        records = _records(2000)
        _confluent_produce(bootstrap, "durable", records, **{"acks": "all", "enable.idempotence": True, "linger.ms": 2})
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    proc, bootstrap = _serve(tmp_path)
    try:
        got = _confluent_consume(bootstrap, "durable", len(records), partitions=2)
        assert sorted(m.value() for m in got) == sorted(r[1] for r in records)
        # and the broker takes new writes after the offsets it recovered
        _confluent_produce(bootstrap, "durable", [(None, b"after", [], 1_700_000_100_000)], **{"acks": "all"})
        assert len(_confluent_consume(bootstrap, "durable", len(records) + 1, partitions=2)) == len(records) + 1
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
