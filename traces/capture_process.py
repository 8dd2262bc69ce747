"""WriterProcess: one capture writer process (traces.capture_writer) as the CaptureSink sees it.

It starts the process in a session of its own (Ctrl-C in a terminal signals the broker's process group; the writer
must outlive the broker's stop, which sends it what is still queued), sends it messages, and reads its answers in
a thread: rows written, files finished, syncs done, log lines (re-emitted into the broker's log).

Rows count as safe only once their file is finished: a writer that dies leaves its open file without a footer, which
no reader can open. So the process keeps what it was sent and not yet finished (``unfinished``): when it dies, that
is what was lost, and the sink writes it down as dropped.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_shim.authorizer.library_logging import get_logger
from kafka_shim.traces import capture_pipe as pipe
from kafka_shim.traces.capture_settings import CaptureSettings
from kafka_shim.traces.capture_writer import settings_argument

log = get_logger("kafka_shim.capture")


@dataclass(frozen=True, slots=True)
class Loss:
    """Requests a dead writer took with it: how many, and over which period (UTC µs)."""

    requests: int
    since_us: int
    until_us: int


class WriterProcess:
    """One writer process, its two pipes and the thread that reads its answers."""

    def __init__(self, settings: CaptureSettings, source: str, on_file: Callable[[Path], None],
                 on_death: Callable[[], None]) -> None:
        self.rows_written = 0  # rows in row groups as last reported (idle, at a sync, at the end; not all finished)
        self.dead = False  # ended without being asked to
        self._on_file = on_file
        self._on_death = on_death
        self._stopping = False
        self._syncs: dict[int, Any] = {}
        self._numbers = itertools.count()
        self._lock = threading.Lock()
        # Sent and finished, each as (request rows, requests a ``dropped`` row stood for); what was sent and is in
        # no finished file yet, per batch: (sent after it, first time, last time).
        self._sent = (0, 0)
        self._finished = (0, 0)
        self._unfinished: deque[tuple[tuple[int, int], int, int]] = deque()
        to_writer_r, self._to_writer = os.pipe()
        self._from_writer, from_writer_w = os.pipe()
        pipe.widen(self._to_writer)
        env = dict(os.environ)
        # The writer imports kafka_shim as this process does (an editable install, a source tree on sys.path).
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "kafka_shim.traces.capture_writer", str(to_writer_r), str(from_writer_w),
                 settings_argument(settings, source)],
                pass_fds=(to_writer_r, from_writer_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env,
                start_new_session=True)
        finally:
            os.close(to_writer_r)
            os.close(from_writer_w)
        self._reader = threading.Thread(target=self._read, name="kafka-shim-capture-answers", daemon=True)
        self._reader.start()

    def send_rows(self, message: list[bytes], requests: int, dropped: int, since_us: int, until_us: int) -> bool:
        """Send a ROWS message of ``requests`` rows (and a ``dropped`` row standing for ``dropped`` requests); False
        if the writer is gone: the message is then not counted as sent (it can go to the next writer), and what the
        writer held is in ``unfinished``."""
        with self._lock:
            before = self._sent
            self._sent = (before[0] + requests, before[1] + dropped)
            self._unfinished.append((self._sent, since_us, until_us))
        if self._send(message):
            return True
        with self._lock:
            self._sent = before
            self._unfinished.pop()
        return False

    def sync(self, marker: Any) -> bool:
        """Send a sync marker; its ``done`` is set when the writer has written everything before it."""
        number = next(self._numbers)
        with self._lock:
            self._syncs[number] = marker
        return self._send(pipe.pack(pipe.SYNC, number))

    def unfinished(self) -> Loss | None:
        """The requests sent and in no finished file: lost if the writer has died."""
        with self._lock:
            while self._unfinished and all(s <= f for s, f in zip(self._unfinished[0][0], self._finished, strict=True)):
                self._unfinished.popleft()
            lost = sum(self._sent) - sum(self._finished)
            if lost <= 0 or not self._unfinished:
                return None
            return Loss(lost, self._unfinished[0][1], self._unfinished[-1][2])

    def stop(self, timeout: float) -> bool:
        """Ask the writer to finish (if it still can) and wait for it and its answers; False on timeout."""
        self._stopping = True
        self._send(pipe.pack(pipe.STOP))
        try:
            os.close(self._to_writer)
        except OSError:
            pass
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return False
        self._reader.join(timeout)
        return not self._reader.is_alive()

    def _send(self, message: bytes | list[bytes]) -> bool:
        try:
            pipe.write_all(self._to_writer, message)
        except OSError:  # the writer is gone (EPIPE), or stopped
            self.dead = self.dead or not self._stopping
            return False
        return True

    def _read(self) -> None:
        try:
            while (message := pipe.read_message(self._from_writer)) is not None:
                kind, body = message
                if kind == pipe.WRITTEN:
                    self.rows_written = body
                elif kind == pipe.FINISHED:
                    path, requests, dropped = body
                    with self._lock:
                        self._finished = (requests, dropped)
                    self._on_file(Path(path))
                elif kind == pipe.SYNCED:
                    with self._lock:
                        marker = self._syncs.pop(body, None)
                    if marker is not None:
                        marker.done.set()
                elif kind == pipe.LOG:
                    level, event, fields = body
                    getattr(log, level)(event, **fields)
        finally:
            os.close(self._from_writer)
            with self._lock:
                unanswered, self._syncs = list(self._syncs.values()), {}
            for marker in unanswered:
                marker.fail()
            if not self._stopping:
                self.dead = True
                self._on_death()
