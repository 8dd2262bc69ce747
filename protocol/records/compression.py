"""Record-batch compression: the four codecs Kafka allows, behind one small interface.

gzip is always available (zlib); snappy, lz4 and zstd work when their optional packages are
installed (see :func:`supported_compressions`). Each adapter writes what Kafka's Java producer
writes and reads what any Kafka client writes, and every decompression is capped so that a
hostile batch cannot claim more memory than the caller allows. Failures are :class:`DecodeError`
or :class:`EncodeError` naming the ``RecordBatch``.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from enum import IntEnum
from functools import cache, partial
from importlib import import_module
from types import ModuleType
from typing import Protocol

from kafka_shim.protocol.errors import DecodeError, EncodeError
from kafka_shim.protocol.primitives import Malformed, read_uvarint
from kafka_shim.protocol.records.snappy_raw import compress_raw

# What errors name as the message: a batch is not a schema message, but it is the unit that failed.
RECORD_BATCH = "RecordBatch"
_INT32 = struct.Struct(">i")


class Compression(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class UnsupportedCompressionError(DecodeError):
    """A batch uses a codec whose optional package is not installed (Kafka's UNSUPPORTED_COMPRESSION_TYPE)."""

    def __init__(self, compression: Compression) -> None:
        self.compression = compression
        super().__init__(_unsupported_reason(compression), message=RECORD_BATCH, field="attributes")


class _Codec(Protocol):
    def compress(self, data: bytes) -> bytes: ...

    def decompress(self, data: bytes, limit: int) -> bytes: ...


_OPTIONAL_PACKAGES = {
    Compression.SNAPPY: "cramjam or python-snappy",
    Compression.LZ4: "lz4",
    Compression.ZSTD: "zstandard",
}


def supported_compressions() -> frozenset[Compression]:
    """Codecs this process can both read and write."""
    return frozenset(codec for codec in Compression if codec is Compression.NONE or _codec(codec) is not None)


def _unsupported_reason(codec: Compression) -> str:
    return f"{codec.name.lower()} compression is not supported here; install {_OPTIONAL_PACKAGES[codec]} to enable it"


def codec_for_encoding(compression: Compression | int) -> Compression:
    """The codec selected by ``compression``, refused up front when it is unknown or its package is missing."""
    try:
        codec = Compression(compression)
    except ValueError:
        raise EncodeError(f"unknown compression codec {compression}", message=RECORD_BATCH, field="attributes") from None
    if codec is not Compression.NONE and _codec(codec) is None:
        raise EncodeError(_unsupported_reason(codec), message=RECORD_BATCH, field="attributes")
    return codec


def compress(codec: Compression, data: bytes, magic: int = 2) -> bytes:
    """``data`` compressed with ``codec``, which :func:`codec_for_encoding` has accepted, for a message of ``magic``
    (an lz4 frame in a magic 0 message carries the header checksum Kafka writes there: see :func:`_lz4_header`)."""
    backend = _codec(codec)
    assert backend is not None, "checked by codec_for_encoding"
    compressed = backend.compress(data)
    return _lz4_header(compressed, legacy=True) if codec is Compression.LZ4 and magic == 0 else compressed


def decompress(codec: Compression, data: memoryview, limit: int, magic: int = 2) -> bytes:
    """The records section in ``data``, at most ``limit`` bytes of it (more is a DecodeError); ``magic`` is the
    message format's (the header checksum of an lz4 frame in a magic 0 message is not checked)."""
    backend = _codec(codec)
    if backend is None:
        raise UnsupportedCompressionError(codec)
    if not data:
        # Every codec's framing has at least a header, and Java's readers reject empty input too.
        raise _codec_error(codec, "compressed records are empty")
    raw = bytes(data)
    if codec is Compression.LZ4 and magic == 0:
        raw = _lz4_header(raw, legacy=False)
    return backend.decompress(raw, limit)


# The lz4 frame's magic number, and the FLG bit saying an 8-byte content size follows the BD byte.
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_CONTENT_SIZE = 0x08


def _lz4_header(frame: bytes, *, legacy: bool) -> bytes:
    """``frame`` with its frame descriptor's checksum byte (HC) replaced: ``legacy``, by the one Kafka writes in
    magic 0 messages, else by the one the lz4 frame format specifies.

    Kafka's KafkaLZ4BlockOutputStream of magic 0 hashes the descriptor from the frame's magic number on instead of
    from its FLG byte (the checksum of Kafka 0.8's lz4 framing, kept for those clients), and its input stream skips
    the byte unchecked for magic 0. The lz4 package checks it: a magic 0 frame is given the specified byte before it
    is read, so that any byte there is accepted, as Kafka accepts it."""
    if len(frame) < 7 or frame[:4] != _LZ4_MAGIC:
        return frame  # not a frame the byte can be found in: the codec reports it
    checksum_at = 6 + (8 if frame[4] & _LZ4_CONTENT_SIZE else 0)
    if len(frame) <= checksum_at:
        return frame
    hashed = frame[:checksum_at] if legacy else frame[4:checksum_at]
    return frame[:checksum_at] + bytes([(_xxh32_short(hashed) >> 8) & 0xFF]) + frame[checksum_at + 1 :]


_U32 = 0xFFFFFFFF
_XXH_PRIMES = (2654435761, 2246822519, 3266489917, 668265263, 374761393)


def _xxh32_short(data: bytes, seed: int = 0) -> int:
    """XXH32 of fewer than 16 bytes (a frame descriptor is at most 14): the hash's short-input path only."""
    assert len(data) < 16
    p1, p2, p3, p4, p5 = _XXH_PRIMES
    h = (seed + p5 + len(data)) & _U32
    whole = len(data) - len(data) % 4
    for at in range(0, whole, 4):
        h = (h + int.from_bytes(data[at : at + 4], "little") * p3) & _U32
        h = (((h << 17) | (h >> 15)) & _U32) * p4 & _U32
    for byte in data[whole:]:
        h = (h + byte * p5) & _U32
        h = (((h << 11) | (h >> 21)) & _U32) * p1 & _U32
    h ^= h >> 15
    h = (h * p2) & _U32
    h ^= h >> 13
    h = (h * p3) & _U32
    return h ^ (h >> 16)


def _codec_error(codec: Compression, reason: str) -> DecodeError:
    return DecodeError(f"{codec.name.lower()}: {reason}", message=RECORD_BATCH, field="records")


def _too_big(codec: Compression, limit: int) -> DecodeError:
    return _codec_error(codec, f"decompressed records exceed the {limit}-byte limit")


@cache
def _codec(codec: Compression) -> _Codec | None:
    if codec is Compression.GZIP:
        return _Gzip()
    if codec is Compression.SNAPPY:
        # Compressed as snappy 1.1.10 (Kafka 3.9's snappy-java) writes it: see snappy_raw. cramjam agrees with it
        # on fragments above 8 KiB and does those; python-snappy's library may be another snappy, so without
        # cramjam every fragment is compressed in Python (slower, the same bytes).
        cramjam = _optional_module("cramjam")
        if cramjam is not None:
            return _Snappy(partial(compress_raw, large=cramjam.snappy.compress_raw), cramjam.snappy.decompress_raw)
        snappy = _optional_module("snappy")
        if snappy is not None and hasattr(snappy, "compress"):
            return _Snappy(compress_raw, snappy.decompress)
        return None
    if codec is Compression.LZ4:
        lz4_frame = _optional_module("lz4.frame")
        return None if lz4_frame is None else _Lz4(lz4_frame)
    if codec is Compression.ZSTD:
        zstandard = _optional_module("zstandard")
        return None if zstandard is None else _Zstd(zstandard)
    return None


def _optional_module(name: str) -> ModuleType | None:
    try:
        return import_module(name)
    except ImportError:
        return None


_GZIP_OS_OFFSET = 9  # RFC 1952: ID1 ID2 CM FLG MTIME(4) XFL, then OS
_GZIP_OS_UNKNOWN = 255


class _Gzip:
    # Level 6 (zlib's default, as Java's) and wbits 31 (gzip framing, mtime 0): the same input always gives the same bytes.
    # The header's OS byte is 255 ("unknown"), as java.util.zip.GZIPOutputStream writes it from JDK 16 on (JDK-8244706),
    # so that a batch kafka-shim compresses is the batch a Kafka 3.9 broker on Java 17 or 21 writes; zlib writes 3 (Unix).
    def compress(self, data: bytes) -> bytes:
        compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
        framed = bytearray(compressor.compress(data))
        framed += compressor.flush()
        framed[_GZIP_OS_OFFSET] = _GZIP_OS_UNKNOWN
        return bytes(framed)

    def decompress(self, data: bytes, limit: int) -> bytes:
        out = bytearray()
        pending = data
        try:
            # Several gzip members back to back are one stream (RFC 1952), and Java's GZIPInputStream reads them so.
            while pending:
                inflater = zlib.decompressobj(31)
                while not inflater.eof:
                    chunk = inflater.decompress(pending, limit + 1 - len(out))
                    out += chunk
                    if len(out) > limit:
                        raise _too_big(Compression.GZIP, limit)
                    pending = inflater.unconsumed_tail
                    if not chunk and not pending and not inflater.eof:
                        raise _codec_error(Compression.GZIP, "stream ends before its end marker")
                pending = inflater.unused_data
        except zlib.error as exc:
            raise _codec_error(Compression.GZIP, str(exc)) from None
        return bytes(out)


# Java clients wrap snappy in xerial's framing: this header, then blocks of int32 length + raw snappy.
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")  # magic, version, compatible version
_XERIAL_VERSION = 1
_XERIAL_BLOCK_SIZE = 32 * 1024


class _Snappy:
    def __init__(self, compress_raw: Callable[[bytes], object], decompress_raw: Callable[[bytes], object]) -> None:
        self._compress_raw = compress_raw
        self._decompress_raw = decompress_raw

    def compress(self, data: bytes) -> bytes:
        # Written with xerial framing, as the Java producer does: every Kafka reader accepts it.
        parts = [_XERIAL_HEADER.pack(_XERIAL_MAGIC, _XERIAL_VERSION, _XERIAL_VERSION)]
        for start in range(0, len(data), _XERIAL_BLOCK_SIZE):
            block = bytes(self._compress_raw(data[start : start + _XERIAL_BLOCK_SIZE]))
            parts += (_INT32.pack(len(block)), block)
        return b"".join(parts)

    def decompress(self, data: bytes, limit: int) -> bytes:
        if not data.startswith(_XERIAL_MAGIC):
            return self._decompress_block(data, limit)
        if len(data) < _XERIAL_HEADER.size:
            raise _codec_error(Compression.SNAPPY, "xerial header is truncated")
        out = bytearray()
        pos = _XERIAL_HEADER.size
        while pos < len(data):
            if len(data) - pos < _INT32.size:
                raise _codec_error(Compression.SNAPPY, "xerial block length is truncated")
            (block_length,) = _INT32.unpack_from(data, pos)
            pos += _INT32.size
            if not 0 <= block_length <= len(data) - pos:
                raise _codec_error(
                    Compression.SNAPPY, f"xerial block length {block_length} exceeds the {len(data) - pos} bytes left"
                )
            out += self._decompress_block(data[pos : pos + block_length], limit - len(out))
            pos += block_length
        return bytes(out)

    def _decompress_block(self, block: bytes, limit: int) -> bytes:
        # A raw snappy block starts with its uncompressed length, so the cap is checked before any output exists.
        try:
            declared, _ = read_uvarint(block, 0)
        except (IndexError, Malformed):
            raise _codec_error(Compression.SNAPPY, "block has no valid length preamble") from None
        if declared > limit:
            raise _too_big(Compression.SNAPPY, limit)
        try:
            out = bytes(self._decompress_raw(block))
        except Exception as exc:  # each snappy package has its own error type, with no shared base
            raise _codec_error(Compression.SNAPPY, str(exc)) from None
        if len(out) != declared:
            raise _codec_error(Compression.SNAPPY, f"block says {declared} bytes but holds {len(out)}")
        return out


class _Lz4:
    def __init__(self, lz4_frame: ModuleType) -> None:
        self._frame = lz4_frame

    def compress(self, data: bytes) -> bytes:
        # Independent 64 KiB blocks and no content size: what Kafka's Java LZ4 reader expects.
        frame = self._frame
        return frame.compress(
            data, block_size=frame.BLOCKSIZE_MAX64KB, block_linked=False, content_checksum=False, store_size=False
        )

    def decompress(self, data: bytes, limit: int) -> bytes:
        decompressor = self._frame.LZ4FrameDecompressor()
        try:
            out = decompressor.decompress(data, max_length=limit + 1)
        except RuntimeError as exc:
            raise _codec_error(Compression.LZ4, str(exc)) from None
        if len(out) > limit:
            raise _too_big(Compression.LZ4, limit)
        if not decompressor.eof:
            raise _codec_error(Compression.LZ4, "frame ends before its end marker")
        if decompressor.unused_data:
            raise _codec_error(Compression.LZ4, f"{len(decompressor.unused_data)} bytes after the frame")
        return out


class _Zstd:
    def __init__(self, zstandard: ModuleType) -> None:
        self._zstd = zstandard

    def compress(self, data: bytes) -> bytes:
        # As Kafka's writer (zstd-jni's ZstdOutputStream behind a BufferedOutputStream, level 3) frames it: streamed,
        # so no content size in the header; closing flushes the open block, then ends the frame with an empty one.
        stream = self._zstd.ZstdCompressor(level=3, write_content_size=False).compressobj()
        return stream.compress(data) + stream.flush(self._zstd.COMPRESSOBJ_FLUSH_BLOCK) + stream.flush()

    def decompress(self, data: bytes, limit: int) -> bytes:
        zstd = self._zstd
        try:
            # zstandard allocates a frame's declared content size up front, so check it before decompressing.
            if zstd.frame_content_size(data) > limit:
                raise _too_big(Compression.ZSTD, limit)
            # max_output_size bounds frames that declare no size (zstd-jni's streaming writer omits it).
            return zstd.ZstdDecompressor().decompress(data, max_output_size=limit)
        except zstd.ZstdError as exc:
            # zstandard reports a cut frame and one that outgrew max_output_size with the same error.
            raise _codec_error(Compression.ZSTD, f"{exc} (truncated, or larger than the {limit}-byte limit)") from None
