"""Apache Kafka's own system-test tools (the Java programs its ducktape tests drive, each checking correctness itself)
against kafka-shim, as those tests run them, and against Apache Kafka 3.9 (the same test, marker ``oracle``) to show
that the scenario and its expectations are right.

- ``TransactionalMessageCopier`` (tests/kafkatest/tests/core/transactions_test.py, bounce_target=clients,
  hard_bounce): a ``VerifiableProducer`` (idempotent, acks=all) seeds a 2-partition input topic; one copier per input
  partition copies it transactionally into a 3-partition output topic, committing its consumer group's offsets inside
  each transaction (--use-group-metadata, --enable-random-aborts); each copier is killed hard (SIGKILL of its JVM) once
  it has made progress and restarted, and must then finish (``ShutdownComplete`` with nothing remaining). A
  ``VerifiableConsumer`` with isolation.level=read_committed, reading concurrently, sees every input value exactly once.
- ``VerifiableConsumer`` groups (tests/kafkatest/tests/client/consumer_test.py and the service's event handlers in
  tests/kafkatest/services/verifiable_consumer.py): three members (range: eager; cooperative-sticky: incremental) join
  one by one while an idempotent acks=all ``VerifiableProducer`` writes; one member is killed hard, one leaves cleanly,
  one more joins. Every event is checked as the system test's handlers check it (records consumed only while joined and
  only from assigned partitions, each member's positions contiguous, commits not ahead of the position, no consumption
  behind the group's committed offset, committed offsets never going backwards); at the end every acked record was
  consumed and each partition's committed offset is its end offset.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafka_shim.shim.testing.handle import KafkaShim
from kafka_shim.shim.testing.options import ShimOptions
from tests.support.peers import REAL_KAFKA, start_real_kafka, stop_real_kafka

pytestmark = pytest.mark.clients

TOOLS = "org.apache.kafka.tools."
# Bounded waits on conditions (the JVMs share two cores with the broker).
WAIT_S = 45
# Below Kafka's group.min.session.timeout.ms default (6 s) a JoinGroup fails: the hard-killed member is noticed after it.
SESSION_TIMEOUT_MS = 6000
# A copier killed after its TxnOffsetCommit leaves offsets pending in the group: its successor's first position() (an
# OffsetFetch with require_stable) answers UNSTABLE_OFFSET_COMMIT until the coordinator aborts the transaction once it
# times out, which Kafka checks every transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s by default).
# transactions_test.py's 40 s timeout would stall a restart for up to 50 s; here 10 s and a check every second.
TRANSACTION_TIMEOUT_MS = 10_000
BROKER_CONFIG = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000"}


@pytest.fixture(scope="module", params=["kafka-shim", pytest.param("apache-kafka", marks=pytest.mark.oracle)])
def bootstrap(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if request.param == "kafka-shim":
        with KafkaShim(ShimOptions(config=tuple(BROKER_CONFIG.items()))) as shim:
            yield shim.bootstrap_servers
    else:
        kafka = start_real_kafka(tmp_path_factory.mktemp("system-tools"), "authorizer.class.name=",
                                 *(f"{k}={v}" for k, v in BROKER_CONFIG.items()))
        try:
            yield "{}:{}".format(*kafka.plaintext)
        finally:
            stop_real_kafka(kafka)


class Tool:
    """One tool JVM (``scripts/real-kafka run`` execs java, so the child's pid is the JVM's): its JSON events as they
    arrive, its stderr in a file."""

    def __init__(self, name: str, main_class: str, args: list[str], directory: Path,
                 on_event: Callable[[Tool, dict], None] | None = None,
                 cond: threading.Condition | None = None, debug_loggers: tuple[str, ...] = ()) -> None:
        self.name = name
        self.stderr_path = directory / f"{name}.stderr"
        # debug_loggers: logged at DEBUG into a file of their own (stderr stays WARN and above), shown on a failure
        self.debug_path = directory / f"{name}.debug.log" if debug_loggers else None
        env = None
        if self.debug_path is not None:
            config = directory / f"{name}.log4j.properties"
            config.write_text(_debug_log4j(self.debug_path, debug_loggers))
            env = {**os.environ, "REAL_KAFKA_TOOLS_LOG4J": str(config)}
        self.events: list[dict] = []
        self.ended = False
        self._on_event = on_event
        # shared by the members of a group, so that a wait on one sees what the others report
        self._cond = cond or threading.Condition()
        with self.stderr_path.open("w") as err:
            self.proc = subprocess.Popen([sys.executable, str(REAL_KAFKA), "run", TOOLS + main_class, *args],
                                         stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True, env=env)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.stderr_path.with_suffix(".stdout").open("w") as copy:
            self._read_lines(copy)

    def _read_lines(self, copy) -> None:
        for line in self.proc.stdout:
            copy.write(line)
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            with self._cond:
                if self._on_event is not None:
                    self._on_event(self, event)
                self.events.append(event)
                self._cond.notify_all()
        copy.flush()
        with self._cond:
            self.ended = True
            self._cond.notify_all()

    def wait_for(self, condition: Callable[[list[dict]], bool], what: str, timeout: float = WAIT_S) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: condition(self.events) or self.ended, timeout) or not condition(self.events):
                pytest.fail(f"{self.name}: {what} not seen in {timeout}s\n{self!r}", pytrace=False)

    def named(self, name: str) -> list[dict]:
        with self._cond:
            return [e for e in self.events if e.get("name", e.get("stage")) == name]

    def kill(self) -> None:
        """kill -9 of the JVM, as the system tests' hard bounce."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self._reader.join(timeout=30)

    def stop(self) -> None:
        """SIGTERM: the tool's shutdown hook closes its clients cleanly."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"{self.name} did not stop in {WAIT_S}s\n{self!r}", pytrace=False)
        self._reader.join(timeout=30)

    def __repr__(self) -> str:
        with self._cond:
            tail = [json.dumps(e)[:300] for e in self.events if e.get("name") != "record_data"][-15:]
        err = self.stderr_path.read_text()[-3000:] if self.stderr_path.exists() else ""
        debug = ""
        if self.debug_path is not None and self.debug_path.exists():
            debug = "\ndebug log (last 60 lines):\n" + "\n".join(self.debug_path.read_text().splitlines()[-60:])
        return f"[{self.name} exit {self.proc.poll()}]\n" + "\n".join(tail) + f"\nstderr:\n{err}" + debug


def _debug_log4j(path: Path, loggers: tuple[str, ...]) -> str:
    """The tools' usual log4j settings (WARN and above to stderr) plus ``loggers`` at DEBUG into ``path`` only."""
    lines = ["log4j.rootLogger=WARN, stderr", "log4j.appender.stderr=org.apache.log4j.ConsoleAppender",
             "log4j.appender.stderr.Target=System.err", "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout",
             "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n",
             "log4j.appender.debug=org.apache.log4j.FileAppender", f"log4j.appender.debug.File={path}",
             "log4j.appender.debug.layout=org.apache.log4j.PatternLayout",
             "log4j.appender.debug.layout.ConversionPattern=[%d] %p %m (%c)%n"]
    for logger in loggers:
        lines += [f"log4j.logger.{logger}=DEBUG, debug", f"log4j.additivity.{logger}=false"]
    return "\n".join(lines) + "\n"


