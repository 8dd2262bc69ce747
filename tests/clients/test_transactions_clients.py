"""Transactions with real clients over TCP: confluent-kafka (librdkafka) and kafka-python transactional producers
commit and abort, read_committed consumers see only committed records, consume-transform-produce commits the
consumer's offsets inside the transaction, a zombie producer is fenced, a transaction left open times out, and the
transactional id's ACLs decide who may start one."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_shim.shim.testing.handle import KafkaShim
from kafka_shim.shim.testing.options import ShimOptions

pytestmark = pytest.mark.clients
TIMEOUT = 60


@pytest.fixture(scope="module")
def shim():
    with KafkaShim(ShimOptions(config={"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"})) as running:
        yield running


@pytest.fixture(autouse=True)
def fresh(shim: KafkaShim):
    shim.reset()


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _transactional(shim: KafkaShim, transactional_id: str, **extra):
    from confluent_kafka import Producer

    producer = Producer(shim.confluent_config(**{"transactional.id": transactional_id, **extra}))
    producer.init_transactions(TIMEOUT)
    return producer


def _consume(shim: KafkaShim, topic: str, isolation: str, expected: int, partitions: int = 1) -> list[bytes]:
    return _consume_with(shim.confluent_config(), topic, isolation, expected, partitions)


def _consume_with(config: dict, topic: str, isolation: str, expected: int, partitions: int = 1) -> list[bytes]:
    """Every record a consumer with ``isolation`` reads from the start, waiting (generously) for ``expected``."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**config, "group.id": _name("reader"), "isolation.level": isolation,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while len(values) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                values.append(msg.value())
        # Nothing more arrives than expected: read on until the consumer has reached the end of every partition.
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                values.append(msg.value())
    finally:
        consumer.close()
    return values


def test_committed_and_aborted_transactions_with_confluent_kafka(shim: KafkaShim) -> None:
    topic = _name("orders")
    shim.create_topic(topic, partitions=2)
    producer = _transactional(shim, _name("tx"))
    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic, value=b"kept-%d" % i, partition=i % 2)
    producer.commit_transaction(TIMEOUT)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, value=b"dropped-%d" % i, partition=i % 2)
    producer.flush(TIMEOUT)
    producer.abort_transaction(TIMEOUT)
    producer.begin_transaction()
    producer.produce(topic, value=b"last", partition=0)
    producer.commit_transaction(TIMEOUT)

    committed = _consume(shim, topic, "read_committed", 11, partitions=2)
    assert sorted(committed) == sorted([b"kept-%d" % i for i in range(10)] + [b"last"])
    everything = _consume(shim, topic, "read_uncommitted", 16, partitions=2)
    assert sorted(everything) == sorted([b"kept-%d" % i for i in range(10)] + [b"dropped-%d" % i for i in range(5)] + [b"last"])


def test_a_read_committed_consumer_waits_for_the_commit(shim: KafkaShim) -> None:
    from confluent_kafka import Consumer, TopicPartition

    topic = _name("pending")
    shim.create_topic(topic)
    producer = _transactional(shim, _name("tx"))
    producer.begin_transaction()
    producer.produce(topic, value=b"later")
    producer.flush(TIMEOUT)  # written to the log, not yet committed
    consumer = Consumer(shim.confluent_config(**{"group.id": _name("reader"), "isolation.level": "read_committed",
                                                 "auto.offset.reset": "earliest"}))
    consumer.assign([TopicPartition(topic, 0, 0)])
    try:
        early = consumer.poll(2.0)
        assert early is None or early.error() is not None, "a read_committed consumer saw an open transaction's record"
        producer.commit_transaction(TIMEOUT)
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                assert msg.value() == b"later"
                break
        else:
            pytest.fail("the committed record never reached the read_committed consumer")
    finally:
        consumer.close()


