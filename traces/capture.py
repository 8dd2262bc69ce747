"""CaptureSink: kafka-shim's RequestTap (shim.tap) that writes every served request to the trace format.

The broker's event loop only hands a record over (``record``: one ``put_nowait`` on a bounded queue); a writer
thread turns records into Arrow columns and writes them, so capture never blocks the loop. Files:

- ``DIR/day=YYYY-MM-DD/part-<UTC start>-<seq>.parquet``, one row group per batch the writer takes (at most
  ``BATCH_ROWS`` rows, or what arrived within ``FLUSH_S``). A file is written under a hidden name
  (``.part-....parquet.inprogress``, which Spark and pyarrow.dataset skip) and renamed when finished, so a reader
  of the directory never meets a half-written file.
- Rolled when it reaches ``kafka.shim.capture.roll.bytes``, when it has been open ``kafka.shim.capture.roll.ms``,
  and at midnight UTC (a new day directory).
- ``kafka.shim.capture.retention.bytes`` caps the directory: after each roll the oldest finished files are removed
  until the total fits (log line ``capture_file_removed``); capture itself never stops for it.
- When the writer falls behind and the queue (``kafka.shim.capture.queue.requests``) is full, further requests are
  not recorded: they are counted, the first of a run is logged (``capture_dropping``), and once the writer catches
  up a row of kind ``dropped`` records how many and over which period (logged as ``capture_dropped``).
- ``close`` (the broker's stop) writes everything queued, the pending ``dropped`` row, and finishes the file.

The configuration keys are kafka-shim's own, in Kafka's style (``CaptureSettings.from_properties``); the command
line's ``serve --capture DIR`` sets the first.
"""

from __future__ import annotations

import datetime
import os
import queue
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import structlog

from kafka_shim.authorizer.audit import Decision, rule_text
from kafka_shim.authorizer.model import AclOperation, ResourceType
from kafka_shim.traces.format import (
    CAPTURE,
    DROPPED,
    IN_PROGRESS_PREFIX,
    IN_PROGRESS_SUFFIX,
    REQUEST,
    SCHEMA,
    day_directory,
    file_metadata,
)

log = structlog.get_logger("kafka_shim.capture")

DIR_KEY = "kafka.shim.capture.dir"
ROLL_BYTES_KEY = "kafka.shim.capture.roll.bytes"
ROLL_MS_KEY = "kafka.shim.capture.roll.ms"
RETENTION_BYTES_KEY = "kafka.shim.capture.retention.bytes"
QUEUE_KEY = "kafka.shim.capture.queue.requests"

# Rows per row group at most; a busy broker fills one in well under FLUSH_S.
BATCH_ROWS = 4096
# How long the writer waits for more rows before it writes what it has.
FLUSH_S = 1.0
_STOP = object()
# The longest the broker's stop waits for the writer (a stuck disk must not hang the broker's exit).
CLOSE_TIMEOUT_S = 120.0


# Min/max statistics only for the columns a query filters on: for the raw frames they would copy two frames per
# row group into the footer.
_STATISTICS = [f.name for f in SCHEMA if f.type not in (pa.binary(), pa.string()) or f.name in (
    "kind", "principal", "listener", "client_id", "client_host", "source", "outcome")]


class CaptureConfigError(ValueError):
    """A capture setting a person must fix; the message names the key."""


@dataclass(frozen=True, slots=True)
class CaptureSettings:
    directory: Path
    roll_bytes: int = 128 * 1024 * 1024
    roll_ms: int = 60 * 60 * 1000
    retention_bytes: int = 10 * 1024 * 1024 * 1024  # -1: no cap
    queue_requests: int = 100_000

    def __post_init__(self) -> None:
        if 0 <= self.retention_bytes < self.roll_bytes:
            raise CaptureConfigError(
                f"{RETENTION_BYTES_KEY}={self.retention_bytes} is below {ROLL_BYTES_KEY}={self.roll_bytes}: a single file "
                f"would pass the cap; raise it (or set -1 for no cap)")

    @classmethod
    def from_properties(cls, props: Mapping[str, str], directory: str | None = None) -> CaptureSettings | None:
        """The settings from server.properties keys (``directory``, e.g. ``--capture``, wins over the key); None
        when no capture directory is set."""
        where = directory or props.get(DIR_KEY, "").strip()
        if not where:
            return None
        defaults = cls(Path(where))
        return cls(
            Path(where),
            roll_bytes=_int(props, ROLL_BYTES_KEY, defaults.roll_bytes, minimum=1024),
            roll_ms=_int(props, ROLL_MS_KEY, defaults.roll_ms, minimum=1),
            retention_bytes=_int(props, RETENTION_BYTES_KEY, defaults.retention_bytes, minimum=-1),
            queue_requests=_int(props, QUEUE_KEY, defaults.queue_requests, minimum=1),
        )


