"""The image itself: built from the Dockerfile, run, healthy by its own HEALTHCHECK, a SASL client producing and
consuming through the published ports, and a clean exit on stop. Needs a container engine: scripts/test runs
scripts/ensure-docker (Debian's docker.io); scripts/docker-build makes the wheels here and the base with
scripts/docker-base (python:3.11-slim, or one built from Debian's packages where the registry is out of reach). Without an engine the test is skipped and says why."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _docker(*args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=check)


@pytest.fixture(scope="module")
def image() -> str:
    try:
        if _docker("info", timeout=30, check=False).returncode != 0:
            pytest.skip("no container engine answers here (scripts/ensure-docker could not start one)")
    except FileNotFoundError:
        pytest.skip("no docker command here (scripts/ensure-docker installs it on Debian)")
    built = subprocess.run([str(ROOT / "scripts" / "docker-build"), "kafka-shim:test"], capture_output=True, text=True,
                           timeout=1800)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return built.stdout.strip().splitlines()[-1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_image_runs_healthy_serves_sasl_clients_and_stops_cleanly(image: str) -> None:
    plain, sasl = _free_port(), _free_port()
    name = f"kafka-shim-test-{uuid.uuid4().hex[:8]}"
    _docker("run", "-d", "--name", name, "-p", f"127.0.0.1:{plain}:9092", "-p", f"127.0.0.1:{sasl}:9093",
            "-e", f"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}", image)
    try:
        deadline, status = time.monotonic() + 180, ""
        while status != "healthy" and time.monotonic() < deadline:
            state = json.loads(_docker("inspect", name).stdout)[0]["State"]
            status = state.get("Health", {}).get("Status", "")
            assert state["Running"], _docker("logs", name, check=False).stderr[-3000:]
            time.sleep(0.5)
        assert status == "healthy", _docker("logs", name, check=False).stderr[-3000:]
        config = {"bootstrap.servers": f"127.0.0.1:{sasl}", "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "admin", "sasl.password": "admin-secret"}
        producer = Producer(config | {"message.timeout.ms": 30000})
        errors: list = []
        producer.produce("in-a-container", b"hello", on_delivery=lambda err, msg: errors.append(err))
        producer.flush(60)
        assert errors == [None]
        consumer = Consumer(config | {"group.id": "g", "auto.offset.reset": "earliest"})
        consumer.subscribe(["in-a-container"])
        message, deadline = None, time.monotonic() + 60
        while (message is None or message.error() is not None) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
        consumer.close()
        assert message is not None and message.value() == b"hello"
        _docker("stop", "-t", "60", name, timeout=120)
        assert json.loads(_docker("inspect", name).stdout)[0]["State"]["ExitCode"] == 0
        logs = _docker("logs", name).stderr
        assert '"event": "listening"' in logs or '"event":"listening"' in logs.replace(" ", "")
    finally:
        _docker("rm", "-f", "-v", name, check=False)
