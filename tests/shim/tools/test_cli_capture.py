"""``kafka-shim serve --capture DIR`` as a user runs it: the requests answered before SIGTERM are in the trace."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import MetadataRequest
from kafka_shim.traces.format import iter_requests, read_trace
from tests.support.wire import Wire

ROOT = Path(__file__).resolve().parents[3]


def _serve(*args: str, new_session: bool = False) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", "--log-format", "json", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            start_new_session=new_session)


@pytest.mark.parametrize("how", ["--capture", "--override"])
def test_the_last_requests_are_in_the_trace_when_serve_exits_on_sigterm(tmp_path: Path, how: str) -> None:
    capture = tmp_path / "trace"
    flag = ["--capture", str(capture)] if how == "--capture" else ["--override", f"kafka.shim.capture.dir={capture}"]
    with _serving("--override", "listeners=PLAINTEXT://127.0.0.1:0", *flag) as proc:
        answers = _metadata_requests(proc, [1, 9, 12], "cli-test")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    events = _events(proc)
    assert "capture_started" in events and "capture_stopped" in events
    rows = [r for r in iter_requests(capture) if r.row["client_id"] == "cli-test"]
    assert [r.row["api_version"] for r in rows] == [1, 9, 12]
    assert [r.row["response"] for r in rows] == [a.payload for a in answers]
    assert [r.response_body for r in rows] == [a.body for a in answers]
    assert read_trace(capture).num_rows == 3


def test_ctrl_c_in_a_terminal_loses_nothing(tmp_path: Path) -> None:
    """Ctrl-C signals the whole process group, the capture's writer process too: it must outlive the broker's stop,
    which sends it what is still queued."""
    capture = tmp_path / "trace"
    with _serving("--override", "listeners=PLAINTEXT://127.0.0.1:0", "--capture", str(capture), new_session=True) as proc:
        _metadata_requests(proc, [12] * 20, "ctrl-c")
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    events = _events(proc)
    assert "capture_writer_exited" not in events and "capture_stopped" in events
    assert [r.row["client_id"] for r in iter_requests(capture)] == ["ctrl-c"] * 20


def test_after_kill_9_the_writer_process_finishes_what_it_was_handed(tmp_path: Path) -> None:
    capture = tmp_path / "trace"
    with _serving("--override", "listeners=PLAINTEXT://127.0.0.1:0", "--capture", str(capture)) as proc:
        _metadata_requests(proc, [12] * 30, "kill-9")
        # The writer opens its file when the first rows reach it (within the forwarder's one-second flush).
        assert _wait_for(lambda: list(capture.glob("day=*/.part-*.inprogress")))
        proc.kill()
    # The broker is gone without a word; its writer sees the pipe end, finishes the file and exits. What it was
    # handed is there, whole; requests still queued in the broker (sent after the forwarder's last flush, as on a
    # busy machine) went with it.
    assert _wait_for(lambda: list(capture.glob("day=*/part-*.parquet")))
    written = [r.row["client_id"] for r in iter_requests(capture)]
    assert 1 <= len(written) <= 30 and set(written) == {"kill-9"}, written


@contextmanager
def _serving(*args: str, new_session: bool = False) -> Iterator[subprocess.Popen]:
    """``kafka-shim serve``, killed on the way out if the test has not stopped it."""
    proc = _serve(*args, new_session=new_session)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _events(proc: subprocess.Popen) -> list[str]:
    return [json.loads(line)["event"] for line in proc.stderr.read().splitlines() if line.startswith("{")]


def _metadata_requests(proc: subprocess.Popen, versions: list[int], client_id: str) -> list:
    """Metadata requests of these versions to the broker whose first line named its listener; the answers."""
    host, port = proc.stdout.readline().strip().split("://", 1)[1].rsplit(":", 1)
    with Wire((host, int(port))) as wire:
        return [wire.request(ApiKey.METADATA, v, MetadataRequest(topics=[]), client_id=client_id) for v in versions]


def _wait_for(condition, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_bad_capture_setting_stops_serve_with_the_key_named(tmp_path: Path) -> None:
    proc = _serve("--override", "listeners=PLAINTEXT://127.0.0.1:0", "--capture", str(tmp_path),
                  "--override", "kafka.shim.capture.roll.ms=soon")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "kafka.shim.capture.roll.ms='soon' is not a whole number" in err
