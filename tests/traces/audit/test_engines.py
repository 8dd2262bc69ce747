"""The Spark engine (local[2], one session for the test run) and the arrow engine give identical tables, on a
captured trace with a what-if set, a release comparison and damaged input."""

from __future__ import annotations

import pytest

from kafka_shim.traces.audit.acl_sets import load_acl_set
from kafka_shim.traces.audit.decide import AuthorizerSettings
from kafka_shim.traces.audit.run import run_audit
from tests.traces.audit.damaged import damaged_copy
from tests.traces.audit.engines import differences

pytestmark = [pytest.mark.clients, pytest.mark.spark]


def test_spark_and_arrow_give_identical_tables(captured, spark_session, tmp_path):
    trace = damaged_copy(captured.trace_a, tmp_path / "trace")
    a, b = load_acl_set(str(captured.acls_a)), load_acl_set(str(captured.acls_b))
    settings = AuthorizerSettings(("User:admin",))
    outs = {}
    for engine in ("arrow", "spark"):
        outs[engine] = tmp_path / engine
        summary = run_audit(trace, a, b, settings, outs[engine], engine=engine, compare_release="2.7", report=False,
                            spark=spark_session)
        assert summary["flips"] > 0 and summary["problems"] == {"unreadable_file": 1, "unknown_version": 1}
    assert differences(outs["arrow"], outs["spark"]) == []
    assert list((outs["spark"] / "csv" / "decisions").glob("*.csv"))
