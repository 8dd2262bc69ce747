"""The audit against what kafka-shim itself decided: traces captured with real clients (confluent-kafka over
SASL_PLAINTEXT) under ACL set A and under set B (tests/traces/audit/workload.py).

* audited under A, a trace reproduces every decision the broker recorded (empty broker_diff, nothing unresolved);
* audited with ``--what-if B``, it predicts exactly the answers the broker gives when the same workload runs under B;
* ``--compare-release 2.7`` flags alice's idempotent InitProducerId (KIP-679 arrived in 2.8);
* the least-privilege set of A with a legacy IDEMPOTENT_WRITE grant leaves that grant out, and the same workload run
  under the set sees exactly what it saw under A.
"""

from __future__ import annotations

import json

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kafka_shim.protocol.framing import parse_request
from kafka_shim.traces.audit.cli import main
from kafka_shim.traces.audit.pipeline import plan_units
from kafka_shim.traces.audit.questions import broker_rows
from kafka_shim.traces.format import read_trace
from tests.traces.audit.workload import ACLS_A, run_workload, write_acl_file

pytestmark = pytest.mark.clients


def _audit(tmp_path, trace, acls, *extra: str) -> dict:
    out = tmp_path / "out"
    assert main([str(trace), "--acls", str(acls), "--out", str(out), "--engine", "arrow", "--super-users", "User:admin",
                 "--no-report", *extra]) == 0
    return json.loads((out / "summary.json").read_text())


def _broker_answers(trace) -> dict[tuple, bool]:
    """What the broker decided, per distinct question (principal, request, kind, operation, resource)."""
    answers: dict[tuple, bool] = {}
    units, problems = plan_units(trace)
    assert problems == []
    from kafka_shim.traces.audit.pipeline import read_unit

    for unit in units:
        for r in broker_rows(read_unit(unit, ("kind", "time", "principal", "client_host", "api_key", "correlation_id",
                                              "decisions"))).to_pylist():
            key = (r["principal"], r["request_name"], r["kind"], r["operation"], r["resource_type"], r["resource_name"])
            assert answers.setdefault(key, r["allowed"]) == r["allowed"], key
    return answers


def _auto_created_topics(trace) -> set[str]:
    """The topics of Metadata requests that allow auto-creation."""
    found = set()
    for row in read_trace(trace).to_pylist():
        if row["api_key"] == 3 and row["request"] is not None:
            body = parse_request(row["request"]).decode_body()
            if body.allow_auto_topic_creation:
                found.update(t.name for t in body.topics or ())
    return found


def test_audit_under_a_reproduces_every_broker_decision(captured, tmp_path):
    summary = _audit(tmp_path, captured.trace_a, captured.acls_a)
    assert summary["broker_decisions"] > 20
    assert summary["broker_differences"] == 0  # both ways: a question the audit asks and the broker did not counts too
    assert summary["unresolved"] == 0
    assert summary["problems"] == {}
    decisions = pq.read_table(tmp_path / "out" / "decisions")
    # The producer's Metadata allows auto-creation of orders, which exists: Kafka asks no CREATE for it.
    assert "orders" in _auto_created_topics(captured.trace_a)
    assert not [r for r in decisions.to_pylist() if r["request_name"] == "Metadata" and r["check"] == "create"
                and r["resource_name"] in ("orders", "kafka-cluster")]
    assert set(decisions.column("request_name").to_pylist()) >= {"Produce", "InitProducerId", "Metadata", "DescribeConfigs",
                                                                 "CreateTopics"}
    # alice's CreateTopics of team42.new is denied under A (she may only describe team42.*), as the client saw.
    assert captured.seen_a["alice_create"] == ["KafkaException:TOPIC_AUTHORIZATION_FAILED"]
    create = decisions.filter(pc.and_(pc.equal(decisions.column("request_name"), "CreateTopics"),
                                      pc.equal(decisions.column("principal"), "User:alice"))).to_pylist()
    per_topic = [r for r in create if r["kind"] == "authorize" and r["check"] == "create"]
    assert [(r["resource_name"], r["allowed_a"], r["error"]) for r in per_topic] == [("team42.new", False, "TOPIC_AUTHORIZATION_FAILED")]


