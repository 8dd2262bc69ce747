"""The audit against Kafka 3.9's own decisions: the real-Kafka corpus (tests/traces/real_kafka_corpus.py, real
clients under an ACL set, Kafka's authorizer log at DEBUG) decided again by kafka-shim's authorizer and by
``kafka-shim audit``, which must give every answer Kafka logged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_shim.authorizer import AclOperation, ResourceType
from kafka_shim.authorizer.acl_file import load_acl_file
from kafka_shim.authorizer.audit import rule_text
from kafka_shim.traces.audit import cli as audit_cli
from kafka_shim.traces.audit.usage import quiet_authorizer
from kafka_shim.traces.format import read_trace
from kafka_shim.traces.importers import cli as import_cli

pytestmark = pytest.mark.oracle


def super_users(corpus) -> list[str]:
    """Kafka's super.users of the corpus broker (its server.properties: admin, and the broker's own principal)."""
    for line in (corpus.dir / "kafka" / "server.properties").read_text().splitlines():
        if line.startswith("super.users="):
            return [p for p in line.partition("=")[2].split(";") if p]
    raise AssertionError("the corpus broker has no super.users")


def imported(corpus, tmp_path: Path, source: str, *args: str) -> Path:
    out = tmp_path / source
    assert import_cli.main([source, *args, "--out", str(out), "--quiet"]) == 0
    return out


def test_every_decision_kafka_logged_is_the_authorizers(real_kafka_corpus, tmp_path):
    corpus = real_kafka_corpus
    trace = read_trace(imported(corpus, tmp_path, "authorizer-log", str(corpus.authorizer_log)))
    authorizer = quiet_authorizer(load_acl_file(corpus.acls), super_users(corpus))
    rows = [r for r in trace.to_pylist() if r["kind"] == "authorization"]
    assert {d["allowed"] for r in rows for d in r["decisions"]} == {True, False}  # grants (DEBUG) and denials
    differing = []
    for r in rows:
        (d,) = r["decisions"]
        op, rtype = AclOperation[d["operation"]], ResourceType[d["resource_type"]]
        allowed = authorizer.authorize(r["principal"], r["client_host"], op, rtype, d["resource_name"])
        rule = rule_text(authorizer.decision_rule(r["principal"], r["client_host"], op, rtype, d["resource_name"], allowed))
        if (allowed, rule) != (d["allowed"], d["rule"]):
            differing.append((r["principal"], d["operation"], d["resource_name"], d["allowed"], d["rule"], allowed, rule))
    assert not differing


def test_the_audit_of_kafkas_request_log_reproduces_its_logged_decisions(real_kafka_corpus, tmp_path, capsys):
    corpus = real_kafka_corpus
    trace = imported(corpus, tmp_path, "request-log", str(corpus.request_log), "--authorizer-log", str(corpus.authorizer_log))
    out = tmp_path / "audit"
    code = audit_cli.main([str(trace), "--acls", str(corpus.acls), "--engine", "arrow", "--no-report",
                           "--super-users", *super_users(corpus), "--out", str(out)])
    assert code == 0, capsys.readouterr()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["broker_decisions"] > 0 and summary["denied_a"] > 0
    assert summary["broker_differences"] == 0, summary
