"""Kafka 3.9's own request and authorizer logs, from a live broker, imported: every body Kafka logs reads back into
kafka-shim's message classes and renders to the same JSON, and the trace holds the clients' requests with the
authorizer's decisions attached.

The broker is this module's own (scripts/real-kafka with ``--log-level kafka.request.logger=DEBUG``): the session's
``oracle`` keeps Kafka's default levels, and a DEBUG request log would slow every other differential test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_shim.protocol.messages import request_class, response_class
from kafka_shim.traces.format import read_trace
from kafka_shim.traces.importers.kafka_json import read_message, write_message
from tests.support.peers import REAL_KAFKA
from tests.support.sasl_setup import USERS

pytestmark = [pytest.mark.oracle, pytest.mark.clients]
TIMEOUT = 60


@pytest.fixture(scope="module")
def logging_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    directory = tmp_path_factory.mktemp("kafka-request-log")
    args = [sys.executable, str(REAL_KAFKA), "start", "--dir", str(directory),
            "--log-level", "kafka.request.logger=DEBUG", "--log-level", "kafka.authorizer.logger=DEBUG"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        pytest.fail(f"real Kafka did not start:\n{proc.stderr[-6000:]}", pytrace=False)
    info = json.loads((directory / "oracle.json").read_text())
    try:
        yield info
    finally:
        subprocess.run([sys.executable, str(REAL_KAFKA), "stop", "--dir", str(directory)], capture_output=True, timeout=120)


def _client_traffic(info: dict, topic: str) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka import KafkaConsumer

    def sasl(user: str) -> dict:
        return {"bootstrap.servers": info["bootstrap"]["SASL_PLAINTEXT"], "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": USERS[user]}

    alice = AdminClient(sasl("alice"))  # held: a dropped client ends its futures with _DESTROY
    for future in alice.create_topics([NewTopic(f"{topic}-denied", 1, 1)]).values():
        with pytest.raises(Exception, match="TOPIC_AUTHORIZATION_FAILED"):
            future.result(timeout=TIMEOUT)
    admin = AdminClient(sasl("admin"))
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(timeout=TIMEOUT)
    producer = Producer(sasl("admin"))
    for i in range(3):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(TIMEOUT) == 0
    consumer = KafkaConsumer(topic, bootstrap_servers=info["bootstrap"]["SASL_PLAINTEXT"],
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_plain_username="admin",
                             sasl_plain_password=USERS["admin"], group_id=f"{topic}-group", auto_offset_reset="earliest",
                             consumer_timeout_ms=TIMEOUT * 1000)
    try:
        received = []
        for message in consumer:
            received.append(message.value)
            if len(received) == 3:
                break
        assert len(received) == 3
    finally:
        consumer.close()


def test_kafkas_logs_import_with_every_body_read(logging_kafka: dict, tmp_path: Path) -> None:
    topic = f"imported-{uuid.uuid4().hex[:8]}"
    _client_traffic(logging_kafka, topic)
    logs = Path(logging_kafka["dir"]) / "logs"
    request_log, authorizer_log = logs / "kafka-request.log", logs / "kafka-authorizer.log"

    # Every body Kafka logged reads back and renders to Kafka's JSON again, byte for byte as parsed JSON.
    lines = [line for line in request_log.read_text().splitlines() if "Completed request:" in line]
    assert len(lines) > 20
    for line in lines:
        doc, _ = json.JSONDecoder().raw_decode(line, line.index("Completed request:") + len("Completed request:"))
        header = doc["requestHeader"]
        for part, cls_of in (("request", request_class), ("response", response_class)):
            if doc[part] != "":
                message = read_message(cls_of(header["requestApiKey"]), doc[part], header["requestApiVersion"])
                assert write_message(message, header["requestApiVersion"]) == doc[part], line[:300]

    trace = tmp_path / "trace"
    code = "import sys; from kafka_shim.shim.tools.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", code, "import", "request-log", str(request_log), "--authorizer-log",
                           str(authorizer_log), "--out", str(trace)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (summary_path,) = trace.glob("_import-summary-*.json")
    summary = json.loads(summary_path.read_text())
    assert (summary["bad_lines"], summary["warnings"]) == (0, 0), summary
    rows = read_trace(trace).to_pylist()
    requests = [r for r in rows if r["kind"] == "request"]
    produce = [r for r in requests if r["api_key"] == 0 and topic in (r["request_json"] or "")]
    assert produce and all(r["principal"] == "User:admin" and r["client_software_name"] == "confluent-kafka-python"
                           for r in produce)
    assert any(d["operation"] == "WRITE" and d["resource_name"] == topic and d["rule"] == "SuperUser"
               for r in produce for d in r["decisions"] or ())
    denied = [r for r in requests if r["api_key"] == 19 and r["principal"] == "User:alice"]
    assert denied and json.loads(denied[0]["response_json"])["topics"][0]["error_code"] == 29
    alice_denials = [d for r in rows if r["principal"] == "User:alice" for d in r["decisions"] or () if not d["allowed"]]
    assert alice_denials and {d["rule"] for d in alice_denials} == {"DefaultDeny"}
    consumers = [r for r in requests if r["client_software_name"] == "kafka-python"]
    assert {r["api_key"] for r in consumers} >= {1, 10, 11, 14}  # Fetch, FindCoordinator, JoinGroup, SyncGroup
