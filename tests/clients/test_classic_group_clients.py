"""Consumer groups (the classic protocol) with real clients over TCP: confluent-kafka (librdkafka), kafka-python,
aiokafka and kafkajs subscribe, join one group, share its partitions and carry on when members leave or die.

What a user sees from Kafka 3.9 is what is asserted: every record read once by the group, a rebalance when a member
leaves, a killed member expired at its session timeout (not before, not much after), a static member restarting
without a rebalance, librdkafka's cooperative-sticky assignor moving only what it must.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import structlog.testing

from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker

pytestmark = pytest.mark.clients

KAFKAJS_DIR = Path(__file__).resolve().parents[2] / "tests" / "kafkajs"
WAIT = 90.0  # generous bound for anything a group does on a busy 2-core machine


@pytest.fixture
def broker():
    config = BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:0", "offsets.topic.replication.factor": "1",
        "group.initial.rebalance.delay.ms": "0", "auto.create.topics.enable": "false"})
    with EmbeddedBroker(config) as running:
        yield running


def wait_until(condition: Callable[[], object], what: str, timeout: float = WAIT,
               explain: Callable[[], str] | None = None) -> object:
    """Poll ``condition``; past the bound, fail with ``explain()``'s account of the state (for a rare failure)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}" + (f"\n{explain()}" if explain else ""))
        time.sleep(0.05)


def group_view(broker, group_id: str) -> tuple[str, int, int] | None:
    """(state, generation, members) of the group, read on the broker's loop."""
    def read():
        group = broker.broker.services.groups.classic_group(group_id)
        return None if group is None else (group.state, group.generation_id, group.size)
    return broker.call(read)


def new_topic(broker, partitions: int) -> str:
    name = f"grp-{uuid.uuid4().hex[:8]}"
    broker.call(broker.broker.services.partitions.create_topic, name, partitions)
    return name


