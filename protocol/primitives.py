"""Varints and other small helpers shared by generated codecs and record batches."""

from __future__ import annotations

import uuid

ZERO_UUID = uuid.UUID(int=0)
ZERO_UUID_BYTES = bytes(16)


class Malformed(Exception):
    """Raised inside generated decoders; the caller turns it into a DecodeError."""


# Single-byte unsigned varints are by far the most common (lengths, counts, empty tagged fields).
SMALL_UVARINTS = tuple(bytes((n,)) for n in range(128))


def write_uvarint(n: int) -> bytes:
    if n < 128:
        if n < 0:
            raise ValueError(f"unsigned varint cannot hold {n}")
        return SMALL_UVARINTS[n]
    if n > 0xFFFFFFFF:
        raise ValueError(f"unsigned varint cannot hold {n}")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Kafka's unsigned varint (at most 5 bytes, 32 bits)."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result, pos = _uvarint_bits(buf, pos)
    if result > 0xFFFFFFFF:
        raise Malformed("unsigned varint holds more than 32 bits")
    return result, pos


def read_java_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint as Kafka's message readers take it (ByteUtils.readUnsignedVarint into a Java int): the low
    32 bits, signed, so that 2^31 and above read as negative numbers (a length that is then null, a count of no
    tagged fields) and bits past the 32nd are dropped; only a sixth byte is refused."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result, pos = _uvarint_bits(buf, pos)
    result &= 0xFFFFFFFF
    return (result - (1 << 32) if result & 0x80000000 else result), pos


def _uvarint_bits(buf: bytes, pos: int) -> tuple[int, int]:
    """Every bit of an unsigned varint of two to five bytes (up to 35)."""
    result = buf[pos] & 0x7F
    shift = 7
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise Malformed("unsigned varint longer than 5 bytes")


def read_uvarlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Unsigned 64-bit varint (at most 10 bytes)."""
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise Malformed("varlong longer than 10 bytes")


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag signed 32-bit varint."""
    n, pos = read_uvarint(buf, pos)
    return (n >> 1) ^ -(n & 1), pos


def read_varlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag signed 64-bit varint."""
    n, pos = read_uvarlong(buf, pos)
    return (n >> 1) ^ -(n & 1), pos


def write_varint(n: int) -> bytes:
    if not -0x80000000 <= n <= 0x7FFFFFFF:
        raise ValueError(f"varint cannot hold {n}")
    return write_uvarint(((n << 1) ^ (n >> 31)) & 0xFFFFFFFF)


def write_varlong(n: int) -> bytes:
    if not -0x8000000000000000 <= n <= 0x7FFFFFFFFFFFFFFF:
        raise ValueError(f"varlong cannot hold {n}")
    z = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    if z < 128:
        return SMALL_UVARINTS[z]
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)
