"""The produce path's fast record scans: a batch whose records a producer wrote alike, checked without walking them
one by one (``validator.py`` calls them and falls back to its exact record walk whenever they step aside).

Both scans accept exactly what DefaultRecord.readFrom would parse from the same bytes, and nothing else: the
regular-expression scan for records of one shape, and the fixed-layout scan (strided slices) for the runs of
same-sized records a producer writes in one go. Randomized tests (tests/shim/partitions/test_validator_uniform_scan.py)
compare both with the walk.
"""

from __future__ import annotations

import re
from functools import lru_cache

from kafka_shim.protocol.primitives import write_varlong


def uvarint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result, shift = b & 0x7F, 7
    while True:
        pos += 1
        b = buf[pos]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos + 1
        shift += 7
        if shift > 63:
            raise IndexError("varint too long")


# -- the uniform fast path: records a producer writes alike, read by the regular-expression engine ------------------
#
# A producer's batch usually holds records of one shape: the same key size (or none), the same value size, no
# headers. For such a batch the record walk above is a regular language: each record is its length varint, the
# attributes byte, a timestamp-delta varint of 1-3 bytes, an offset-delta varint of 1-3 bytes, the key, the value and
# a header count of 0, where the length must equal the bytes that follow it. With one alternative per pair of varint
# widths (nine), the record length is tied to the widths, and ``re`` (in C) checks the structure of every record at a
# fraction of the cost of the loop. The alternatives are unambiguous (a varint's width is in its continuation bits,
# and different lengths have different length bytes), so a full match is exactly the parse DefaultRecord.readFrom
# makes. Anything else (other shapes, headers, a broken record) goes to the exact walk, which gives Kafka's refusals.

_MAX_UNIFORM_FIELD = 1 << 20  # larger keys or values: the walk (a few records, cheap anyway)


def _varint_of_width(width: int) -> bytes:
    return rb"[\x80-\xff]" * (width - 1) + rb"[\x00-\x7f]"


def _field_pattern(size: int) -> tuple[bytes, int]:
    """A key or value of ``size`` bytes (-1: null): its pattern and how many bytes it takes."""
    length = write_varlong(size)
    if size < 0:
        return re.escape(length), len(length)
    return re.escape(length) + (rb".{%d}" % size if size else b""), len(length) + size


@lru_cache(maxsize=64)
def _uniform_patterns(key_size: int, value_size: int) -> tuple[re.Pattern[bytes], re.Pattern[bytes], re.Pattern[bytes]]:
    """For records of this shape: (the whole records section; one record, its timestamp delta the group; one record,
    its offset delta the group). The group is read by a lookahead, so that ``findall`` answers plain bytes; the last
    two only step from record to record, so they are for a section the first matched."""
    key, key_bytes = _field_pattern(key_size)
    value, value_bytes = _field_pattern(value_size)
    alternatives: list[bytes] = []
    lengths: dict[bytes, int] = {}  # a record's length bytes (escaped): the length
    for ts_width in (1, 2, 3):
        for offset_width in (1, 2, 3):
            record_length = 1 + ts_width + offset_width + key_bytes + value_bytes + 1
            length = re.escape(write_varlong(record_length))
            lengths[length] = record_length
            alternatives.append(length + rb"." + _varint_of_width(ts_width) + _varint_of_width(offset_width) + key + value + rb"\x00")
    record = rb"(?:" + rb"|".join(alternatives) + rb")"
    length = rb"(?:" + rb"|".join(sorted(lengths)) + rb")."
    varint = rb"[\x80-\xff]{0,2}[\x00-\x7f]"
    # Once the whole section matched, a record only needs stepping over: its length bytes, then that many bytes.
    step = rb"(?:" + rb"|".join(sorted(b + rb".{%d}" % v for b, v in lengths.items())) + rb")"
    return (re.compile(record + rb"*", re.DOTALL),
            re.compile(rb"(?=" + length + rb"(" + varint + rb"))" + step, re.DOTALL),
            re.compile(rb"(?=" + length + varint + rb"(" + varint + rb"))" + step, re.DOTALL))


