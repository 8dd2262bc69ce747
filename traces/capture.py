"""CaptureSink: kafka-shim's RequestTap (shim.tap) that writes every served request to the trace format.

The broker's event loop only hands a record over (``record``: one append to a bounded deque); a writer thread,
woken once a second or when WAKE_ROWS wait, turns records into Arrow columns (traces.capture_rows) and writes
them, so capture never blocks the loop. Files:

- ``DIR/day=YYYY-MM-DD/part-<UTC start>-<seq>.parquet``, one row group per batch the writer takes (at most
  ``BATCH_ROWS`` rows, or what arrived within ``FLUSH_S``). A file is written under a hidden name
  (``.part-....parquet.inprogress``, which Spark and pyarrow.dataset skip) and renamed when finished, so a reader
  of the directory never meets a half-written file.
- Rolled when it reaches ``kafka.shim.capture.roll.bytes``, when it has been open ``kafka.shim.capture.roll.ms``,
  and at midnight UTC (a new day directory).
- ``kafka.shim.capture.retention.bytes`` caps the directory: after each roll the oldest finished files are removed
  until the total fits (log line ``capture_file_removed``); capture itself never stops for it.
- When the writer falls behind and the queue (``kafka.shim.capture.queue.requests`` / ``.queue.bytes``) is full,
  further requests are not recorded: they are counted, the first of a run is logged (``capture_dropping``), and
  once the writer catches up a row of kind ``dropped`` records how many and over which period (``capture_dropped``).
- ``close`` (the broker's stop) writes everything queued, the pending ``dropped`` row, and finishes the file.

The configuration keys are kafka-shim's own, in Kafka's style (traces.capture_settings); the command line's
``serve --capture DIR`` sets the first.
"""

from __future__ import annotations

import datetime
import os
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_shim.authorizer.library_logging import get_logger
from kafka_shim.traces.capture_rows import tapped_rows
from kafka_shim.traces.capture_settings import (  # re-exported: the composition roots import them from here
    DIR_KEY,
    QUEUE_BYTES_KEY,
    QUEUE_KEY,
    RETENTION_BYTES_KEY,
    CaptureConfigError,
    CaptureSettings,
)
from kafka_shim.traces.format import (
    CAPTURE,
    DROPPED,
    IN_PROGRESS_PREFIX,
    IN_PROGRESS_SUFFIX,
    SCHEMA,
    day_directory,
    file_metadata,
)

log = get_logger("kafka_shim.capture")

# Rows per row group at most; a busy broker fills one in well under FLUSH_S.
BATCH_ROWS = 8192
# How long the writer sleeps before it writes what has arrived; it wakes earlier once WAKE_ROWS wait. Waking per
# request would make the writer thread take the interpreter lock from the event loop thousands of times a second.
# Each batch also costs a few milliseconds of CPU under contention for that lock, whatever its size (bench/capture.py
# measured it), so between timer wake-ups only batches of at least WAKE_ROWS are written.
FLUSH_S = 1.0
WAKE_ROWS = 4096
_DAY_US = 86_400_000_000
_STOP = object()
# The longest the broker's stop waits for the writer (a stuck disk must not hang the broker's exit).
CLOSE_TIMEOUT_S = 120.0


# Min/max statistics only for the columns a query filters on: for the raw frames they would copy two frames per
# row group into the footer.
_STATISTICS = [f.name for f in SCHEMA if f.type not in (pa.binary(), pa.string()) or f.name in (
    "kind", "principal", "listener", "client_id", "client_host", "source", "outcome")]

__all__ = ["CaptureConfigError", "CaptureSettings", "CaptureSink"]


