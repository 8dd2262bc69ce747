"""Spark's class archive (traces/audit/spark_session.py): which flags the driver's JVM gets, how a recording is
published, and the command run twice as users run it: the first audit records the archive, the second runs with it
and gives the same tables."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_shim.traces.audit import spark_session
from tests.traces.audit.engines import differences

MAGIC = spark_session._DYNAMIC_ARCHIVE_MAGIC.to_bytes(4, sys.byteorder)
PUBLISH_BOUND_S = 600  # the JVM records ~150 MB as it exits: ~15 s on an idle 2-core machine, far more on a busy one


@pytest.fixture
def fresh_env(monkeypatch, tmp_path) -> Path:
    """No PYSPARK_SUBMIT_ARGS of anyone's, the cache under tmp_path."""
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    monkeypatch.delenv(spark_session.CLASS_ARCHIVE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(spark_session, "_submit_args", None)
    return tmp_path / "cache"


def _java_options() -> str:
    return os.environ["PYSPARK_SUBMIT_ARGS"]


def test_without_an_archive_the_jvm_records_one_at_a_hidden_path(fresh_env):
    if spark_session.class_archive() is None:
        pytest.skip("no java on PATH")
    recording = spark_session.prepare_environment(record_archive=True)
    archive = spark_session.class_archive()
    assert recording is not None and recording.parent == archive.parent == fresh_env / "kafka-shim"
    assert recording.name.startswith(".") and recording.name.endswith(".tmp")
    assert f"-XX:ArchiveClassesAtExit={recording}" in _java_options()
    assert "SharedArchiveFile" not in _java_options()
    assert spark_session.JVM_FLAGS in _java_options()


def test_a_session_that_does_not_own_its_jvm_records_nothing(fresh_env):
    assert spark_session.prepare_environment(record_archive=False) is None
    assert "Archive" not in _java_options()


def _archive_holding(content: bytes) -> Path:
    """The class archive's path for this JDK and Spark, holding ``content``."""
    archive = spark_session.class_archive()
    if archive is None:
        pytest.skip("no java on PATH")
    archive.parent.mkdir(parents=True)
    archive.write_bytes(content)
    return archive


def test_an_archive_java_wrote_is_mapped(fresh_env):
    archive = _archive_holding(MAGIC + bytes(4096))
    assert spark_session.prepare_environment(record_archive=True) is None
    assert f"-XX:SharedArchiveFile={archive}" in _java_options()
    assert "ArchiveClassesAtExit" not in _java_options()


def test_a_damaged_archive_is_recorded_again_not_mapped(fresh_env):
    _archive_holding(b"not an archive at all")
    recording = spark_session.prepare_environment(record_archive=True)
    assert recording is not None and "SharedArchiveFile" not in _java_options()


def test_a_recording_left_by_an_audit_that_died_is_dropped_later(fresh_env):
    archive = _archive_holding(MAGIC + bytes(4096))
    stale, fresh = (archive.with_name(f".{archive.name}.{pid}.tmp") for pid in (1, 2))
    for path in (stale, fresh):
        path.write_bytes(bytes(100))
    aged = time.time() - spark_session._STALE_RECORDING_SECONDS - 60
    os.utime(stale, (aged, aged))
    spark_session.prepare_environment(record_archive=True)
    assert not stale.exists() and fresh.exists()  # a fresh one may be a JVM still writing it


def test_the_users_own_submit_args_are_left_alone(fresh_env, monkeypatch):
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-memory 3g pyspark-shell")
    assert spark_session.prepare_environment(record_archive=True) is None
    assert _java_options() == "--driver-memory 3g pyspark-shell"


def test_switched_off_by_its_environment_variable(fresh_env, monkeypatch):
    monkeypatch.setenv(spark_session.CLASS_ARCHIVE_ENV, "off")
    assert spark_session.class_archive() is None
    assert spark_session.prepare_environment(record_archive=True) is None
    assert "Archive" not in _java_options()


def _exited_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_a_whole_recording_is_moved_into_place_once_its_jvm_has_exited(tmp_path):
    recording, final = tmp_path / ".a.jsa.1.tmp", tmp_path / "a.jsa"
    recording.write_bytes(MAGIC + bytes(100))
    assert spark_session.publish_when_exited(_exited_pid(), str(recording), str(final))
    assert final.read_bytes() == MAGIC + bytes(100) and not recording.exists()


def test_a_recording_that_is_not_an_archive_is_dropped(tmp_path):
    recording, final = tmp_path / ".a.jsa.1.tmp", tmp_path / "a.jsa"
    recording.write_bytes(b"\0" * 100)  # what a JVM killed while writing can leave
    assert not spark_session.publish_when_exited(_exited_pid(), str(recording), str(final))
    assert not recording.exists() and not final.exists()


def test_nothing_is_published_while_the_jvm_still_runs(tmp_path):
    recording, final = tmp_path / ".a.jsa.1.tmp", tmp_path / "a.jsa"
    recording.write_bytes(MAGIC + bytes(100))
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert not spark_session.publish_when_exited(running.pid, str(recording), str(final), timeout=0.5)
    finally:
        running.kill()
        running.wait()
    assert recording.exists() and not final.exists()


@pytest.mark.spark
@pytest.mark.slow
def test_the_first_audit_records_the_archive_and_the_next_one_maps_it(captured, tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    env.pop(spark_session.CLASS_ARCHIVE_ENV, None)
    cache = tmp_path / "cache" / "kafka-shim"
    common = [sys.executable, "-m", "kafka_shim.shim.tools.cli", "audit", str(captured.trace_a), "--acls",
              str(captured.acls_a), "--super-users", "User:admin", "--no-report"]
    first = subprocess.run([*common, "--out", str(tmp_path / "first")], capture_output=True, text=True, env=env,
                           timeout=900, check=False)
    assert first.returncode == 0, first.stderr[-3000:]
    deadline = time.monotonic() + PUBLISH_BOUND_S
    while not list(cache.glob("spark-*.jsa")) and time.monotonic() < deadline:
        time.sleep(1)
    archives = list(cache.glob("spark-*.jsa"))
    assert len(archives) == 1, f"no class archive published in {PUBLISH_BOUND_S} s: {list(cache.iterdir())}"
    assert archives[0].read_bytes()[:4] == MAGIC
    recorded = archives[0].stat().st_mtime_ns
    assert not list(cache.glob(".*.tmp"))  # the recording was moved, not copied

    second = subprocess.run([*common, "--out", str(tmp_path / "second")], capture_output=True, text=True, env=env,
                            timeout=900, check=False)
    assert second.returncode == 0, second.stderr[-3000:]
    assert second.stdout.split(" in ")[0] == first.stdout.split(" in ")[0]  # the same counts
    assert differences(tmp_path / "first", tmp_path / "second") == []
    assert archives[0].stat().st_mtime_ns == recorded  # mapped (which flags: the tests above), never rewritten
