"""An admin tool's OffsetFetch for all of a group's partitions (null topics), captured from kafka-shim with real
clients (confluent-kafka's list_consumer_group_offsets): Kafka 3.9 asks DESCRIBE on each topic the group has offsets
for and silently leaves out the others. The audit asks the same questions (named by the broker's recorded decisions),
so the least-privilege set keeps the topic DESCRIBE the tool needs, and a what-if without it says what the tool loses.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafka_shim.authorizer.acl_file import load_acl_file
from kafka_shim.traces.audit.cli import main
from tests.traces.audit.workload import capturing_broker, sasl, write_acl_file

pytestmark = pytest.mark.clients

TIMEOUT = 30
# alice consumes t.a in group g-1 and commits; bob, an operator, may describe the group and the topic.
ACLS = """
acls:
  - {resource_type: topic, resource_name: t.a, principal: User:alice, operation: Read}
  - {resource_type: group, resource_name: g-1, principal: User:alice, operation: Read}
  - {resource_type: topic, resource_name: t.a, principal: User:bob, operation: Describe}
  - {resource_type: group, resource_name: g-1, principal: User:bob, operation: Describe}
"""


def _run(acl_file: Path, capture: Path) -> list[tuple]:
    """alice commits after reading 3 records; bob lists the group's offsets (all partitions): what bob saw."""
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer
    from confluent_kafka.admin import AdminClient

    settings = {"offsets.topic.replication.factor": "1", "group.initial.rebalance.delay.ms": "0"}
    with capturing_broker(capture, ("t.a",), load_acl_file(acl_file), **settings) as address:
        producer = Producer({"bootstrap.servers": address, **sasl("admin")})
        for i in range(3):
            producer.produce("t.a", f"m{i}".encode())
        assert producer.flush(TIMEOUT) == 0

        consumer = Consumer({"bootstrap.servers": address, **sasl("alice"), "group.id": "g-1",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe(["t.a"])
        read, deadline = 0, time.monotonic() + TIMEOUT
        while read < 3 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            read += message is not None and message.error() is None
        assert read == 3
        consumer.commit(asynchronous=False)
        consumer.close()

        bob = AdminClient({"bootstrap.servers": address, **sasl("bob")})
        listed = bob.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g-1")])["g-1"].result(timeout=TIMEOUT)
        return [(tp.topic, tp.partition, tp.offset) for tp in listed.topic_partitions]


def test_all_partitions_offset_fetch_asks_describe_on_each_topic_of_the_group(tmp_path):
    acls = write_acl_file(tmp_path, "a", ACLS)
    assert _run(acls, tmp_path / "trace") == [("t.a", 0, 3)]
    out = tmp_path / "out"
    assert main([str(tmp_path / "trace"), "--acls", str(acls), "--out", str(out), "--engine", "arrow",
                 "--super-users", "User:admin"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["broker_differences"], summary["unresolved"]) == (0, 0)
    decisions = pq.read_table(out / "decisions").to_pylist()
    asked = {(r["operation"], r["resource_type"], r["resource_name"], r["allowed_a"]) for r in decisions
             if r["request_name"] == "OffsetFetch" and r["principal"] == "User:bob"}
    assert asked == {("DESCRIBE", "GROUP", "g-1", True), ("DESCRIBE", "TOPIC", "t.a", True)}

    # the least-privilege set keeps bob's DESCRIBE on t.a, and under it bob sees the same offsets
    least = out / "least_privilege" / "acls.yaml"
    assert {(b.entry.principal, b.pattern.name, b.entry.operation.name) for b in load_acl_file(least)} >= {
        ("User:bob", "t.a", "DESCRIBE"), ("User:bob", "g-1", "DESCRIBE")}
    assert _run(least, tmp_path / "trace_least") == [("t.a", 0, 3)]

    # without it, the what-if says bob's answer loses t.a (soft: no error, the topic is left out)
    without = write_acl_file(tmp_path, "b", ACLS.replace(
        "  - {resource_type: topic, resource_name: t.a, principal: User:bob, operation: Describe}\n", ""))
    assert main([str(tmp_path / "trace"), "--acls", str(acls), "--what-if", str(without), "--out", str(tmp_path / "wi"),
                 "--engine", "arrow", "--super-users", "User:admin", "--no-report"]) == 0
    flips = [(f["request_name"], f["resource_name"], f["severity"]) for f in pq.read_table(tmp_path / "wi" / "flips").to_pylist()
             if f["principal"] == "User:bob"]
    assert flips == [("OffsetFetch", "t.a", "soft")]
    assert _run(without, tmp_path / "trace_without") == []
