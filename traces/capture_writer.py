"""The capture writer process: rows from a CaptureSink's pipe into the trace files (traces.capture_files).

    python -m kafka_shim.traces.capture_writer IN_FD OUT_FD SETTINGS_JSON

Started by traces.capture.CaptureSink, never by a person. It runs apart from the broker so that turning rows into
Arrow columns and Parquet takes neither the broker's event loop nor its interpreter lock: the broker only marshals
its records into the pipe. It reads messages (traces.capture_pipe) until STOP or the end of the pipe (the broker
gone), finishes the open file, and exits; between messages it rolls a file that has been open ``roll.ms``. What it
would log goes back to the broker as LOG messages, so it appears in the broker's log, configured as the broker's is.
"""

from __future__ import annotations

import gc
import json
import select
import sys
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from kafka_shim.traces import capture_pipe as pipe
from kafka_shim.traces.capture_files import Report, TraceFiles
from kafka_shim.traces.capture_settings import CaptureSettings
from kafka_shim.traces.format import DROPPED

# How often an idle writer checks whether the open file is due to roll.
IDLE_S = 1.0


def settings_argument(settings: CaptureSettings, source: str) -> str:
    """The SETTINGS_JSON argument: what the files need (the queue's bounds stay with the broker)."""
    return json.dumps({"directory": str(settings.directory), "roll_bytes": settings.roll_bytes,
                       "roll_ms": settings.roll_ms, "retention_bytes": settings.retention_bytes, "source": source})


def serve(in_fd: int, out_fd: int, settings: CaptureSettings, source: str) -> None:
    def report(level: str, event: str, fields: dict[str, Any]) -> None:
        pipe.send(out_fd, pipe.LOG, (level, event, fields))

    files = TraceFiles(settings, source, report)
    reported = 0

    def report_written() -> None:
        # Not after every batch: each message wakes the broker's reader thread, which then waits for the interpreter
        # lock the event loop holds (woken again at each of the loop's system calls).
        nonlocal reported
        if files.rows_written != reported:
            reported = files.rows_written
            pipe.send(out_fd, pipe.WRITTEN, reported)

    while True:
        if not select.select([in_fd], [], [], IDLE_S)[0]:
            _guarded(out_fd, files, report, 0, files.roll_if_expired)
            report_written()
            gc.collect()  # idle: the time to collect what cycles there were (main turns the collector off)
            continue
        message = pipe.read_message(in_fd)
        if message is None or message[0] == pipe.STOP:
            break
        kind, body = message
        if kind == pipe.ROWS:
            fields, block, dropped = body
            if not _guarded(out_fd, files, report, block.count, partial(files.write_block, fields, block, dropped)) and block.count:
                # The batch is lost with the failed write: a ``dropped`` row says so, in the next file.
                _guarded(out_fd, files, report, 0, partial(files.write, fields, [], _lost(block, dropped, source)))
        elif kind == pipe.SYNC:
            report_written()
            pipe.send(out_fd, pipe.SYNCED, body)
    _guarded(out_fd, files, report, 0, files.finish)
    report_written()


def _guarded(out_fd: int, files: TraceFiles, report: Report, rows: int, step: Callable[[], list[Path]]) -> bool:
    """Run a step of the files and announce the files it finished; a failure is logged, the file abandoned, and
    False returned."""
    try:
        finished = step()
    except Exception as exc:  # a full disk, a bad record: logged, and the next batch tried in a new file
        report("error", "capture_write_failed", {"directory": str(files.directory), "rows": rows, "error": str(exc)})
        files.abandon()
        return False
    for path in finished:
        pipe.send(out_fd, pipe.FINISHED, (str(path), files.finished_requests, files.finished_dropped))
    return True


def _lost(block: pipe.RecordBlock, dropped: dict[str, Any] | None, source: str) -> dict[str, Any]:
    """The ``dropped`` row for a batch whose write failed (and the ``dropped`` row it carried, if any)."""
    (since, until), count = block.time_range(), block.count
    if dropped is not None:
        since, until = min(since, dropped["time"]), max(until, dropped["dropped_until"])
        count += dropped["dropped_requests"]
    return {"kind": DROPPED, "time": since, "source": source, "dropped_requests": count, "dropped_until": until}


def main(argv: list[str]) -> int:
    # Every batch is tens of thousands of short-lived tuples without cycles: the collector would only walk them
    # (half of unmarshalling's time).
    gc.disable()
    in_fd, out_fd, raw = int(argv[0]), int(argv[1]), json.loads(argv[2])
    settings = CaptureSettings(Path(raw["directory"]), roll_bytes=raw["roll_bytes"], roll_ms=raw["roll_ms"],
                               retention_bytes=raw["retention_bytes"])
    try:
        serve(in_fd, out_fd, settings, raw["source"])
    except Exception as exc:  # a bug: said in the broker's log if the pipe still stands
        try:
            pipe.send(out_fd, pipe.LOG, ("error", "capture_writer_failed", {
                "directory": str(settings.directory), "error": repr(exc), "traceback": traceback.format_exc()}))
        except OSError:
            pass
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