def test_consume_transform_produce_commits_offsets_in_the_transaction(shim: KafkaShim) -> None:
    from confluent_kafka import Consumer, TopicPartition

    source, sink, group = _name("in"), _name("out"), _name("app")
    shim.create_topic(source)
    shim.create_topic(sink)
    from confluent_kafka import Producer

    plain = Producer(shim.confluent_config())
    for i in range(6):
        plain.produce(source, value=b"%d" % i)
    plain.flush(TIMEOUT)

    consumer = Consumer(shim.confluent_config(**{"group.id": group, "enable.auto.commit": False,
                                                 "auto.offset.reset": "earliest", "isolation.level": "read_committed"}))
    consumer.subscribe([source])
    producer = _transactional(shim, _name("tx"))
    seen = []
    deadline = time.monotonic() + TIMEOUT
    while len(seen) < 6 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen.append(msg)
    assert len(seen) == 6
    producer.begin_transaction()
    for msg in seen[:4]:
        producer.produce(sink, value=msg.value() * 2)
    producer.send_offsets_to_transaction([TopicPartition(source, 0, seen[3].offset() + 1)],
                                         consumer.consumer_group_metadata(), TIMEOUT)
    producer.commit_transaction(TIMEOUT)
    # A second transaction, aborted: neither its records nor its offsets count.
    producer.begin_transaction()
    producer.produce(sink, value=b"never")
    producer.send_offsets_to_transaction([TopicPartition(source, 0, 6)], consumer.consumer_group_metadata(), TIMEOUT)
    producer.abort_transaction(TIMEOUT)
    committed = consumer.committed([TopicPartition(source, 0)], TIMEOUT)
    consumer.close()
    assert committed[0].offset == 4
    assert sorted(_consume(shim, sink, "read_committed", 4)) == sorted([b"00", b"11", b"22", b"33"])


def test_a_zombie_producer_is_fenced(shim: KafkaShim) -> None:
    from confluent_kafka import KafkaException

    topic, transactional_id = _name("fenced"), _name("tx")
    shim.create_topic(topic)
    zombie = _transactional(shim, transactional_id)
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie")
    zombie.flush(TIMEOUT)
    successor = _transactional(shim, transactional_id)  # aborts the zombie's open transaction
    successor.begin_transaction()
    successor.produce(topic, value=b"successor")
    successor.commit_transaction(TIMEOUT)
    with pytest.raises(KafkaException) as raised:
        zombie.produce(topic, value=b"late")
        zombie.commit_transaction(TIMEOUT)
    error = raised.value.args[0]
    assert error.fatal() or error.txn_requires_abort(), error
    assert "fenced" in error.str().lower() or error.name() in ("_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"), error
    assert _consume(shim, topic, "read_committed", 1) == [b"successor"]


def test_a_transaction_left_open_is_aborted_after_its_timeout(shim: KafkaShim) -> None:
    topic = _name("slow")
    shim.create_topic(topic)
    producer = _transactional(shim, _name("tx"), **{"transaction.timeout.ms": 2000})
    producer.begin_transaction()
    producer.produce(topic, value=b"too-late")
    producer.flush(TIMEOUT)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        described = shim.embedded.call(lambda: [t.state.display_name for t in shim.embedded.broker.services.transactions.transactions.values()])
        if described == ["CompleteAbort"]:
            break
        time.sleep(0.1)
    assert described == ["CompleteAbort"]
    assert _consume(shim, topic, "read_committed", 0) == []


def test_kafka_python_transactional_producer(shim: KafkaShim) -> None:
    from kafka import KafkaProducer

    topic = _name("kp")
    shim.create_topic(topic)
    producer = KafkaProducer(**shim.kafka_python_config(transactional_id=_name("tx")))
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(topic, b"one")
    producer.send(topic, b"two")
    producer.commit_transaction()
    producer.begin_transaction()
    producer.send(topic, b"gone")
    producer.abort_transaction()
    producer.close()
    assert _consume(shim, topic, "read_committed", 2) == [b"one", b"two"]


ACLS_FOR_ALICE = [
    {"resource_type": "topic", "resource_name": "paid", "pattern_type": "prefixed", "principal": "User:alice",
     "operations": ["Write", "Describe"]},
    {"resource_type": "transactional_id", "resource_name": "alice-", "pattern_type": "prefixed", "principal": "User:alice",
     "operation": "Write"},
]


