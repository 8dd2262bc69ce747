"""Where partition logs keep their bytes: a tiny file-system interface with an in-memory twin.

Kafka's counterpart is the log directory (``log.dirs``) as ``LocalLog``/``LogSegment`` use it through
``FileRecords`` and the memory-mapped indexes: one directory per partition, ``<topic>-<partition>``, holding
plain files. Everything above this module (segments, indexes, retention, recovery) is written once against
:class:`Directory`, so :class:`MemoryStorage` (the default: a CI broker needs no disk) and :class:`FileStorage`
(``<log.dir>/<topic>-<partition>/...`` exactly as Kafka lays it out, so ``kafka-dump-log.sh`` reads it) behave the
same by construction. The shape follows kfake's ``fs``/``osFS``/``memFS`` and this project's ``AclStore`` /
``MemoryStore`` / ``SqliteAclStore``.

In memory, a large append is copied into arenas of memory faulted in ahead of need (:mod:`.arena`; a fresh buffer per
batch would be faulted in on the event loop at ~1 ms per MiB), and a Fetch reads the stored bytes as views of them
(:meth:`Directory.read_view`), uncopied.

Durability: :meth:`Directory.append` hands bytes to the operating system (a ``write``); only :meth:`Directory.sync`
forces them to the device (``fsync``). When that happens is the flush policy's business (``log_manager``).
An ``OSError`` from the disk (ENOSPC, EIO) surfaces as :class:`~kafka_shim.shim.log.errors.StorageFailure`.
"""

from __future__ import annotations

import bisect
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from kafka_shim.shim.log.arena import ArenaPool, shared_pool
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

    def read_view(self, file: str, position: int, size: int) -> bytes | memoryview:
        """:meth:`read`, or a read-only view of bytes that will not change (the in-memory log's), uncopied."""
        ...

    def append(self, file: str, data: bytes | bytearray | memoryview | list[bytearray | memoryview]) -> None:
        """Add ``data`` (or the pieces of a list, in order) at the end of the file, creating it if needed. ``data``
        must not change afterwards (an in-memory directory without an arena pool keeps a large append rather than
        copying it)."""
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

    def rename(self, file: str, new_name: str) -> None:
        """Give the file another name, atomically, replacing any file of that name (a cleaned segment swapped in)."""
        ...

    def modified_ms(self, file: str) -> int:
        """When the file was last written, in epoch milliseconds (Kafka's ``lastModified``)."""
        ...

    def set_modified_ms(self, file: str, modified_ms: int) -> None:
        """Set the file's modification time (a cleaned segment keeps the time of the segments it replaced)."""
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