def _int(props: Mapping[str, str], key: str, default: int, minimum: int) -> int:
    text = props.get(key, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise CaptureConfigError(f"{key}={text!r} is not a whole number; e.g. {key}={default}") from None
    if value < minimum:
        raise CaptureConfigError(f"{key}={value} is below its minimum {minimum}; e.g. {key}={default}")
    return value


class CaptureSink:
    """A RequestTap writing the trace format; ``record`` on the event loop, writing in its own thread."""

    def __init__(self, settings: CaptureSettings) -> None:
        self.settings = settings
        self.directory = settings.directory
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CaptureConfigError(f"{DIR_KEY}={self.directory}: cannot create the capture directory: {exc.strerror or exc}") from None
        self._queue: queue.Queue[Any] = queue.Queue(settings.queue_requests)
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
                 retention_bytes=settings.retention_bytes, queue_requests=settings.queue_requests)

    # -- the event loop's side ------------------------------------------------------------------
    def record(self, request: Any) -> None:
        if self._closed:
            return
        try:
            self._queue.put_nowait(request)
        except queue.Full:
            self._drop(request.time_us)

    def _drop(self, time_us: int) -> None:
        with self._drop_lock:
            first = self._dropped == 0
            if first:
                self._dropped_from = time_us
            self._dropped += 1
            self._dropped_until = time_us
            self.dropped_total += 1
        if first:
            log.warning("capture_dropping", directory=str(self.directory), queue_requests=self.settings.queue_requests,
                        reason="the trace writer is behind: requests are not recorded until it catches up "
                               "(a 'dropped' row will count them)")

    def sync(self, timeout: float | None = None) -> bool:
        """Wait until everything recorded so far is in the file (written as a row group, not yet a finished file);
        False if that took longer than ``timeout``. Blocking: not for the event loop."""
        marker = _Sync()
        self._queue.put(marker, timeout=timeout)
        return marker.done.wait(timeout)

    def close(self) -> None:
        """Write what is queued, then finish the file; blocks until the writer thread is done."""
        if self._closed:
            return
        self._closed = True
        try:
            # Blocks only while the queue is full, i.e. until the writer takes its next batch.
            self._queue.put(_STOP, timeout=CLOSE_TIMEOUT_S)
        except queue.Full:
            pass
        self._thread.join(CLOSE_TIMEOUT_S)
        if self._thread.is_alive():
            log.error("capture_close_timeout", directory=str(self.directory), timeout_s=CLOSE_TIMEOUT_S,
                      reason="the trace writer did not finish in time; the last file stays hidden (.inprogress)")
            return
        log.info("capture_stopped", directory=str(self.directory), rows=self.rows_written, dropped=self.dropped_total,
                 files=len(self.files_written))

    # -- the writer thread ------------------------------------------------------------------------
    def _run(self) -> None:
        stopping = False
        while not stopping:
            batch: list[Any] = []
            try:
                first = self._queue.get(timeout=FLUSH_S)
            except queue.Empty:
                first = None
            synced: _Sync | None = None
            if first is _STOP:
                stopping = True
            elif type(first) is _Sync:
                synced = first
            elif first is not None:
                batch.append(first)
                while len(batch) < BATCH_ROWS:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is _STOP:
                        stopping = True
                        break
                    if type(item) is _Sync:
                        synced = item
                        break
                    batch.append(item)
            try:
                self._write_batch(batch)
            except Exception as exc:  # a full disk, a bad record: logged, and the next batch tried
                log.error("capture_write_failed", directory=str(self.directory), rows=len(batch), error=str(exc))
                self._abandon_file()
            if synced is not None:
                synced.done.set()
        try:
            self._finish_file()
        except Exception as exc:
            log.error("capture_write_failed", directory=str(self.directory), error=str(exc))

    def _write_batch(self, batch: list[Any]) -> None:
        rows = [_row(r) for r in batch]
        dropped = self._take_dropped()
        if dropped is not None:
            rows.append(dropped)
        if self._file is not None and self._file.expired(self.settings.roll_ms):
            self._finish_file()
        if not rows:
            return
        # Rows go to the file of their day; a batch spanning midnight UTC is split.
        start = 0
        for end in range(1, len(rows) + 1):
            if end == len(rows) or rows[end]["_day"] != rows[start]["_day"]:
                self._write_rows(rows[start:end])
                start = end

    def _write_rows(self, rows: list[dict[str, Any]]) -> None:
        """One row group to the current file (opened or rolled as needed)."""
        day = rows[0]["_day"]
        if self._file is not None and self._file.day != day:
            self._finish_file()
        if self._file is None:
            self._file = self._open_file(day)
        table = pa.Table.from_pylist(rows, schema=SCHEMA)
        self._file.writer.write_table(table)
        self.rows_written += len(rows)
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
                    hint=f"raise {QUEUE_KEY} or give the writer a faster disk; the trace has a 'dropped' row for them")
        return {"kind": DROPPED, "time": since, "source": CAPTURE, "dropped_requests": count, "dropped_until": until,
                "_day": day_directory(self.directory, since).name}

    # -- files --------------------------------------------------------------------------------------
    def _open_file(self, day: str) -> _OpenFile:
        folder = self.directory / day
        folder.mkdir(parents=True, exist_ok=True)
        self._sequence += 1
        stamp = datetime.datetime.now(tz=datetime.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        name = f"part-{stamp}-{self._sequence:05d}.parquet"
        temp = folder / f"{IN_PROGRESS_PREFIX}{name}{IN_PROGRESS_SUFFIX}"
        sink = pa.OSFile(str(temp), "wb")
        writer = pq.ParquetWriter(sink, SCHEMA.with_metadata(file_metadata(CAPTURE)), write_statistics=_STATISTICS)
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


def _row(r: Any) -> dict[str, Any]:
    """A TappedRequest (shim.tap) as a trace row (in the writer thread: the loop only queued it)."""
    return {
        "kind": REQUEST,
        "time": r.time_us,
        "source": CAPTURE,
        "connection_id": r.connection_id,
        "client_host": r.client_host,
        "client_port": r.client_port,
        "listener": r.listener,
        "security_protocol": r.security_protocol,
        "principal": r.principal,
        "client_id": r.client_id,
        "client_software_name": r.client_software_name,
        "client_software_version": r.client_software_version,
        "api_key": r.api_key,
        "api_version": r.api_version,
        "correlation_id": r.correlation_id,
        "request": r.request,
        "response": r.response,
        "outcome": r.outcome,
        "response_time_us": r.response_time_us,
        "decisions": [_decision(d) for d in r.decisions],
        "_day": day_directory(Path(), r.time_us).name,
    }


def _decision(d: Any) -> dict[str, Any]:
    if isinstance(d, Decision):
        return {"kind": "authorize", "operation": _operation(d.operation), "resource_type": _resource_type(d.resource_type),
                "resource_name": d.name, "allowed": d.allowed, "rule": rule_text(d.rule),
                "resource_ref_count": d.resource_ref_count}
    # a TappedDecision: KIP-679 by resource type, or a KIP-430 bitfield
    return {"kind": d.kind, "operation": _operation(d.operation) if d.operation is not None else None,
            "resource_type": _resource_type(d.resource_type), "resource_name": d.name, "allowed": d.allowed,
            "authorized_operations": d.operations}


def _operation(code: int) -> str:
    return AclOperation.from_code(code).name


def _resource_type(code: int) -> str:
    return ResourceType.from_code(code).name
