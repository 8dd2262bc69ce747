"""Faults on the data plane, with real clients over TCP: whatever one client does wrong, the others go on.

- A client that dies mid-request (half a Produce frame, then a closed socket; a whole request and gone before the
  answer) and a consumer that disconnects while its long-polling Fetch waits: the waiter is forgotten at once, no
  fetch session is created for an answer nobody reads, the connection is gone from the broker.
- Malformed batches from a raw socket (bad CRC, truncated, garbage, wrong magic, absurd lengths): each gets an
  error in its partition (compared with Kafka 3.9's in tests/differential/test_malformed_batches.py), nothing of
  it is written, and the connection goes on serving.
- A full disk (a 1 MiB tmpfs as ``log.dirs`` when mounting works here, else failing writes injected under the
  storage): the producer sees KAFKA_STORAGE_ERROR (56) as librdkafka reports it, nothing acknowledged is lost,
  reads go on, and writes succeed again once space returns.

All the while a confluent-kafka producer and consumer on their own connections write and read records and get
each one back.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import struct
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import FetchRequest, ProduceRequest
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.log.storage import FileDirectory
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.appending import batch, create_topic, values
from tests.support.malformed import malformed_batches
from tests.support.wire import Wire

pytestmark = pytest.mark.clients

PRODUCE, FETCH = 0, 1
KAFKA_STORAGE_ERROR = 56


def _address(broker: EmbeddedBroker) -> tuple[str, int]:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return host, int(port)


def _until(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.01)


class SteadyClients:
    """A confluent-kafka idempotent producer and an assigned consumer that keep their connections for the test."""

    def __init__(self, broker: EmbeddedBroker, topic: str) -> None:
        from confluent_kafka import Consumer, Producer, TopicPartition

        self.topic = topic
        self.producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True, "linger.ms": 5})
        self.consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "steady",
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        self.consumer.assign([TopicPartition(topic, 0, 0)])
        self.sent: list[bytes] = []
        self.read: list[bytes] = []

    def round(self, count: int = 20) -> None:
        """Write ``count`` records, have them acknowledged, and read every record written so far, in order."""
        errors: list = []
        batch_values = [f"steady-{len(self.sent) + i}-{uuid.uuid4().hex[:6]}".encode() for i in range(count)]
        for value in batch_values:
            self.producer.produce(self.topic, value, on_delivery=lambda err, _m: err is not None and errors.append(err))
        assert self.producer.flush(60) == 0 and errors == [], errors
        self.sent += batch_values
        deadline = time.monotonic() + 60
        while len(self.read) < len(self.sent):
            assert time.monotonic() < deadline, f"consumer read {len(self.read)} of {len(self.sent)}"
            for message in self.consumer.consume(len(self.sent) - len(self.read), timeout=1.0):
                assert message.error() is None, message.error()
                self.read.append(message.value())
        assert self.read == self.sent

    def close(self) -> None:
        self.consumer.close()


@pytest.fixture
def broker() -> Iterator[EmbeddedBroker]:
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1"})
    with EmbeddedBroker(config) as running:
        yield running


@pytest.fixture
def steady(broker: EmbeddedBroker) -> Iterator[SteadyClients]:
    create_topic(broker, "steady", 1)
    clients = SteadyClients(broker, "steady")
    clients.round()
    yield clients
    clients.close()


def _produce_frame(topic: str, records: bytes, version: int = 9, correlation_id: int = 7) -> bytes:
    body = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])])
    return encode_request(PRODUCE, version, correlation_id, body)


def _log_end(broker: EmbeddedBroker, topic: str) -> int:
    return broker.call(lambda: broker.broker.services.partitions.get(topic, 0).log.log_end_offset)


def _connections(broker: EmbeddedBroker) -> int:
    return broker.call(lambda: len(broker.broker.connections))


# -- clients that die mid-request ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("cut", ["size-prefix", "header", "body", "whole-request-unread"])
def test_a_client_dying_mid_produce_leaves_no_trace(broker: EmbeddedBroker, steady: SteadyClients, cut: str) -> None:
    create_topic(broker, "victim", 1)
    frame = _produce_frame("victim", batch(values("torn", 50)))
    sent = {"size-prefix": frame[:2], "header": frame[:12], "body": frame[: len(frame) // 2], "whole-request-unread": frame}[cut]
    before = _connections(broker)
    raw = socket.create_connection(_address(broker))
    _until(lambda: _connections(broker) == before + 1, "the raw connection was accepted")
    raw.sendall(sent)
    if cut == "whole-request-unread":
        _until(lambda: _log_end(broker, "victim") == 50, "the whole request was written")
    raw.close()  # gone without reading anything
    _until(lambda: _connections(broker) == before, "the broker forgot the dead connection")
    steady.round()
    # A torn request wrote nothing; a whole one was written once, its answer dropped.
    assert _log_end(broker, "victim") == (50 if cut == "whole-request-unread" else 0)


def _fetch_frame(topic: str, offset: int, session_id: int, epoch: int, max_wait_ms: int, correlation_id: int) -> bytes:
    body = FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                        session_id=session_id, session_epoch=epoch, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                            FetchRequest.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])],
                        forgotten_topics_data=[], rack_id="")
    return encode_request(FETCH, 12, correlation_id, body)


def test_a_consumer_gone_while_its_fetch_waits_leaves_nothing_behind(broker: EmbeddedBroker, steady: SteadyClients) -> None:
    create_topic(broker, "polled", 1)
    services = broker.broker.services

    def waiting_on_polled() -> bool:
        return broker.call(lambda: ("polled", 0) in services.append_waiters._waiting)

    sessions_before = broker.call(lambda: len(services.fetch_sessions))
    # 1. A full fetch that starts a session, waiting at the log end; the client goes before any answer.
    raw = socket.create_connection(_address(broker))
    raw.sendall(_fetch_frame("polled", 0, 0, 0, 120_000, 1))
    _until(waiting_on_polled, "the fetch waits")
    steady.round()  # the others are served while it waits
    raw.close()
    _until(lambda: not waiting_on_polled(), "the waiter is forgotten")
    assert broker.call(lambda: len(services.fetch_sessions)) == sessions_before  # no session for an unread answer

    # 2. A consumer with a session whose incremental fetch is waiting when it disconnects. The session outlives its
    #    connection, as in Kafka (sessions belong to no connection; the cache evicts them by Kafka's rules), and the
    #    client can go on with it from a new connection at the next epoch.
    with Wire(_address(broker), timeout=60) as wire:
        wire.send_frame(_fetch_frame("polled", 0, 0, 0, 0, 2))
        first = wire.read_answer(FETCH, 12)
    session_id = first.body.session_id
    assert first.body.error_code == 0 and session_id != 0
    raw = socket.create_connection(_address(broker))
    raw.sendall(_fetch_frame("polled", 0, session_id, 1, 120_000, 3))
    _until(waiting_on_polled, "the incremental fetch waits")
    raw.close()
    _until(lambda: not waiting_on_polled(), "the waiter is forgotten")
    # Only the steady consumer's own long poll may be waiting now.
    assert broker.call(lambda: set(services.append_waiters._waiting)) <= {("steady", 0)}
    assert broker.call(lambda: len(services.fetch_sessions)) == sessions_before + 1
    steady.round()
    with Wire(_address(broker), timeout=60) as wire:
        wire.send_frame(_fetch_frame("polled", 0, session_id, 2, 0, 4))
        again = wire.read_answer(FETCH, 12)
    assert (again.body.error_code, again.body.session_id) == (0, session_id)


# -- malformed batches ----------------------------------------------------------------------------------------------------


def test_malformed_batches_are_refused_while_real_clients_keep_working(broker: EmbeddedBroker, steady: SteadyClients) -> None:
    create_topic(broker, "target", 1)
    with Wire(_address(broker), timeout=60) as wire:
        codes = {}
        for index, (case, records) in enumerate(malformed_batches().items()):
            answer = wire.exchange(_produce_frame("target", records, correlation_id=100 + index), PRODUCE, 9)
            assert not answer.closed, f"{case}: the connection closed"
            codes[case] = answer.body.responses[0].partition_responses[0].error_code
            steady.round(5)
        # Each refused in its partition (the exact answers are compared with Kafka in tests/differential).
        assert all(code != 0 for code in codes.values()), codes
        assert _log_end(broker, "target") == 0
        # The same connection still writes a valid batch.
        ok = wire.exchange(_produce_frame("target", batch(values("fine", 2)), correlation_id=999), PRODUCE, 9)
        assert ok.body.responses[0].partition_responses[0].error_code == 0
    assert _log_end(broker, "target") == 2


def test_a_frame_of_absurd_size_closes_only_its_connection(broker: EmbeddedBroker, steady: SteadyClients) -> None:
    for prefix in (struct.pack(">i", -1), struct.pack(">i", 2**31 - 1)):
        with Wire(_address(broker), timeout=60) as wire:
            wire.send_frame(prefix + b"\x00" * 16)
            assert wire.read_answer(PRODUCE, 9).closed
        steady.round(5)


# -- a full disk ------------------------------------------------------------------------------------------------------------


def _mount_tmpfs(path: Path, size: str) -> bool:
    if shutil.which("mount") is None:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    return done.returncode == 0


class FullDisk:
    """A disk that fills up and is freed again: a tmpfs filled by a ballast file when mounting works, else the
    storage's writes failing with ENOSPC (what ``write(2)`` says on a full disk)."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
        self.dir = root / "disk"
        self.dir.mkdir()
        self.mounted = kind == "tmpfs" and _mount_tmpfs(self.dir, "4m")
        if kind == "tmpfs" and not self.mounted:
            pytest.skip("mounting a tmpfs is not allowed here (needs root or CAP_SYS_ADMIN); the injected case runs")
        self._full = False
        if kind == "injected":
            original = FileDirectory.append

            def append(directory: FileDirectory, file: str, data: bytes) -> None:
                if self._full:
                    # As a real full disk: part of the data may land before the error.
                    original(directory, file, data[: len(data) // 2])
                    from kafka_shim.shim.log.errors import StorageFailure
                    raise StorageFailure(f"cannot write {directory.path / file}: {os.strerror(errno.ENOSPC)}")
                original(directory, file, data)

            monkeypatch.setattr(FileDirectory, "append", append)

    def fill(self) -> None:
        if self.mounted:
            fd = os.open(self.dir / "ballast", os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                while True:
                    os.write(fd, b"\x00" * 4096)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
            finally:
                os.close(fd)
        self._full = True

    def free(self) -> None:
        if self.mounted:
            (self.dir / "ballast").unlink()
        self._full = False

    def release(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.dir)], capture_output=True)


@pytest.mark.parametrize("kind", ["tmpfs", "injected"])
def test_a_full_disk_is_a_storage_error_and_writes_resume_when_space_returns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                            kind: str) -> None:
    from confluent_kafka import KafkaError, Producer

    disk = FullDisk(tmp_path, monkeypatch, kind)
    try:
        config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "log.dirs": str(disk.dir)})
        with EmbeddedBroker(config) as broker:
            create_topic(broker, "steady", 1)
            create_topic(broker, "filled", 2)
            steady = SteadyClients(broker, "steady")
            steady.round()
            retrying = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True,
                                 "acks": "all", "linger.ms": 0})
            acknowledged: list[bytes] = []
            failed: list = []

            def delivered(err, message) -> None:
                if err is None:
                    acknowledged.append(message.value())
                else:
                    failed.append(err)

            for i in range(30):
                retrying.produce("filled", f"before-{i}".encode(), partition=i % 2, on_delivery=delivered)
            assert retrying.flush(60) == 0 and not failed

            disk.fill()
            # A producer that does not retry sees the broker's error as librdkafka reports it.
            once = Producer({"bootstrap.servers": broker.bootstrap_servers, "retries": 0, "acks": "all",
                             "enable.idempotence": False, "linger.ms": 0})
            refused: list = []
            once.produce("filled", b"no room" * 2000, partition=0, on_delivery=lambda err, _m: refused.append(err))
            assert once.flush(60) == 0
            assert [e.code() for e in refused] == [KafkaError.KAFKA_STORAGE_ERROR], refused
            # An idempotent producer keeps retrying its batch (56 is retriable) while the disk is full ...
            for i in range(10):
                retrying.produce("filled", f"during-{i}-".encode() * 1000, partition=i % 2, on_delivery=delivered)
            retrying.poll(1.0)
            assert not failed and len(acknowledged) == 30
            # ... while everything acknowledged stays readable, on this and the other topic.
            assert _read_all(broker, "filled", 2) == sorted(acknowledged)
            end_before = _log_end(broker, "filled")

            disk.free()
            assert retrying.flush(120) == 0 and not failed, failed
            assert sorted(acknowledged) == sorted([f"before-{i}".encode() for i in range(30)] +
                                                  [f"during-{i}-".encode() * 1000 for i in range(10)])
            assert _read_all(broker, "filled", 2) == sorted(acknowledged)  # each written once, none torn
            assert _log_end(broker, "filled") >= end_before
            steady.round()
            steady.close()
    finally:
        disk.release()


def _read_all(broker: EmbeddedBroker, topic: str, partitions: int) -> list[bytes]:
    """Every record of the topic, read with kafka-python on its own connection."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False, consumer_timeout_ms=3000)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        ends = consumer.end_offsets(tps)
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, "kafka-python never read the whole topic"
            for records in consumer.poll(timeout_ms=500).values():
                got += [r.value for r in records]
        return sorted(got)
    finally:
        consumer.close()

