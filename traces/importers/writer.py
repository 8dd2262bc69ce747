"""Imported rows written as trace files: ``TRACE/day=YYYY-MM-DD/part-<UTC start>-<seq>.parquet``.

The same layout, names and metadata as the capture writer (traces/capture.py, traces/FORMAT.md): a file is written
under a hidden ``.part-....parquet.inprogress`` name and renamed when finished, each file carries
``kafka_shim.trace.schema_version`` and ``kafka_shim.trace.source``. Rows are buffered, sorted by time and split
by UTC day; a file per day and buffer.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_shim.traces.format import IN_PROGRESS_PREFIX, IN_PROGRESS_SUFFIX, SCHEMA, day_directory, file_metadata

# Rows held before they are sorted and written; bounds the import's memory on large logs.
BUFFER_ROWS = 50_000


class TraceWriter:
    def __init__(self, root: Path, source: str, on_unwritable: Callable[[dict[str, Any], str], None] | None = None) -> None:
        self.root = root
        self.source = source
        # Called with a row a bug upstream made unfit for the schema (it is left out; the others are written).
        self.on_unwritable = on_unwritable
        self.files: list[Path] = []
        self.rows_written = 0
        self._buffer: list[dict[str, Any]] = []
        self._sequence = 0

    def add(self, row: dict[str, Any]) -> None:
        self._buffer.append(row)
        if len(self._buffer) >= BUFFER_ROWS:
            self.flush()

    def flush(self) -> None:
        rows, self._buffer = sorted(self._buffer, key=lambda r: r["time"]), []
        by_day: dict[Path, list[dict[str, Any]]] = {}
        for row in rows:
            by_day.setdefault(day_directory(self.root, row["time"]), []).append(row)
        for folder, day_rows in by_day.items():
            self._write(folder, day_rows)

    def close(self) -> None:
        self.flush()

    def _write(self, folder: Path, rows: list[dict[str, Any]]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._sequence += 1
        stamp = datetime.datetime.now(tz=datetime.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        name = f"part-{stamp}-{self._sequence:05d}.parquet"
        temp = folder / f"{IN_PROGRESS_PREFIX}{name}{IN_PROGRESS_SUFFIX}"
        table = self._table(rows)
        if table.num_rows == 0:
            return
        pq.write_table(table.replace_schema_metadata(file_metadata(self.source)), temp)
        os.replace(temp, folder / name)
        self.files.append(folder / name)
        self.rows_written += table.num_rows

    def _table(self, rows: list[dict[str, Any]]) -> pa.Table:
        try:
            return pa.Table.from_pylist(rows, schema=SCHEMA)
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            pass
        fit = []
        for row in rows:  # the slow path: find the rows that do not fit
            try:
                pa.Table.from_pylist([row], schema=SCHEMA)
                fit.append(row)
            except (pa.ArrowException, OverflowError, TypeError, ValueError) as exc:
                if self.on_unwritable is not None:
                    self.on_unwritable(row, str(exc))
        return pa.Table.from_pylist(fit, schema=SCHEMA)
