"""The import's trace writer: day partitions, time order, the source in the metadata, and a row that does not fit
the schema left out (reported) while the others are written."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from kafka_shim.traces.format import read_trace
from kafka_shim.traces.importers.writer import TraceWriter

DAY_US = 86_400_000_000
MIDNIGHT = 1_795_392_000_000_000  # 2026-11-23T00:00:00Z


def test_rows_go_to_their_day_in_time_order_and_unfit_rows_are_reported(tmp_path: Path) -> None:
    unfit: list[str] = []
    writer = TraceWriter(tmp_path, "request-log", lambda row, why: unfit.append(why))
    for t in (MIDNIGHT + DAY_US + 5, MIDNIGHT + 7, MIDNIGHT + 3):
        writer.add({"kind": "request", "time": t, "source": "request-log", "correlation_id": t % 1000})
    writer.add({"kind": "request", "time": MIDNIGHT + 9, "source": "request-log", "correlation_id": 2**40})
    writer.close()
    assert writer.rows_written == 3 and len(unfit) == 1
    assert sorted(p.parent.name for p in writer.files) == ["day=2026-11-23", "day=2026-11-24"]
    assert all(pq.read_schema(p).metadata[b"kafka_shim.trace.source"] == b"request-log" for p in writer.files)
    table = read_trace(tmp_path)
    first_day = [r["correlation_id"] for r in table.to_pylist() if r["day"] == "2026-11-23"]
    assert first_day == [3, 7]