def test_what_if_b_predicts_what_the_broker_decides_under_b(captured, tmp_path):
    summary = _audit(tmp_path, captured.trace_a, captured.acls_a, "--what-if", str(captured.acls_b))
    decisions = pq.read_table(tmp_path / "out" / "decisions").to_pylist()
    predicted: dict[tuple, bool] = {}
    for r in decisions:
        if not r["asked_b"]:
            continue
        kind = "authorize" if r["kind"] == "shortcut" else r["kind"]
        key = (r["principal"], r["request_name"], kind, r["operation"], r["resource_type"], r["resource_name"])
        assert predicted.setdefault(key, r["allowed_b"]) == r["allowed_b"], key
    actual = _broker_answers(captured.trace_b)
    # The same questions, with the same answers, as the broker asked and answered when run under B: none more (a
    # producer's Metadata allows auto-creation, and Kafka asks CREATE only for describable topics that are missing).
    assert predicted == actual

    flips = pq.read_table(tmp_path / "out" / "flips").to_pylist()
    hard = {(f["request_name"], f["operation"], f["resource_name"], f["direction"]) for f in flips if f["severity"] == "hard"}
    assert hard == {("Produce", "WRITE", "orders", "allow_to_deny"), ("DescribeConfigs", "DESCRIBE_CONFIGS", "payments", "allow_to_deny"),
                    ("CreateTopics", "CREATE", "team42.new", "deny_to_allow")}
    # ... which is what the clients saw change between the two runs.
    assert captured.seen_a["delivered"] == [None] * 3 and captured.seen_b["delivered"] == [29] * 3
    assert captured.seen_a["bob_configs"] == ["ok"] and captured.seen_b["bob_configs"] != ["ok"]
    assert captured.seen_b["alice_create"] == ["ok"]
    produce = next(f for f in flips if f["request_name"] == "Produce")
    assert produce["effect"] == "Produce: TOPIC_AUTHORIZATION_FAILED (29) — TOPIC orders fails"
    soft = {(f["operation"], f["resource_name"]) for f in flips if f["severity"] == "soft"}
    assert ("WRITE", "orders") in soft  # the authorized-operations bit alice's describe_topics showed
    assert summary["flips"] == len(flips)


def test_audit_of_b_trace_under_b_has_no_broker_differences(captured, tmp_path):
    assert _audit(tmp_path, captured.trace_b, captured.acls_b)["broker_differences"] == 0


def test_audit_lists_differences_when_the_acl_set_is_not_the_brokers(captured, tmp_path):
    summary = _audit(tmp_path, captured.trace_a, captured.acls_b)
    diff = pq.read_table(tmp_path / "out" / "broker_diff").to_pylist()
    assert summary["broker_differences"] == len(diff) > 0
    assert {(d["request_name"], d["operation"], d["resource_name"], d["broker_allowed"], d["audit_allowed"])
            for d in diff if d["difference"] == "decision" and d["kind"] == "authorize"} >= {
        ("Produce", "WRITE", "orders", True, False), ("DescribeConfigs", "DESCRIBE_CONFIGS", "payments", True, False)}


def test_compare_release_flags_kip_679(captured, tmp_path):
    summary = _audit(tmp_path, captured.trace_a, captured.acls_a, "--compare-release", "2.7")
    rows = pq.read_table(tmp_path / "out" / "release_diff").to_pylist()
    assert summary["release_differences"] == len(rows) == 1
    assert rows[0]["request_name"] == "InitProducerId" and rows[0]["allowed_39"] and not rows[0]["allowed_old"]
    assert _audit(tmp_path, captured.trace_a, captured.acls_a, "--compare-release", "2.8")["release_differences"] == 0


def test_least_privilege_set_gives_the_clients_what_a_gave_them(captured, tmp_path):
    # what the docs before Kafka 2.8 asked of an idempotent producer: IDEMPOTENT_WRITE on the cluster
    legacy = write_acl_file(tmp_path, "a_legacy",
                            ACLS_A + "  - {resource_type: cluster, principal: User:alice, operation: IdempotentWrite}\n")
    out = tmp_path / "out"
    assert main([str(captured.trace_a), "--acls", str(legacy), "--out", str(out), "--engine", "arrow",
                 "--super-users", "User:admin"]) == 0
    usage = pq.read_table(out / "acl_usage").to_pylist()
    assert [u["usage_class"] for u in usage if u["operation"] == "IDEMPOTENT_WRITE"] == ["unnecessary_idempotent_write"]
    least = out / "least_privilege" / "acls.yaml"
    assert "IdempotentWrite" not in least.read_text()
    # alice's producer starts on her WRITE on orders (KIP-679); nothing else she or bob did changes
    assert run_workload(least, tmp_path / "trace_least") == captured.seen_a


def test_an_audit_again_into_the_same_dir_leaves_nothing_of_the_last_one(captured, tmp_path):
    out = tmp_path / "out"
    assert main([str(captured.trace_a), "--acls", str(captured.acls_a), "--out", str(out), "--engine", "arrow",
                 "--super-users", "User:admin"]) == 0
    assert (out / "report.html").is_file() and (out / "least_privilege").is_dir() and (out / "acl_usage").is_dir()
    _audit(tmp_path, captured.trace_a, captured.acls_a)  # --no-report: a report from the last run would describe other results
    assert not [p.name for p in out.iterdir() if p.name in ("report.html", "least_privilege", "acl_usage")]


def test_differences_from_a_super_user_left_out_say_how_to_audit_again(captured, tmp_path, capsys):
    out = tmp_path / "out"
    assert main([str(captured.trace_a), "--acls", str(captured.acls_a), "--out", str(out), "--engine", "arrow", "--no-report"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["broker_differences"] > 0 and summary["broker_super_users"] == ["User:admin"]
    assert "audit again with --super-users 'User:admin'" in capsys.readouterr().out