def _properties(directory: Path, name: str, **props: object) -> str:
    path = directory / f"{name}.properties"
    path.write_text("".join(f"{k.replace('_', '.')}={v}\n" for k, v in props.items()))
    return str(path)


def _create_topics(bootstrap: str, partitions: dict[str, int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, n, 1) for t, n in partitions.items()]).values():
        future.result(timeout=30)


def _producer(bootstrap: str, topic: str, directory: Path, name: str, *, max_messages: int,
              throughput: int = -1, repeating_keys: int | None = None) -> Tool:
    # the system tests' VerifiableProducer with enable_idempotence=True (its properties then, as the service writes
    # them) and acks=all
    config = _properties(directory, name, request_timeout_ms=30000, acks="all", max_in_flight_requests_per_connection=5,
                         retries=1000000, enable_idempotence="true")
    return Tool(name, "VerifiableProducer", ["--topic", topic, "--bootstrap-server", bootstrap, "--max-messages",
                                             str(max_messages), "--throughput", str(throughput), "--producer.config",
                                             config, *(["--repeating-keys", str(repeating_keys)] if repeating_keys
                                                       else [])], directory)


def _acked(producer: Tool) -> list[dict]:
    return producer.named("producer_send_success")


# ------------------------------------------------------------------------------------------------ transactions_test


SEED_MESSAGES = 4000
# transactions_test.py: a copier per input partition (2), 3 output partitions; group_mode_transactions_test.py: copiers
# sharing the input partitions in one group (--group-mode), as many output partitions as input ones.
MODES = {"assigned": {"copiers": 2, "input": 2, "output": 3, "transaction_size": 250},
         "group_mode": {"copiers": 3, "input": 6, "output": 6, "transaction_size": 100}}


