"""CaptureSink: kafka-shim's RequestTap (shim.tap) that writes every served request to the trace format.

The broker's event loop only hands a record over (``record``: the record marshalled, then appended to a bounded
deque). A forwarder thread, woken once a second or when WAKE_ROWS wait, writes a batch of them as one message into a
pipe (``writev``: the kernel copies the records, without the interpreter lock) to the writer process
(traces.capture_writer), which turns them into Arrow columns and Parquet files (traces.capture_files:
``DIR/day=YYYY-MM-DD/part-<UTC start>-<seq>.parquet``, rolled by ``kafka.shim.capture.roll.bytes`` / ``.roll.ms``
and midnight UTC, capped by ``.retention.bytes``). Converting
rows in a thread of the broker's own process took ~6 µs per request from a ~30 µs Metadata request through the
interpreter lock; in the broker's process a row now costs one marshal call. Queued as tuples, the records made
the garbage collector run ten times as often on the loop (and walk them there); queued as bytes, they are invisible
to it.

- When the writer falls behind and the queue (``kafka.shim.capture.queue.requests`` / ``.queue.bytes``) is full,
  further requests are not recorded: they are counted, the first of a run is logged (``capture_dropping``), and
  once the writer catches up a row of kind ``dropped`` records how many and over which period (``capture_dropped``).
- A writer process that dies is logged (``capture_writer_exited``) and started again, at most MAX_RESTARTS times; the
  requests it took with it are counted as dropped, as above. After that, capture stops recording (and says so).
- ``close`` (the broker's stop) writes everything queued, the pending ``dropped`` row, and finishes the file.

The configuration keys are kafka-shim's own, in Kafka's style (traces.capture_settings); the command line's
``serve --capture DIR`` sets the first.
"""

from __future__ import annotations

import datetime
import marshal
import threading
from collections import deque
from itertools import islice
from pathlib import Path
from typing import Any

from kafka_shim.authorizer.audit import rule_text
from kafka_shim.authorizer.library_logging import get_logger
from kafka_shim.traces import capture_pipe as pipe
from kafka_shim.traces.capture_process import Loss, WriterProcess
from kafka_shim.traces.capture_rows import RECORD_FIELDS
from kafka_shim.traces.capture_settings import (  # re-exported: the composition roots import them from here
    DIR_KEY,
    QUEUE_BYTES_KEY,
    QUEUE_KEY,
    RETENTION_BYTES_KEY,
    CaptureConfigError,
    CaptureSettings,
)
from kafka_shim.traces.format import CAPTURE, DROPPED

log = get_logger("kafka_shim.capture")
_dumps, _RECORD_VERSION = marshal.dumps, pipe.RECORD_VERSION

# Rows per batch (one row group) at most; a busy broker fills one in well under FLUSH_S.
BATCH_ROWS = 8192
# How long the forwarder sleeps before it sends what has arrived; it wakes earlier once WAKE_ROWS wait. Waking per
# request would make it take the interpreter lock from the event loop thousands of times a second, and each batch
# is a row group: between timer wake-ups only batches of at least WAKE_ROWS are sent.
FLUSH_S = 1.0
WAKE_ROWS = 4096
# The longest the broker's stop waits for the writer (a stuck disk must not hang the broker's exit).
CLOSE_TIMEOUT_S = 120.0
# Writer processes started again after one died, at most.
MAX_RESTARTS = 3

__all__ = [
    "DIR_KEY",
    "QUEUE_BYTES_KEY",
    "QUEUE_KEY",
    "RETENTION_BYTES_KEY",
    "CaptureConfigError",
    "CaptureSettings",
    "CaptureSink",
]


