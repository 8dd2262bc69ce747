"""The broker's marshalled records (shim.tap.TappedRequest) read column by column, without unmarshalling each one.

The capture writer process gets a batch of records as marshal wrote them on the broker's event loop (``marshal``
version 2: no back-references, so every record has the same shape). Unmarshalling them into tuples and taking the
tuples apart again cost the writer more than the Parquet encoding; here numpy walks the nine fields of every record
at once (one step per field, not per row), Arrow cuts the byte fields out of the batch in one call each, and only the
values that repeat (a connection's fields, the decisions a client's requests ask) are unmarshalled, once per
distinct value.

Anything off the usual shape (a session given as a tuple, an integer beyond 60 bits, text that is not UTF-8, a
config-altering request whose body must be redacted, a batch across midnight UTC) gives None, and the writer takes
the batch through the row-by-row path (traces.capture_rows.tapped_rows), which handles every case; the two agree on
every batch both take (tests/traces/test_capture_columns.py).
"""

from __future__ import annotations

import marshal

import numpy as np
import pyarrow as pa

from kafka_shim.traces.capture_pipe import RecordBlock
from kafka_shim.traces.capture_rows import (
    SESSION_FIELDS,
    config_altering,
    decisions_array,
    first_frames,
    header_columns,
    session_columns,
    table_of,
)
from kafka_shim.traces.format import CAPTURE, SCHEMA

# marshal's type codes (stable since its first versions).
_TUPLE, _LIST, _NONE = ord("("), ord("["), ord("N")
_INT, _LONG = ord("i"), ord("l")
_BYTES, _TEXT, _INTERNED_TEXT = ord("s"), ord("u"), ord("t")
_BYTE_CODES = (_BYTES,)
_TEXT_CODES = (_TEXT, _INTERNED_TEXT)
_SEQUENCE_CODES = (_LIST, _TUPLE)
# The broker's record: a 9-tuple (shim.tap.TappedRequest).
_RECORD_LENGTH = 9
# marshal writes an int beyond 32 bits as 15-bit digits; four of them (60 bits) hold any time in microseconds.
_MAX_DIGITS = 4
_DAY_US = 86_400_000_000
_TIME = SCHEMA.field("time").type
# Arrow's binary offsets are 32-bit: a larger batch takes the row path.
_MAX_DATA = 2**31 - 1


class _OffShape(Exception):
    """A record this reader does not take: the row path will."""


def broker_table(block: RecordBlock, source: str = CAPTURE) -> pa.Table | None:
    """The broker's records as trace rows, or None when the batch is off the usual shape (see the module's
    docstring) or crosses midnight UTC: the caller then takes ``block.rows()`` through ``tapped_rows``."""
    n = block.count
    if n == 0 or len(block.data) > _MAX_DATA:
        return None
    try:
        return _table(block, n, source)
    except (_OffShape, pa.ArrowInvalid, ValueError, TypeError, EOFError, IndexError):
        return None