def produce(bootstrap: str, topic: str, values: list[str], partitions: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for i, value in enumerate(values):
        producer.produce(topic, value.encode(), partition=i % partitions)
    assert producer.flush(60) == 0


class Member(threading.Thread):
    """One group member on its own thread: polls, commits synchronously after each batch, then records the batch
    (so ``consumed`` holds only committed records) and its current assignment."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.consumed: list[str] = []
        self.assigned: set[int] = set()
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.lock = threading.Lock()

    def run(self) -> None:
        try:
            self.consume()
        except BaseException as exc:  # reported by the test
            self.error = exc

    def took(self, values: list[str]) -> None:
        with self.lock:
            self.consumed.extend(values)

    def finish(self) -> None:
        self.stop.set()
        self.join(WAIT)
        assert not self.is_alive(), f"{self.name} did not stop"
        assert self.error is None, f"{self.name}: {self.error!r}"


class ConfluentMember(Member):
    def __init__(self, bootstrap: str, group: str, topic: str, **conf: object) -> None:
        super().__init__("confluent")
        self.conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, **conf}
        self.topic = topic

    def consume(self) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer(self.conf)
        cooperative = self.conf.get("partition.assignment.strategy") == "cooperative-sticky"

        def on_assign(c, partitions):
            # cooperative: the partitions added by this rebalance; eager: the whole new assignment
            given = {p.partition for p in partitions}
            self.assigned = self.assigned | given if cooperative else given

        def on_revoke(c, partitions):
            self.assigned -= {p.partition for p in partitions}

        consumer.subscribe([self.topic], on_assign=on_assign, on_revoke=on_revoke)
        try:
            while not self.stop.is_set():
                batch = [m for m in consumer.consume(100, timeout=0.2) if m.error() is None]
                if batch:
                    consumer.commit(asynchronous=False)
                    self.took([m.value().decode() for m in batch])
        finally:
            consumer.close()


class KafkaPythonMember(Member):
    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        super().__init__("kafka-python")
        self.args = {"bootstrap_servers": bootstrap, "group_id": group, "auto_offset_reset": "earliest",
                     "enable_auto_commit": False}
        self.topic = topic

    def consume(self) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer

        member = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                member.assigned = set()

            def on_partitions_assigned(self, assigned):
                member.assigned = {tp.partition for tp in assigned}

        consumer = KafkaConsumer(**self.args)
        consumer.subscribe([self.topic], listener=Listener())
        try:
            while not self.stop.is_set():
                records = consumer.poll(timeout_ms=200)
                values = [r.value.decode() for batch in records.values() for r in batch]
                if values:
                    consumer.commit()
                    self.took(values)
        finally:
            consumer.close()


class AiokafkaMember(Member):
    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        super().__init__("aiokafka")
        self.args = {"bootstrap_servers": bootstrap, "group_id": group, "auto_offset_reset": "earliest",
                     "enable_auto_commit": False}
        self.topic = topic

    def consume(self) -> None:
        asyncio.run(self._consume())

    async def _consume(self) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.abc import ConsumerRebalanceListener

        member = self

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                member.assigned = set()

            async def on_partitions_assigned(self, assigned):
                member.assigned = {tp.partition for tp in assigned}

        consumer = AIOKafkaConsumer(**self.args)
        consumer.subscribe([self.topic], listener=Listener())
        await consumer.start()
        try:
            while not self.stop.is_set():
                records = await consumer.getmany(timeout_ms=200)
                values = [r.value.decode() for batch in records.values() for r in batch]
                if values:
                    await consumer.commit()
                    self.took(values)
        finally:
            await consumer.stop()


def consumed_by(members: list[Member]) -> list[str]:
    out: list[str] = []
    for m in members:
        with m.lock:
            out.extend(m.consumed)
    return out


def assert_alive(members: list[Member]) -> None:
    for m in members:
        assert m.error is None, f"{m.name}: {m.error!r}"


def explain_group(broker, group_id: str, members: list[Member], events: list[dict]) -> Callable[[], str]:
    """The group as the broker and each member see it, and the coordinator's own events for it."""
    def explain() -> str:
        own = [{k: v for k, v in e.items() if k != "log_level"} for e in events if e.get("group_id") == group_id]
        return "\n".join([f"broker: (state, generation, members) = {group_view(broker, group_id)}",
                          *(f"{m.name}: assigned {sorted(m.assigned)}, alive {m.is_alive()}, error {m.error!r}"
                            for m in members),
                          "coordinator events:", *map(str, own[-40:])])
    return explain


def test_three_client_libraries_share_a_group_and_survive_a_member_leaving(broker) -> None:
    partitions = 6
    topic, group = new_topic(broker, partitions), f"mixed-{uuid.uuid4().hex[:6]}"
    bootstrap = broker.bootstrap_servers
    members: list[Member] = [ConfluentMember(bootstrap, group, topic), KafkaPythonMember(bootstrap, group, topic),
                             AiokafkaMember(bootstrap, group, topic)]
    with structlog.testing.capture_logs() as events:
        run_three_libraries(broker, topic, group, partitions, members, explain_group(broker, group, list(members), events))


def run_three_libraries(broker, topic: str, group: str, partitions: int, members: list[Member],
                        explain: Callable[[], str]) -> None:
    bootstrap = broker.bootstrap_servers
    for m in members:
        m.start()
    try:
        # The three agree on roundrobin (aiokafka's only assignor): two partitions each, all six covered.
        wait_until(lambda: (assert_alive(members), group_view(broker, group) is not None
                            and group_view(broker, group)[0] == "Stable" and group_view(broker, group)[2] == 3
                            and all(len(m.assigned) == 2 for m in members))[1], "three members with two partitions each",
                   explain=explain)
        assert set().union(*(m.assigned for m in members)) == set(range(partitions))
        first = [f"first-{i}" for i in range(300)]
        produce(bootstrap, topic, first, partitions)
        wait_until(lambda: len(consumed_by(members)) >= len(first), "the first batch consumed")
        assert sorted(consumed_by(members)) == sorted(first)  # each record once
        assert all(m.consumed for m in members)
        _, generation, _ = group_view(broker, group)

        leaver = members.pop(1)  # kafka-python leaves (LeaveGroup on close)
        leaver.finish()
        wait_until(lambda: (assert_alive(members), group_view(broker, group)[2] == 2
                            and group_view(broker, group)[0] == "Stable"
                            and sorted(members[0].assigned | members[1].assigned) == list(range(partitions))
                            and len(members[0].assigned) == len(members[1].assigned) == 3)[1],
                   "the two remaining members owning all partitions", explain=explain)
        assert group_view(broker, group)[1] > generation
        second = [f"second-{i}" for i in range(300)]
        produce(bootstrap, topic, second, partitions)
        wait_until(lambda: len(consumed_by(members)) + len(leaver.consumed) >= len(first) + len(second),
                   "the second batch consumed")
        # From the committed offsets: nothing of the first batch again, every record of the second once.
        assert sorted(consumed_by(members) + leaver.consumed) == sorted(first + second)
    finally:
        for m in members:
            m.stop.set()
        for m in members:
            m.join(WAIT)


def test_killed_member_is_expired_at_its_session_timeout(broker) -> None:
    topic, group = new_topic(broker, 4), f"killed-{uuid.uuid4().hex[:6]}"
    session_ms, heartbeat_ms = 6000, 500
    script = (
        "import sys\n"
        "from confluent_kafka import Consumer\n"
        f"c = Consumer({{'bootstrap.servers': {broker.bootstrap_servers!r}, 'group.id': {group!r},"
        f" 'session.timeout.ms': {session_ms}, 'heartbeat.interval.ms': {heartbeat_ms}}})\n"
        f"c.subscribe([{topic!r}], on_assign=lambda c, ps: print('assigned', len(ps), flush=True))\n"
        "while True:\n    c.poll(0.2)\n")
    victim = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    survivor = ConfluentMember(broker.bootstrap_servers, group, topic)
    try:
        survivor.start()
        wait_until(lambda: group_view(broker, group) is not None and group_view(broker, group)[2] == 2
                   and group_view(broker, group)[0] == "Stable" and len(survivor.assigned) == 2, "two members")
        killed_at = time.monotonic()
        victim.send_signal(signal.SIGKILL)
        victim.wait(WAIT)
        wait_until(lambda: group_view(broker, group)[2] == 1, "the dead member's removal")
        gone_after = time.monotonic() - killed_at
        # Removed when the session timeout, counted from its last heartbeat (normally at most one 0.5 s interval
        # before the kill), runs out: not at the disconnect, and not much later. The lower bound leaves room for a
        # victim starved of CPU before it died (the exact deadline is checked on a fake clock in
        # tests/shim/groups/test_classic_state.py and against Kafka in tests/differential/test_classic_groups.py).
        assert gone_after >= session_ms / 2000, gone_after
        assert gone_after < session_ms / 1000 + 10, gone_after
        wait_until(lambda: survivor.assigned == {0, 1, 2, 3}, "the survivor owning every partition")
    finally:
        if victim.poll() is None:
            victim.kill()
        survivor.finish()


def test_static_member_restarts_without_a_rebalance(broker) -> None:
    topic, group = new_topic(broker, 4), f"static-{uuid.uuid4().hex[:6]}"
    bootstrap = broker.bootstrap_servers
    first = ConfluentMember(bootstrap, group, topic, **{"group.instance.id": "static-a", "session.timeout.ms": 120000})
    other = ConfluentMember(bootstrap, group, topic, **{"group.instance.id": "static-b", "session.timeout.ms": 120000})
    first.start()
    other.start()
    try:
        wait_until(lambda: group_view(broker, group) is not None and group_view(broker, group)[0] == "Stable"
                   and group_view(broker, group)[2] == 2 and len(first.assigned) == 2 and len(other.assigned) == 2,
                   "two static members")
        _, generation, _ = group_view(broker, group)
        before = set(first.assigned)
        first.finish()  # a static member does not send LeaveGroup: the group keeps its place
        assert group_view(broker, group) == ("Stable", generation, 2)
        again = ConfluentMember(bootstrap, group, topic, **{"group.instance.id": "static-a", "session.timeout.ms": 120000})
        again.start()
        try:
            wait_until(lambda: again.assigned, "the restarted member's assignment")
            assert again.assigned == before
            assert group_view(broker, group) == ("Stable", generation, 2)  # no rebalance
            assert len(other.assigned) == 2
        finally:
            again.finish()
    finally:
        other.finish()


def test_cooperative_sticky_moves_only_what_it_must(broker) -> None:
    topic, group = new_topic(broker, 4), f"coop-{uuid.uuid4().hex[:6]}"
    conf = {"partition.assignment.strategy": "cooperative-sticky"}
    a = ConfluentMember(broker.bootstrap_servers, group, topic, **conf)
    a.start()
    try:
        wait_until(lambda: a.assigned == {0, 1, 2, 3}, "the first member owning everything")
        b = ConfluentMember(broker.bootstrap_servers, group, topic, **conf)
        b.start()
        try:
            wait_until(lambda: len(a.assigned) == 2 and len(b.assigned) == 2 and group_view(broker, group)[0] == "Stable",
                       "two partitions each")
            assert a.assigned | b.assigned == {0, 1, 2, 3}
            view = broker.call(lambda: broker.broker.services.groups.classic_group(group).protocol_name)
            assert view == "cooperative-sticky"
        finally:
            b.finish()
    finally:
        a.finish()


def run_kafkajs_consumer(bootstrap: str, topic: str, group: str, count: int) -> dict:
    node = shutil.which("node")
    if node is None or not (KAFKAJS_DIR / "node_modules" / "kafkajs").is_dir():
        pytest.fail("kafkajs is not installed: run scripts/test (or scripts/ensure-node && npm ci --prefix tests/kafkajs)",
                    pytrace=False)
    request = {"brokers": [bootstrap], "topic": topic, "groupId": group, "count": count, "timeoutMs": 60000}
    proc = subprocess.run([node, str(KAFKAJS_DIR / "consume.js")], input=json.dumps(request), capture_output=True,
                          text=True, timeout=WAIT + 30, env={**os.environ})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_kafkajs_consumer_joins_and_reads_back_what_was_produced(broker) -> None:
    topic, group = new_topic(broker, 3), f"js-{uuid.uuid4().hex[:6]}"
    values = [f"js-{i}" for i in range(60)]
    produce(broker.bootstrap_servers, topic, values, 3)
    result = run_kafkajs_consumer(broker.bootstrap_servers, topic, group, len(values))
    assert result["ok"], result
    assert sorted(m["value"] for m in result["messages"]) == sorted(values)
    assert result["assigned"] == [0, 1, 2]
    # Its commits are kept: a second run of the same group finds nothing left and reads only what comes next.
    produce(broker.bootstrap_servers, topic, ["late-0", "late-1", "late-2"], 3)
    again = run_kafkajs_consumer(broker.bootstrap_servers, topic, group, 3)
    assert again["ok"], again
    assert sorted(m["value"] for m in again["messages"]) == ["late-0", "late-1", "late-2"]
    assert group_view(broker, group)[0] == "Empty"  # kafkajs left the group on disconnect


def test_kafka_console_consumer_with_a_group(broker) -> None:
    """Kafka 3.9's own Java consumer (kafka-console-consumer.sh --group: FindCoordinator v4, JoinGroup v9, SyncGroup
    v5, Heartbeat v4, LeaveGroup v5) reads everything once, and a second run of the group starts at its commits."""
    from tests.support.peers import REAL_KAFKA

    topic, group = new_topic(broker, 2), f"console-{uuid.uuid4().hex[:6]}"
    produce(broker.bootstrap_servers, topic, [f"c-{i}" for i in range(20)], 2)

    def console(count: int) -> list[str]:
        proc = subprocess.run(
            [sys.executable, str(REAL_KAFKA), "run", "org.apache.kafka.tools.consumer.ConsoleConsumer",
             "--bootstrap-server", broker.bootstrap_servers, "--topic", topic, "--group", group, "--from-beginning",
             "--max-messages", str(count), "--timeout-ms", "60000"],
            capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        return proc.stdout.split()

    assert sorted(console(20)) == sorted(f"c-{i}" for i in range(20))
    assert group_view(broker, group)[0] == "Empty"  # it left the group when done
    produce(broker.bootstrap_servers, topic, ["d-0", "d-1"], 2)
    assert sorted(console(2)) == ["d-0", "d-1"]


def test_group_max_size_refuses_the_member_too_many() -> None:
    """group.max.size=1: a second consumer's JoinGroup fails with 81 (librdkafka reports GROUP_MAX_SIZE_REACHED) and
    the first keeps its partitions."""
    from confluent_kafka import Consumer, KafkaError

    config = BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:0", "offsets.topic.replication.factor": "1",
        "group.initial.rebalance.delay.ms": "0", "group.max.size": "1"})
    with EmbeddedBroker(config) as broker:
        topic, group = new_topic(broker, 2), "max-size"
        first = ConfluentMember(broker.bootstrap_servers, group, topic)
        first.start()
        try:
            wait_until(lambda: first.assigned == {0, 1}, "the first member's assignment")
            errors: list = []
            second = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                               "error_cb": errors.append})
            second.subscribe([topic])
            try:
                def refused() -> bool:
                    message = second.poll(0.2)
                    if message is not None and message.error():
                        errors.append(message.error())
                    return any(e.code() == KafkaError.GROUP_MAX_SIZE_REACHED for e in errors)
                wait_until(refused, "GROUP_MAX_SIZE_REACHED")
            finally:
                second.close()
            assert first.assigned == {0, 1} and group_view(broker, group)[2] == 1
        finally:
            first.finish()
