"""The data directory's ``.lock``, as Kafka's LogManager takes it: one broker process per ``log.dirs`` directory.

Two brokers writing the same partition logs corrupt them (each appends at the offsets it believes are next). Kafka
holds an exclusive lock on ``<dir>/.lock`` while it runs and refuses to start when another process holds it; so does
kafka-shim. The lock is advisory (flock): it goes away with the process, a kill -9 included.
"""

from __future__ import annotations

import os
from pathlib import Path

try:
    import fcntl
except ImportError:  # not on POSIX: no lock, as before
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".lock"


class DataDirInUse(OSError):
    """Another process (or another broker in this one) holds the directory's lock."""


class DataDirLock:
    """An exclusive lock on ``<directory>/.lock``, held from :meth:`acquire` until :meth:`release`."""

    def __init__(self, directory: Path | str) -> None:
        self.path = Path(directory) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> DataDirLock:
        if fcntl is None or self._fd is not None:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise DataDirInUse(f"Failed to acquire lock on file {LOCK_FILE} in {self.path.parent}. A Kafka instance in another "
                               "process or thread is using this directory (stop it, or give this broker another "
                               "log.dirs / --data-dir)") from None
        self._fd = fd
        return self

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor drops the flock
