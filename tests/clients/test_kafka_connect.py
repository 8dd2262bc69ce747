"""A Kafka Connect 3.9 distributed worker against kafka-shim, as a team runs one in CI, and against Apache Kafka 3.9 (the
same test, marker ``oracle``) to show that the worker and its expectations are right.

The worker is ``kafkashim.oracle.ConnectProbe`` (tests/oracle; run with the judge's jars through ``scripts/real-kafka
run``): ConnectDistributed's own start-up in the probe's JVM (group protocol "sessioned", REST on an ephemeral port),
which creates its config, offset and status topics (compacted); a FileStreamSource and a FileStreamSink connector created
through the REST API; lines written to the source file (the second half once the first is in the sink file) come out in
the sink file exactly and are in the topic exactly once; the worker is stopped, more lines are appended, and the
restarted worker resumes from its stored offsets (the connectors from the config topic, the source position from the
offsets topic, the sink position from its consumer group) without a duplicate. With ``--eos`` the worker runs with
``exactly.once.source.support=enabled``: the leader writes the config topic transactionally, the source task's producer
is transactional (fenced with fenceProducers before it starts), the sink and the checks read read_committed.
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

# Every wait inside the probe (the REST API, RUNNING, the sink file, the offsets) is bounded by this; the JVM by more.
WAIT_MS = 30_000
PROBE_TIMEOUT_S = 150
# Lines the probe writes: half before the source starts, half after; as many again across the restart.
LINES = 50
# What the worker's own TopicAdmin creates (Connect's defaults: 1, 25 and 5 partitions), replication factor 1 as
# configured, cleanup.policy=compact as Connect sets it (and checks with DescribeConfigs); the data topic is the probe's.
INTERNAL_TOPICS = {
    "configs": {"partitions": 1, "replicas": 1, "configs": {"cleanup.policy": "compact"}},
    "lines": {"partitions": 1, "replicas": 1, "configs": {}},
    "offsets": {"partitions": 25, "replicas": 1, "configs": {"cleanup.policy": "compact"}},
    "status": {"partitions": 5, "replicas": 1, "configs": {"cleanup.policy": "compact"}},
}
# Warnings Connect logs against Apache Kafka 3.9 too: the restarted worker's first assignment names a config offset it
# has not read yet; the worker's close gives its LeaveGroup no time to be answered (each stop).
EXPECTED_WARNINGS = ("Catching up to assignment's config offset", "Close timed out with 1 pending requests to coordinator")


@pytest.fixture(scope="module", params=["kafka-shim", pytest.param("apache-kafka", marks=pytest.mark.oracle)])
def bootstrap(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The broker the worker runs against, as a CI job would configure a single node."""
    if request.param == "kafka-shim":
        with KafkaShim(ShimOptions()) as shim:
            yield shim.bootstrap_servers
    else:
        kafka = start_real_kafka(tmp_path_factory.mktemp("kafka-connect"), "authorizer.class.name=")
        try:
            yield "{}:{}".format(*kafka.plaintext)
        finally:
            stop_real_kafka(kafka)


def _probe(bootstrap: str, worker_id: str, directory: Path, *args: str) -> ProbeRun:
    log = directory / f"{worker_id}.log"
    proc = subprocess.run(
        [sys.executable, str(REAL_KAFKA), "run", "kafkashim.oracle.ConnectProbe", "--bootstrap", bootstrap,
         "--id", worker_id, "--dir", str(directory / "files"), "--wait-ms", str(WAIT_MS), "--lines", str(LINES),
         "--log-file", str(log), *args],
        capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    return ProbeRun(proc, log)


@pytest.mark.parametrize("eos", [False, True], ids=["at_least_once", "exactly_once_source"])
def test_file_source_and_sink_resume_from_their_stored_offsets(bootstrap: str, eos: bool, tmp_path: Path) -> None:
    worker_id = f"connect-{uuid.uuid4().hex[:8]}"
    run = _probe(bootstrap, worker_id, tmp_path, *(["--eos"] if eos else []))
    assert run.returncode == 0, run
    assert run.one("done")["ok"] is True, run
    assert [e["code"] for e in run.of("created")] == [201, 201], run
    for phase, count in ((1, LINES), (2, 2 * LINES)):
        # the worker answered REST and brought both connectors and their tasks to RUNNING (phase 2: restored from the
        # config topic by the restarted worker)
        running = run.one("running", phase=phase)
        assert running["states"] == {"sink": "RUNNING", "sink-0": "RUNNING", "source": "RUNNING",
                                     "source-0": "RUNNING"}, run
        assert running["ms"] < WAIT_MS, run
        # file -> topic -> file, each line exactly once and in order, across the restart too
        output = run.one("output", phase=phase)
        exact = {"count": count, "distinct": count, "exact": True, "expected": count}
        assert (output["file"], output["topic"]) == (exact, exact), run
        # the stored offsets are where the data is: the source at the file's size, the sink just after the last record
        offsets = run.one("offsets", phase=phase)
        assert offsets["ok"] is True, run
        assert offsets["source"][0]["offset"] == {"position": offsets["file_bytes"]}, run
        assert offsets["sink"][0]["offset"] == {"kafka_offset": offsets["after_last_record"]}, run
        if eos:
            # one transaction per poll: a commit marker after each batch, the last one after the last record; the
            # probe appends each phase's second half once the first is in the sink file, so that half is a later poll
            # (at least two transactions). The offsets themselves in the message: the run's output is cut short there.
            assert offsets["end_offset"] == offsets["after_last_record"] + 1 > count + 1, (phase, offsets)
        else:
            assert offsets["end_offset"] == offsets["after_last_record"] == count, (phase, offsets)
    assert run.one("connectors")["got"] == [f"{worker_id}-sink", f"{worker_id}-source"], run
    assert run.one("topics")["topics"] == {f"{worker_id}-{name}": t for name, t in INTERNAL_TOPICS.items()}, run
    assert run.lines("ERROR") == [], run
    assert [w for w in run.lines("WARN") if not any(known in w for known in EXPECTED_WARNINGS)] == [], run
