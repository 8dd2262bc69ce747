"""A Kafka Streams 3.9 application against kafka-shim, as a team runs one in CI, and against Apache Kafka 3.9 (the
same test, marker ``oracle``) to show that the application and its expectations are right.

The application is ``kafkashim.oracle.StreamsProbe`` (tests/oracle; run with the judge's jars through
``scripts/real-kafka run``): a word count through a repartition topic into a KTable (compacted changelog), a
stream-table join, a windowed count (compact,delete changelog), with exactly_once_v2 and at_least_once; a restart with
the state directory wiped (restored from the changelogs, checked through interactive queries); the repartition topic
purged (DeleteRecords); a crash inside an open transaction and the recovery that fences it; a transaction that
outlives its timeout, aborted by the coordinator, the stalled thread fenced. The probe prints JSON lines: what it read
back (read_committed), what it expected, and how long Streams took to reach RUNNING.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_shim.shim.testing.handle import KafkaShim
from kafka_shim.shim.testing.options import ShimOptions
from tests.support.java_probe import ProbeRun
from tests.support.peers import REAL_KAFKA, start_real_kafka, stop_real_kafka

pytestmark = pytest.mark.clients

# The coordinator aborts a transaction past its timeout at this interval's checks (Kafka's default is 10 s); the
# stall scenario waits 2 s (its transaction timeout) plus this, so both brokers get the same short one.
CLEANUP_INTERVAL = ("transaction.abort.timed.out.transaction.cleanup.interval.ms", "500")
# Every wait inside the probe (RUNNING, each output read back, the purge) is bounded by this; the JVM by more.
WAIT_MS = 60_000
PROBE_TIMEOUT_S = 240

# The counts the probe's input makes (tests/oracle/.../StreamsProbe.java, LINES_1 then LINES_2): each update of
# the KTable is forwarded (no record cache), so "the" goes 1, 2, 3, 4 and, after the restart, 5.
THE_FIRST, THE_AFTER_RESTART = [1, 2, 3, 4], [5]
# What Streams' own AdminClient gives its internal topics (the topic-level configs it sets, as DescribeConfigs
# reports them with source DYNAMIC_TOPIC_CONFIG), with the replication factor left to the broker's default (1 here).
INTERNAL_TOPICS = {
    "clicks-per-window-changelog": {"partitions": 2, "replicas": 1, "configs": {
        "cleanup.policy": "compact,delete", "message.timestamp.type": "CreateTime", "retention.ms": "172810000"}},
    "users-changelog": {"partitions": 2, "replicas": 1, "configs": {
        "cleanup.policy": "compact", "message.timestamp.type": "CreateTime"}},
    "word-counts-changelog": {"partitions": 2, "replicas": 1, "configs": {
        "cleanup.policy": "compact", "message.timestamp.type": "CreateTime"}},
    "word-counts-repartition": {"partitions": 2, "replicas": 1, "configs": {
        "cleanup.policy": "delete", "message.timestamp.type": "CreateTime", "retention.ms": "-1",
        "segment.bytes": "52428800"}},
}
# Warnings Streams logs against Apache Kafka 3.9 too: its consumer subscribes to the repartition topic before its
# AdminClient has created it; cleanUp() leaves the process id file; the state directory is under /tmp. Kafka alone:
# it answers CreateTopics before its broker has the new leaders, so the probe's first send may be refused and
# retried (two wordings; kafka-shim's topics lead at once).
EXPECTED_WARNINGS = ("UNKNOWN_TOPIC_OR_PARTITION", "Failed to delete state store directory", "OS temp directory",
                     "Error: NOT_LEADER_OR_FOLLOWER", "due to org.apache.kafka.common.errors.NotLeaderOrFollowerException")
# A few metadata refreshes see the repartition topic missing (2-4 on both brokers); a storm would be many more.
MAX_MISSING_TOPIC_WARNINGS = 20


@pytest.fixture(scope="module", params=["kafka-shim", pytest.param("apache-kafka", marks=pytest.mark.oracle)])
def bootstrap(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The broker the application runs against, as a CI job would configure a single node."""
    if request.param == "kafka-shim":
        with KafkaShim(ShimOptions(config=(CLEANUP_INTERVAL,))) as shim:
            yield shim.bootstrap_servers
    else:
        kafka = start_real_kafka(tmp_path_factory.mktemp("kafka-streams"), "authorizer.class.name=", "=".join(CLEANUP_INTERVAL))
        try:
            yield "{}:{}".format(*kafka.plaintext)
        finally:
            stop_real_kafka(kafka)