class _MemoryFile:
    """A file as the chunks appended to it: a large append is copied into warm arena memory (shim.log.arena) and kept
    as a view of it, joined to the previous chunk when it continues it in the same arena; small ones (index entries)
    go into a chunk of the file's own."""

    __slots__ = ("arena_end", "chunks", "ends", "own_tail", "pool", "size")

    def __init__(self, pool: ArenaPool | None = None) -> None:
        self.chunks: list[bytes | bytearray | memoryview] = []
        self.ends: list[int] = []  # where each chunk ends in the file
        self.size = 0
        self.own_tail = False  # the last chunk is this file's bytearray (small appends may extend it)
        self.pool = pool  # None: large appends are kept as the objects given (which must not change)
        self.arena_end: tuple[memoryview, int] | None = None  # the last chunk's arena and where it ends in it

    def append(self, data: bytes | bytearray | memoryview | list[bytearray | memoryview]) -> None:
        pieces = data if type(data) is list else [data]
        size = sum(map(len, pieces))
        if not size:
            return
        if size < _SMALL_APPEND:
            if not self.own_tail:
                self.chunks.append(bytearray())
                self.ends.append(self.size)
                self.own_tail, self.arena_end = True, None
            tail = self.chunks[-1]
            for piece in pieces:
                tail.extend(piece)  # type: ignore[union-attr]
            self.size += size
            self.ends[-1] = self.size
            return
        self.own_tail = False
        if self.pool is None:
            for piece in pieces:
                self.chunks.append(piece)
                self.size += len(piece)
                self.ends.append(self.size)
            return
        for arena, start, end in self.pool.store(pieces):
            last = self.arena_end
            if last is not None and last[0] is arena and last[1] == start:
                # The bytes continue the last chunk in its arena: one chunk, so a read of them needs no join.
                first = start - len(self.chunks[-1])
                self.chunks[-1] = arena[first:end]
            else:
                self.chunks.append(arena[start:end])
                self.ends.append(self.size)
            self.size += end - start
            self.ends[-1] = self.size
            self.arena_end = (arena, end)

    def read(self, position: int, size: int) -> bytes:
        end = min(position + size, self.size)
        if position >= end or position < 0:
            return b""
        first = bisect.bisect_right(self.ends, position)
        start = self.ends[first] - len(self.chunks[first])
        if end <= self.ends[first]:  # one chunk: one copy, through a view released at once (a viewed bytearray
            with memoryview(self.chunks[first]) as view:  # cannot grow)
                return bytes(view[position - start : end - start])
        views = []
        at, index = position, first
        try:
            while at < end:
                chunk = self.chunks[index]
                chunk_start = self.ends[index] - len(chunk)
                view = memoryview(chunk)
                views.append(view)
                views.append(view[at - chunk_start : min(end, self.ends[index]) - chunk_start])
                at = self.ends[index]
                index += 1
            return b"".join(views[1::2])
        finally:
            for view in reversed(views):
                view.release()

    def read_view(self, position: int, size: int) -> bytes | memoryview:
        """:meth:`read`, but bytes within one chunk that cannot change (arena memory, a kept buffer) come as a view
        of it, uncopied: a Fetch answer's records then reach the response frame with one copy fewer. A bytearray
        chunk (small appends, which extend it) is copied, as a view would stop it from growing."""
        end = min(position + size, self.size)
        if position >= end or position < 0:
            return b""
        first = bisect.bisect_right(self.ends, position)
        chunk = self.chunks[first]
        if end <= self.ends[first] and type(chunk) is not bytearray:
            start = self.ends[first] - len(chunk)
            return memoryview(chunk)[position - start : end - start]
        return self.read(position, size)

    def truncate(self, size: int) -> None:
        if size >= self.size:
            return
        keep = bisect.bisect_right(self.ends, size)  # chunks wholly below ``size``, then the one cut
        if keep < len(self.chunks):
            chunk = self.chunks[keep]
            cut = size - (self.ends[keep] - len(chunk))
            del self.chunks[keep + 1 :], self.ends[keep + 1 :]
            if cut:
                self.chunks[keep] = bytearray(memoryview(chunk)[:cut])
                self.ends[keep] = size
                self.own_tail = True
            else:
                del self.chunks[keep:], self.ends[keep:]
                self.own_tail = False
            self.arena_end = None
        self.size = size


# Appends below this size are copied into the file's own last chunk rather than kept as chunks of their own.
_SMALL_APPEND = 4096


