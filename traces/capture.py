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
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import structlog

from kafka_shim.authorizer.audit import rule_text
from kafka_shim.authorizer.model import AclOperation, ResourceType
from kafka_shim.traces.format import (
    CAPTURE,
    CONFIG_ALTERING_APIS,
    DECISION,
    DROPPED,
    IN_PROGRESS_PREFIX,
    IN_PROGRESS_SUFFIX,
    REQUEST,
    SCHEMA,
    day_directory,
    file_metadata,
    redacted_request_json,
)

log = structlog.get_logger("kafka_shim.capture")

DIR_KEY = "kafka.shim.capture.dir"
ROLL_BYTES_KEY = "kafka.shim.capture.roll.bytes"
ROLL_MS_KEY = "kafka.shim.capture.roll.ms"
RETENTION_BYTES_KEY = "kafka.shim.capture.retention.bytes"
QUEUE_KEY = "kafka.shim.capture.queue.requests"
QUEUE_BYTES_KEY = "kafka.shim.capture.queue.bytes"

# Rows per row group at most; a busy broker fills one in well under FLUSH_S.
BATCH_ROWS = 4096
# How long the writer sleeps before it writes what has arrived; it wakes earlier once WAKE_ROWS wait. Waking per
# request would make the writer thread take the interpreter lock from the event loop thousands of times a second.
FLUSH_S = 1.0
WAKE_ROWS = 2048
_DAY_US = 86_400_000_000
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
    queue_bytes: int = 256 * 1024 * 1024

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
            queue_bytes=_int(props, QUEUE_BYTES_KEY, defaults.queue_bytes, minimum=1),
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
        # Records waiting for the writer: appended on the loop thread, taken by the writer. Bounded by count and by
        # bytes (each counter is written by one thread only).
        self._pending: deque[Any] = deque()
        self._max_requests = settings.queue_requests
        self._max_bytes = settings.queue_bytes
        self._queued_bytes = 0
        self._taken_bytes = 0
        self._wake = threading.Event()
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
        """Wake every FLUSH_S (or when WAKE_ROWS are waiting, a sync or the stop asks), write everything waiting."""
        pending = self._pending
        while True:
            self._wake.wait(FLUSH_S)
            self._wake.clear()
            stopping = self._stopping  # read first: everything recorded before the stop is drained below
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
                if not pending:
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
                self._write_rows(_day_name(part[0].time_us), _columns(part))
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
        return {"kind": DROPPED, "time": since, "source": CAPTURE, "dropped_requests": count, "dropped_until": until}

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


def _columns(batch: list[Any]) -> pa.Table:
    """TappedRequests (shim.tap) as trace rows, column by column (in the writer thread: the loop only queued them).

    The writer holds the interpreter lock while it converts Python objects, time the event loop then waits for: a
    TappedRequest is a tuple in column order, so the columns are one ``zip``, and the decisions are built as flat
    child arrays with the names looked up by Arrow."""
    n = len(batch)
    values = dict(zip(_RECORD_COLUMNS, zip(*batch, strict=True), strict=True))
    if CONFIG_ALTERING_APIS.intersection(values["api_key"]):
        # Config values may be passwords: such requests keep a redacted JSON body instead of their bytes.
        requests = list(values["request"])
        request_json = [None] * n
        for i, (api_key, raw) in enumerate(zip(values["api_key"], requests, strict=True)):
            if api_key in CONFIG_ALTERING_APIS and raw is not None:
                request_json[i], requests[i] = redacted_request_json(raw), None
        values["request"] = requests
        values["request_json"] = request_json
    arrays = []
    for f in SCHEMA:
        # Hand the interpreter lock back between columns: a broker thread waiting for it (the event loop) gets it at
        # once instead of after the interpreter's 5 ms switch interval, which a pipelining client would feel.
        time.sleep(0)
        name = f.name
        if name == "decisions":
            arrays.append(_decisions_array(values[name]))
        elif name == "time":
            arrays.append(pa.array(values[name], pa.int64()).cast(f.type))
        elif name in values:
            arrays.append(pa.array(values[name], f.type))
        elif name == "kind":
            arrays.append(pa.repeat(pa.scalar(REQUEST, f.type), n))
        elif name == "source":
            arrays.append(pa.repeat(pa.scalar(CAPTURE, f.type), n))
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


# A TappedRequest's fields as trace columns ("time" is its time_us).
_RECORD_COLUMNS = ("time", "connection_id", "client_host", "client_port", "listener", "security_protocol", "principal",
                   "client_id", "client_software_name", "client_software_version", "api_key", "api_version",
                   "correlation_id", "request", "response", "outcome", "response_time_us", "decisions")


def _decisions_array(per_request: tuple[list[Any], ...]) -> pa.Array:
    offsets = [0]
    flat: list[Any] = []
    for decisions in per_request:
        if decisions:
            flat.extend(decisions)
        offsets.append(len(flat))
    kind, operation, resource_type, name, allowed, rule, ref_count, operations = (
        zip(*flat, strict=True) if flat else ((),) * 8)
    children = [
        pa.array(kind, pa.string()),
        pc.take(_OPERATION_NAMES, pa.array(operation, pa.int32())),
        pc.take(_RESOURCE_TYPE_NAMES, pa.array(resource_type, pa.int32())),
        pa.array(name, pa.string()),
        pa.array(allowed, pa.bool_()),
        pa.array([r if r is None or type(r) is str else rule_text(r) for r in rule], pa.string()),
        pa.array(ref_count, pa.int32()),
        pa.array(operations, pa.int32()),
    ]
    struct = pa.StructArray.from_arrays(children, fields=list(DECISION))
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), struct, type=SCHEMA.field("decisions").type)


# Kafka's codes index these (AclOperation 0-14, ResourceType 0-7); a code beyond is a bug upstream and fails the batch.
_OPERATION_NAMES = pa.array([AclOperation.from_code(code).name for code in range(max(map(int, AclOperation)) + 1)])
_RESOURCE_TYPE_NAMES = pa.array([ResourceType.from_code(code).name for code in range(max(map(int, ResourceType)) + 1)])


def _day_name(time_us: int) -> str:
    return day_directory(Path(), time_us).name
