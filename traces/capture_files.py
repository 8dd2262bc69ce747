"""The capture's files: trace rows into ``DIR/day=YYYY-MM-DD/part-<UTC start>-<seq>.parquet``, rolled and capped.

Plain state, no threads: the capture writer process (traces.capture_writer) drives it.

- One row group per batch written. A file is written under a hidden name (``.part-....parquet.inprogress``, which
  Spark and pyarrow.dataset skip) and renamed when finished, so a reader never meets a half-written file.
- Rolled when it reaches ``kafka.shim.capture.roll.bytes``, when it has been open ``kafka.shim.capture.roll.ms``
  (``roll_if_expired``, called on every batch and on the writer's idle ticks), and at midnight UTC.
- ``kafka.shim.capture.retention.bytes`` caps the directory: after each roll the oldest finished files are removed
  until the total fits; capture itself never stops for it.
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_shim.traces.capture_columns import broker_table
from kafka_shim.traces.capture_pipe import RecordBlock
from kafka_shim.traces.capture_rows import RECORD_FIELDS, tapped_rows
from kafka_shim.traces.capture_settings import RETENTION_BYTES_KEY, CaptureSettings
from kafka_shim.traces.format import IN_PROGRESS_PREFIX, IN_PROGRESS_SUFFIX, SCHEMA, day_directory, file_metadata

_DAY_US = 86_400_000_000
_first = itemgetter(0)

# Min/max statistics only for the columns a query filters on: for the raw frames they would copy two frames per
# row group into the footer.
_STATISTICS = [f.name for f in SCHEMA if f.type not in (pa.binary(), pa.string()) or f.name in (
    "kind", "principal", "listener", "client_id", "client_host", "source", "outcome")]
# Dictionary encoding only where values repeat: on the raw frames, times and correlation ids (distinct in every row)
# it only hashed each value before giving up, a fifth of the write's time.
_DICTIONARY = [f.name for f in SCHEMA if f.name not in (
    "time", "correlation_id", "request", "request_json", "response", "response_json", "response_time_us")]


def parquet_writer(sink: Any, source: str) -> pq.ParquetWriter:
    """A writer of trace rows as the capture writes its files (statistics and dictionaries where they pay)."""
    return pq.ParquetWriter(sink, SCHEMA.with_metadata(file_metadata(source)), write_statistics=_STATISTICS,
                            use_dictionary=_DICTIONARY)


# (level, event, fields): how the files report what they did; the writer process forwards it to the broker's log.
Report = Callable[[str, str, dict[str, Any]], None]


class TraceFiles:
    """The open file of a capture directory and the finished ones; ``write`` one batch of rows at a time."""

    def __init__(self, settings: CaptureSettings, source: str, report: Report) -> None:
        self.settings = settings
        self.source = source
        self.directory = settings.directory
        self.report = report
        self.rows_written = 0
        # In finished files: request rows, and the requests their ``dropped`` rows stand for (the capture sink counts
        # what a writer that dies took with it from these).
        self.finished_requests = 0
        self.finished_dropped = 0
        self._file: _OpenFile | None = None
        self._sequence = 0

    def write(self, fields: tuple[str, ...], rows: list[tuple[Any, ...]], dropped: dict[str, Any] | None = None) -> list[Path]:
        """Rows (tuples in ``fields`` order, ``time_us`` first) as row groups, split at midnight UTC; then the
        ``dropped`` row if any. The files finished on the way are returned."""
        finished = self.roll_if_expired()
        for part in _by_day(rows):
            finished += self._write_rows(_day_name(part[0][0]), tapped_rows(part, self.source, fields), len(part), 0)
        return finished + self._write_dropped(dropped)

    def write_block(self, fields: tuple[str, ...], block: RecordBlock, dropped: dict[str, Any] | None = None) -> list[Path]:
        """``write`` for records as a ROWS message brings them: the broker's are read column by column
        (traces.capture_columns); others, and batches that reader leaves, row by row."""
        table = broker_table(block, self.source) if tuple(fields) == RECORD_FIELDS else None
        if table is None:
            return self.write(fields, block.rows(), dropped)
        finished = self.roll_if_expired()
        finished += self._write_rows(_day_name(pc.min(table.column("time")).value), table, block.count, 0)
        return finished + self._write_dropped(dropped)

    def _write_dropped(self, dropped: dict[str, Any] | None) -> list[Path]:
        finished: list[Path] = []
        if dropped is not None:
            finished += self._write_rows(_day_name(dropped["time"]), pa.Table.from_pylist([dropped], schema=SCHEMA),
                                         0, dropped["dropped_requests"])
        return finished

    def roll_if_expired(self) -> list[Path]:
        if self._file is not None and self._file.expired(self.settings.roll_ms):
            return self.finish()
        return []

    def finish(self) -> list[Path]:
        """Close the open file under its final name (and apply the size cap); the file, if there was one."""
        f, self._file = self._file, None
        if f is None:
            return []
        f.writer.close()
        f.sink.close()
        os.replace(f.temp, f.final)
        self.finished_requests += f.requests
        self.finished_dropped += f.dropped
        self.report("debug", "capture_file_written", {"path": str(f.final), "bytes": f.final.stat().st_size})
        self._apply_retention()
        return [f.final]

    def abandon(self) -> None:
        """After a failed write the open file may be unusable: close it as it is (its rows so far may be lost; they
        count as finished only if it closes)."""
        f, self._file = self._file, None
        if f is None:
            return
        try:
            f.writer.close()
            f.sink.close()
            os.replace(f.temp, f.final)
        except Exception:  # already broken; nothing more to save
            try:
                f.sink.close()
            except Exception:
                pass
            return
        self.finished_requests += f.requests
        self.finished_dropped += f.dropped

    def _write_rows(self, day: str, table: pa.Table, requests: int, dropped: int) -> list[Path]:
        """One row group to the current file (opened or rolled as needed)."""
        finished = []
        if self._file is not None and self._file.day != day:
            finished += self.finish()
        if self._file is None:
            self._file = self._open(day)
        self._file.writer.write_table(table)
        self._file.requests += requests
        self._file.dropped += dropped
        self.rows_written += table.num_rows
        if self._file.sink.tell() >= self.settings.roll_bytes:
            finished += self.finish()
        return finished

    def _open(self, day: str) -> _OpenFile:
        folder = self.directory / day
        folder.mkdir(parents=True, exist_ok=True)
        self._sequence += 1
        stamp = datetime.datetime.now(tz=datetime.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        name = f"part-{stamp}-{self._sequence:05d}.parquet"
        temp = folder / f"{IN_PROGRESS_PREFIX}{name}{IN_PROGRESS_SUFFIX}"
        sink = pa.OSFile(str(temp), "wb")
        writer = parquet_writer(sink, self.source)
        return _OpenFile(day, folder / name, temp, sink, writer, time.monotonic())

    def _apply_retention(self) -> None:
        cap = self.settings.retention_bytes
        if cap < 0:
            return
        files = sorted(p for p in self.directory.glob("day=*/part-*.parquet"))
        sizes = {p: p.stat().st_size for p in files}
        total = sum(sizes.values())
        for oldest in files:
            if total <= cap:
                break
            total -= sizes[oldest]
            oldest.unlink(missing_ok=True)
            self.report("info", "capture_file_removed", {
                "path": str(oldest), "bytes": sizes[oldest], "retention_bytes": cap,
                "reason": f"the capture directory is above {RETENTION_BYTES_KEY}: the oldest files go first"})
            try:
                oldest.parent.rmdir()  # only when that day has no file left
            except OSError:
                pass


@dataclass(slots=True)
class _OpenFile:
    day: str
    final: Path
    temp: Path
    sink: Any
    writer: Any
    opened: float
    requests: int = 0
    dropped: int = 0

    def expired(self, roll_ms: int) -> bool:
        return (time.monotonic() - self.opened) * 1000 >= roll_ms


def _by_day(rows: list[tuple[Any, ...]]) -> list[list[tuple[Any, ...]]]:
    """Rows cut where the UTC day changes (a batch almost always falls in one day: found without a Python loop)."""
    if not rows:
        return []
    times = list(map(_first, rows))
    if min(times) // _DAY_US == max(times) // _DAY_US:
        return [rows]
    parts, start = [], 0
    for end in range(1, len(rows) + 1):
        if end == len(rows) or times[end] // _DAY_US != times[start] // _DAY_US:
            parts.append(rows[start:end])
            start = end
    return parts


def _day_name(time_us: int) -> str:
    return day_directory(Path(), time_us).name
