"""What a Spark executor writes for one unit: each part whole, and a retried task's part replaces the first."""

from __future__ import annotations

import gc
import pickle

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from kafka_shim import authorizer as az
from kafka_shim.traces.audit.engine_arrow import UnitResult
from kafka_shim.traces.audit.engine_spark import _unpickled, write_parts
from kafka_shim.traces.audit.pipeline import Unit
from kafka_shim.traces.audit.tables import BROKER_DIFF, DECISIONS, FLIPS, PROBLEMS


def _decisions(rows: int) -> pa.Table:
    columns = {f.name: pa.nulls(rows, f.type) for f in DECISIONS}
    columns["request_index"] = pa.array(range(rows), pa.int64())
    columns["time"] = pa.array([1_795_000_000_000_000 + i for i in range(rows)], DECISIONS.field("time").type)
    return pa.table(columns, schema=DECISIONS)


def _result(rows: int) -> UnitResult:
    return UnitResult(_decisions(rows), FLIPS.empty_table(), pa.table({}), BROKER_DIFF.empty_table(),
                      PROBLEMS.empty_table(), 0, None)


def test_a_retried_unit_leaves_one_whole_part_per_table(tmp_path):
    unit = Unit("trace.parquet", 3, 12, 0)
    write_parts(_result(5), unit, tmp_path)
    write_parts(_result(4), unit, tmp_path)  # the retry's answer is the one kept
    assert [p.name for p in (tmp_path / "decisions").iterdir()] == ["part-00003-000012.parquet"]
    assert [p.name for p in (tmp_path / "csv" / "decisions").iterdir()] == ["part-00003-000012.csv"]
    assert pq.read_table(tmp_path / "decisions").num_rows == 4
    csv = pacsv.read_csv(tmp_path / "csv" / "decisions" / "part-00003-000012.csv")
    assert csv.num_rows == 4 and csv.column("time")[0].as_py().isoformat() == "2026-11-18T11:06:40+00:00"
    assert not (tmp_path / "flips").exists()  # nothing flipped: no empty part


def test_the_broadcast_acls_come_back_whole_and_the_gc_as_it_was():
    acls = [az.AclBinding(az.ResourcePattern(az.ResourceType.TOPIC, f"t{i}", az.PatternType.LITERAL),
                          az.AccessControlEntry(f"User:u{i % 7}", "*", az.AclOperation.READ, az.AclPermissionType.ALLOW))
            for i in range(500)]
    payload = pickle.dumps((acls, None))
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            assert _unpickled(payload) == (acls, None)
            assert gc.isenabled() is enabled
        gc.enable()
        with pytest.raises(pickle.UnpicklingError):
            _unpickled(payload[:-10])
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
