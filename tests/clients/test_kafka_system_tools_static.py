"""Static group membership and broker bounces under Apache Kafka's own system-test tools, against kafka-shim and against
Apache Kafka 3.9 (the same test, marker ``oracle``), as tests/kafkatest/tests/client/consumer_test.py drives them
(``VerifiableConsumer`` members with ``--group-instance-id``, an idempotent acks=all ``VerifiableProducer`` writing
throughout; the helpers and the per-event checks of the service's handlers are test_kafka_system_tools.py's).

- test_static_consumer_bounce_with_eager_assignment: static members killed hard (kill -9) and restarted with the same
  instance id within session.timeout.ms, one by one or all but the first at once, get their old partitions back and
  the member that stays up revokes nothing (RangeAssignor is eager: any rebalance would revoke all its partitions).
- A static member that stops (a static member's close sends no LeaveGroup) stays in the group until session.timeout.ms
  has passed since its last heartbeat, then is removed and the others rebalance; back with the same instance id it is
  a new member again.
- test_fencing_static_consumer (classic protocol): a second member with an instance id in use takes it over, with the
  old member's assignment and no rebalance of the others; the old member is fenced (FENCED_INSTANCE_ID, its
  VerifiableConsumer ends with FencedInstanceIdException). Started all at once, one of the two ends.
- The broker stopped and started again on its data (a controlled shutdown, kill -9, and a controlled shutdown with the
  broker away longer than the members' session timeout) while the producer and a group of a static and a dynamic
  member run (test_broker_rolling_bounce on one broker, after a static member's rejoin as in
  test_static_consumer_persisted_after_rejoin): no acked record is lost or written twice, the producer sees no error,
  the group does not rebalance (the broker reads it back with the static member's new member id and gives every member
  a new session) and the members go on from their positions and committed offsets. kafka-shim runs as a ``kafka-shim
  serve`` process on a data directory and a fixed port; Kafka through ``scripts/real-kafka restart [--kill] [--pause
  S]`` (same data and ports).

One broker of each kind serves the whole module (the bounce tests last, as they restart it).
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.clients.test_kafka_system_tools import (
    ASSIGNORS,
    WAIT_S,
    GroupChecks,
    Tool,
    _acked,
    _create_topics,
    _producer,
    _properties,
)
from tests.support.peers import ROOT, RealKafka, restart_real_kafka, start_real_kafka, stop_real_kafka

pytestmark = pytest.mark.clients

PARTITIONS = 4
# consumer_test.py gives static members 60 s; 30 s leaves a restarted JVM (2-5 s here) far inside it.
BOUNCE_SESSION_TIMEOUT_MS = 30_000
# The smallest a broker takes by default (group.min.session.timeout.ms), for the tests that wait for one to pass.
EXPIRY_SESSION_TIMEOUT_MS = 10_000
HEARTBEAT_INTERVAL_MS = 1000
# The records per second of the producer writing throughout (consumer_test.py's VerifiableProducer is throttled too).
THROUGHPUT = 200


# ----------------------------------------------------------------------------------------------------------- brokers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ShimProcess:
    """``kafka-shim serve`` on a data directory (log.dirs) and a fixed port, so that clients find it again after a
    restart, as they find a Kafka broker restarted by its operator."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = _free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.runs = 0

    def start(self) -> None:
        overrides = [f"listeners=PLAINTEXT://{self.bootstrap}", f"log.dirs={self.directory / 'data'}",
                     "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
                     "transaction.state.log.min.isr=1", "group.initial.rebalance.delay.ms=0"]
        command = [sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", "--log-level", "info"]
        for override in overrides:
            command += ["--override", override]
        self.runs += 1
        with (self.directory / f"kafka-shim-{self.runs}.log").open("w") as log:
            self.proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
        assert self.proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            ready = sel.select(timeout=60)
        line = self.proc.stdout.readline().strip() if ready else ""
        if "://" not in line:
            self.stop(signal.SIGKILL)
            pytest.fail(f"kafka-shim serve did not start (printed {line!r}): see {self.directory}", pytrace=False)

    def stop(self, how: signal.Signals = signal.SIGTERM) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(how)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
            pytest.fail(f"kafka-shim did not stop on {how.name} in 60 s", pytrace=False)
        self.proc.stdout.close()
        self.proc = None

    def restart(self, *, kill: bool, pause_s: float = 0) -> None:
        self.stop(signal.SIGKILL if kill else signal.SIGTERM)
        time.sleep(pause_s)  # the time the broker is away, part of the scenario
        self.start()


class RealProcess:
    def __init__(self, kafka: RealKafka) -> None:
        self.kafka = kafka
        self.bootstrap = "{}:{}".format(*kafka.plaintext)

    def restart(self, *, kill: bool, pause_s: float = 0) -> None:
        restart_real_kafka(self.kafka, kill=kill, pause_s=pause_s)


@pytest.fixture(scope="module", params=["kafka-shim", pytest.param("apache-kafka", marks=pytest.mark.oracle)])
def broker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShimProcess | RealProcess]:
    directory = tmp_path_factory.mktemp(f"static-{request.param}")
    if request.param == "kafka-shim":
        shim = ShimProcess(directory)
        shim.start()
        try:
            yield shim
        finally:
            shim.stop()
    else:
        kafka = start_real_kafka(directory, "authorizer.class.name=")
        try:
            yield RealProcess(kafka)
        finally:
            stop_real_kafka(kafka)


