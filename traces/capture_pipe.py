"""The messages between a CaptureSink (in the broker's process) and its writer process, over two pipes.

A message is a kind byte, a 4-byte length and a ``marshal`` body: both ends run the same interpreter, and marshal
turns a plain tuple into bytes in one C call, the least the broker's process can spend per row. A ROWS message is
put together from records marshalled one by one as they arrive (``record``, ``rows_message``): a record kept as
bytes holds no object the garbage collector tracks, where thousands of queued tuples made the broker's collections
run ten times as often and walk them. Its body is not one marshal value: a short marshalled head (fields, the
``dropped`` row, the count), each record's length, then the records as they are, so that the writer can read the
broker's records column by column without unmarshalling them one by one (traces.capture_columns).
"""

from __future__ import annotations

import marshal
import os
import struct
from array import array
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

# broker -> writer
ROWS = 1  # (fields, RecordBlock, dropped): records of plain tuples in ``fields`` order; dropped the ``dropped`` row or None
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
# marshal's type code for a list, stable since marshal's first version.
_MARSHAL_LIST = b"["
# A ROWS body's first 4 bytes: the length of its marshalled head. Each record's length follows as a C int (32 bits
# wherever CPython runs: the reader takes them as int32s).
_HEAD_SIZE = struct.Struct("<I")
_LENGTH_SIZE = array("i").itemsize
# Version 2 writes no back-references (3 and later number shared objects per ``dumps`` call), so records marshalled
# apart can follow one list header and load as one list.
RECORD_VERSION = 2


@dataclass(frozen=True, slots=True)
class RecordBlock:
    """The records of a ROWS message as they came: ``data`` the records one after the other, ``lengths`` each one's
    size (native int32s, ``array("i")``)."""

    data: bytes | memoryview
    lengths: bytes | memoryview
    count: int

    def rows(self) -> list[tuple[Any, ...]]:
        """The records as tuples: a list header before them makes one marshal value of them all."""
        return marshal.loads(_MARSHAL_LIST + _MARSHAL_COUNT.pack(self.count) + bytes(self.data))

    def time_range(self) -> tuple[int, int]:
        """The first and the last record's time (time_us comes first in every record)."""
        sizes = array("i")
        sizes.frombytes(bytes(self.lengths))
        return marshal.loads(self.data[:sizes[0]])[0], marshal.loads(self.data[len(self.data) - sizes[-1]:])[0]


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
    """The ROWS message from rows already marshalled by ``record``, as the buffers to write one after the other
    (``write_all``): the head, the records' lengths, then the records as they are, so the broker's process neither
    converts nor copies them (the kernel copies them into the pipe)."""
    head = marshal.dumps((tuple(fields), dropped, len(records)), RECORD_VERSION)
    lengths = array("i", map(len, records)).tobytes()
    size = _HEAD_SIZE.size + len(head) + len(lengths) + sum(map(len, records))
    return [_HEADER.pack(ROWS, size) + _HEAD_SIZE.pack(len(head)) + head + lengths, *records]


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
    if kind == ROWS:
        return kind, rows_body(body)
    return kind, marshal.loads(body)


def rows_body(body: bytes) -> tuple[tuple[str, ...], RecordBlock, Any]:
    """A ROWS body as (fields, RecordBlock, dropped); the records stay in ``body`` (views, not copies)."""
    view = memoryview(body)
    (head_size,) = _HEAD_SIZE.unpack_from(body)
    start = _HEAD_SIZE.size + head_size
    fields, dropped, count = marshal.loads(view[_HEAD_SIZE.size:start])
    records = start + _LENGTH_SIZE * count
    return tuple(fields), RecordBlock(view[records:], view[start:records], count), dropped


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