# What a copier that stops making progress was doing (CI once saw one on Kafka 3.9 repeat its status line with 250
# records left until the bound ran out): the copier's own aborts with their cause, the producer's transaction states
# and the consumer's fetches and position resets.
COPIER_DEBUG_LOGGERS = ("org.apache.kafka.tools.TransactionalMessageCopier",
                        "org.apache.kafka.clients.producer.internals.TransactionManager",
                        "org.apache.kafka.clients.consumer.internals.AbstractFetch",
                        "org.apache.kafka.clients.consumer.internals.FetchCollector",
                        "org.apache.kafka.clients.consumer.internals.SubscriptionState")


def _copier(bootstrap: str, directory: Path, mode: str, index: int, group: str, run: int,
            cond: threading.Condition | None = None) -> Tool:
    where = ["--group-mode", "--input-partition", "-1"] if mode == "group_mode" else ["--input-partition", str(index)]
    return Tool(f"copier-{index}-run{run}", "TransactionalMessageCopier",
                ["--broker-list", bootstrap, "--transactional-id", f"{group}-copier-{index}", "--consumer-group", group,
                 "--input-topic", f"{group}-input", "--output-topic", f"{group}-output", *where, "--transaction-size",
                 str(MODES[mode]["transaction_size"]), "--transaction-timeout", str(TRANSACTION_TIMEOUT_MS),
                 "--enable-random-aborts",
                 "--use-group-metadata"], directory, cond=cond, debug_loggers=COPIER_DEBUG_LOGGERS)


def _progress(events: list[dict]) -> float:
    """The service's progress_percent: consumed / (consumed + remaining) of the latest status line."""
    status = [e for e in events if "stage" in e and int(e["remaining"]) >= 0]
    if not status:
        return 0.0
    consumed, remaining = int(status[-1]["consumed"]), int(status[-1]["remaining"])
    return 100.0 * consumed / max(1, consumed + remaining)


def _finished(events: list[dict]) -> bool:
    return any(e.get("stage") == "ShutdownComplete" and int(e["remaining"]) == 0 for e in events)


def _by_partition(events: list[dict]) -> dict[int, list[str]]:
    """The values of each partition in offset order."""
    out: dict[int, list[tuple[int, str]]] = {}
    for e in events:
        out.setdefault(e["partition"], []).append((e["offset"], e["value"]))
    return {p: [v for _, v in sorted(records)] for p, records in sorted(out.items())}


@pytest.mark.parametrize("mode", list(MODES))
def test_transactional_copy_survives_hard_killed_copiers(bootstrap: str, mode: str, tmp_path: Path) -> None:
    shape = MODES[mode]
    group = f"txn-{mode}-{uuid.uuid4().hex[:8]}"
    _create_topics(bootstrap, {f"{group}-input": shape["input"], f"{group}-output": shape["output"]})
    seed = _producer(bootstrap, f"{group}-input", tmp_path, "seed", max_messages=SEED_MESSAGES,
                     repeating_keys=shape["input"])
    seed.wait_for(lambda ev: seed.ended, "the seed producer's end")
    input_values = [e["value"] for e in _acked(seed)]
    assert len(input_values) == SEED_MESSAGES == len(set(input_values)), seed
    assert seed.named("producer_send_error") == [], seed

    # the concurrent read_committed consumer of the system tests (here a VerifiableConsumer printing each record)
    config = _properties(tmp_path, "reader", isolation_level="read_committed")
    reader = Tool("reader", "VerifiableConsumer",
                  ["--bootstrap-server", bootstrap, "--topic", f"{group}-output", "--group-id", f"{group}-reader",
                   "--reset-policy", "earliest", "--verbose", "--consumer.config", config], tmp_path)
    tools = [seed, reader]
    try:
        # one condition for all copiers: a wait wakes at any copier's status line
        shared = threading.Condition()
        copiers = [_copier(bootstrap, tmp_path, mode, i, group, 0, shared) for i in range(shape["copiers"])]
        tools += copiers
        # the hard bounce of bounce_copiers(): SIGKILL once a copier has made 20% progress, then the same
        # transactional.id again
        killed = 0

        def busy(copier: Tool) -> bool:
            return _progress(copier.events) >= 20.0 and not _finished(copier.events)

        def bounce(i: int) -> None:
            nonlocal killed
            killed += 1
            copiers[i].kill()
            copiers[i] = _copier(bootstrap, tmp_path, mode, i, group, 1, shared)
            tools.append(copiers[i])

        if mode == "group_mode":
            # The member that joins first is given every input partition and may copy all of it before the others
            # have joined: the copier bounced is whichever is copying at 20%, not a given one.
            with shared:
                shared.wait_for(lambda: any(map(busy, copiers)) or all(_finished(c.events) for c in copiers), WAIT_S)
                target = next((i for i, c in enumerate(copiers) if busy(c)), None)
            if target is not None:
                bounce(target)
        else:
            for i, copier in enumerate(copiers):
                copier.wait_for(lambda ev: _progress(ev) >= 20.0 or _finished(ev), "20% progress")
                if not _finished(copier.events):
                    bounce(i)
        for copier in copiers:
            copier.wait_for(_finished, "ShutdownComplete with nothing remaining")
            assert copier.proc.wait(timeout=WAIT_S) == 0, copier
        assert killed >= 1, "no copier was seen copying at 20% progress"
        reader.wait_for(lambda ev: sum(e["name"] == "record_data" for e in ev) >= SEED_MESSAGES,
                        f"{SEED_MESSAGES} committed records")
        reader.stop()
        output_values = [e["value"] for e in reader.named("record_data")]
        assert len(output_values) == len(set(output_values)), f"duplicates in the output: {reader!r}"
        assert set(output_values) == set(input_values), reader
        # each input partition is copied to the output partition of the same number, in order
        assert _by_partition(reader.named("record_data")) == _by_partition(_acked(seed)), reader
        assert reader.named("offsets_committed") and all(e["success"] for e in reader.named("offsets_committed"))
        for tool in tools:
            assert tool.stderr_path.read_text() == "", tool
    finally:
        for tool in tools:
            if tool.proc.poll() is None:
                tool.kill()


