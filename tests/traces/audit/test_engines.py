"""The Spark engine (local[2], one session for the test run) and the arrow engine give identical tables, on a
captured trace with a what-if set, a release comparison and damaged input; the CSV files too."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafka_shim.traces.audit.acl_sets import load_acl_set
from kafka_shim.traces.audit.decide import AuthorizerSettings
from kafka_shim.traces.audit.run import run_audit
from kafka_shim.traces.format import trace_files
from tests.traces.audit.damaged import damaged_copy
from tests.traces.audit.engines import differences

pytestmark = [pytest.mark.clients, pytest.mark.spark]


def _csv_rows(out: Path, name: str) -> tuple[str, list[str]]:
    """The header and the sorted data lines of every CSV part of a table."""
    header, lines = None, []
    for part in sorted((out / "csv" / name).glob("*.csv")):
        head, *rows = part.read_text(encoding="utf-8").splitlines()
        assert header in (None, head)
        header = head
        lines += rows
    return header, sorted(lines)


def _recut(trace: Path, target: Path, rows_per_group: int) -> Path:
    for path in trace_files(trace):
        out = target / path.relative_to(trace)
        out.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pq.read_table(path), out, row_group_size=rows_per_group)
    return target


def test_spark_and_arrow_give_identical_tables(captured, spark_session, tmp_path):
    trace = damaged_copy(_recut(captured.trace_a, tmp_path / "small-groups", 7), tmp_path / "trace")
    a, b = load_acl_set(str(captured.acls_a)), load_acl_set(str(captured.acls_b))
    settings = AuthorizerSettings(("User:admin",))
    outs = {}
    for engine in ("arrow", "spark"):
        outs[engine] = tmp_path / engine
        summary = run_audit(trace, a, b, settings, outs[engine], engine=engine, compare_release="2.7", report=False,
                            spark=spark_session)
        assert summary["flips"] > 0 and summary["problems"] == {"unreadable_file": 1, "unknown_version": 1}
    assert differences(outs["arrow"], outs["spark"]) == []
    # the executors wrote the decisions, one part per row group with rows, and no half-written file is left
    parts = list((outs["spark"] / "decisions").iterdir())
    groups = sum(pq.ParquetFile(path).num_row_groups for path in trace_files(tmp_path / "small-groups"))
    assert 1 < len(parts) <= groups
    assert all(p.name.startswith("part-") and p.suffix == ".parquet" for p in parts)
    for name in ("decisions", "flips", "actions"):
        header, rows = _csv_rows(outs["spark"], name)
        assert rows and (header, rows) == _csv_rows(outs["arrow"], name), name