class MemoryDirectory:
    """Files held in memory; they last as long as the process. A large append is copied into the arena ``pool``
    (warm memory); without one it is kept, not copied, and its caller must not change it afterwards."""

    def __init__(self, name: str, clock: Callable[[], int], pool: ArenaPool | None = None) -> None:
        self.name = name
        self._clock = clock
        self._pool = pool
        self._files: dict[str, _MemoryFile] = {}
        self._modified: dict[str, int] = {}

    def list(self) -> list[str]:
        return sorted(self._files)

    def exists(self, file: str) -> bool:
        return file in self._files

    def size(self, file: str) -> int:
        data = self._files.get(file)
        return 0 if data is None else data.size

    def read(self, file: str, position: int, size: int) -> bytes:
        data = self._files.get(file)
        return b"" if data is None else data.read(position, size)

    def read_view(self, file: str, position: int, size: int) -> bytes | memoryview:
        data = self._files.get(file)
        return b"" if data is None else data.read_view(position, size)

    def append(self, file: str, data: bytes | bytearray | memoryview | list[bytearray | memoryview]) -> None:
        target = self._files.get(file)
        if target is None:
            target = self._files[file] = _MemoryFile(self._pool)
        target.append(data)
        self._modified[file] = self._clock()

    def truncate(self, file: str, size: int) -> None:
        target = self._files.get(file)
        if target is None:
            target = self._files[file] = _MemoryFile(self._pool)
        target.truncate(size)
        self._modified[file] = self._clock()

    def replace(self, file: str, data: bytes) -> None:
        target = self._files[file] = _MemoryFile()
        target.append(bytes(data))
        self._modified[file] = self._clock()

    def delete(self, file: str) -> None:
        self._files.pop(file, None)
        self._modified.pop(file, None)

    def rename(self, file: str, new_name: str) -> None:
        moved = self._files.pop(file, None)
        if moved is None:
            raise StorageFailure(f"cannot rename {self.name}/{file}: no such file")
        self._files[new_name] = moved
        self._modified[new_name] = self._modified.pop(file, self._clock())

    def modified_ms(self, file: str) -> int:
        return self._modified.get(file, 0)

    def set_modified_ms(self, file: str, modified_ms: int) -> None:
        if file in self._files:
            self._modified[file] = modified_ms

    def sync(self, file: str) -> None:
        pass

    def close(self) -> None:
        pass


class MemoryStorage:
    """No data directory: the default, so a broker for CI needs no disk."""

    def __init__(self, clock: Callable[[], int] = _wall_clock_ms, pool: ArenaPool | None = None) -> None:
        """``pool``: where large appends are copied to (warm memory); by default the process's shared pool."""
        self._clock = clock
        self._pool = shared_pool() if pool is None else pool
        self._directories: dict[str, MemoryDirectory] = {}
        self._root = MemoryDirectory("", clock)

    def directories(self) -> list[str]:
        return sorted(self._directories)

    def open(self, name: str) -> MemoryDirectory:
        directory = self._directories.get(name)
        if directory is None:
            directory = self._directories[name] = MemoryDirectory(name, self._clock, self._pool)
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
        fd = self._fds.get(file)
        if fd is None:
            if not self.exists(file):  # opening would create it
                return b""
            fd = self._fd(file)
        try:
            return os.pread(fd, size, position)
        except OSError as exc:
            raise StorageFailure(f"cannot read {self.path / file}: {exc.strerror}") from exc

    def read_view(self, file: str, position: int, size: int) -> bytes:
        return self.read(file, position, size)

    def append(self, file: str, data: bytes | bytearray | memoryview | list[bytearray | memoryview]) -> None:
        try:
            fd = self._fd(file)
            for piece in data if type(data) is list else [data]:
                view = memoryview(piece)
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

    def rename(self, file: str, new_name: str) -> None:
        # The descriptor stays valid across the rename; it is filed under the new name.
        fd = self._fds.pop(file, None)
        self._forget(new_name)
        try:
            os.replace(self.path / file, self.path / new_name)
        except OSError as exc:
            if fd is not None:
                os.close(fd)
            raise StorageFailure(f"cannot rename {self.path / file} to {new_name}: {exc.strerror}") from exc
        if fd is not None:
            self._fds[new_name] = fd

    def set_modified_ms(self, file: str, modified_ms: int) -> None:
        try:
            os.utime(self.path / file, ns=(modified_ms * 1_000_000, modified_ms * 1_000_000))
        except OSError as exc:
            raise StorageFailure(f"cannot set the modification time of {self.path / file}: {exc.strerror}") from exc

    def sync_directory(self) -> None:
        """fsync the directory itself, so renames in it survive a crash."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)

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