# ----------------------------------------------------------------------------------------------------------- a group


class StaticGroup:
    """VerifiableConsumer members of one group (RangeAssignor, manual commits), checked as the system test's service
    checks them; each event is stamped with its arrival time (``_at``, time.monotonic())."""

    def __init__(self, bootstrap: str, directory: Path, session_timeout_ms: int) -> None:
        self.bootstrap = bootstrap
        self.directory = directory
        self.session_timeout_ms = session_timeout_ms
        self.group = f"static-{uuid.uuid4().hex[:8]}"
        self.topic = f"{self.group}-topic"
        self.checks = GroupChecks(eager=True)
        self.config = _properties(directory, "consumer", heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS)
        self.tools: list[Tool] = []
        self._runs: dict[str, int] = {}
        _create_topics(bootstrap, {self.topic: PARTITIONS})
        self.producer = _producer(bootstrap, self.topic, directory, "producer", max_messages=-1, throughput=THROUGHPUT)
        self.tools.append(self.producer)

    def _on_event(self, tool: Tool, event: dict) -> None:
        event["_at"] = time.monotonic()
        self.checks.on_event(tool, event)

    def member(self, name: str, instance: str | None) -> Tool:
        """A member named ``name`` (``name-runN`` for its Nth process), static with ``instance``."""
        run = self._runs.get(name, 0)
        self._runs[name] = run + 1
        args = ["--bootstrap-server", self.bootstrap, "--topic", self.topic, "--group-id", self.group, "--reset-policy",
                "earliest", "--session-timeout", str(self.session_timeout_ms), "--assignment-strategy",
                ASSIGNORS["range"], "--verbose", "--consumer.config", self.config]
        if instance is not None:
            args += ["--group-instance-id", instance]
        tool = Tool(f"{name}-run{run}", "VerifiableConsumer", args, self.directory, self._on_event, self.checks.cond)
        self.tools.append(tool)
        return tool

    def instance(self, index: int) -> str:
        return f"{self.group}-instance-{index}"

    def wait(self, condition: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
        with self.checks.cond:
            if not self.checks.cond.wait_for(condition, timeout):
                pytest.fail(f"{what} not seen in {timeout}s\n" + "\n".join(map(repr, self.tools)), pytrace=False)

    def await_members(self, members: list[Tool], what: str, timeout: float = WAIT_S) -> None:
        """consumer_test.py's await_all_members and await_consumed_messages: every live member joined, the partitions
        owned once between them, then more records consumed."""
        self.wait(lambda: self.checks.joined(members, PARTITIONS), f"{what}: every member joined", timeout)
        consumed = self.checks.total_consumed
        self.wait(lambda: self.checks.total_consumed > consumed, f"{what}: records consumed")

    def assignment(self, member: Tool) -> list[tuple[str, int]]:
        with self.checks.cond:
            return sorted(self.checks.assignment.get(member.name, []))

    def kill(self, member: Tool) -> None:
        member.kill()
        self.checks.killed(member.name)

    def finish(self, live: list[Tool], *, quiet: bool = True, zombie: Tool | None = None) -> None:
        """Stop the producer, wait until the group has committed every partition at its end, stop the members; then
        the service's checks: nothing out of place, every acked record consumed, and (``quiet``) no tool wrote
        anything on stderr. ``zombie``: a fenced member, checked on its own (see ``_replayed``)."""
        self.producer.stop()
        assert self.producer.named("shutdown_complete"), self.producer
        acked = _acked(self.producer)
        assert acked and self.producer.named("producer_send_error") == [], self.producer
        end_offsets: dict[tuple[str, int], int] = {}
        for e in acked:
            tp = (e["topic"], e["partition"])
            end_offsets[tp] = max(end_offsets.get(tp, 0), e["offset"] + 1)
        self.wait(lambda: self.checks.global_committed == end_offsets, "every partition committed at its end")
        for tool in live:
            tool.stop()
            assert tool.named("shutdown_complete"), tool
        violations = self.checks.violations if zombie is None else self._replayed(zombie)
        assert violations == [], "\n".join(violations)
        assert {e["value"] for e in acked} <= self.checks.consumed
        if quiet:
            for tool in self.tools:
                assert tool.stderr_path.read_text() == "", tool

    def _replayed(self, zombie: Tool) -> list[str]:
        """The checks again, in the events' arrival order, with the fenced member's events checked apart from the
        group's: until it learns that it is fenced (its next heartbeat or commit), it goes on printing the records it
        had fetched, as a member no longer in the group, behind what its successor commits meanwhile."""
        group, alone = GroupChecks(eager=True), GroupChecks(eager=True)
        events = sorted(((e["_at"], i, t) for t in self.tools if t is not self.producer for i, e in enumerate(t.events)),
                        key=lambda x: x[0])
        for _, i, tool in events:
            (alone if tool is zombie else group).on_event(tool, tool.events[i])
        return group.violations + alone.violations

    def close(self) -> None:
        for tool in self.tools:
            if tool.proc.poll() is None:
                tool.kill()


def _revocations(member: Tool) -> int:
    return len(member.named("partitions_revoked"))


def _members(bootstrap: str, group: str) -> dict[str | None, list[tuple[str, int]]]:
    """DescribeGroups through librdkafka: each member's instance id (None for a dynamic member) and its partitions."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    description = admin.describe_consumer_groups([group])[group].result(timeout=30)
    return {m.group_instance_id: sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)
            for m in description.members}


# ------------------------------------------------------------------------------------------------ static membership


@pytest.mark.parametrize("bounce_mode", ["rolling", "all"])
def test_bounced_static_members_get_their_partitions_back_without_a_rebalance(broker, bounce_mode: str,
                                                                           tmp_path: Path) -> None:
    g = StaticGroup(broker.bootstrap, tmp_path, BOUNCE_SESSION_TIMEOUT_MS)
    try:
        g.producer.wait_for(lambda ev: len(ev) >= 200, "acked records")
        live = [g.member(f"member-{i}", g.instance(i)) for i in range(3)]
        g.await_members(live, "3 static members")
        kept_revocations = _revocations(live[0])
        before = {g.instance(i): g.assignment(live[i]) for i in range(3)}
        assert _members(g.bootstrap, g.group) == before

        def bounce(indexes: list[int]) -> None:
            killed_at = time.monotonic()
            for i in indexes:
                g.kill(live[i])
            for i in indexes:
                live[i] = g.member(f"member-{i}", g.instance(i))
            g.await_members(live, f"members {indexes} restarted")
            back = max(e["_at"] for i in indexes for e in live[i].named("partitions_assigned"))
            # the premise of the test: back before the broker could have given up on them
            assert back - killed_at < BOUNCE_SESSION_TIMEOUT_MS / 1000 - 5, f"the restart took {back - killed_at:.1f}s"
            for i in indexes:
                assert g.assignment(live[i]) == before[g.instance(i)], live[i]
                # the restarted member's first rebalance gave it its partitions at once
                assert [e["partitions"] for e in live[i].named("partitions_assigned")][1:] == [], live[i]

        if bounce_mode == "rolling":
            for i in (1, 2):
                bounce([i])
        else:
            bounce([1, 2])
        # consumer_test.py: "under static membership, the live consumer shall not revoke any current running
        # partitions, since there is no global rebalance being triggered"
        assert _revocations(live[0]) == kept_revocations, live[0]
        assert _members(g.bootstrap, g.group) == before
        g.finish(live)
    finally:
        g.close()


def test_a_static_member_away_past_its_session_timeout_is_removed(broker, tmp_path: Path) -> None:
    g = StaticGroup(broker.bootstrap, tmp_path, EXPIRY_SESSION_TIMEOUT_MS)
    try:
        g.producer.wait_for(lambda ev: len(ev) >= 200, "acked records")
        live = [g.member(f"member-{i}", g.instance(i)) for i in range(3)]
        g.await_members(live, "3 static members")
        revocations = [_revocations(m) for m in live[:2]]
        leaver = live.pop()
        stopped_at = time.monotonic()
        leaver.stop()  # a clean close: a static member sends no LeaveGroup
        assert leaver.named("shutdown_complete"), leaver
        session_s = EXPIRY_SESSION_TIMEOUT_MS / 1000
        g.await_members(live, "the group without the member that stayed away", timeout=session_s + WAIT_S)
        rebalanced_at = min(e["_at"] for m, n in zip(live, revocations, strict=True)
                            for e in m.named("partitions_revoked")[n:])
        # The broker removes the member session.timeout.ms after its last heartbeat or commit (a heartbeat interval
        # before it stopped, unless the JVM was slow to send it), not at once as a dynamic member's LeaveGroup would.
        waited = rebalanced_at - stopped_at
        assert waited >= session_s / 2, f"rebalanced {waited:.1f}s after the stop"
        assert set(_members(g.bootstrap, g.group)) == {g.instance(0), g.instance(1)}
        # back with its instance id, it is a new member: the group rebalances again
        revocations = [_revocations(m) for m in live]
        live.append(g.member("member-2", g.instance(2)))
        g.await_members(live, "the group with the member back")
        assert all(_revocations(m) > n for m, n in zip(live, revocations, strict=False))
        assert set(_members(g.bootstrap, g.group)) == {g.instance(i) for i in range(3)}
        g.finish(live)
    finally:
        g.close()


def _fenced(member: Tool) -> bool:
    return member.ended and "FencedInstanceIdException" in member.stderr_path.read_text()


@pytest.mark.parametrize("fencing_stage", ["stable", "all"])
def test_a_duplicate_instance_id_fences_the_older_member(broker, fencing_stage: str, tmp_path: Path) -> None:
    g = StaticGroup(broker.bootstrap, tmp_path, BOUNCE_SESSION_TIMEOUT_MS)
    try:
        g.producer.wait_for(lambda ev: len(ev) >= 200, "acked records")
        if fencing_stage == "stable":
            first, older = g.member("member-0", g.instance(0)), g.member("member-1", g.instance(1))
            g.await_members([first, older], "2 static members")
            kept_revocations = _revocations(first)
            taken_over = g.assignment(older)
            newer = g.member("conflict-1", g.instance(1))
            g.await_members([first, newer], "the member with the instance id in use")
            g.wait(lambda: _fenced(older), "the older member fenced and ended")
            # the newer member took over the older one's partitions, without a rebalance of the others
            assert g.assignment(newer) == taken_over, newer
            assert _revocations(first) == kept_revocations, first
            live = [first, newer]
        else:
            first = g.member("member-0", g.instance(0))
            pair = [g.member("member-1", g.instance(1)), g.member("conflict-1", g.instance(1))]
            g.wait(lambda: sum(map(_fenced, pair)) == 1, "one of the two members with one instance id fenced",
                   timeout=2 * WAIT_S)
            survivor = next(m for m in pair if not m.ended)
            live = [first, survivor]
            g.await_members(live, "the group without the fenced member", timeout=2 * WAIT_S)
        fenced = next(m for m in g.tools if m.ended and m is not g.producer)
        assert fenced.named("shutdown_complete") and fenced.proc.wait(timeout=WAIT_S) == 0, fenced
        assert set(_members(g.bootstrap, g.group)) == {g.instance(0), g.instance(1)}
        g.finish(live, quiet=False, zombie=fenced)
        for tool in g.tools:
            if tool is not fenced:
                assert tool.stderr_path.read_text() == "", tool
        assert sum(_fenced(t) for t in g.tools) == 1
    finally:
        g.close()


# ----------------------------------------------------------------------------------------------------- broker bounce


# The clients log (log4j, on stderr) WARN lines while their only broker is away: disconnections, retries, leaders
# not yet known. Any other level is a failure.
_WARNING = re.compile(r"^\[[^]]*\] WARN ")


# (kill -9 or a controlled shutdown, the members' session timeout, the seconds the broker stays away)
BOUNCES = {"controlled": (False, BOUNCE_SESSION_TIMEOUT_MS, 0),
           "kill-9": (True, BOUNCE_SESSION_TIMEOUT_MS, 0),
           # Away longer than the members' sessions: the broker reads the group back and gives each member a new
           # session (GroupCoordinator.onGroupLoaded), so nobody is removed for the time it was away. Not after kill -9
           # with sessions this short: a single-node KRaft Kafka then loads its groups as it starts, but opens its
           # listeners only once the controller has fenced its previous incarnation (broker.session.timeout.ms, 9 s,
           # ~12 s here), so 10 s sessions end before the members can reach it, and the group rebalances; kafka-shim
           # serves as soon as it has loaded (the kill-9 case above, with 30 s sessions, stays clear of that on both).
           "controlled-away-past-the-session-timeout": (False, EXPIRY_SESSION_TIMEOUT_MS,
                                                        1.5 * EXPIRY_SESSION_TIMEOUT_MS / 1000)}


@pytest.mark.parametrize("bounce", list(BOUNCES))
def test_a_broker_bounce_loses_no_acked_record_and_the_group_goes_on(broker, bounce: str, tmp_path: Path) -> None:
    kill, session_timeout_ms, pause_s = BOUNCES[bounce]
    g = StaticGroup(broker.bootstrap, tmp_path, session_timeout_ms)
    try:
        g.producer.wait_for(lambda ev: len(ev) >= 200, "acked records")
        live = [g.member("static", g.instance(0)), g.member("dynamic", None)]
        g.await_members(live, "a static and a dynamic member")
        # test_static_consumer_persisted_after_rejoin: the static member's new member id must be what the broker
        # reads back from its log after the bounce, else the member's next heartbeat is fenced
        g.kill(live[0])
        live[0] = g.member("static", g.instance(0))
        g.await_members(live, "the static member restarted")
        revocations = [_revocations(m) for m in live]
        broker.restart(kill=kill, pause_s=pause_s)
        acked = len(_acked(g.producer))
        g.producer.wait_for(lambda ev: len(_acked(g.producer)) >= acked + 2 * THROUGHPUT, "records acked after the bounce",
                            timeout=2 * WAIT_S)
        g.await_members(live, "the group after the bounce", timeout=2 * WAIT_S)
        # test_broker_rolling_bounce: the bounce caused no rebalance (the broker reloads the group with its members
        # and gives each a new session)
        assert [_revocations(m) for m in live] == revocations, live
        g.finish(live, quiet=False)
        # no acked record lost, none written twice: each acked offset holds the acked value, every value once
        consumed = {(e["partition"], e["offset"]): e["value"] for m in g.tools for e in m.named("record_data")}
        lost = [e for e in _acked(g.producer) if consumed.get((e["partition"], e["offset"])) != e["value"]]
        assert lost == [], f"{len(lost)} acked records not at their offsets: {lost[:5]}"
        assert len(set(consumed.values())) == len(consumed), "a value written twice"
        for tool in g.tools:
            errors = [line for line in tool.stderr_path.read_text().splitlines()
                      if line.startswith("[") and not _WARNING.match(line)]
            assert errors == [], tool
    finally:
        g.close()
