"""An imported trace written in the trace format: ``OUT/day=YYYY-MM-DD/part-<UTC now>-<seq>.parquet`` per day.

Files are written under a hidden ``.name.inprogress`` and renamed when complete, as the capture writes them, so a
reader of OUT never sees half a file; names never collide with earlier imports into the same OUT (the stamp and
a sequence), so several imports can go into one trace.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_shim.traces.format import IN_PROGRESS_PREFIX, IN_PROGRESS_SUFFIX, SCHEMA, day_directory, file_metadata


def rows_table(rows: Iterable[dict[str, Any]]) -> pa.Table:
    """Row dicts (``time`` in µs since the epoch, UTC) as a table in the trace schema, sorted by time."""
    table = pa.Table.from_pylist(list(rows), schema=SCHEMA)
    return table.sort_by([("time", "ascending")]) if table.num_rows else table


def write_trace(table: pa.Table, out: str | Path, source: str) -> list[Path]:
    """Write ``table`` (trace schema) into the trace directory ``out``, one file per UTC day; the files written."""
    root = Path(out)
    written: list[Path] = []
    if not table.num_rows:
        return written
    times = pc.cast(table["time"], pa.int64()).to_numpy()
    days = [day_directory(root, int(t)) for t in times]
    stamp = datetime.datetime.now(tz=datetime.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    for sequence, folder in enumerate(sorted(set(days)), start=1):
        mask = pa.array([d == folder for d in days])
        folder.mkdir(parents=True, exist_ok=True)
        name = f"part-{stamp}-{os.getpid()}-{sequence:05d}.parquet"
        temp = folder / f"{IN_PROGRESS_PREFIX}{name}{IN_PROGRESS_SUFFIX}"
        pq.write_table(table.filter(mask).replace_schema_metadata(file_metadata(source)), temp)
        os.replace(temp, folder / name)
        written.append(folder / name)
    return written