@lru_cache(maxsize=16)
def _offset_deltas_in_order(count: int) -> bytes:
    return b"".join(write_varlong(i) for i in range(count))


def _field_size(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    raw, pos = uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def scan_uniform(buf: bytes | memoryview, count: int, want_order: bool,
                  backing: tuple[bytes, int] | None = None) -> tuple[int, int, bool] | None:
    """(smallest timestamp delta, largest, offset deltas 0, 1, 2...) when every record has the first one's shape and
    the structure is whole; None to leave the batch to the walk. ``want_order``: whether the offset order matters
    (a compressed batch kept in place); when it does not, it is not read and reported as in order. ``backing``:
    a bytes object and the position in it where ``buf``'s bytes start and run to its end, when there is one."""
    try:
        pos = uvarint(buf, 0)[1]  # the first record: its length, attributes, deltas, then the key and value sizes
        pos = uvarint(buf, uvarint(buf, pos + 1)[1])[1]
        key_size, pos = _field_size(buf, pos)
        pos += max(key_size, 0)
        value_size, _ = _field_size(buf, pos)
    except IndexError:
        return None
    if not -1 <= key_size <= _MAX_UNIFORM_FIELD or not -1 <= value_size <= _MAX_UNIFORM_FIELD:
        return None
    if backing is None:
        # One copy into bytes, whose strided slices are a tight loop (a strided view's copy goes element by element).
        backing = (buf if type(buf) is bytes else bytes(buf), 0)  # type: ignore[assignment]
    fixed = scan_fixed(*backing, count, want_order, key_size, value_size)
    if fixed is not None:
        return fixed
    whole, by_timestamp, by_offset = _uniform_patterns(key_size, value_size)
    if whole.fullmatch(buf) is None:
        return None
    deltas = by_timestamp.findall(buf)
    if len(deltas) != count:
        return None
    low = high = 0
    for index, encoded in enumerate(set(deltas)):
        raw, _ = uvarint(encoded, 0)
        delta = (raw >> 1) ^ -(raw & 1)
        if index == 0 or delta < low:
            low = delta
        if index == 0 or delta > high:
            high = delta
    in_order = True
    if want_order:
        # Varints delimit themselves, so the concatenated deltas equal the canonical 0, 1, 2... only when each does;
        # any other spelling (a non-canonical varint) is left to the walk.
        found = b"".join(by_offset.findall(buf))
        if found != _offset_deltas_in_order(count):
            return None
    return low, high, in_order


# -- the fixed-layout fast path: the uniform records a producer writes in one go ------------------------------------
#
# Records of one shape (the first record's key and value sizes, no headers) whose offset deltas are 0, 1, 2... in
# canonical varints, as librdkafka, the Java client and the others write them, fall into a few runs of records of
# one size: the offset delta takes 1 byte for records 0-63, 2 up to 8191, 3 beyond, and the timestamp delta 1 byte
# up to 63 ms from the first record, 2 up to 8191 ms. Within a run record i starts at a known position, and each
# field of all its records is one strided slice of the buffer (``buf[at::stride]``, in C): the length bytes, the key
# and value sizes and the header count must equal the run's, each timestamp and offset delta must be a varint of the
# run's width (for a compressed batch, the canonical offset itself), and the runs must end exactly at the end of the
# buffer. That is the parse DefaultRecord.readFrom makes of those bytes, at a few slices per run instead of a regex
# step per record. Anything else (wider deltas, more than _MAX_RUNS runs, any field that differs) is left to the
# regular expressions above, which give the same answers, only slower.

_OFFSET_WIDTHS = ((1, 0, 64), (2, 64, 8192), (3, 8192, 1 << 21))  # canonical zigzag varint width of offset deltas
_MAX_RUNS = 16
_HIGH_BYTES = bytes(range(0x80, 0x100))
_LOW_BYTES = bytes(range(0x80))
_FIRST_HIGH = re.compile(rb"[\x80-\xff]")
_FIRST_LOW = re.compile(rb"[\x00-\x7f]")
_NO_CONTINUATION = bytes(b & 0x7F for b in range(256))


@lru_cache(maxsize=64)
def _canonical_offset_bytes(width: int, first: int, count: int) -> tuple[bytes, ...]:
    """Byte k of the canonical varints of offset deltas first..first+count-1, one bytes object per k."""
    encoded = [write_varlong(i) for i in range(first, first + count)]
    return tuple(bytes(e[k] for e in encoded) for k in range(width))


def _first(pattern: re.Pattern[bytes], data: bytes, limit: int) -> int:
    """Where ``pattern`` first matches one byte of ``data``, or ``limit`` when it does not."""
    found = pattern.search(data)
    return limit if found is None else found.start()


def _zigzag_values(data: bytes, at: int, stop: int, stride: int, width: int) -> set[int]:
    """The distinct unsigned values of the ``width``-byte varints at ``at``, ``at + stride``... before ``stop``."""
    if width == 1:
        return set(data[at:stop:stride])
    low = data[at:stop:stride].translate(_NO_CONTINUATION)
    return {lo | hi << 7 for lo, hi in set(zip(low, data[at + 1 : stop : stride], strict=True))}


def _zigzag(raw: int) -> int:
    return -((raw + 1) >> 1) if raw & 1 else raw >> 1


def _delta_bounds(data: bytes, at: int, stop: int, stride: int, width: int) -> tuple[int, int]:
    """The smallest and largest timestamp delta of a run (zigzag varints of ``width`` bytes at ``at``,
    ``at + stride``... before ``stop``). Producers stamp records in order, so the first record's delta is usually the
    smallest and the last one's the largest: that is checked for all records at once, in C (a translation for one-byte
    deltas, 16-bit lanes of one big integer for two-byte ones), and only otherwise are the values collected one by
    one (a tuple and a hash per record: about a millisecond for the 9,000 records of a megabyte request)."""
    first = data[at] if width == 1 else (data[at] & 0x7F) | data[at + 1] << 7
    last_at = at + (len(range(at, stop, stride)) - 1) * stride
    last = data[last_at] if width == 1 else (data[last_at] & 0x7F) | data[last_at + 1] << 7
    low, high = _zigzag(first), _zigzag(last)
    if 0 <= low <= high and (_bytes_within(data[at:stop:stride], low, high) if width == 1
                             else _pairs_within(data, at, stop, stride, low, high)):
        return low, high
    decoded = [_zigzag(raw) for raw in _zigzag_values(data, at, stop, stride, width)]
    return min(decoded), max(decoded)


@lru_cache(maxsize=1024)
def _raws_between(low: int, high: int) -> bytes:
    """The one-byte zigzag varints of the deltas low..high (both non-negative): even raws 2*low..2*high."""
    return bytes(range(2 * low, 2 * high + 1, 2))


def _bytes_within(part: bytes, low: int, high: int) -> bool:
    return not part.translate(None, _raws_between(low, high))


def _pairs_within(data: bytes, at: int, stop: int, stride: int, low: int, high: int) -> bool:
    """Whether every two-byte varint of the run holds a delta in low..high (both non-negative). Each varint becomes a
    16-bit lane of one integer, its first byte's low seven bits below, its second byte (under 0x80) above: for even
    raws (the non-negative deltas) the lanes are in the deltas' order. Adding one constant to every lane then sets a
    lane's top bit exactly where it is beyond a bound, with no carry into the next lane (a lane is at most 0x7F7F)."""
    firsts = data[at:stop:stride].translate(_NO_CONTINUATION)
    count = len(firsts)
    lanes = bytearray(2 * count)
    lanes[0::2] = firsts
    lanes[1::2] = data[at + 1 : stop : stride]
    value = int.from_bytes(lanes, "little")
    ones = int.from_bytes(b"\x01\x00" * count, "little")
    tops = ones << 15
    if value & ones:  # an odd raw: a negative delta
        return False
    low_key, high_key = _lane_key(2 * low), _lane_key(2 * high)
    above_high = (value + (0x7FFF - high_key) * ones) & tops
    at_least_low = (value + (0x8000 - low_key) * ones) & tops
    return not above_high and at_least_low == tops


def _lane_key(raw: int) -> int:
    return (raw & 0x7F) | (raw >> 7) << 8


def scan_fixed(data: bytes, start: int, count: int, want_order: bool, key_size: int,
                value_size: int) -> tuple[int, int, bool] | None:
    """(smallest timestamp delta, largest, True) when the records in ``data[start:]`` fall into runs of the fixed
    layout above; None otherwise."""
    end_of_data = len(data)
    key_field, value_field = write_varlong(key_size), write_varlong(value_size)
    key_bytes = len(key_field) + max(key_size, 0)
    value_bytes = len(value_field) + max(value_size, 0)
    at, index, runs = start, 0, 0
    low: int | None = None
    high: int | None = None
    while index < count:
        runs += 1
        if runs > _MAX_RUNS:
            return None
        offset_width, _, last = next(w for w in _OFFSET_WIDTHS if w[1] <= index < w[2])
        # The timestamp delta's width, from this record's bytes: its length varint, then the attributes byte.
        for ts_width in (1, 2):
            record_length = 1 + ts_width + offset_width + key_bytes + value_bytes + 1
            length = write_varlong(record_length)
            ts_at = at + len(length) + 1
            if (data[at : at + len(length)] == length and ts_at + ts_width <= end_of_data
                    and data[ts_at + ts_width - 1] < 0x80 and (ts_width == 1 or data[ts_at] >= 0x80)):
                break
        else:
            return None
        stride = len(length) + record_length
        many = min(count, last, index + (end_of_data - at) // stride) - index
        if many <= 0:
            return None
        # The run goes on while the timestamp deltas keep this width.
        stop = at + many * stride
        if ts_width == 1:
            many = _first(_FIRST_HIGH, data[ts_at:stop:stride], many)
        else:
            many = min(_first(_FIRST_LOW, data[ts_at:stop:stride], many), _first(_FIRST_HIGH, data[ts_at + 1 : stop : stride], many))
        if many == 0:  # (the width was read from this record, so it is at least one; the bounds below need one)
            return None
        stop = at + many * stride
        # Fixed bytes of every record of the run: its length, the key's size, the value's size, the header count of 0.
        fields = len(length) + 1 + ts_width + offset_width
        for offset, expected in ((0, length), (fields, key_field), (fields + key_bytes, value_field), (stride - 1, b"\x00")):
            for k, byte in enumerate(expected):
                if data[at + offset + k : stop : stride] != bytes((byte,)) * many:
                    return None
        offset_at = ts_at + ts_width
        if want_order:
            for k, expected_bytes in enumerate(_canonical_offset_bytes(offset_width, index, many)):
                if data[offset_at + k : stop : stride] != expected_bytes:
                    return None
        else:  # any value, but a varint of exactly this width: continuation bits on all bytes but the last
            for k in range(offset_width):
                part = data[offset_at + k : stop : stride]
                if (part.translate(None, _HIGH_BYTES) if k < offset_width - 1 else not part.isascii()):
                    return None
        run_low, run_high = _delta_bounds(data, ts_at, stop, stride, ts_width)
        low = run_low if low is None else min(low, run_low)
        high = run_high if high is None else max(high, run_high)
        at, index = stop, index + many
    if at != end_of_data or low is None or high is None:
        return None
    return low, high, True
