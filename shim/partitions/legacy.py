"""Message sets of magic 0 and 1 (Kafka before 0.11), read so that the append path can convert them to magic 2.

Kafka's counterparts: ``LegacyRecord`` and ``AbstractLegacyRecordBatch`` (org.apache.kafka.common.record). Old
clients (Produce v0-2) may send them; Kafka 3.9 stores only magic 2 (``log.message.format.version`` is fixed at
3.0), so LogValidator converts them, and so does :mod:`.validator` with what this module reads.

An entry is ``offset int64 | size int32 | crc uint32 | magic int8 | attributes int8 | [timestamp int64, magic 1]
| key bytes | value bytes``; the CRC is CRC-32 (not CRC-32C) of everything after it. The low three bits of the
attributes name a codec: then the value holds a whole compressed message set (the *inner* messages) and the entry is
a wrapper. Magic 1 wrappers carry relative inner offsets; a wrapper with the LogAppendTime bit gives its timestamp to
every inner message (``LegacyRecord.timestamp`` of a deep entry).

Magic 0 lz4 wrappers are read as Kafka reads them, whatever their frame's header checksum byte (Kafka 0.8's lz4
framing computed it wrongly, and Kafka skips it for magic 0: protocol.records.compression). Not read: zstd, which
Kafka never allowed below magic 2.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from kafka_shim.protocol.errors import DecodeError
from kafka_shim.protocol.records.compression import Compression, decompress

LOG_OVERHEAD = 12  # offset + size
RECORD_OVERHEAD_V0 = 14  # crc, magic, attributes, key length, value length
RECORD_OVERHEAD_V1 = 22  # ... and the timestamp
NO_TIMESTAMP = -1
_HEAD = struct.Struct(">qi")
_CRC = struct.Struct(">I")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_CODEC_MASK = 0x07
_LOG_APPEND_TIME_BIT = 0x08


class LegacyCorrupt(Exception):
    """The message set is unreadable (Kafka's CorruptRecordException: CORRUPT_MESSAGE)."""


class LegacyInvalid(Exception):
    """A message breaks a rule of the format (Kafka's InvalidRecordException: INVALID_RECORD)."""


class LegacyUnreadable(Exception):
    """A message whose key or value length points past its end. Kafka checks only the size and CRC of a message; it
    trips over the lengths when LogValidator reads the key and value (LegacyRecord.key/value: an
    IndexOutOfBoundsException or IllegalArgumentException, UNKNOWN_SERVER_ERROR)."""


@dataclass(frozen=True, slots=True)
class LegacyMessage:
    offset: int
    magic: int
    attributes: int
    timestamp: int  # NO_TIMESTAMP for magic 0
    key: bytes | None
    value: bytes | None

    @property
    def codec(self) -> int:
        return self.attributes & _CODEC_MASK

    @property
    def log_append_time(self) -> bool:
        return self.magic > 0 and bool(self.attributes & _LOG_APPEND_TIME_BIT)


@dataclass(frozen=True, slots=True)
class LegacyBatch:
    """One shallow entry: a plain message (``inner`` is itself) or a compressed wrapper and its inner messages."""

    wrapper: LegacyMessage
    size: int  # bytes of the entry, LOG_OVERHEAD included
    valid: bool  # its CRC-32 holds and it is at least the smallest message (LegacyRecord.isValid, for both magics)
    stored_crc: int
    unreadable: str | None = None  # valid, but its key or value length does not fit (see LegacyUnreadable)

    @property
    def compressed(self) -> bool:
        return self.wrapper.codec != 0


def shallow_entries(data: bytes | memoryview) -> tuple[list[LegacyBatch], int]:
    """The whole shallow entries of a magic 0/1 message set, and how many bytes they cover (a partial tail is
    dropped, as ByteBufferLogInputStream drops it). Raises :class:`LegacyCorrupt` for an impossible size or magic."""
    view = memoryview(data)
    entries: list[LegacyBatch] = []
    at = 0
    while len(view) - at >= LOG_OVERHEAD:
        _offset, size = _HEAD.unpack_from(view, at)
        if size < RECORD_OVERHEAD_V0:
            raise LegacyCorrupt(f"Record size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})")
        if len(view) - at < LOG_OVERHEAD + size:
            break
        if len(view) - at > 16:
            magic = view[at + 16]
            if magic > 2:
                raise LegacyCorrupt(f"Invalid magic found in record: {magic}")
        entries.append(_entry(view[at : at + LOG_OVERHEAD + size]))
        at += LOG_OVERHEAD + size
    return entries, at


def _entry(view: memoryview) -> LegacyBatch:
    (stored_crc,) = _CRC.unpack_from(view, LOG_OVERHEAD)
    body = view[LOG_OVERHEAD + 4 :]
    magic = body[0]
    valid = len(view) - LOG_OVERHEAD >= RECORD_OVERHEAD_V0 and zlib.crc32(body) == stored_crc
    unreadable = None
    if valid:
        try:
            message = _message(view)
        except LegacyUnreadable as exc:
            unreadable = str(exc)
    if not valid or unreadable is not None:
        # What is known without the key and value (a valid message of magic 1 always holds its timestamp).
        timestamp = _INT64.unpack_from(body, 2)[0] if valid and magic == 1 else NO_TIMESTAMP
        message = LegacyMessage(_INT64.unpack_from(view, 0)[0], magic, body[1] if len(body) > 1 else 0, timestamp, None, None)
    return LegacyBatch(message, len(view), valid, stored_crc, unreadable)


def _message(view: memoryview) -> LegacyMessage:
    """One message (CRC already checked); raises :class:`LegacyUnreadable` when its key or value length points past its
    end. Bytes after the value are ignored, as Kafka reads by the lengths."""
    (offset,) = _INT64.unpack_from(view, 0)
    at = LOG_OVERHEAD + 4
    magic, attributes = view[at], view[at + 1]
    at += 2
    timestamp = NO_TIMESTAMP
    if magic == 1:
        (timestamp,) = _INT64.unpack_from(view, at)
        at += 8
    key, at = _bytes(view, at, offset)
    value, at = _bytes(view, at, offset)
    return LegacyMessage(offset, magic, attributes, timestamp, key, value)


def _bytes(view: memoryview, at: int, offset: int) -> tuple[bytes | None, int]:
    if len(view) - at < 4:
        raise LegacyUnreadable(f"message at offset {offset} ends before its key or value length")
    (length,) = _INT32.unpack_from(view, at)
    at += 4
    if length < 0:  # any negative length is null (Utils.sizeDelimited)
        return None, at
    if len(view) - at < length:
        raise LegacyUnreadable(f"message at offset {offset} declares a key or value of {length} bytes but holds {len(view) - at}")
    return bytes(view[at : at + length]), at + length


def inner_messages(batch: LegacyBatch, max_decompressed: int) -> list[LegacyMessage]:
    """The messages of a shallow entry: itself when uncompressed, else the decompressed inner set (each checked).

    Raises :class:`LegacyCorrupt` for an inner message whose CRC fails or a payload that does not decompress,
    :class:`LegacyInvalid` for a codec Kafka never allowed in this format and :class:`LegacyUnreadable` for a message
    whose key or value does not fit.
    """
    wrapper = batch.wrapper
    if batch.unreadable is not None:
        raise LegacyUnreadable(batch.unreadable)
    if not batch.compressed:
        return [wrapper]
    if wrapper.codec == Compression.ZSTD or wrapper.codec > Compression.ZSTD:
        raise LegacyInvalid(f"compression codec {wrapper.codec} is not allowed with magic {wrapper.magic}")
    if wrapper.value is None:
        raise LegacyCorrupt("compressed message has a null value")
    try:
        payload = decompress(Compression(wrapper.codec), memoryview(wrapper.value), max_decompressed, wrapper.magic)
    except DecodeError as exc:
        raise LegacyCorrupt(str(exc)) from None
    inner: list[LegacyMessage] = []
    view = memoryview(payload)
    at = 0
    while len(view) - at >= LOG_OVERHEAD:
        (_offset, size) = _HEAD.unpack_from(view, at)
        if size < RECORD_OVERHEAD_V0 or len(view) - at < LOG_OVERHEAD + size:
            raise LegacyCorrupt(f"inner message at byte {at} of a compressed message set is truncated")
        entry = _entry(view[at : at + LOG_OVERHEAD + size])
        if not entry.valid:
            raise LegacyCorrupt(f"Record is corrupt (stored crc = {entry.stored_crc}) inner message at byte {at}")
        if entry.unreadable is not None:
            raise LegacyUnreadable(entry.unreadable)
        message = entry.wrapper
        if wrapper.log_append_time:
            message = LegacyMessage(message.offset, message.magic, message.attributes, wrapper.timestamp, message.key, message.value)
        inner.append(message)
        at += LOG_OVERHEAD + size
    if not inner:
        raise LegacyCorrupt("compressed message set holds no message")
    return inner
