"""The arrow engine audits a trace one row group at a time: the tables and the summary must not depend on how the
trace is cut into row groups (actions are merged across them, counters added up, decisions written as they come)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from kafka_shim.traces.audit.acl_sets import load_acl_set
from kafka_shim.traces.audit.decide import AuthorizerSettings
from kafka_shim.traces.audit.run import run_audit
from kafka_shim.traces.format import trace_files
from tests.traces.audit.engines import canonical, differences

pytestmark = pytest.mark.clients


def _recut(trace, target, rows_per_group: int):
    """The same trace with every file rewritten in row groups of ``rows_per_group`` requests."""
    for path in trace_files(trace):
        out = target / path.relative_to(trace)
        out.parent.mkdir(parents=True, exist_ok=True)
        table = pq.read_table(path)
        pq.write_table(table, out, row_group_size=rows_per_group)
    return target


def test_row_groups_of_any_size_give_the_same_audit(captured, tmp_path):
    small = _recut(captured.trace_a, tmp_path / "small-groups", 3)
    assert sum(pq.ParquetFile(p).metadata.num_row_groups for p in trace_files(small)) > 10
    a, b = load_acl_set(str(captured.acls_a)), load_acl_set(str(captured.acls_b))
    settings = AuthorizerSettings(("User:admin",))
    outs, summaries = {}, {}
    for label, trace in (("whole", captured.trace_a), ("small", small)):
        outs[label] = tmp_path / label
        summaries[label] = run_audit(trace, a, b, settings, outs[label], engine="arrow", compare_release="0.11", report=False)
        assert summaries[label]["flips"] > 0 and summaries[label]["actions"] > 0
    assert differences(outs["whole"], outs["small"]) == []
    # the merged actions count each question of each request once, whatever the cut
    assert sum(canonical(outs["small"], "actions").column("requests").to_pylist()) == summaries["small"]["decisions"]
