"""KIP-430 bits are computed only for the entries Kafka answers: a topic refused in Metadata (29) keeps the field's
default, and Kafka asks its authorizer nothing for it (DescribeGroups and ConsumerGroupDescribe likewise for a refused
group: their declarations say so too). Captured from kafka-shim with a real client (confluent-kafka's describe_topics
with include_authorized_operations), the audit asks exactly what the broker recorded, and a what-if that takes the
DESCRIBE away flips the topic (hard) without predicting bits the client never gets."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafka_shim.authorizer.acl_file import load_acl_file
from kafka_shim.protocol.framing import encode_request, parse_request
from kafka_shim.protocol.messages import ConsumerGroupDescribeRequest, DescribeGroupsRequest
from kafka_shim.traces.audit import questions
from kafka_shim.traces.audit.cli import main
from kafka_shim.traces.audit.decide import ASKED, GATED, flow
from tests.traces.audit.workload import capturing_broker, sasl, write_acl_file

pytestmark = pytest.mark.clients

TIMEOUT = 30
# bob may describe payments; on orders he may only alter its configs (which does not imply DESCRIBE)
ACLS = """
acls:
  - {resource_type: topic, resource_name: payments, principal: User:bob, operation: Describe}
  - {resource_type: topic, resource_name: orders, principal: User:bob, operation: AlterConfigs}
"""


def _run(acl_file: Path, capture: Path) -> dict[str, object]:
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient

    seen: dict[str, object] = {}
    with capturing_broker(capture, ("payments", "orders"), load_acl_file(acl_file)) as address:
        bob = AdminClient({"bootstrap.servers": address, **sasl("bob")})
        described = bob.describe_topics(TopicCollection(["payments", "orders"]), include_authorized_operations=True)
        for name, future in described.items():
            try:
                seen[name] = sorted(op.name for op in future.result(timeout=TIMEOUT).authorized_operations or [])
            except Exception as exc:  # the refused entry: the broker's error
                seen[name] = exc.args[0].name()
    return seen


def test_bits_are_asked_only_for_the_entries_kafka_answers(tmp_path):
    acls = write_acl_file(tmp_path, "a", ACLS)
    seen = _run(acls, tmp_path / "trace")
    assert seen == {"payments": ["DESCRIBE"], "orders": "TOPIC_AUTHORIZATION_FAILED"}
    out = tmp_path / "out"
    assert main([str(tmp_path / "trace"), "--acls", str(acls), "--what-if", str(acls), "--out", str(out), "--engine", "arrow",
                 "--super-users", "User:admin", "--no-report"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["broker_differences"], summary["unresolved"], summary["flips"]) == (0, 0, 0)
    decisions = pq.read_table(out / "decisions").to_pylist()
    bits = {(r["resource_name"], r["asked_a"]) for r in decisions if r["kind"] == "authorized_operations"}
    assert {name for name, asked in bits if asked} == {"payments"}
    assert {name for name, asked in bits if not asked} == {"orders"}

    # taking bob's DESCRIBE on payments away refuses it (hard); its bits are then not computed at all
    without = write_acl_file(tmp_path, "b", ACLS.replace(
        "  - {resource_type: topic, resource_name: payments, principal: User:bob, operation: Describe}\n", ""))
    assert main([str(tmp_path / "trace"), "--acls", str(acls), "--what-if", str(without), "--out", str(tmp_path / "wi"),
                 "--engine", "arrow", "--super-users", "User:admin", "--no-report"]) == 0
    flips = {(f["request_name"], f["operation"], f["resource_name"], f["severity"])
             for f in pq.read_table(tmp_path / "wi" / "flips").to_pylist()}
    assert ("Metadata", "DESCRIBE", "payments", "hard") in flips
    assert _run(without, tmp_path / "trace_without")["payments"] == "TOPIC_AUTHORIZATION_FAILED"


@pytest.mark.parametrize(("api_key", "version", "body"), [
    (15, 5, DescribeGroupsRequest(groups=["g-1", "g-2"], include_authorized_operations=True)),
    (69, 0, ConsumerGroupDescribeRequest(group_ids=["g-1", "g-2"], include_authorized_operations=True)),
], ids=["DescribeGroups", "ConsumerGroupDescribe"])
def test_a_refused_group_gets_no_bits(api_key, version, body):
    asked = questions._questions_of(parse_request(encode_request(api_key, version, 1, body, client_id="c")[4:]))
    check, mode, kind, _op, _rtype, name, *_rest, gate = (list(column) for column in zip(*asked, strict=True))
    allowed = [not (k == "authorize" and n == "g-2") for k, n in zip(kind, name, strict=True)]  # g-2 refused
    states = flow(check, kind, mode, gate, allowed, name)
    bits = {(n, s) for k, n, s in zip(kind, name, states, strict=True) if k == "authorized_operations"}
    assert bits == {("g-1", ASKED), ("g-2", GATED)}