# -------------------------------------------------------------------------------------------------- consumer_test


class GroupChecks:
    """What tests/kafkatest/services/verifiable_consumer.py checks on each event, collected instead of raised (the
    events arrive on reader threads)."""

    def __init__(self, eager: bool) -> None:
        self.eager = eager
        self.lock = threading.RLock()
        self.violations: list[str] = []
        self.state: dict[str, str] = {}
        self.assignment: dict[str, list[tuple[str, int]]] = {}
        self.position: dict[str, dict[tuple[str, int], int]] = {}
        self.global_position: dict[tuple[str, int], int] = {}
        self.global_committed: dict[tuple[str, int], int] = {}
        self.consumed: set[str] = set()
        self.total_consumed = 0
        self.cond = threading.Condition(self.lock)

    def _fail(self, member: str, message: str, event: dict) -> None:
        self.violations.append(f"{member}: {message}: {json.dumps(event)[:400]}")

    def on_event(self, tool: Tool, event: dict) -> None:
        """Called by the member's reader thread with ``cond`` held."""
        m = tool.name
        name = event["name"]
        if name == "startup_complete":
            self.state[m], self.assignment[m], self.position[m] = "started", [], {}
        elif name == "shutdown_complete":
            self.state[m], self.assignment[m], self.position[m] = "dead", [], {}
        elif name == "partitions_revoked":
            self.state[m], self.position[m] = "rebalancing", {}
            if not self.eager:
                for p in event["partitions"]:
                    tp = (p["topic"], p["partition"])
                    if tp not in self.assignment[m]:
                        self._fail(m, f"revoked {tp} not assigned", event)
                    else:
                        self.assignment[m].remove(tp)
        elif name == "partitions_assigned":
            self.state[m] = "joined"
            assigned = [(p["topic"], p["partition"]) for p in event["partitions"]]
            self.assignment[m] = assigned if self.eager else self.assignment[m] + assigned
        elif name == "record_data":
            self.consumed.add(event["value"])
        elif name == "records_consumed":
            if self.state[m] != "joined":
                self._fail(m, f"records consumed while {self.state[m]}", event)
            for p in event["partitions"]:
                tp, lo, hi = (p["topic"], p["partition"]), p["minOffset"], p["maxOffset"]
                if tp not in self.assignment[m]:
                    self._fail(m, f"consumed from unassigned {tp}", event)
                if tp in self.position[m] and self.position[m][tp] != lo:
                    self._fail(m, f"consumed from unexpected offset {lo} (position {self.position[m][tp]})", event)
                self.position[m][tp] = hi + 1
                if self.global_committed.get(tp, -1) > lo:
                    self._fail(m, f"consumed {lo} behind the committed offset {self.global_committed[tp]}", event)
                self.global_position[tp] = hi + 1
            self.total_consumed += event["count"]
        elif name == "offsets_committed" and event["success"]:
            for c in event["offsets"]:
                if c.get("error"):
                    continue
                tp, offset = (c["topic"], c["partition"]), c["offset"]
                if tp not in self.assignment[m]:
                    self._fail(m, f"committed unassigned {tp}", event)
                if self.position[m].get(tp, -1) < offset:
                    self._fail(m, f"committed {offset} ahead of the position", event)
                if self.global_position.get(tp, -1) < offset:
                    self._fail(m, f"committed {offset} ahead of the group's position", event)
                if self.global_committed.get(tp, -1) > offset:
                    self._fail(m, f"committed offset went back from {self.global_committed[tp]} to {offset}", event)
                self.global_committed[tp] = offset

    def killed(self, member: str) -> None:
        with self.cond:
            self.state[member], self.assignment[member], self.position[member] = "dead", [], {}

    def joined(self, members: list[Tool], partitions: int) -> bool:
        """All live members joined and together own every partition once."""
        with self.cond:
            owned = [tp for t in members for tp in self.assignment.get(t.name, [])]
            return (all(self.state.get(t.name) == "joined" for t in members) and len(owned) == partitions
                    and len(set(owned)) == partitions)


