"""``kafka-shim audit --master spark://...`` on a real Spark standalone cluster: a master and a worker started on
loopback by the test (pyspark's ``spark-class``, as $SPARK_HOME/sbin's scripts would), the command run as users run
it, its tables the same as the arrow engine's."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.traces.audit.engines import differences

pytestmark = [pytest.mark.clients, pytest.mark.spark, pytest.mark.slow]
START_BOUND_S = 180  # JVM start-ups on a busy 2-core machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_env(work: Path) -> dict[str, str]:
    import pyspark

    home = Path(pyspark.__file__).parent
    return {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
            "SPARK_WORKER_DIR": str(work / "worker"), "SPARK_LOG_DIR": str(work / "logs")}


def _master_state(ui_port: int) -> dict | None:
    """The master's state, or None while it cannot say: not listening yet, or (seen once in CI) answering its UI
    page's HTML instead of the JSON while starting."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as answer:
            return json.loads(answer.read())
    except (OSError, ValueError):
        return None


@pytest.fixture
def standalone(tmp_path):
    env = _spark_env(tmp_path)
    spark_class = str(Path(env["SPARK_HOME"]) / "bin" / "spark-class")
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    logs = []
    procs = []
    try:
        for name, args in (("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                                       "--webui-port", str(ui)]),
                           ("worker", ["org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}", "--host", "127.0.0.1",
                                       "--cores", "2", "--memory", "1g", "--webui-port", str(worker_ui),
                                       "--work-dir", str(tmp_path / "worker")])):
            log = open(tmp_path / f"{name}.log", "wb")
            logs.append(log)
            procs.append(subprocess.Popen([spark_class, *args], env=env, stdout=log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + START_BOUND_S
        while True:
            state = _master_state(ui)
            if state and any(w.get("state") == "ALIVE" for w in state.get("workers", [])):
                break
            dead = [p.args[1] for p in procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                tails = {p.name: p.read_text(errors="replace")[-2000:] for p in tmp_path.glob("*.log")}
                pytest.fail(f"Spark standalone did not come up (exited: {dead}); logs: {tails}")
            time.sleep(0.5)
        yield f"spark://127.0.0.1:{port}"
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for log in logs:
            log.close()


def test_audit_on_a_standalone_cluster(captured, standalone, tmp_path):
    common = [str(captured.trace_a), "--acls", str(captured.acls_a), "--what-if", str(captured.acls_b),
              "--super-users", "User:admin", "--no-report", "--compare-release", "2.7"]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run([sys.executable, "-m", "kafka_shim.shim.tools.cli", "audit", *common, "--out", str(tmp_path / "spark"),
                           "--master", standalone], capture_output=True, text=True, timeout=900, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "what-if: 6 flips (3 hard" in done.stdout
    subprocess.run([sys.executable, "-m", "kafka_shim.shim.tools.cli", "audit", *common, "--out", str(tmp_path / "arrow"),
                    "--engine", "arrow"], check=True, capture_output=True, timeout=300)
    assert differences(tmp_path / "arrow", tmp_path / "spark") == []