def test_the_transactional_id_acl_decides() -> None:
    from confluent_kafka import KafkaException, Producer

    with KafkaShim(ShimOptions(listener="SASL_PLAINTEXT", acls=ACLS_FOR_ALICE)) as secured:
        secured.create_topic("paid-orders")
        allowed = Producer(secured.confluent_config("alice", **{"transactional.id": "alice-1"}))
        allowed.init_transactions(TIMEOUT)
        allowed.begin_transaction()
        allowed.produce("paid-orders", value=b"ok")
        allowed.commit_transaction(TIMEOUT)
        denied = Producer(secured.confluent_config("alice", **{"transactional.id": "bob-1"}))
        with pytest.raises(KafkaException) as raised:
            denied.init_transactions(TIMEOUT)
        assert raised.value.args[0].name() == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


def _serve(data_dir: Path) -> tuple[subprocess.Popen, str]:
    """`kafka-shim serve` as a process on ``data_dir`` (a single node: internal topics with one replica)."""
    overrides = ["listeners=PLAINTEXT://127.0.0.1:0", f"log.dirs={data_dir}", "offsets.topic.replication.factor=1",
                 "transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1",
                 "group.initial.rebalance.delay.ms=0"]
    command = [sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", "--log-level", "warning"]
    for override in overrides:
        command += ["--override", override]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    line = proc.stdout.readline().strip()
    assert "://" in line, f"kafka-shim serve printed {line!r}"
    return proc, line.split("://", 1)[1]


def test_transactions_survive_kill_9_with_a_data_directory(tmp_path: Path) -> None:
    """A committed transaction stays committed, an open one is still open after kill -9 (its records held back from
    read_committed readers) until the producer's successor aborts it; the successor continues at a later epoch."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, transactional_id = "orders", _name("tx")
    with _served(tmp_path, signal.SIGKILL) as bootstrap:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=TIMEOUT)
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
        producer.init_transactions(TIMEOUT)
        producer.begin_transaction()
        producer.produce(topic, value=b"a1")
        producer.produce(topic, value=b"a2")
        producer.commit_transaction(TIMEOUT)
        producer.begin_transaction()
        producer.produce(topic, value=b"open")
        producer.flush(TIMEOUT)
    with _served(tmp_path, signal.SIGTERM) as bootstrap:
        successor = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
        successor.init_transactions(TIMEOUT)  # finds the open transaction in __transaction_state and aborts it
        successor.begin_transaction()
        successor.produce(topic, value=b"c1")
        successor.commit_transaction(TIMEOUT)
        assert _consume_with({"bootstrap.servers": bootstrap}, topic, "read_committed", 3) == [b"a1", b"a2", b"c1"]


def test_offsets_committed_in_a_transaction_survive_kill_9(tmp_path: Path) -> None:
    """Kafka Streams' exactly-once commit: a transaction that commits a group's offsets for two partitions. After kill
    -9 the broker rebuilds producer state from ``__consumer_offsets`` (whose batch of offsets carries base sequence 0,
    as Kafka writes it) and starts, with the offsets committed."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, transactional_id, group = "input", _name("eos"), _name("eos-group")
    with _served(tmp_path, signal.SIGKILL) as bootstrap:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(timeout=TIMEOUT)
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
        producer.init_transactions(TIMEOUT)
        producer.begin_transaction()
        producer.produce(topic, value=b"out", partition=0)
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 5), TopicPartition(topic, 1, 7)],
                                             consumer.consumer_group_metadata(), TIMEOUT)
        producer.commit_transaction(TIMEOUT)
        consumer.close()
    with _served(tmp_path, signal.SIGTERM) as bootstrap:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        committed = consumer.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=TIMEOUT)
        consumer.close()
        assert [(tp.partition, tp.offset) for tp in committed] == [(0, 5), (1, 7)]


@contextlib.contextmanager
def _served(data_dir: Path, stop: signal.Signals) -> Iterator[str]:
    """``kafka-shim serve`` on ``data_dir`` for the block (its bootstrap address), then ``stop`` sent to it."""
    proc, bootstrap = _serve(data_dir)
    try:
        yield bootstrap
    finally:
        proc.send_signal(stop)
        proc.wait(timeout=30)
