"""The kafka-shim command as a user runs it: start, print addresses, stop on a signal."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_shim.protocol.framing import decode_response, encode_request
from kafka_shim.protocol.messages import MetadataRequest

ROOT = Path(__file__).resolve().parents[3]


def _start(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _metadata_over_socket(address: str) -> object:
    host, port = address.split("://", 1)[1].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(encode_request(3, 12, 5, MetadataRequest(topics=[])))
        size = int.from_bytes(sock.recv(4), "big")
        data = b""
        while len(data) < size:
            data += sock.recv(size - len(data))
    return decode_response(3, 12, data)[1]


def test_serve_prints_listeners_and_stops_on_sigterm(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("listeners=PLAINTEXT://127.0.0.1:0\nnode.id=42\nlog.dirs=" + str(tmp_path / "data") + "\n")
    proc = _start(str(config), "--log-format", "json")
    try:
        address = proc.stdout.readline().strip()
        assert address.startswith("PLAINTEXT://127.0.0.1:")
        response = _metadata_over_socket(address)
        assert response.brokers[0].node_id == 42
        meta = (tmp_path / "data" / "meta.properties").read_text()
        assert f"cluster.id={response.cluster_id}" in meta
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        lines = [json.loads(line) for line in proc.stderr.read().splitlines() if line.startswith("{")]
        assert any(line["event"] == "listening" for line in lines)
        assert any(line["event"] == "shutting_down" for line in lines)
    finally:
        proc.kill()


def test_cluster_id_survives_restart(tmp_path: Path) -> None:
    ids = []
    for _ in range(2):
        proc = _start("--override", "listeners=PLAINTEXT://127.0.0.1:0", "--data-dir", str(tmp_path))
        try:
            ids.append(_metadata_over_socket(proc.stdout.readline().strip()).cluster_id)
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=10) == 0
        finally:
            proc.kill()
    assert ids[0] == ids[1]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("listeners=PLAINTEXT//127.0.0.1:9092", "is not NAME://HOST:PORT"),
        ("listeners=SSL://127.0.0.1:0", "ssl.keystore"),
        ("listeners=SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms"),
        ("socket.request.max.bytes=lots", "must be an integer"),
        ("listeners=FOO://127.0.0.1:0", "listener.security.protocol.map"),
    ],
)
def test_bad_configuration_is_a_readable_error(override: str, message: str) -> None:
    proc = _start("--override", override)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 2
    assert "configuration error" in err and message in err


def test_missing_config_file_is_a_readable_error(tmp_path: Path) -> None:
    proc = _start(str(tmp_path / "nope.properties"))
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 2
    assert "cannot read the configuration file" in err


def test_port_in_use_is_a_readable_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _start("--override", f"listeners=PLAINTEXT://127.0.0.1:{port}")
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 1
    assert f"cannot listen on PLAINTEXT://127.0.0.1:{port}" in err


def test_example_config_is_valid() -> None:
    from kafka_shim.shim.config.broker_config import BrokerConfig

    config = BrokerConfig.load(ROOT / "examples" / "server.properties")
    assert [(lst.name, lst.host, lst.port) for lst in config.listeners] == [
        ("PLAINTEXT", "127.0.0.1", 9092), ("SASL_PLAINTEXT", "127.0.0.1", 9093)]
    assert config.unknown_keys == []
    assert config.authorizer_enabled and config.super_users == "User:admin"


def test_example_config_serves_its_users(capsys: pytest.CaptureFixture[str]) -> None:
    """The example broker (on free ports): admin logs in with examples/admin.properties and may list ACLs."""
    from kafka_shim.shim.config.broker_config import BrokerConfig
    from kafka_shim.shim.testing.embedded import EmbeddedBroker
    from kafka_shim.shim.tools.acls import main as acls_main

    config = BrokerConfig.load(ROOT / "examples" / "server.properties", {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "advertised.listeners": ""})
    with EmbeddedBroker(config) as broker:
        sasl = next(b for b in broker.broker.bound if b.listener.name == "SASL_PLAINTEXT")
        plaintext = next(b for b in broker.broker.bound if b.listener.name == "PLAINTEXT")
        admin = ["--bootstrap-server", f"127.0.0.1:{sasl.port}", "--command-config", str(ROOT / "examples" / "admin.properties")]
        assert acls_main([*admin, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "payments"]) == 0
        capsys.readouterr()
        assert acls_main([*admin, "--list", "--topic", "payments"]) == 0
        assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in capsys.readouterr().out
        # Anonymous on PLAINTEXT is not allowed to describe ACLs (CLUSTER_AUTHORIZATION_FAILED): a non-zero exit.
        assert acls_main(["--bootstrap-server", f"127.0.0.1:{plaintext.port}", "--list"]) != 0


def test_startup_is_quick() -> None:
    started = time.monotonic()
    proc = _start("--override", "listeners=PLAINTEXT://127.0.0.1:0")
    try:
        assert proc.stdout.readline().startswith("PLAINTEXT://")
        # Generous bound for a loaded CI machine; bench/startup.py measures the real figure.
        assert time.monotonic() - started < 5
    finally:
        proc.kill()
        proc.wait()
