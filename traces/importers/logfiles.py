"""Reading Kafka's log4j files line by line: plain, gzip'd or rotated, with the line's timestamp and the problems.

Kafka counterpart: the layouts Kafka ships for its request and authorizer loggers. Kafka 3.9's
config/log4j.properties and Kafka 4's config/log4j2.yaml both use ``[%d] %p %m (%c)%n``; log4j's default ``%d`` is
``yyyy-MM-dd HH:mm:ss,SSS`` in the broker's local time zone, so a line reads
``[2026-11-23 17:38:33,534] DEBUG Completed request:{...} (kafka.request.logger)``. Both configurations roll the
files hourly to ``kafka-request.log.2026-11-23-17``; operators often gzip the old ones.

Prefixes that differ reasonably (an ISO ``T`` and ``.`` for milliseconds, an explicit zone such as ``Z`` or
``+01:00``, no brackets, a thread name, a JSON-lines shipper's prefix) read too: the timestamp is the first
date-time in the text before the message, and a zone written there wins over ``--timezone``.
"""

from __future__ import annotations

import datetime
import gzip
import io
import re
import sys
import time
import zlib
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kafka_shim.authorizer.library_logging import get_logger

log = get_logger("kafka_shim.traces.import")
_TIMESTAMP = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<time>\d{2}:\d{2}:\d{2})(?:[,.](?P<fraction>\d{1,9}))?"
    r"\s*(?P<zone>Z|[+-]\d{2}:?\d{2}|UTC)?")
_GZIP_MAGIC = b"\x1f\x8b"
# The number of bad-line examples kept for the report; the rest are only counted.
EXAMPLES = 20


class TimestampError(ValueError):
    pass


def parse_timestamp(prefix: str, zone: datetime.tzinfo) -> int:
    """Microseconds since the epoch (UTC) of the first date-time in ``prefix``; ``zone`` when it names none."""
    m = _TIMESTAMP.search(prefix)
    if m is None:
        raise TimestampError("no timestamp (yyyy-MM-dd HH:mm:ss,SSS) before the message")
    try:
        stamp = datetime.datetime.fromisoformat(f"{m['date']}T{m['time']}")
    except ValueError as exc:
        raise TimestampError(f"unreadable timestamp {m.group(0)!r} ({exc})") from None
    fraction = (m["fraction"] or "0")[:6].ljust(6, "0")
    stamp = stamp.replace(microsecond=int(fraction))
    text_zone = m["zone"]
    if text_zone in ("Z", "UTC"):
        tz: datetime.tzinfo = datetime.UTC
    elif text_zone:
        sign = -1 if text_zone[0] == "-" else 1
        digits = text_zone[1:].replace(":", "")
        tz = datetime.timezone(sign * datetime.timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
    else:
        tz = zone
    return _epoch_us(stamp.replace(tzinfo=tz))


def _epoch_us(stamp: datetime.datetime) -> int:
    delta = stamp - datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def timezone(name: str) -> datetime.tzinfo:
    """A ``--timezone`` value: an IANA name (Europe/Berlin), UTC, or an offset such as +01:00."""
    if name.upper() in ("UTC", "Z"):
        return datetime.UTC
    m = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", name)
    if m:
        sign = -1 if m[1] == "-" else 1
        return datetime.timezone(sign * datetime.timedelta(hours=int(m[2]), minutes=int(m[3])))
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r}: give an IANA name such as Europe/Berlin, UTC, or an offset "
                         "such as +01:00") from None


@dataclass
class Report:
    """What an import read and what it could not: counts, the first examples, per source."""

    files: int = 0
    lines: int = 0
    rows: int = 0
    bad_lines: int = 0
    skipped_lines: int = 0  # lines of other loggers or messages (server.log mixes them): not an error
    warnings: int = 0  # rows kept with less than the line held (an unknown API version: header fields only)
    examples: list[dict[str, Any]] = field(default_factory=list)
    warning_examples: list[dict[str, Any]] = field(default_factory=list)
    counts_by_reason: dict[str, int] = field(default_factory=dict)

    def bad(self, path: Path, line_no: int, reason: str, kind: str) -> None:
        """A line that could not be read at all: counted, the first EXAMPLES kept."""
        self.bad_lines += 1
        self.counts_by_reason[kind] = self.counts_by_reason.get(kind, 0) + 1
        if len(self.examples) < EXAMPLES:
            self.examples.append({"file": str(path), "line": line_no, "reason": reason})
            log.warning("import_line_unreadable", file=str(path), line=line_no, reason=reason, kind=kind,
                        hint="the line is skipped and counted; the import goes on")

    def warn(self, path: Path, line_no: int, reason: str, kind: str) -> None:
        """A line read into a row that lacks part of what it held."""
        self.warnings += 1
        self.counts_by_reason[kind] = self.counts_by_reason.get(kind, 0) + 1
        if len(self.warning_examples) < EXAMPLES:
            self.warning_examples.append({"file": str(path), "line": line_no, "reason": reason})
            log.info("import_line_partly_read", file=str(path), line=line_no, reason=reason, kind=kind)

    def as_dict(self) -> dict[str, Any]:
        return {"files": self.files, "lines": self.lines, "rows": self.rows, "bad_lines": self.bad_lines,
                "skipped_lines": self.skipped_lines, "warnings": self.warnings, "counts_by_reason": self.counts_by_reason,
                "bad_line_examples": self.examples, "warning_examples": self.warning_examples}


@dataclass(frozen=True, slots=True)
class Line:
    path: Path
    number: int  # 1-based
    text: str


class Progress:
    """Bytes read over the total: a self-updating line on a terminal, a plain line every 10 s otherwise."""

    def __init__(self, total_bytes: int, stream: IO[str] | None = None) -> None:
        self.total = max(total_bytes, 1)
        self.done = 0
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last = time.monotonic()
        self._interval = 0.5 if self.tty else 10.0

    def advance(self, n: int, what: str) -> None:
        self.done += n
        now = time.monotonic()
        if now - self._last >= self._interval:
            self._last = now
            self._show(what)

    def _show(self, what: str) -> None:
        percent = min(100.0, 100.0 * self.done / self.total)
        text = f"kafka-shim import: {percent:5.1f}% of {self.total / 1e6:.1f} MB ({what})"
        if self.tty:
            self.stream.write("\r" + text[:120].ljust(120))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\r" + " " * 120 + "\r")
            self.stream.flush()


def open_text(path: Path) -> tuple[IO[str], IO[bytes]]:
    """A log file as text (gzip'd by its magic bytes, whatever its name; UTF-8 with bad bytes replaced), and the
    file on disk beneath it (whose position is the progress)."""
    raw = path.open("rb")
    head = raw.peek(2)[:2]
    stream: IO[bytes] = gzip.GzipFile(fileobj=raw) if head == _GZIP_MAGIC else raw  # type: ignore[assignment]
    return io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline=""), raw


def read_lines(paths: list[Path], report: Report, progress: Progress | None = None) -> Iterator[Line]:
    """Every line of every file, numbered; a file that cannot be opened or a damaged gzip stream is a bad line."""
    for path in paths:
        report.files += 1
        number = 0
        try:
            text, disk = open_text(path)
            with text:
                done = 0
                for number, raw in enumerate(text, 1):
                    report.lines += 1
                    if progress is not None:
                        position = disk.tell()
                        progress.advance(position - done, path.name)
                        done = position
                    yield Line(path, number, raw.rstrip("\r\n"))
        except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
            report.bad(path, number + 1, f"cannot read the file further: {exc}", "unreadable_file")
