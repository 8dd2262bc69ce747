"""The authorizer log in its own file, laid out as Kafka's shipped log4j configuration writes kafka-authorizer.log:

    [2026-11-24 12:00:00,123] INFO Principal = User:alice is Denied operation = ... (kafka.authorizer.logger)

(PatternLayout ``[%d] %p %m (%c)%n``, local time; a DailyRollingFileAppender with DatePattern ``'.'yyyy-MM-dd-HH``:
at the first line of a new hour the file is renamed to ``kafka-authorizer.log.2026-11-24-11`` and a new one begun).
``level`` is the logger's: INFO writes denials, DEBUG grants too (Kafka ships INFO). Each line is flushed, as
log4j's appenders do, so the file can be followed while the broker runs. An AuditLog writes through it in place of
the library logger (``AuditLog(AuditFile(path))``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, TextIO

LEVELS = {"TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING, "ERROR": logging.ERROR,
          "OFF": logging.CRITICAL + 10}
_LOGGER = "kafka.authorizer.logger"


class AuditFileError(ValueError):
    """The file cannot be opened; the message names it and what to change."""


class AuditFile:
    """A logger-like sink for AuditLog: ``is_enabled_for``, ``info`` and ``debug`` with Kafka's line as the message."""

    def __init__(self, path: str | Path, level: str = "INFO") -> None:
        name = level.strip().upper()
        if name not in LEVELS:
            raise AuditFileError(f"authorizer log level {level!r}: use one of {', '.join(LEVELS)}")
        self.path = Path(path)
        self.level = LEVELS[name]
        self._lock = threading.Lock()  # the off-loop paths (large requests' handlers) may log too
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file: TextIO | None = open(self.path, "a", encoding="utf-8")
        except OSError as exc:
            raise AuditFileError(f"cannot write the authorizer log {self.path}: {exc.strerror or exc}; "
                                 "check kafka.shim.authorizer.log.file") from None
        self._hour = _hour(time.time())
        self._second = -1  # the last second stamped, and its text: strftime once a second, not once a line
        self._second_text = ""

    def is_enabled_for(self, level: int) -> bool:
        return level >= self.level

    def info(self, message: str, **_fields: Any) -> None:
        self._write("INFO", logging.INFO, message)

    def debug(self, message: str, **_fields: Any) -> None:
        self._write("DEBUG", logging.DEBUG, message)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def _write(self, name: str, level: int, message: str) -> None:
        if level < self.level:
            return
        now = time.time()
        second = int(now)
        with self._lock:
            if self._file is None:
                return
            if second != self._second:
                self._second, self._second_text = second, time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
                hour = _hour(now)
                if hour != self._hour:
                    self._roll(self._hour)
                    self._hour = hour
            stamp = f"{self._second_text},{int(now * 1000) % 1000:03d}"
            self._file.write(f"[{stamp}] {name} {message} ({_LOGGER})\n")
            self._file.flush()

    def _roll(self, previous_hour: str) -> None:
        assert self._file is not None
        self._file.close()
        try:
            os.replace(self.path, self.path.with_name(f"{self.path.name}.{previous_hour}"))
        except OSError:
            pass  # as log4j: a failed rename leaves the lines in the current file
        self._file = open(self.path, "a", encoding="utf-8")


def _hour(now: float) -> str:
    return time.strftime("%Y-%m-%d-%H", time.localtime(now))
