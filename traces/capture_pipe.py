"""The messages between a CaptureSink (in the broker's process) and its writer process, over two pipes.

A message is a kind byte, a 4-byte length and a ``marshal`` body: both ends run the same interpreter, and marshal
turns a plain tuple into bytes in one C call, the least the broker's process can spend per row. A ROWS message is
put together from records marshalled one by one as they arrive (``record``, ``rows_message``): a record kept as
bytes holds no object the garbage collector tracks, where thousands of queued tuples made the broker's collections
run ten times as often and walk them.
"""

from __future__ import annotations

import marshal
import os
import struct
from bisect import bisect_right
from itertools import accumulate
from typing import Any

# broker -> writer
ROWS = 1  # (fields, rows, dropped): rows are plain tuples in ``fields`` order; dropped the ``dropped`` row or None
SYNC = 3  # a sync marker's number: answered with SYNCED once everything before it is written
STOP = 4  # write what is left, finish the file, exit
# writer -> broker
WRITTEN = 11  # rows written so far (an int): when idle, before SYNCED and at the end, not per batch
FINISHED = 12  # (a finished file's path, request rows and dropped requests in finished files so far)
SYNCED = 13  # the marker's number
LOG = 14  # (level, event, fields) for the broker's log

_HEADER = struct.Struct(">BI")
# Buffers per writev call (Linux allows 1024).
_WRITEV = hasattr(os, "writev")
_IOV_MAX = 1024
# marshal's own encoding of a container's length (little-endian int32), after its type code.
_MARSHAL_COUNT = struct.Struct("<i")
# marshal's type codes for a tuple and a list, stable since marshal's first version.
_MARSHAL_TUPLE, _MARSHAL_LIST = b"(", b"["
# Version 2 writes no back-references (3 and later number shared objects per ``dumps`` call), so records marshalled
# apart can follow one list header and load as one list.
RECORD_VERSION = 2


def pack(kind: int, body: Any = None) -> bytes:
    data = marshal.dumps(body)
    return _HEADER.pack(kind, len(data)) + data


def record(row: tuple[Any, ...]) -> bytes:
    """One row, marshalled for a later ``rows_message`` (ValueError: a value marshal does not take)."""
    return marshal.dumps(row, RECORD_VERSION)


def record_row(record_bytes: bytes) -> tuple[Any, ...]:
    """A ``record`` back as its row (the sink reads the first and last times of a batch it could not send)."""
    return marshal.loads(record_bytes)


def rows_message(fields: tuple[str, ...], records: list[bytes], dropped: Any) -> list[bytes]:
    """The ROWS message (fields, rows, dropped) from rows already marshalled by ``record``, as the buffers to write
    one after the other (``write_all``): the list of rows is marshal's list header followed by the records as they
    are, so the broker's process neither converts nor copies them (the kernel copies them into the pipe)."""
    head = b"".join((_MARSHAL_TUPLE, _MARSHAL_COUNT.pack(3), marshal.dumps(tuple(fields), RECORD_VERSION),
                     _MARSHAL_LIST, _MARSHAL_COUNT.pack(len(records))))
    tail = marshal.dumps(dropped, RECORD_VERSION)
    size = len(head) + sum(map(len, records)) + len(tail)
    return [_HEADER.pack(ROWS, size) + head, *records, tail]


def send(fd: int, kind: int, body: Any = None) -> None:
    write_all(fd, pack(kind, body))


def write_all(fd: int, data: bytes | list[bytes]) -> None:
    """Write a buffer, or buffers one after the other, whole. Buffers go out in ``writev`` calls: the copying is the
    kernel's, done without the interpreter lock that the broker's event loop needs."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = [data]
    if not _WRITEV:
        data = [b"".join(data)]
    buffers: list[Any] = list(data)
    start = 0
    while start < len(buffers):
        chunk = buffers[start:start + _IOV_MAX]
        written = os.writev(fd, chunk) if _WRITEV else os.write(fd, chunk[0])
        ends = list(accumulate(map(len, chunk)))
        whole = bisect_right(ends, written)  # buffers written completely
        start += whole
        if whole < len(chunk):
            part = written - (ends[whole - 1] if whole else 0)
            if part:
                buffers[start] = memoryview(buffers[start])[part:]


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
