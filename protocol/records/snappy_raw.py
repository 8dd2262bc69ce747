"""Raw snappy compression that writes the bytes Google snappy 1.1.10 writes (the snappy inside snappy-java
1.1.10.5, Kafka 3.9's snappy compressor), written from the algorithm its snappy.cc describes.

Why not just cramjam: the Rust snap crate behind it follows the same algorithm but picks hash-table slots from the
top bits of the 32-bit product, while snappy 1.1.10 takes bits 18 to 31 of it and masks them down to the table
size. The two agree only when the table has its full 16,384 slots, that is for fragments longer than 8,192 bytes;
below that they pick other matches, and Kafka's bytes differ. So :func:`compress_raw` hands such long fragments to
a native compressor when it is given one (``large``, cramjam's), and compresses the others here.

The algorithm (snappy.cc, CompressFragment): the input is cut into 64 KiB fragments, each compressed on its own with
a fresh table of 16-bit positions sized to the fragment (the next power of two, within [256, 16384]); every slot
starts at 0, so position 0 is a candidate for every hash. From each literal's start the scan probes one byte after
it, then every byte, stepping further after every 32 misses; a 4-byte match is extended as far as it goes, emitted
as copies of at most 64 bytes, and at its end the positions end-1 and end are hashed in, then end is tried again.
The last 15 bytes of a fragment are never probed: they end up in the final literal.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Sequence

FRAGMENT_SIZE = 1 << 16  # kBlockSize: snappy compresses 64 KiB at a time, each fragment with its own table
_MIN_TABLE = 1 << 8
_MAX_TABLE = 1 << 14
# Fragments of this length or more get the largest table, where cramjam (snap) hashes as snappy 1.1.10 does
# (measured: equal bytes on every such fragment tried, different ones on about two in three shorter ones).
NATIVE_MIN_FRAGMENT = _MAX_TABLE // 2 + 1
_INPUT_MARGIN = 15  # kInputMarginBytes: no match starts in a fragment's last 15 bytes
_HASH_MULTIPLIER = 0x1E35A7BD
_HASH_SHIFT = 18  # (product >> 17) is a byte offset into a table of uint16: slot = product >> 18, masked
_TYPECODES = {size: next(code for code in "HILQ" if array(code).itemsize == size) for size in (4, 8)}

LITERAL, COPY_1, COPY_2 = 0, 1, 2


def compress_raw(data: bytes, large: Callable[[bytes], object] | None = None) -> bytes:
    """``data`` as one raw snappy block (varint length, then each fragment's elements), byte for byte as snappy
    1.1.10 compresses it. ``large``, if given, is a raw snappy compressor (``cramjam.snappy.compress_raw``) that
    cuts fragments as snappy does and agrees with it on those of :data:`NATIVE_MIN_FRAGMENT` bytes or more: it
    compresses the fragments it gets right, natively."""
    if not isinstance(data, bytes):
        data = bytes(data)
    short_tail = len(data) % FRAGMENT_SIZE
    if short_tail >= NATIVE_MIN_FRAGMENT:
        short_tail = 0
    native = len(data) - short_tail  # whole fragments and a long last one: the native compressor's
    if large is not None and native:
        if not short_tail:
            return bytes(large(data))
        out = bytearray(_varint(len(data)))
        out += memoryview(bytes(large(data[:native])))[len(_varint(native)) :]  # its elements, without its length
        _compress_fragment(data[native:], out)
        return bytes(out)
    out = bytearray(_varint(len(data)))
    for start in range(0, len(data), FRAGMENT_SIZE):
        _compress_fragment(data[start : start + FRAGMENT_SIZE], out)
    return bytes(out)


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _table_size(length: int) -> int:
    size = _MIN_TABLE
    while size < length and size < _MAX_TABLE:
        size <<= 1
    return size


def _views(data: bytes, size: int) -> list[Sequence[int]]:
    """``size`` views of ``data`` as little-endian unsigned ints of ``size`` bytes, one per start offset: the int at
    ``p`` is ``views[p % size][p // size]``, one indexing instead of a slice and int.from_bytes, and nothing is
    computed for the positions never looked at (zero-copy casts; byte-swapped copies on a big-endian machine)."""
    typecode = _TYPECODES[size]
    views: list[Sequence[int]] = []
    for offset in range(size):
        aligned = memoryview(data)[offset : offset + (len(data) - offset) // size * size]
        if sys.byteorder == "little":
            views.append(aligned.cast(typecode))
        else:
            swapped = array(typecode, aligned.tobytes())
            swapped.byteswap()
            views.append(swapped)
    return views


def _match_length(data: bytes, earlier: int, later: int, end: int) -> int:
    """How many bytes from ``later`` (up to ``end``) repeat those from ``earlier``: compared in doubling chunks, the
    first differing byte found from the lowest set bit of the chunks' little-endian XOR."""
    matched = 0
    chunk = 8
    while True:
        size = min(chunk, end - later - matched)
        if size <= 0:
            return matched
        mine = data[later + matched : later + matched + size]
        theirs = data[earlier + matched : earlier + matched + size]
        if mine != theirs:
            diff = int.from_bytes(mine, "little") ^ int.from_bytes(theirs, "little")
            return matched + (((diff & -diff).bit_length() - 1) >> 3)
        matched += size
        chunk = min(chunk * 2, 1024)


def _emit_literal(out: bytearray, data: bytes, start: int, end: int) -> None:
    n = end - start - 1
    if n < 60:
        out.append(LITERAL | n << 2)
    else:
        count = (n.bit_length() - 1 >> 3) + 1  # 1-4 bytes of length after the tag
        out.append(LITERAL | (59 + count) << 2)
        out += n.to_bytes(count, "little")
    out += data[start:end]


def _emit_copy(out: bytearray, offset: int, length: int) -> None:
    # Pieces of at most 64 bytes, never leaving fewer than 4 for the last one: 64s while 68 or more remain, then 60
    # if more than 64 remain. A piece of 4-11 bytes at an offset below 2048 takes the 2-byte form, others 3 bytes.
    while length >= 68:
        out += bytes((COPY_2 | 63 << 2, offset & 0xFF, offset >> 8))
        length -= 64
    if length > 64:
        out += bytes((COPY_2 | 59 << 2, offset & 0xFF, offset >> 8))
        length -= 60
    if length < 12 and offset < 2048:
        out += bytes((COPY_1 | (length - 4) << 2 | (offset >> 8) << 5, offset & 0xFF))
    else:
        out += bytes((COPY_2 | (length - 1) << 2, offset & 0xFF, offset >> 8))


def _compress_fragment(data: bytes, out: bytearray) -> None:
    # One long function on purpose: the probes and short matches are the hot path, and a call per element would
    # double its cost. Words are read as views[p & 3][p >> 2], 8-byte longs as
    # longs[p & 7][p >> 3] (see _views).
    length = len(data)
    if length < _INPUT_MARGIN:
        if length:
            _emit_literal(out, data, 0, length)
        return
    mask = _table_size(length) - 1
    multiplier, shift = _HASH_MULTIPLIER, _HASH_SHIFT
    table = [0] * (mask + 1)
    views, longs = _views(data, 4), _views(data, 8)
    limit = length - _INPUT_MARGIN
    position = 0
    while True:
        literal_start = position
        position += 1
        skip = 32
        # Step 1: probe for a 4-byte match, one byte further after each miss, then two after 32 misses, and so on.
        while True:
            word = views[position & 3][position >> 2]
            slot = (word * multiplier & 0xFFFFFFFF) >> shift & mask
            step = skip >> 5
            skip += step
            if position + step > limit:
                _emit_literal(out, data, literal_start, length)
                return
            candidate = table[slot]
            table[slot] = position
            if views[candidate & 3][candidate >> 2] == word:
                break
            position += step
        # Step 2: what was skipped is a literal.
        if position - literal_start <= 60:
            out.append(LITERAL | (position - literal_start - 1) << 2)
            out += data[literal_start:position]
        else:
            _emit_literal(out, data, literal_start, position)
        # Step 3: copies, as long as the bytes after one match again. The bytes after the first 4 are compared 8 at a
        # time (a match found here starts at least 15 bytes before the fragment's end), longer matches in chunks.
        while True:
            earlier, later = candidate + 4, position + 4
            differ = longs[earlier & 7][earlier >> 3] ^ longs[later & 7][later >> 3]
            if not differ and length - later >= 16:
                earlier += 8
                later += 8
                differ = longs[earlier & 7][earlier >> 3] ^ longs[later & 7][later >> 3]
            if differ:
                matched = later - position + ((differ & -differ).bit_length() - 1 >> 3)
            else:
                matched = later + 8 - position + _match_length(data, earlier + 8, later + 8, length)
            offset = position - candidate
            if matched < 12 and offset < 2048:
                out.append(COPY_1 | (matched - 4) << 2 | (offset >> 8) << 5)
                out.append(offset & 0xFF)
            elif matched <= 64:
                out += (COPY_2 | (matched - 1) << 2 | offset << 8).to_bytes(3, "little")
            else:
                _emit_copy(out, offset, matched)
            position += matched
            if position >= limit:
                if position < length:
                    _emit_literal(out, data, position, length)
                return
            previous = position - 1
            table[(views[previous & 3][previous >> 2] * multiplier & 0xFFFFFFFF) >> shift & mask] = previous
            word = views[position & 3][position >> 2]
            slot = (word * multiplier & 0xFFFFFFFF) >> shift & mask
            candidate = table[slot]
            table[slot] = position
            if views[candidate & 3][candidate >> 2] != word:
                break
