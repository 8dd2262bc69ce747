"""Kafka's own Java admin client and kafka-acls' command class, pointed at kafka-shim."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.peers import REAL_KAFKA


def run_java(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REAL_KAFKA), "run", *args], capture_output=True, text=True, timeout=300)


def admin_probe(bootstrap: str) -> dict:
    proc = run_java("kafkashim.oracle.AdminProbe", "--bootstrap", bootstrap)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_java_admin_describe_cluster(oracle_open, shim_peer) -> None:
    shim = admin_probe(shim_peer.bootstrap_servers)
    host, port = shim_peer.bootstrap_servers.rsplit(":", 1)
    assert shim["ok"] is True
    assert shim["cluster_id"] == shim_peer.broker.state.cluster_id
    assert shim["nodes"] == [{"id": 1, "host": host, "port": int(port), "rack": None}]
    assert shim["controller"]["id"] == 1
    kafka = admin_probe("{}:{}".format(*oracle_open.plaintext))
    # The same shape from both; only identities differ.
    assert sorted(kafka) == sorted(shim)
    assert [n["id"] for n in kafka["nodes"]] == [n["id"] for n in shim["nodes"]]
    assert kafka["authorized_operations"] == shim["authorized_operations"]


def _exception_classes(text: str) -> list[str]:
    return sorted({word.rstrip(":") for word in text.split() if word.endswith(("Exception", "Exception:"))})


def test_kafka_acls_list_without_authorizer(oracle_open, shim_peer) -> None:
    kafka = run_java("kafka.admin.AclCommand", "--bootstrap-server", "{}:{}".format(*oracle_open.plaintext), "--list")
    shim = run_java("kafka.admin.AclCommand", "--bootstrap-server", shim_peer.bootstrap_servers, "--list")
    # Both refuse the same way (Kafka: SecurityDisabledException, no authorizer configured).
    assert _exception_classes(kafka.stdout + kafka.stderr), "kafka-acls against Kafka with no authorizer should fail"
    assert (shim.returncode, _exception_classes(shim.stdout + shim.stderr)) == (kafka.returncode, _exception_classes(kafka.stdout + kafka.stderr))
