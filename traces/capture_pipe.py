"""The messages between a CaptureSink (in the broker's process) and its writer process, over two pipes.

A message is a kind byte, a 4-byte length and a ``marshal`` body: both ends run the same interpreter, and marshal
turns a batch of plain tuples into bytes in one C call, the least the broker's process can spend per row.
"""

from __future__ import annotations

import marshal
import os
import struct
from typing import Any

# broker -> writer
ROWS = 1  # (fields, rows, dropped): rows are plain tuples in ``fields`` order; dropped the ``dropped`` row or None
SYNC = 3  # a sync marker's number: answered with SYNCED once everything before it is written
STOP = 4  # write what is left, finish the file, exit
# writer -> broker
WRITTEN = 11  # rows written so far (an int)
FINISHED = 12  # (a finished file's path, request rows and dropped requests in finished files so far)
SYNCED = 13  # the marker's number
LOG = 14  # (level, event, fields) for the broker's log

_HEADER = struct.Struct(">BI")


def pack(kind: int, body: Any = None) -> bytes:
    data = marshal.dumps(body)
    return _HEADER.pack(kind, len(data)) + data


def send(fd: int, kind: int, body: Any = None) -> None:
    write_all(fd, pack(kind, body))


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_message(fd: int) -> tuple[int, Any] | None:
    """The next message, or None at the end of the pipe (the other side is gone)."""
    header = _read_exact(fd, _HEADER.size)
    if header is None:
        return None
    kind, size = _HEADER.unpack(header)
    body = _read_exact(fd, size)
    if body is None:
        return None
    return kind, marshal.loads(body)


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def widen(fd: int, size: int = 1 << 20) -> None:
    """A bigger pipe buffer (Linux): a batch passes in a few writes instead of many 64 KiB ones. Best effort."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
    except (ImportError, OSError):
        pass