def _probe(bootstrap: str, app_id: str, state_dir: Path, *args: str) -> ProbeRun:
    log = state_dir.parent / f"{app_id}-{args[1] if args else 'full'}.log"
    proc = subprocess.run(
        [sys.executable, str(REAL_KAFKA), "run", "kafkashim.oracle.StreamsProbe", "--bootstrap", bootstrap,
         "--app-id", app_id, "--state-dir", str(state_dir), "--wait-ms", str(WAIT_MS), "--log-file", str(log), *args],
        capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    return ProbeRun(proc, log)


def _app_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _assert_outputs_exact(run: ProbeRun) -> None:
    """Every output read back and every interactive query equals what the input makes, exactly."""
    for event in run.of("output") + run.of("queried"):
        assert event["got"] == event["expected"], f"{event.get('topic') or event.get('store')}: {run!r}"


def _assert_quiet(run: ProbeRun) -> None:
    """No error, and no warning but those Streams logs against Kafka too, not in a storm."""
    assert run.lines("ERROR") == [], run
    unexpected = [w for w in run.lines("WARN") if not any(known in w for known in EXPECTED_WARNINGS)]
    assert unexpected == [], run
    missing = [w for w in run.lines("WARN") if "UNKNOWN_TOPIC_OR_PARTITION" in w]
    assert len(missing) <= MAX_MISSING_TOPIC_WARNINGS, run


@pytest.mark.parametrize("guarantee", ["exactly_once_v2", "at_least_once"])
def test_word_count_join_and_windows_survive_a_restart_from_the_changelogs(bootstrap: str, guarantee: str,
                                                                           tmp_path: Path) -> None:
    app_id = _app_id("wc")
    run = _probe(bootstrap, app_id, tmp_path / "state", "--guarantee", guarantee)
    assert run.returncode == 0, run
    _assert_outputs_exact(run)
    counts = {e["phase"]: e["got"] for e in run.of("output") if e["topic"] == f"{app_id}-word-counts"}
    assert (counts[1]["the"], counts[2]["the"]) == (THE_FIRST, THE_AFTER_RESTART), run
    assert run.one("output", topic=f"{app_id}-enriched")["got"] == {
        "alice": ["home@eu", "cart@eu", "pay@eu"], "bob": ["home@us", "cart@us", "pay@us"], "carol": ["home@apac"]}
    # The restart began with no local state: every store came back from its changelog, record for record.
    assert run.one("restored")["stores"] == {"word-counts": 19, "users": 3, "clicks-per-window": 8}, run
    # DeleteRecords after the commits moved each repartition partition's start up to the committed offset.
    purged = run.one("purged")
    assert purged["ok"] and len(purged["partitions"]) == 2, run
    assert all(0 < low <= committed for low, committed, _ in purged["partitions"].values()), run
    assert run.one("topics")["topics"] == INTERNAL_TOPICS, run
    for phase in (1, 2):
        assert run.one("running", phase=phase)["ms"] < WAIT_MS, run
    _assert_quiet(run)


def test_a_crash_inside_a_transaction_is_fenced_and_processed_once(bootstrap: str, tmp_path: Path) -> None:
    """exactly_once_v2: the first run halts with its transaction open (its output seen read_uncommitted only); the
    second, on the same state directory, fences it through InitProducerId and processes the input again."""
    app_id = _app_id("crash")
    state = tmp_path / "state"
    crashed = _probe(bootstrap, app_id, state, "--scenario", "crash")
    assert crashed.returncode == 0, crashed
    _assert_outputs_exact(crashed)
    assert crashed.one("open-transaction")["ok"], crashed
    _assert_quiet(crashed)
    base = crashed.one("base")["ms"]
    recovered = _probe(bootstrap, app_id, state, "--scenario", "recover", "--base-ms", str(base))
    assert recovered.returncode == 0, recovered
    _assert_outputs_exact(recovered)
    read_committed = recovered.one("output", topic=f"{app_id}-word-counts")["got"]
    assert read_committed["the"] == THE_FIRST, recovered
    # The aborted attempt and the committed one, both there for a read_uncommitted reader.
    twice = recovered.one("output", topic=f"{app_id}-clicks-per-window (read_uncommitted)")["got"]
    assert twice["alice@0"] == [1, 2, 1, 2], recovered
    _assert_quiet(recovered)


def test_a_transaction_past_its_timeout_is_aborted_and_the_stalled_thread_rejoins(bootstrap: str, tmp_path: Path) -> None:
    """The stream thread stalls 6 s inside a transaction whose timeout is 2 s: the coordinator aborts it with an epoch
    bump, the thread's next send is refused (PRODUCER_FENCED from AddPartitionsToTxn, or INVALID_PRODUCER_EPOCH from
    the Produce's verification, depending on which partition it writes first), Streams closes its tasks as migrated,
    rejoins and processes again: the committed output still holds each update once."""
    app_id = _app_id("stall")
    run = _probe(bootstrap, app_id, tmp_path / "state", "--scenario", "stall")
    assert run.returncode == 0, run
    _assert_outputs_exact(run)
    assert run.one("output", topic=f"{app_id}-word-counts")["got"]["stall"] == [1], run
    # RUNNING, then REBALANCING again once fenced, and RUNNING in the end.
    states = run.one("stalled")["states"]
    assert states[:2] == ["REBALANCING", "RUNNING"] and "REBALANCING" in states[2:] and states[-1] == "RUNNING", run
    fenced = [line for line in run.lines("WARN") if "Detected that the thread is being fenced" in line]
    assert fenced, run