class CaptureSink:
    """A RequestTap writing the trace format; ``record`` on the event loop, the writing in a process of its own."""

    def __init__(self, settings: CaptureSettings, source: str = CAPTURE, fields: tuple[str, ...] = RECORD_FIELDS) -> None:
        self.settings = settings
        self.source = source  # the trace's ``source`` column and file metadata: capture, or proxy (traces.proxy)
        # The records' field names: the broker's plain tuples (shim.tap.TappedRequest), or the proxy's rows.
        self.fields = tuple(fields)
        self.directory = settings.directory
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CaptureConfigError(f"{DIR_KEY}={self.directory}: cannot create the capture directory: {exc.strerror or exc}") from None
        # Records waiting for the forwarder: appended on the loop thread, taken by the forwarder. Bounded by count
        # and by bytes (each counter is written by one thread only).
        self._pending: deque[Any] = deque()
        self._max_requests = settings.queue_requests
        self._max_bytes = settings.queue_bytes
        self._queued_bytes = 0
        self._taken_bytes = 0
        # Records queued and records sent to the writer, each counted by one thread; a sync marker waits for the
        # records queued before it to be sent (and then written).
        self._recorded = 0
        self._forwarded = 0
        self._syncs: list[_Sync] = []
        self._sync_lock = threading.Lock()
        self._wake = threading.Event()
        # Set by ``sync`` (and the stop): the forwarder's next wake-up sends everything waiting, small batches too.
        self._drain = False
        self._stopping = False
        self._closed = False
        # Requests not recorded since the last ``dropped`` row: count, first and last time (UTC µs). Changed on the
        # loop thread and by the forwarder (requests a dead writer took), taken by the forwarder, under the lock.
        self._drop_lock = threading.Lock()
        self._dropped = 0
        self._dropped_from = 0
        self._dropped_until = 0
        self.dropped_total = 0
        self._given_up = False  # the writer died more than MAX_RESTARTS times: nothing is recorded any more
        self._restarts = 0
        self._finished_rows = 0  # rows written by writer processes that have ended
        self.files_written: list[Path] = []
        self._writer = self._start_writer()
        self._thread = threading.Thread(target=self._run, name="kafka-shim-capture", daemon=True)
        self._thread.start()
        log.info("capture_started", directory=str(self.directory), roll_bytes=settings.roll_bytes, roll_ms=settings.roll_ms,
                 retention_bytes=settings.retention_bytes, queue_requests=settings.queue_requests,
                 queue_bytes=settings.queue_bytes, writer_pid=self._writer.process.pid)

    def _start_writer(self) -> WriterProcess:
        return WriterProcess(self.settings, self.source, self.files_written.append, self._wake.set)

    @property
    def rows_written(self) -> int:
        return self._finished_rows + self._writer.rows_written

    # -- the event loop's side ------------------------------------------------------------------
    def record(self, request: Any) -> None:
        if self._closed:
            return
        try:
            data = _dumps(request, _RECORD_VERSION)  # pipe.record, without a call of its own on every request
        except ValueError:  # not a plain tuple of plain values: a NamedTuple row (the proxy's), enum members...
            data = pipe.record(self._plain_record(request))
        pending = self._pending
        size = len(data)
        if len(pending) >= self._max_requests or self._queued_bytes - self._taken_bytes + size > self._max_bytes or self._given_up:
            self._drop(request[0])
            return
        self._queued_bytes += size
        pending.append(data)  # deque.append is atomic: no lock, and no wake-up of the forwarder per request
        self._recorded += 1
        if len(pending) >= WAKE_ROWS and not self._wake.is_set():
            self._wake.set()

    def _plain_record(self, request: Any) -> tuple[Any, ...]:
        fields = getattr(request, "_fields", self.fields)
        if tuple(fields) != self.fields:
            raise TypeError(f"a record with fields {fields} given to a capture sink of {self.fields}")
        return tuple(map(_plain, request))

    def _drop(self, time_us: int, count: int = 1, until_us: int | None = None) -> None:
        with self._drop_lock:
            first = self._dropped == 0
            if first:
                self._dropped_from = time_us
            self._dropped += count
            self._dropped_until = max(self._dropped_until, until_us if until_us is not None else time_us)
            self.dropped_total += count
        if first:
            reason = ("the trace writer died too often: requests are no longer recorded" if self._given_up else
                      "the trace writer is behind: requests are not recorded until it catches up "
                      "(a 'dropped' row will count them)")
            log.warning("capture_dropping", directory=str(self.directory), queue_requests=self._max_requests,
                        queue_bytes=self._max_bytes, reason=reason)

    def sync(self, timeout: float | None = None) -> bool:
        """Wait until everything recorded so far is in the file (written as a row group, not yet a finished file);
        False if that took longer than ``timeout`` or the writer died meanwhile. Blocking: not for the event loop."""
        marker = _Sync(self._recorded)
        with self._sync_lock:
            self._syncs.append(marker)
        self._drain = True  # after the marker: a forwarder that sees the flag finds the marker queued
        self._wake.set()
        return marker.done.wait(timeout) and marker.ok

    def close(self) -> None:
        """Write what is queued, then finish the file; blocks until the writer process is done."""
        if self._closed:
            return
        self._closed = True
        self._stopping = True
        self._wake.set()
        self._thread.join(CLOSE_TIMEOUT_S)
        if self._thread.is_alive() or not self._writer.stop(CLOSE_TIMEOUT_S):
            log.error("capture_close_timeout", directory=str(self.directory), timeout_s=CLOSE_TIMEOUT_S,
                      reason="the trace writer did not finish in time; the last file stays hidden (.inprogress)")
            return
        loss = self._writer.unfinished()
        if loss is not None:  # the writer died (or failed a write) at the end: nobody is left to write a 'dropped' row
            self._count_loss(loss)
            log.error("capture_writer_exited", directory=str(self.directory), exit_code=self._writer.process.returncode,
                      requests_lost=loss.requests, restarting=False)
        if self._dropped:
            log.warning("capture_dropped", directory=str(self.directory), dropped=self._dropped,
                        since=_iso(self._dropped_from), until=_iso(self._dropped_until),
                        reason="the capture stopped before a 'dropped' row could record them")
        log.info("capture_stopped", directory=str(self.directory), rows=self.rows_written, dropped=self.dropped_total,
                 files=len(self.files_written))

    # -- the forwarder thread -----------------------------------------------------------------------
    def _run(self) -> None:
        """Wake every FLUSH_S (or when WAKE_ROWS are waiting, a sync or the stop asks) and send: on the timer, a sync
        or the stop everything waiting; woken by WAKE_ROWS, full batches only (what arrives while one is sent waits
        for the next, so a busy broker is not written in many small row groups)."""
        pending = self._pending
        while True:
            timed_out = not self._wake.wait(FLUSH_S)
            self._wake.clear()
            if self._writer.dead:
                self._replace_writer()
            stopping = self._stopping  # read first: everything recorded before the stop is sent below
            drain = stopping or timed_out
            if self._drain:
                self._drain = False
                drain = True
            while True:
                # Taken and measured in C calls: a Python loop here would hold the interpreter lock per row.
                batch = list(islice(iter(pending.popleft, None), min(len(pending), BATCH_ROWS)))
                self._taken_bytes += sum(map(len, batch))
                self._forward(batch)
                self._forwarded += len(batch)
                self._send_syncs()
                if not pending or (not drain and len(pending) < WAKE_ROWS):
                    break
            if stopping:
                break

    def _forward(self, batch: list[Any]) -> None:
        """Send a batch (with the pending ``dropped`` row) to the writer; a dead writer's loss is counted as dropped
        and a new writer started."""
        dropped = self._take_dropped()
        if not batch and dropped is None:
            return
        message = pipe.rows_message(self.fields, batch, dropped)
        if self._given_up:
            self._count_lost(batch, dropped)
            return
        # The period the message covers, should the writer lose it.
        since, until = (_time_us(batch[0]), _time_us(batch[-1])) if batch else (dropped["time"], dropped["dropped_until"])
        if dropped is not None:
            since, until = min(since, dropped["time"]), max(until, dropped["dropped_until"])
        counts = (len(batch), dropped["dropped_requests"] if dropped else 0, since, until)
        if self._writer.send_rows(message, *counts):
            return
        self._replace_writer()  # the message never reached the dead writer: the next one gets it
        if self._given_up or not self._writer.send_rows(message, *counts):
            self._count_lost(batch, dropped)

    def _send_syncs(self) -> None:
        """The sync markers whose records have all been sent, sent after them (answered once written)."""
        with self._sync_lock:
            due = [m for m in self._syncs if m.after <= self._forwarded]
            self._syncs = [m for m in self._syncs if m.after > self._forwarded]
        for marker in due:
            if self._given_up or not self._writer.sync(marker):
                marker.fail()

    def _replace_writer(self) -> None:
        """The writer died: what it had not finished is counted as dropped, and another writer started."""
        writer = self._writer
        writer.stop(CLOSE_TIMEOUT_S)
        self._finished_rows += writer.rows_written
        loss = writer.unfinished()
        if loss is not None:
            self._count_loss(loss)
        restart = self._restarts < MAX_RESTARTS
        log.error("capture_writer_exited", directory=str(self.directory), exit_code=writer.process.returncode,
                  requests_lost=loss.requests if loss else 0, restarting=restart,
                  hint="the requests in its unfinished file and its pipe are counted in a 'dropped' row" if restart
                       else f"given up after {MAX_RESTARTS} restarts: nothing more is recorded")
        if restart:
            self._restarts += 1
            self._writer = self._start_writer()
        else:
            self._given_up = True

    def _count_loss(self, loss: Loss) -> None:
        self._drop(loss.since_us, loss.requests, loss.until_us)

    def _count_lost(self, batch: list[Any], dropped: dict[str, Any] | None) -> None:
        """Requests taken from the queue that will not be written: into the next ``dropped`` row."""
        if dropped is not None:
            self._drop(dropped["time"], dropped["dropped_requests"], dropped["dropped_until"])
        if batch:
            self._drop(_time_us(batch[0]), len(batch), _time_us(batch[-1]))

    def _take_dropped(self) -> dict[str, Any] | None:
        if self._given_up:
            return None
        with self._drop_lock:
            count, since, until = self._dropped, self._dropped_from, self._dropped_until
            self._dropped = 0
            self._dropped_until = 0
        if not count:
            return None
        log.warning("capture_dropped", directory=str(self.directory), dropped=count,
                    since=_iso(since), until=_iso(until),
                    hint=f"raise {QUEUE_KEY} / {QUEUE_BYTES_KEY} or give the writer a faster disk; "
                         "the trace has a 'dropped' row for them")
        return {"kind": DROPPED, "time": since, "source": self.source, "dropped_requests": count, "dropped_until": until}


def _time_us(record: bytes) -> int:
    """A marshalled record's time (time_us comes first in every record)."""
    return pipe.record_row(record)[0]


def _plain(value: Any) -> Any:
    """A value as marshal takes it: enum members as their int or str, sequences as tuples, a Rule as its text."""
    if value is None or type(value) in (int, str, bytes, bool, float):
        return value
    if isinstance(value, (tuple, list)):
        return tuple(map(_plain, value))
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return rule_text(value)


class _Sync:
    """A sync's marker: set once the first ``after`` records are written (``ok`` False: they never will be)."""

    __slots__ = ("after", "done", "ok")

    def __init__(self, after: int) -> None:
        self.after = after
        self.done = threading.Event()
        self.ok = True

    def fail(self) -> None:
        self.ok = False
        self.done.set()


def _iso(time_us: int) -> str:
    return datetime.datetime.fromtimestamp(time_us / 1_000_000, tz=datetime.UTC).isoformat()
