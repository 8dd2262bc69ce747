"""The audit's report part on a real captured trace: confluent-kafka clients under ACL set A through a capturing
kafka-shim (conftest's ``captured``), audited with ``kafka-shim audit --what-if B``; the least-privilege set it
writes, audited as a what-if of A over the same trace, flips nothing; report.html shows the Parquet numbers."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from kafka_shim.authorizer.acl_file import load_acl_file
from kafka_shim.traces.audit.cli import main
from tests.traces.audit.test_report import CHROMIUM, Bars, chromium, series

pytestmark = pytest.mark.clients


def _audit(out: Path, trace: Path, acls: Path, what_if: Path) -> dict:
    assert main([str(trace), "--acls", str(acls), "--what-if", str(what_if), "--out", str(out), "--engine", "arrow",
                 "--super-users", "User:admin"]) == 0
    return json.loads((out / "summary.json").read_text())


def test_least_privilege_of_a_captured_workload_flips_nothing(captured, tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = _audit(out, captured.trace_a, captured.acls_a, captured.acls_b)
    assert summary["report"] == str(out / "report.html")
    usage = pq.read_table(out / "acl_usage").to_pylist()
    assert len(usage) == len(load_acl_file(captured.acls_a))
    # alice produced to orders under A: her WRITE decided requests
    write = next(u for u in usage if u["acl"] == "TOPIC:LITERAL:orders|User:alice|*|WRITE|ALLOW")
    assert write["decided_requests"] > 0 and write["usage_class"] == "used"

    least = out / "least_privilege"
    assert sorted(p.name for p in least.iterdir()) == sorted(
        ["acls.yaml", "kafka-acls.sh", "kafka_acl.tf", "strimzi-kafkausers.yaml"])
    assert list(yaml.safe_load_all((least / "strimzi-kafkausers.yaml").read_text()))
    lp = load_acl_file(least / "acls.yaml")
    assert lp and all(b.entry.principal != "User:*" for b in lp)

    # the proof: the same trace audited under A with the least-privilege set as the what-if changes no outcome
    proof = _audit(tmp_path / "proof", captured.trace_a, captured.acls_a, least / "acls.yaml")
    assert pq.read_table(tmp_path / "proof" / "flips").num_rows == 0, proof

    if CHROMIUM is None:
        pytest.skip("needs chromium for the page: run scripts/ensure-chromium")
    run = chromium("--dump-dom", (out / "report.html").as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    page = Bars()
    page.feed(run.stdout)
    assert page.body.get("data-rendered") == "true"
    decisions = pq.read_table(out / "decisions").to_pylist()
    asked = [d for d in decisions if d["asked_a"] is not False and d["allowed_a"] is not None]
    drawn = series(page.bars["chart-timeline"])
    assert sum(v for (_label, s), v in drawn.items() if s == "allowed") == sum(1 for d in asked if d["allowed_a"])
    assert sum(v for (_label, s), v in drawn.items() if s == "denied") == sum(1 for d in asked if not d["allowed_a"])
    flips = pq.read_table(out / "flips").to_pylist()
    assert flips  # B takes alice's WRITE on orders away
    assert {k: v for k, v in series(page.bars["chart-flips-api"]).items() if v} == dict(
        Counter((f["request_name"], f["severity"]) for f in flips))