GROUP_PARTITIONS = 4
GROUP_MESSAGES = 4000
ASSIGNORS = {"range": "org.apache.kafka.clients.consumer.RangeAssignor",
             "cooperative_sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}


@pytest.mark.parametrize("assignor", list(ASSIGNORS))
def test_verifiable_consumers_join_leave_and_die_without_loss(bootstrap: str, assignor: str, tmp_path: Path) -> None:
    group = f"vc-{assignor}-{uuid.uuid4().hex[:8]}"
    topic = f"{group}-topic"
    _create_topics(bootstrap, {topic: GROUP_PARTITIONS})
    checks = GroupChecks(eager=assignor == "range")
    config = _properties(tmp_path, "consumer", heartbeat_interval_ms=1000)

    def member(index: int) -> Tool:
        return Tool(f"member-{index}", "VerifiableConsumer",
                    ["--bootstrap-server", bootstrap, "--topic", topic, "--group-id", group, "--reset-policy",
                     "earliest", "--session-timeout", str(SESSION_TIMEOUT_MS), "--assignment-strategy",
                     ASSIGNORS[assignor], "--verbose", "--consumer.config", config], tmp_path, checks.on_event,
                    checks.cond)

    def await_group(members: list[Tool], what: str) -> None:
        consumed = checks.total_consumed
        members[0].wait_for(lambda ev: checks.joined(members, GROUP_PARTITIONS),
                            f"{what} joined")
        if producer.proc.poll() is None:
            members[0].wait_for(lambda ev: checks.total_consumed > consumed or producer.ended, f"consumption after {what}")

    producer = _producer(bootstrap, topic, tmp_path, "producer", max_messages=GROUP_MESSAGES, throughput=500)
    tools = [producer]
    try:
        producer.wait_for(lambda ev: len(ev) >= 200, "acked records")
        live: list[Tool] = []
        for index in range(3):
            live.append(member(index))
            tools.append(live[-1])
            await_group(live, f"{len(live)} members")
        victim = live.pop(1)
        victim.kill()
        checks.killed(victim.name)
        await_group(live, "the group without the hard-killed member")
        leaver = live.pop(0)
        leaver.stop()
        assert leaver.named("shutdown_complete"), leaver
        await_group(live, "the group without the member that left")
        live.append(member(3))
        tools.append(live[-1])
        await_group(live, "the group with a new member")
        producer.wait_for(lambda ev: producer.ended, "the producer's end", timeout=WAIT_S)
        acked = _acked(producer)
        assert len(acked) == GROUP_MESSAGES and producer.named("producer_send_error") == [], producer
        end_offsets = {}
        for e in acked:
            tp = (e["topic"], e["partition"])
            end_offsets[tp] = max(end_offsets.get(tp, 0), e["offset"] + 1)
        live[0].wait_for(lambda ev: checks.global_committed == end_offsets, "every partition committed at its end")
        for tool in live:
            tool.stop()
            assert tool.named("shutdown_complete"), tool
        assert checks.violations == [], "\n".join(checks.violations)
        assert {e["value"] for e in acked} <= checks.consumed
        assert checks.global_position == checks.global_committed == end_offsets
        for tool in tools:
            assert tool.stderr_path.read_text() == "", tool
    finally:
        for tool in tools:
            if tool.proc.poll() is None:
                tool.kill()
