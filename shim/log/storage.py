"""Where partition logs keep their bytes: a tiny file-system interface with an in-memory twin.

Kafka's counterpart is the log directory (``log.dirs``) as ``LocalLog``/``LogSegment`` use it through
``FileRecords`` and the memory-mapped indexes: one directory per partition, ``<topic>-<partition>``, holding
plain files. Everything above this module (segments, indexes, retention, recovery) is written once against
:class:`Directory`, so :class:`MemoryStorage` (the default: a CI broker needs no disk) and :class:`FileStorage`
(``<log.dir>/<topic>-<partition>/...`` exactly as Kafka lays it out, so ``kafka-dump-log.sh`` reads it) behave the
same by construction. The shape follows kfake's ``fs``/``osFS``/``memFS`` and this project's ``AclStore`` /
``MemoryStore`` / ``SqliteAclStore``.

Durability: :meth:`Directory.append` hands bytes to the operating system (a ``write``); only :meth:`Directory.sync`
forces them to the device (``fsync``). When that happens is the flush policy's business (``log_manager``).
An ``OSError`` from the disk (ENOSPC, EIO) surfaces as :class:`~kafka_shim.shim.log.errors.StorageFailure`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from kafka_shim.shim.log.errors import StorageFailure


class Directory(Protocol):
    """One partition's directory: named files that grow at the end, are cut back, replaced whole or deleted."""

    name: str

    def list(self) -> list[str]:
        """The names of the files in the directory, sorted."""
        ...

    def exists(self, file: str) -> bool: ...

    def size(self, file: str) -> int:
        """The file's length in bytes; 0 for a file that does not exist."""
        ...

    def read(self, file: str, position: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``position`` (fewer at the end of the file)."""
        ...

    def append(self, file: str, data: bytes) -> None:
        """Add ``data`` at the end of the file, creating it if needed."""
        ...

    def truncate(self, file: str, size: int) -> None:
        """Cut the file back to ``size`` bytes."""
        ...

    def replace(self, file: str, data: bytes) -> None:
        """Write the whole file atomically: a reader sees the old content or the new, never a mix."""
        ...

    def delete(self, file: str) -> None:
        """Remove the file; a missing file is not an error."""
        ...

    def modified_ms(self, file: str) -> int:
        """When the file was last written, in epoch milliseconds (Kafka's ``lastModified``)."""
        ...

    def sync(self, file: str) -> None:
        """Force the file's bytes to the device (a no-op in memory)."""
        ...

    def close(self) -> None:
        """Release open handles; the files stay."""
        ...


class Storage(Protocol):
    """A log directory: partition directories by name."""

    def directories(self) -> list[str]:
        """The names of the directories present, sorted."""
        ...

    def open(self, name: str) -> Directory:
        """The directory ``name``, created if missing."""
        ...

    def root(self) -> Directory:
        """The log directory itself, for its own files (Kafka's checkpoint files)."""
        ...

    def remove(self, name: str) -> None:
        """Delete the directory and every file in it."""
        ...

    def close(self) -> None: ...


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


# ---------------------------------------------------------------------------------------------------------------------
# In memory


class MemoryDirectory:
    """Files as bytearrays; they last as long as the process."""

    def __init__(self, name: str, clock: Callable[[], int]) -> None:
        self.name = name
        self._clock = clock
        self._files: dict[str, bytearray] = {}
        self._modified: dict[str, int] = {}

    def list(self) -> list[str]:
        return sorted(self._files)

    def exists(self, file: str) -> bool:
        return file in self._files

    def size(self, file: str) -> int:
        data = self._files.get(file)
        return 0 if data is None else len(data)

    def read(self, file: str, position: int, size: int) -> bytes:
        data = self._files.get(file)
        return b"" if data is None else bytes(data[position : position + size])

    def append(self, file: str, data: bytes) -> None:
        self._files.setdefault(file, bytearray()).extend(data)
        self._modified[file] = self._clock()

    def truncate(self, file: str, size: int) -> None:
        data = self._files.setdefault(file, bytearray())
        del data[size:]
        self._modified[file] = self._clock()

    def replace(self, file: str, data: bytes) -> None:
        self._files[file] = bytearray(data)
        self._modified[file] = self._clock()

    def delete(self, file: str) -> None:
        self._files.pop(file, None)
        self._modified.pop(file, None)

    def modified_ms(self, file: str) -> int:
        return self._modified.get(file, 0)

    def sync(self, file: str) -> None:
        pass

    def close(self) -> None:
        pass


class MemoryStorage:
    """No data directory: the default, so a broker for CI needs no disk."""

    def __init__(self, clock: Callable[[], int] = _wall_clock_ms) -> None:
        self._clock = clock
        self._directories: dict[str, MemoryDirectory] = {}
        self._root = MemoryDirectory("", clock)

    def directories(self) -> list[str]:
        return sorted(self._directories)

    def open(self, name: str) -> MemoryDirectory:
        directory = self._directories.get(name)
        if directory is None:
            directory = self._directories[name] = MemoryDirectory(name, self._clock)
        return directory

    def root(self) -> MemoryDirectory:
        return self._root

    def remove(self, name: str) -> None:
        self._directories.pop(name, None)

    def close(self) -> None:
        pass


# ---------------------------------------------------------------------------------------------------------------------
# Files, in Kafka's layout


class FileDirectory:
    """``<log.dir>/<name>/``: plain files, written with ``write`` at the end and read with ``pread``.

    File descriptors stay open once used (a segment is read and appended many times) until :meth:`close`.
    """

    def __init__(self, path: Path) -> None:
        self.name = path.name
        self.path = path
        self._fds: dict[str, int] = {}

    def _fd(self, file: str) -> int:
        fd = self._fds.get(file)
        if fd is None:
            fd = self._fds[file] = os.open(self.path / file, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        return fd

    def list(self) -> list[str]:
        try:
            return sorted(entry.name for entry in os.scandir(self.path) if entry.is_file())
        except FileNotFoundError:
            return []

    def exists(self, file: str) -> bool:
        return (self.path / file).is_file()

    def size(self, file: str) -> int:
        try:
            return os.stat(self.path / file).st_size
        except FileNotFoundError:
            return 0

    def read(self, file: str, position: int, size: int) -> bytes:
        if not self.exists(file):
            return b""
        try:
            return os.pread(self._fd(file), size, position)
        except OSError as exc:
            raise StorageFailure(f"cannot read {self.path / file}: {exc.strerror}") from exc

    def append(self, file: str, data: bytes) -> None:
        try:
            fd = self._fd(file)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        except OSError as exc:
            raise StorageFailure(f"cannot write {self.path / file}: {exc.strerror}") from exc

    def truncate(self, file: str, size: int) -> None:
        try:
            os.ftruncate(self._fd(file), size)
        except OSError as exc:
            raise StorageFailure(f"cannot truncate {self.path / file}: {exc.strerror}") from exc

    def replace(self, file: str, data: bytes) -> None:
        # Written beside, synced, then renamed over: Kafka's atomicMoveWithFallback for partition.metadata.
        target = self.path / file
        temporary = self.path / f"{file}.tmp"
        self._forget(file)
        try:
            with open(temporary, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, target)
        except OSError as exc:
            raise StorageFailure(f"cannot write {target}: {exc.strerror}") from exc

    def delete(self, file: str) -> None:
        self._forget(file)
        try:
            os.unlink(self.path / file)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageFailure(f"cannot delete {self.path / file}: {exc.strerror}") from exc

    def modified_ms(self, file: str) -> int:
        try:
            return os.stat(self.path / file).st_mtime_ns // 1_000_000
        except FileNotFoundError:
            return 0

    def sync(self, file: str) -> None:
        if not self.exists(file):
            return
        try:
            os.fsync(self._fd(file))
        except OSError as exc:
            raise StorageFailure(f"cannot sync {self.path / file}: {exc.strerror}") from exc

    def close(self) -> None:
        for file in list(self._fds):
            self._forget(file)

    def _forget(self, file: str) -> None:
        fd = self._fds.pop(file, None)
        if fd is not None:
            os.close(fd)


class FileStorage:
    """``log.dirs`` (one directory): a partition is ``<root>/<topic>-<partition>/`` as Kafka writes it."""

    def __init__(self, root: Path | str) -> None:
        self.path = Path(root)
        self.path.mkdir(parents=True, exist_ok=True)
        self._open: dict[str, FileDirectory] = {}
        self._root = FileDirectory(self.path)

    def directories(self) -> list[str]:
        return sorted(entry.name for entry in os.scandir(self.path) if entry.is_dir())

    def open(self, name: str) -> FileDirectory:
        directory = self._open.get(name)
        if directory is None:
            path = self.path / name
            try:
                path.mkdir(exist_ok=True)
            except OSError as exc:
                raise StorageFailure(f"cannot create {path}: {exc.strerror}") from exc
            directory = self._open[name] = FileDirectory(path)
        return directory

    def root(self) -> FileDirectory:
        return self._root

    def remove(self, name: str) -> None:
        directory = self._open.pop(name, None) or FileDirectory(self.path / name)
        for file in directory.list():
            directory.delete(file)
        directory.close()
        try:
            os.rmdir(self.path / name)
        except FileNotFoundError:
            pass

    def close(self) -> None:
        for directory in self._open.values():
            directory.close()
        self._open.clear()
        self._root.close()
