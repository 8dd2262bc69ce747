"""Bad input is reported in the audit's summary and problems table, never silently audited wrong: a truncated
Parquet file is skipped and named, a request of an API version Kafka 3.9 does not define is listed, not guessed."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from kafka_shim.traces.audit.cli import main
from tests.traces.audit.damaged import damaged_copy

pytestmark = pytest.mark.clients


def test_damaged_trace_reports_what_it_could_not_audit(captured, tmp_path, capsys):
    trace = damaged_copy(captured.trace_a, tmp_path / "trace")
    out = tmp_path / "out"
    assert main([str(trace), "--acls", str(captured.acls_a), "--out", str(out), "--engine", "arrow",
                 "--super-users", "User:admin", "--no-report"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["problems"] == {"unreadable_file": 1, "unknown_version": 1}
    problems = pq.read_table(out / "problems").to_pylist()
    assert any(p["problem"] == "unreadable_file" and "00098.parquet: not a readable Parquet file" in p["detail"] for p in problems)
    assert any(p["problem"] == "unknown_version" and p["detail"].startswith("Metadata v99 is not a version") for p in problems)
    assert summary["broker_differences"] == 0  # the readable rest is audited as before
    printed = capsys.readouterr().out
    assert "NOT audited: unknown_version: 1, unreadable_file: 1" in printed


def test_missing_trace_and_bad_acl_file_are_messages(tmp_path, capsys):
    assert main([str(tmp_path / "nope"), "--acls", "x", "--out", str(tmp_path / "o"), "--engine", "arrow"]) == 2
    assert "no such trace file or directory" in capsys.readouterr().err
    (tmp_path / "t").mkdir()
    bad = tmp_path / "a.txt"
    bad.write_text("Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`: \n"
                   " \t(principal=User:a, host=*, operation=READ, permissionType=MAYBE) \n", encoding="utf-8")
    assert main([str(tmp_path / "t"), "--acls", str(bad), "--out", str(tmp_path / "o"), "--engine", "arrow"]) == 2
    assert "a.txt:2: operation READ / permission MAYBE" in capsys.readouterr().err
