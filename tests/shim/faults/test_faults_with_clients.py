"""Injected faults as real clients see them: retried errors that end in success, errors a client gives up on, a
dropped connection, a coordinator error, a delayed fetch, and the control file of a ``kafka-shim serve`` process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_shim.shim.testing.handle import KafkaShim
from kafka_shim.shim.testing.options import ShimOptions
from tests.support.consume import consume_values


def _deliver(config: dict, topic: str, value: bytes) -> KafkaError | None:
    reports: list[KafkaError | None] = []
    producer = Producer(config | {"message.timeout.ms": 30000, "retry.backoff.ms": 10})
    producer.produce(topic, value, on_delivery=lambda err, msg: reports.append(err))
    producer.flush(60)
    assert len(reports) == 1, "no delivery report within 60 s"
    return reports[0]


def test_retriable_produce_errors_are_retried_until_delivered() -> None:
    with KafkaShim() as shim:
        shim.create_topic("orders")
        shim.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=3, topic="orders")
        assert _deliver(shim.confluent_config(), "orders", b"after-retries") is None
        assert shim.faults.rules() == []  # all three answers were taken by the producer's attempts
        assert consume_values(shim.confluent_config(), "orders", 1, "g") == [b"after-retries"]


def test_large_produce_requests_meet_the_faults_too() -> None:
    # Large requests are decoded off the event loop (Produce above 1088 KiB): another path to the handler.
    with KafkaShim(ShimOptions.from_marker({"config": {"message.max.bytes": "3000000"}})) as shim:
        shim.create_topic("big")
        shim.faults.error("Produce", "NOT_ENOUGH_REPLICAS", count=2)
        config = shim.confluent_config(**{"message.max.bytes": 3_000_000, "compression.type": "none"})
        assert _deliver(config, "big", os.urandom(2_000_000)) is None
        assert shim.faults.rules() == []


def test_a_fatal_produce_error_reaches_the_application() -> None:
    with KafkaShim() as shim:
        shim.create_topic("orders")
        shim.faults.error("Produce", "TOPIC_AUTHORIZATION_FAILED")
        error = _deliver(shim.confluent_config(), "orders", b"refused")
        assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        assert _deliver(shim.confluent_config(), "orders", b"accepted") is None  # the rule took one request only


def test_a_delayed_produce_is_written_even_after_the_client_gave_up_on_it() -> None:
    """As a slow Kafka does: the first copy, read before the client timed out and resent on a new connection, is
    still handled after its delay, so a producer without idempotence writes the record twice."""
    with KafkaShim() as shim:
        shim.create_topic("slow")
        shim.faults.delay("Produce", 4000, count=1)
        config = shim.confluent_config(**{"socket.timeout.ms": 1500, "enable.idempotence": False, "acks": 1})
        assert _deliver(config, "slow", b"twice") is None
        watcher = Consumer(shim.confluent_config(**{"group.id": "watch"}))
        try:
            deadline = time.monotonic() + 60
            while watcher.get_watermark_offsets(TopicPartition("slow", 0), timeout=10)[1] < 2:
                assert time.monotonic() < deadline, "the delayed first copy was never written"
                time.sleep(0.1)
        finally:
            watcher.close()
        assert consume_values(shim.confluent_config(), "slow", 2, "g") == [b"twice", b"twice"]


def test_a_dropped_connection_is_reconnected() -> None:
    with KafkaShim() as shim:
        shim.create_topic("seen")
        rule = shim.faults.close("Metadata", count=None)
        admin = AdminClient(shim.confluent_config())
        with pytest.raises(KafkaException) as dropped:  # librdkafka gives an explicit metadata request up
            admin.list_topics(timeout=60)
        assert dropped.value.args[0].code() == KafkaError._TRANSPORT
        assert shim.faults.rules()[0]["taken"] >= 1
        assert shim.faults.remove(rule)
        assert "seen" in admin.list_topics(timeout=60).topics  # the same client reconnects


def test_coordinator_errors_make_the_consumer_find_its_coordinator_again() -> None:
    with KafkaShim() as shim:
        shim.create_topic("orders")
        assert _deliver(shim.confluent_config(), "orders", b"v") is None
        shim.faults.error("JoinGroup", "NOT_COORDINATOR", count=2, group="billing")
        shim.faults.delay("Fetch", 300)
        assert consume_values(shim.confluent_config(), "orders", 1, "billing") == [b"v"]
        assert shim.faults.rules() == []


class _Events:
    """The JSON log events of a server process, read as they come (a thread), to wait on one of them."""

    def __init__(self, stream) -> None:
        self.events: list[dict] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            if line.startswith("{"):
                with self._changed:
                    self.events.append(json.loads(line))
                    self._changed.notify_all()

    def wait_for(self, name: str, after: int = 0, timeout: float = 60) -> dict:
        with self._changed:
            found = self._changed.wait_for(
                lambda: next((e for e in self.events[after:] if e.get("event") == name), None), timeout)
        assert found, f"no {name} event within {timeout} s"
        return found


def test_the_control_file_drives_a_serving_broker(tmp_path: Path) -> None:
    control = tmp_path / "faults.json"
    server = subprocess.Popen(
        [sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", "--log-format", "json", "--log-level", "info",
         "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"kafka.shim.faults.file={control}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[3],
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    events = _Events(server.stderr)
    try:
        bootstrap = server.stdout.readline().strip().split("://", 1)[1]
        config = {"bootstrap.servers": bootstrap}
        assert _deliver(config, "ctl", b"before") is None  # auto-created; no rule yet
        seen = len(events.events)
        control.write_text(json.dumps({"faults": [{"api": "Produce", "error_code": "TOPIC_AUTHORIZATION_FAILED"}]}))
        applied = events.wait_for("fault_file_applied", after=seen)
        assert applied["faults"][0]["api"] == "PRODUCE"
        error = _deliver(config, "ctl", b"refused")
        assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        seen = len(events.events)
        control.write_text("{not json")  # a mistake: logged, and the broker goes on with the rules it had
        assert "not JSON" in events.wait_for("fault_file_rejected", after=seen)["reason"]
        assert _deliver(config, "ctl", b"after") is None
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    assert server.returncode == 0
    assert any(e.get("event") == "fault_injected" for e in events.events)


def test_the_control_file_stops_and_starts_brokers_of_a_served_cluster(tmp_path: Path) -> None:
    control = tmp_path / "faults.json"
    server = subprocess.Popen(
        [sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", "--log-format", "json", "--log-level", "info",
         "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "kafka.shim.brokers=3",
         "--override", f"kafka.shim.faults.file={control}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[3],
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    events = _Events(server.stderr)
    try:
        bootstrap = ",".join(server.stdout.readline().strip().split("://", 1)[1] for _ in range(3))
        admin = AdminClient({"bootstrap.servers": bootstrap})
        assert sorted(admin.list_topics(timeout=60).brokers) == [1, 2, 3]
        seen = len(events.events)
        control.write_text(json.dumps({"faults": [{"kind": "broker_down", "node": 2}]}))
        assert events.wait_for("fault_file_applied", after=seen)["brokers_down"] == [2]
        events.wait_for("node_stopped", after=seen)
        assert sorted(admin.list_topics(timeout=60).brokers) == [1, 3]
        seen = len(events.events)
        control.write_text(json.dumps({"faults": []}))  # not listed any more: the node is back
        events.wait_for("node_started", after=seen)
        assert sorted(admin.list_topics(timeout=60).brokers) == [1, 2, 3]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    assert server.returncode == 0