def _table(block: RecordBlock, n: int, source: str) -> pa.Table | None:
    buf = np.frombuffer(block.data, np.uint8)
    lengths = np.frombuffer(block.lengths, np.int32, count=n).astype(np.int64)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    if (lengths < 6).any() or (buf[starts] != _TUPLE).any() or (_int32(buf, starts + 1) != _RECORD_LENGTH).any():
        raise _OffShape
    at = starts + 5
    times, at = _integers(buf, at)
    if (times // _DAY_US != times[0] // _DAY_US).any():
        return None  # split at midnight by the row path
    session, at = _span(buf, at, _BYTE_CODES)
    principal, at = _span(buf, at, _TEXT_CODES)
    request, at = _span(buf, at, _BYTE_CODES)
    header, at = _span(buf, at, _BYTE_CODES)
    answer, at = _span(buf, at, _BYTE_CODES)
    outcome, at = _span(buf, at, _TEXT_CODES)
    response_times, at = _integers(buf, at)
    if (at >= ends).any() or not _one_of(buf[at], _SEQUENCE_CODES).all():
        raise _OffShape
    decisions = (at, ends - at, np.zeros(n, np.bool_))  # the last field: the rest of each record

    data = pa.py_buffer(block.data)
    requests = _binary(data, request)
    built = {"request": requests, "response": first_frames(_binary(data, answer)),
             "principal": _binary(data, principal).cast(pa.string()),
             "outcome": _binary(data, outcome).cast(pa.string()),
             "time": pa.array(times, pa.int64()).cast(_TIME), "response_time_us": pa.array(response_times, pa.int64())}
    built["api_key"], built["api_version"], built["correlation_id"], built["client_id"] = header_columns(
        requests, _binary(data, header))
    if config_altering(built["api_key"]):
        return None  # their bodies are redacted by the row path
    if session[2].any():
        raise _OffShape
    built.update(_distinct_sessions(_binary(data, session)))
    built["decisions"] = _distinct_decisions(_binary(data, decisions))
    return table_of({}, built, n, source)


def _distinct_sessions(sessions: pa.Array) -> dict[str, pa.Array]:
    """A batch holds the requests of a few connections: each distinct session is unmarshalled once."""
    encoded = sessions.dictionary_encode()
    distinct = [marshal.loads(s) for s in encoded.dictionary.to_pylist()]
    if any(type(s) is not tuple or len(s) != len(SESSION_FIELDS) for s in distinct):
        raise _OffShape
    return session_columns(distinct, encoded.indices)


def _distinct_decisions(blobs: pa.Array) -> pa.Array:
    """A batch asks the same few questions again and again: each distinct list of decisions is unmarshalled once."""
    encoded = blobs.dictionary_encode()
    distinct = tuple(marshal.loads(b) for b in encoded.dictionary.to_pylist())
    if any(type(d) not in (list, tuple) or any(type(x) is not tuple or len(x) != 8 for x in d) for d in distinct):
        raise _OffShape
    return decisions_array(distinct).take(encoded.indices)


def _one_of(code: np.ndarray, codes: tuple[int, ...]) -> np.ndarray:
    found = code == codes[0]
    for other in codes[1:]:
        found |= code == other
    return found


def _int32(buf: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The little-endian int32 at each position: gathered from a view of the batch with a one-byte stride, an int32
    starting at every byte."""
    words = np.ndarray((len(buf) - 3,), "<i4", buffer=buf, strides=(1,))
    return words[at].astype(np.int64)


def _integers(buf: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An int field of every record ('i': 32 bits; 'l': marshal's 15-bit digits, up to _MAX_DIGITS), and where the
    next field starts."""
    code = buf[at]
    short, long_ = code == _INT, code == _LONG
    if not (short | long_).all():
        raise _OffShape
    values = _int32(buf, at + 1)  # an 'i''s value, an 'l''s signed digit count
    following = at + 5
    if long_.any():
        rows = np.flatnonzero(long_)
        count = values[rows]
        digits = np.abs(count)
        if (digits > _MAX_DIGITS).any() or (digits == 0).any():
            raise _OffShape
        first = at[rows] + 5
        total = np.zeros(len(rows), np.int64)
        halves = np.ndarray((len(buf) - 1,), "<u2", buffer=buf, strides=(1,))  # a uint16 starting at every byte
        last = len(halves) - 1
        for k in range(_MAX_DIGITS):
            digit = halves[np.minimum(first + 2 * k, last)].astype(np.int64)  # rows with fewer digits drop theirs
            total += np.where(digits > k, digit << (15 * k), 0)
        values[rows] = np.where(count < 0, -total, total)
        following[rows] = first + 2 * digits
    return values, following


def _span(buf: np.ndarray, at: np.ndarray, codes: tuple[int, ...]) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """A bytes or text field of every record, None allowed: (where its value starts, its length, whether None), and
    where the next field starts."""
    if (at >= len(buf) - 4).any():
        raise _OffShape
    code = buf[at]
    none = code == _NONE
    if not (none | _one_of(code, codes)).all():
        raise _OffShape
    length = np.where(none, 0, _int32(buf, at + 1))
    if (length < 0).any():
        raise _OffShape
    start = np.where(none, at + 1, at + 5)
    return (start, length, none), start + length


def _binary(data: pa.Buffer, span: tuple[np.ndarray, np.ndarray, np.ndarray]) -> pa.Array:
    """The spans' bytes as one binary array (null where None). The spans lie in order in ``data``: as a binary array
    of 2n values over it, the spans and the gaps between them alternate, and taking every other value copies the
    spans out in one call."""
    start, length, none = span
    n = len(start)
    offsets = np.empty(2 * n + 1, np.int32)
    offsets[0:2 * n:2] = start
    offsets[1:2 * n:2] = start + length
    offsets[2 * n] = start[-1] + length[-1]
    validity = None
    if none.any():
        valid = np.ones(2 * n, np.bool_)
        valid[0::2] = ~none
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
    interleaved = pa.Array.from_buffers(pa.binary(), 2 * n, [validity, pa.py_buffer(offsets), data])
    return interleaved.take(pa.array(np.arange(0, 2 * n, 2, dtype=np.int64)))
