"""Progress of an audit: a one-line bar on a terminal, structured log lines otherwise (CI, files)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from kafka_shim.authorizer.library_logging import get_logger

log = get_logger("kafka_shim.traces.audit")


def progress_reporter(stream=None) -> Callable[[str, int, int], None]:
    """``report(stage, done, total)``: redraws a bar on a TTY; logs each stage's start and end otherwise."""
    out = stream or sys.stderr
    tty = hasattr(out, "isatty") and out.isatty()
    started = time.monotonic()
    last: dict[str, float] = {}

    def report(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if tty:
            if done < total and now - last.get(stage, 0) < 0.2:
                return
            last[stage] = now
            width = 30
            filled = width * done // total if total else width
            out.write(f"\r{stage:<8} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {now - started:6.1f}s")
            if done >= total:
                out.write("\n")
            out.flush()
        elif done == 0 or done >= total:
            log.info("audit_progress", stage=stage, done=done, total=total, seconds=round(now - started, 2))

    return report
