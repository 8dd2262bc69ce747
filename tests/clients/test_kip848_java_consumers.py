"""Kafka 3.9's own Java consumer with ``group.protocol=consumer`` (KIP-848) against kafka-shim with the consumer
protocol on: three consumers share a topic's partitions, one leaves, the other two take its partitions and go on.

The consumers are ``kafkashim.oracle.ConsumerGroupProbe`` (tests/oracle), run with the judge's jars through
``scripts/real-kafka run``; each prints its assignments and the records it reads as JSON lines.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import ConsumerGroupDescribeRequest
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.handlers import load_all
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.appending import append_records, create_topic
from tests.support.peers import REAL_KAFKA
from tests.support.wire import Wire

TOPIC, GROUP, PARTITIONS = "kip848-orders", "kip848-java", 6
# A Java consumer needs the coordinator (FindCoordinator) and committed offsets (OffsetFetch/OffsetCommit v9).
NEEDED = (ApiKey.FIND_COORDINATOR, ApiKey.OFFSET_FETCH, ApiKey.OFFSET_COMMIT)
WAIT = 120.0


@dataclass
class Probe:
    name: str
    proc: subprocess.Popen
    events: queue.Queue = field(default_factory=queue.Queue)
    assignment: list[int] | None = None
    records: list[tuple[int, int, str]] = field(default_factory=list)
    closed: bool = False
    errors: list[dict] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def drain(self) -> None:
        while True:
            try:
                line = self.events.get_nowait()
            except queue.Empty:
                return
            self.lines.append(line)
            try:
                event = json.loads(line)
            except ValueError:
                continue
            kind = event.get("event")
            if kind == "assigned":
                self.assignment = event["partitions"]
            elif kind == "record":
                self.records.append((event["partition"], event["offset"], event["value"]))
            elif kind == "closed":
                self.closed = True
            elif kind == "error":
                self.errors.append(event)


def _start(name: str, bootstrap: str, group: str = GROUP, protocol: str = "consumer") -> Probe:
    proc = subprocess.Popen(
        [sys.executable, str(REAL_KAFKA), "run", "kafkashim.oracle.ConsumerGroupProbe", "--bootstrap", bootstrap,
         "--group", group, "--topic", TOPIC, "--commit", "--max-ms", "240000", "--protocol", protocol],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    probe = Probe(name, proc)

    def pump() -> None:
        for line in proc.stdout:
            probe.events.put(line.strip())

    threading.Thread(target=pump, daemon=True).start()
    return probe


def _wait(probes: list[Probe], condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while True:
        for p in probes:
            p.drain()
            assert not p.errors, f"{p.name} failed: {p.errors}"
        if condition():
            return
        if time.monotonic() > deadline:
            state = {p.name: (p.assignment, len(p.records), p.lines[-3:]) for p in probes}
            raise AssertionError(f"timed out waiting for {what}: {state}")
        time.sleep(0.05)


def _partitions_shared(probes: list[Probe]) -> bool:
    got = [p.assignment for p in probes]
    if any(a is None or not a for a in got):
        return False
    flat = [x for a in got for x in a]
    return sorted(flat) == list(range(PARTITIONS))


@pytest.fixture
def broker() -> Iterator[EmbeddedBroker]:
    missing = [k.name for k in NEEDED if k not in load_all()]
    if missing:
        pytest.skip(f"the Java consumer also needs {', '.join(missing)} (issue 14's classic and offsets parts)")
    config = BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1",
        "group.coordinator.rebalance.protocols": "classic,consumer",
        "offsets.topic.replication.factor": "1", "group.initial.rebalance.delay.ms": "0",
        # A killed consumer is fenced after its session: 6 s (Kafka's minimum is configurable too) keeps the test short.
        "group.consumer.min.session.timeout.ms": "6000", "group.consumer.session.timeout.ms": "6000",
        "group.consumer.min.heartbeat.interval.ms": "1000", "group.consumer.heartbeat.interval.ms": "1000",
    })
    with EmbeddedBroker(config) as running:
        create_topic(running, TOPIC, PARTITIONS)
        yield running


def _produce(broker: EmbeddedBroker, prefix: str, per_partition: int) -> set[str]:
    values = set()
    for partition in range(PARTITIONS):
        batch = [(b"k", f"{prefix}-{partition}-{i}".encode(), [], 1_700_000_000_000 + i) for i in range(per_partition)]
        append_records(broker, TOPIC, partition, batch)
        values |= {f"{prefix}-{partition}-{i}" for i in range(per_partition)}
    return values


def _stop(probes: list[Probe]) -> None:
    for p in probes:
        if p.proc.poll() is None:
            try:
                p.proc.stdin.write("quit\n")
                p.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                pass
    for p in probes:
        try:
            p.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.proc.kill()
            p.proc.wait()


def _read(ps: list[Probe]) -> set[str]:
    return {value for p in ps for _, _, value in p.records}


def test_a_killed_java_consumer_is_fenced_after_its_session(broker: EmbeddedBroker) -> None:
    first = _produce(broker, "early", 3)
    probes = [_start(f"consumer-{i}", broker.bootstrap_servers, "kip848-killed") for i in range(2)]
    try:
        _wait(probes, lambda: _partitions_shared(probes) and first <= _read(probes), "two consumers to share the partitions")
        victim, survivor = probes
        victim.proc.kill()  # "scripts/real-kafka run" execs java: this is the JVM itself, gone without a leave
        started = time.monotonic()
        _wait([survivor], lambda: survivor.assignment == list(range(PARTITIONS)), "the survivor to get every partition")
        assert time.monotonic() - started >= 3.0, "taken over before the dead member's session could expire"
        later = _produce(broker, "late", 2)
        _wait([survivor], lambda: later <= _read([survivor]), "the survivor to read the new records")
    finally:
        _stop(probes)


def test_three_java_consumers_share_then_two_take_over(broker: EmbeddedBroker) -> None:
    first = _produce(broker, "before", 5)
    probes = [_start(f"consumer-{i}", broker.bootstrap_servers) for i in range(3)]
    try:
        _wait(probes, lambda: _partitions_shared(probes) and first <= _read(probes), "three consumers to share the partitions and read")
        assert all(len(p.assignment) == 2 for p in probes), [p.assignment for p in probes]
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        with Wire((host, int(port))) as wire:
            described = wire.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, ConsumerGroupDescribeRequest(group_ids=[GROUP])).body.groups[0]
        assert (described.error_code, described.group_state, len(described.members)) == (0, "Stable", 3), described
        assert sorted(p for m in described.members for t in m.assignment.topic_partitions for p in t.partitions) == list(range(PARTITIONS))

        leaving, staying = probes[0], probes[1:]
        leaving.proc.stdin.write("quit\n")
        leaving.proc.stdin.flush()
        _wait(probes, lambda: leaving.closed, "the first consumer to leave")
        _wait(staying, lambda: _partitions_shared(staying), "the other two to take its partitions")
        assert sorted(len(p.assignment) for p in staying) == [3, 3]
        before = {p.name: len(p.records) for p in staying}
        second = _produce(broker, "after", 4)
        _wait(staying, lambda: second <= _read(staying), "the other two to read the new records")
        new_reads = [value for p in staying for _, _, value in p.records[before[p.name]:] if value.startswith("after")]
        assert sorted(new_reads) == sorted(second), "each new record is read once"
        # They go on from the committed offsets: nothing read before the leave is read again.
        again = [value for p in staying for _, _, value in p.records[before[p.name]:] if value.startswith("before")]
        assert again == [], again
    finally:
        _stop(probes)


def test_a_classic_java_consumer_joins_a_consumer_group(broker: EmbeddedBroker) -> None:
    """Kafka 3.9 takes a classic consumer (JoinGroup) into a KIP-848 group: the two share the partitions."""
    first = _produce(broker, "mixed", 3)
    modern = _start("modern", broker.bootstrap_servers, "kip848-mixed")
    probes = [modern]
    try:
        _wait(probes, lambda: modern.assignment == list(range(PARTITIONS)), "the consumer-protocol member to get everything")
        classic = _start("classic", broker.bootstrap_servers, "kip848-mixed", protocol="classic")
        probes.append(classic)
        _wait(probes, lambda: _partitions_shared(probes) and first <= _read(probes), "both to share the partitions")
        assert sorted(len(p.assignment) for p in probes) == [3, 3]
        later = _produce(broker, "mixed-later", 2)
        _wait(probes, lambda: later <= _read(probes), "both to read the new records")
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        with Wire((host, int(port))) as wire:
            described = wire.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, ConsumerGroupDescribeRequest(group_ids=["kip848-mixed"])).body.groups[0]
        assert (described.error_code, len(described.members)) == (0, 2), described
    finally:
        _stop(probes)