class CaptureSink:
    """A RequestTap writing the trace format; ``record`` on the event loop, writing in its own thread."""

    def __init__(self, settings: CaptureSettings, source: str = CAPTURE) -> None:
        self.settings = settings
        self.source = source  # the trace's ``source`` column and file metadata: capture, or proxy (traces.proxy)
        self.directory = settings.directory
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CaptureConfigError(f"{DIR_KEY}={self.directory}: cannot create the capture directory: {exc.strerror or exc}") from None
        # Records waiting for the writer: appended on the loop thread, taken by the writer. Bounded by count and by
        # bytes (each counter is written by one thread only).
        self._pending: deque[Any] = deque()
        self._max_requests = settings.queue_requests
        self._max_bytes = settings.queue_bytes
        self._queued_bytes = 0
        self._taken_bytes = 0
        self._wake = threading.Event()
        # Set by ``sync`` (and the stop): the writer's next wake-up writes everything waiting, small batches included.
        self._drain = False
        self._stopping = False
        self._closed = False
        # Requests not queued since the last ``dropped`` row: count, first and last time (UTC µs). Changed on the loop
        # thread, taken by the writer, under the lock.
        self._drop_lock = threading.Lock()
        self._dropped = 0
        self._dropped_from = 0
        self._dropped_until = 0
        self.dropped_total = 0
        self.rows_written = 0
        self.files_written: list[Path] = []
        self._file: _OpenFile | None = None
        self._sequence = 0
        self._thread = threading.Thread(target=self._run, name="kafka-shim-capture", daemon=True)
        self._thread.start()
        log.info("capture_started", directory=str(self.directory), roll_bytes=settings.roll_bytes, roll_ms=settings.roll_ms,
                 retention_bytes=settings.retention_bytes, queue_requests=settings.queue_requests,
                 queue_bytes=settings.queue_bytes)

    # -- the event loop's side ------------------------------------------------------------------
    def record(self, request: Any) -> None:
        if self._closed:
            return
        pending = self._pending
        size = (len(request.request) if request.request else 0) + (len(request.response) if request.response else 0)
        if len(pending) >= self._max_requests or self._queued_bytes - self._taken_bytes + size > self._max_bytes:
            self._drop(request.time_us)
            return
        self._queued_bytes += size
        pending.append(request)  # deque.append is atomic: no lock, and no wake-up of the writer per request
        if len(pending) >= WAKE_ROWS and not self._wake.is_set():
            self._wake.set()

    def _drop(self, time_us: int) -> None:
        with self._drop_lock:
            first = self._dropped == 0
            if first:
                self._dropped_from = time_us
            self._dropped += 1
            self._dropped_until = time_us
            self.dropped_total += 1
        if first:
            log.warning("capture_dropping", directory=str(self.directory), queue_requests=self._max_requests,
                        queue_bytes=self._max_bytes,
                        reason="the trace writer is behind: requests are not recorded until it catches up "
                               "(a 'dropped' row will count them)")

    def sync(self, timeout: float | None = None) -> bool:
        """Wait until everything recorded so far is in the file (written as a row group, not yet a finished file);
        False if that took longer than ``timeout``. Blocking: not for the event loop."""
        marker = _Sync()
        self._pending.append(marker)
        self._drain = True  # after the marker: a writer that sees the flag finds the marker queued
        self._wake.set()
        return marker.done.wait(timeout)

    def close(self) -> None:
        """Write what is queued, then finish the file; blocks until the writer thread is done."""
        if self._closed:
            return
        self._closed = True
        self._stopping = True
        self._wake.set()
        self._thread.join(CLOSE_TIMEOUT_S)
        if self._thread.is_alive():
            log.error("capture_close_timeout", directory=str(self.directory), timeout_s=CLOSE_TIMEOUT_S,
                      reason="the trace writer did not finish in time; the last file stays hidden (.inprogress)")
            return
        log.info("capture_stopped", directory=str(self.directory), rows=self.rows_written, dropped=self.dropped_total,
                 files=len(self.files_written))

    # -- the writer thread ------------------------------------------------------------------------
    def _run(self) -> None:
        """Wake every FLUSH_S (or when WAKE_ROWS are waiting, a sync or the stop asks) and write: on the timer, a sync
        or the stop everything waiting; woken by WAKE_ROWS, full batches only (what arrives while one is written
        waits for the next, so a busy broker is not written in many small batches)."""
        pending = self._pending
        while True:
            timed_out = not self._wake.wait(FLUSH_S)
            self._wake.clear()
            stopping = self._stopping  # read first: everything recorded before the stop is drained below
            drain = stopping or timed_out
            if self._drain:
                self._drain = False
                drain = True
            while True:
                batch: list[Any] = []
                synced: list[_Sync] = []
                taken = 0
                while pending and len(batch) < BATCH_ROWS:
                    item = pending.popleft()
                    if type(item) is _Sync:
                        synced.append(item)
                        continue
                    batch.append(item)
                    taken += (len(item.request) if item.request else 0) + (len(item.response) if item.response else 0)
                self._taken_bytes += taken
                try:
                    self._write_batch(batch)
                except Exception as exc:  # a full disk, a bad record: logged, and the next batch tried
                    log.error("capture_write_failed", directory=str(self.directory), rows=len(batch), error=str(exc))
                    self._abandon_file()
                for marker in synced:
                    marker.done.set()
                if not pending or (not drain and len(pending) < WAKE_ROWS):
                    break
            if stopping:
                break
        try:
            self._finish_file()
        except Exception as exc:
            log.error("capture_write_failed", directory=str(self.directory), error=str(exc))

    def _write_batch(self, batch: list[Any]) -> None:
        dropped = self._take_dropped()
        if self._file is not None and self._file.expired(self.settings.roll_ms):
            self._finish_file()
        # Rows go to the file of their day; a batch spanning midnight UTC is split.
        start = 0
        for end in range(1, len(batch) + 1):
            if end == len(batch) or batch[end].time_us // _DAY_US != batch[start].time_us // _DAY_US:
                part = batch[start:end]
                self._write_rows(_day_name(part[0].time_us), tapped_rows(part, self.source))
                start = end
        if dropped is not None:
            self._write_rows(_day_name(dropped["time"]), pa.Table.from_pylist([dropped], schema=SCHEMA))

    def _write_rows(self, day: str, table: pa.Table) -> None:
        """One row group to the current file (opened or rolled as needed)."""
        if self._file is not None and self._file.day != day:
            self._finish_file()
        if self._file is None:
            self._file = self._open_file(day)
        self._file.writer.write_table(table)
        self.rows_written += table.num_rows
        if self._file.sink.tell() >= self.settings.roll_bytes:
            self._finish_file()

    def _take_dropped(self) -> dict[str, Any] | None:
        with self._drop_lock:
            count, since, until = self._dropped, self._dropped_from, self._dropped_until
            self._dropped = 0
        if not count:
            return None
        log.warning("capture_dropped", directory=str(self.directory), dropped=count,
                    since=_iso(since), until=_iso(until),
                    hint=f"raise {QUEUE_KEY} / {QUEUE_BYTES_KEY} or give the writer a faster disk; "
                         "the trace has a 'dropped' row for them")
        return {"kind": DROPPED, "time": since, "source": self.source, "dropped_requests": count, "dropped_until": until}

    # -- files --------------------------------------------------------------------------------------
    def _open_file(self, day: str) -> _OpenFile:
        folder = self.directory / day
        folder.mkdir(parents=True, exist_ok=True)
        self._sequence += 1
        stamp = datetime.datetime.now(tz=datetime.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        name = f"part-{stamp}-{self._sequence:05d}.parquet"
        temp = folder / f"{IN_PROGRESS_PREFIX}{name}{IN_PROGRESS_SUFFIX}"
        sink = pa.OSFile(str(temp), "wb")
        writer = pq.ParquetWriter(sink, SCHEMA.with_metadata(file_metadata(self.source)), write_statistics=_STATISTICS)
        return _OpenFile(day, folder / name, temp, sink, writer, time.monotonic())

    def _finish_file(self) -> None:
        f, self._file = self._file, None
        if f is None:
            return
        f.writer.close()
        f.sink.close()
        os.replace(f.temp, f.final)
        self.files_written.append(f.final)
        log.debug("capture_file_written", path=str(f.final), bytes=f.final.stat().st_size)
        self._apply_retention()

    def _abandon_file(self) -> None:
        """After a failed write the open file may be unusable: close it as it is (its rows so far may be lost)."""
        f, self._file = self._file, None
        if f is None:
            return
        for closing in (f.writer.close, f.sink.close):
            try:
                closing()
            except Exception:  # already broken; nothing more to save
                pass
        try:
            os.replace(f.temp, f.final)
        except OSError:
            pass

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
            log.info("capture_file_removed", path=str(oldest), bytes=sizes[oldest], retention_bytes=cap,
                     reason=f"the capture directory is above {RETENTION_BYTES_KEY}: the oldest files go first")
            try:
                oldest.parent.rmdir()  # only when that day has no file left
            except OSError:
                pass


class _Sync:
    """A marker in the queue: set once everything queued before it is written."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


@dataclass(slots=True)
class _OpenFile:
    day: str
    final: Path
    temp: Path
    sink: Any
    writer: Any
    opened: float

    def expired(self, roll_ms: int) -> bool:
        return (time.monotonic() - self.opened) * 1000 >= roll_ms


def _iso(time_us: int) -> str:
    return datetime.datetime.fromtimestamp(time_us / 1_000_000, tz=datetime.UTC).isoformat()



def _day_name(time_us: int) -> str:
    return day_directory(Path(), time_us).name
