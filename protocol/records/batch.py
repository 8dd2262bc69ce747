"""Kafka record batches (message format v2, "magic 2"), encoded and decoded without I/O.

A ``records`` field in Produce and Fetch is a byte string of zero or more
concatenated batches. Each batch is laid out as::

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 (=2)
    crc uint32 (CRC-32C of everything from attributes to the end of the batch)
    attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64
    producerId int64 | producerEpoch int16 | baseSequence int32 | recordsCount int32
    records (compressed as one block when attributes select a codec)

and each record as::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
    keyLength varint (-1 = null) | key | valueLength varint (-1 = null) | value
    headersCount varint | headers: keyLength varint, key (UTF-8), valueLength varint (-1 = null), value

Decoding never trusts a declared length or count beyond the bytes actually
present, and caps each batch's decompressed output, so one hostile batch
costs at most ``max_decompressed`` bytes of memory. Every failure is a :class:`DecodeError`.

Partial trailing batches: a broker may cut a Fetch response's records in the
middle of a batch (it sends at most ``max_bytes``). :func:`decode_batches_with_tail`
returns such a tail separately; :func:`decode_batches` rejects it unless
``allow_partial_tail=True``, in which case it is dropped, since a Produce request
with a cut batch is corrupt, not merely short.

The codecs themselves live in :mod:`kafka_shim.protocol.records.compression`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from kafka_shim.protocol.errors import DecodeError, EncodeError
from kafka_shim.protocol.java_utf8 import java_decode
from kafka_shim.protocol.primitives import Malformed, read_varint, read_varlong, write_varint, write_varlong
from kafka_shim.protocol.records.compression import (
    RECORD_BATCH,
    Compression,
    UnsupportedCompressionError,
    codec_for_encoding,
    compress,
    decompress,
)
from kafka_shim.protocol.records.crc import crc32c
from kafka_shim.protocol.records.whole_records import IllegalLength, WholeRecordError, read_stream, read_uncompressed

MAGIC = 2
DEFAULT_MAX_DECOMPRESSED = 64 * 1024 * 1024
NO_PARTITION_LEADER_EPOCH = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1


class TimestampType(IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20
# KIP-534: set once compaction has stamped baseTimestamp with the tombstone delete horizon.
_DELETE_HORIZON_BIT = 0x40

# Split at the CRC because the CRC covers only what follows it.
_BEFORE_CRC = struct.Struct(">qiib")  # baseOffset, batchLength, partitionLeaderEpoch, magic
_CRC = struct.Struct(">I")
_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes .. recordsCount
_HEADER_SIZE = _BEFORE_CRC.size + _CRC.size + _AFTER_CRC.size  # 61
_CRC_START = _BEFORE_CRC.size
_ATTRIBUTES_START = _CRC_START + _CRC.size
# baseOffset + batchLength: the least needed to know how long a batch is.
_LOG_OVERHEAD = 12
_MIN_BATCH_LENGTH = _HEADER_SIZE - _LOG_OVERHEAD
_MAGIC_OFFSET = 16
_INT32 = struct.Struct(">i")

# length, attributes, timestampDelta, offsetDelta, keyLength, valueLength, headersCount: one byte each at least.
_MIN_RECORD_SIZE = 7
_MIN_RECORD_BODY = _MIN_RECORD_SIZE - 1
_MIN_HEADER_SIZE = 2

_INT8 = (-(2**7), 2**7 - 1)
_INT16 = (-(2**15), 2**15 - 1)
_INT32_RANGE = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True, slots=True)
class Header:
    key: str
    value: bytes | None


@dataclass(frozen=True, slots=True)
class Record:
    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: list[Header] = field(default_factory=list)
    # Unused by magic v2, but kept so that re-encoding reproduces the bytes we read.
    attributes: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordBatch:
    base_offset: int = 0
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    magic: int = MAGIC
    attributes: int = 0
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    records: list[Record] = field(default_factory=list)

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & _COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType.LOG_APPEND_TIME if self.attributes & _TIMESTAMP_TYPE_BIT else TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & _DELETE_HORIZON_BIT)

    @property
    def last_offset(self) -> int:
        # From the header, not the records: compaction may have removed the last record.
        return self.base_offset + self.last_offset_delta


HeaderInput = Header | tuple[str, bytes | None]
RecordInput = tuple[bytes | None, bytes | None, Sequence[HeaderInput], int]


def batch_attributes(
    compression: Compression | int = Compression.NONE,
    timestamp_type: TimestampType | int = TimestampType.CREATE_TIME,
    *,
    transactional: bool = False,
    control: bool = False,
    delete_horizon: bool = False,
) -> int:
    """The attributes int16 for the given flags."""
    attributes = int(Compression(compression))
    if TimestampType(timestamp_type) is TimestampType.LOG_APPEND_TIME:
        attributes |= _TIMESTAMP_TYPE_BIT
    if transactional:
        attributes |= _TRANSACTIONAL_BIT
    if control:
        attributes |= _CONTROL_BIT
    if delete_horizon:
        attributes |= _DELETE_HORIZON_BIT
    return attributes


def build_batch(
    records: Iterable[RecordInput],
    *,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    compression: Compression | int = Compression.NONE,
    timestamp_type: TimestampType | int = TimestampType.CREATE_TIME,
    transactional: bool = False,
    control: bool = False,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
) -> RecordBatch:
    """A batch of ``(key, value, headers, timestamp)`` records with consecutive offsets from ``base_offset``.

    Headers may be :class:`Header` objects or ``(key, value)`` pairs. As Kafka's
    producer does, the first record's timestamp becomes the base timestamp, so
    later deltas may be negative.
    """
    items = list(records)
    if not items:
        # Producers never send an empty batch, and there is no first timestamp to base deltas on.
        raise ValueError("a record batch needs at least one record")
    base_timestamp = items[0][3]
    built = [
        Record(
            offset_delta=index,
            timestamp_delta=timestamp - base_timestamp,
            key=key,
            value=value,
            headers=[h if isinstance(h, Header) else Header(h[0], h[1]) for h in headers],
        )
        for index, (key, value, headers, timestamp) in enumerate(items)
    ]
    return RecordBatch(
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=batch_attributes(compression, timestamp_type, transactional=transactional, control=control),
        last_offset_delta=len(built) - 1,
        base_timestamp=base_timestamp,
        max_timestamp=max(item[3] for item in items),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        records=built,
    )


# ---------------------------------------------------------------------------
# Encoding


def encode_batch(batch: RecordBatch, compression: Compression | int | None = None) -> bytes:
    """The wire bytes of one batch.

    ``compression`` replaces the codec bits of ``batch.attributes`` when given;
    by default the batch's own codec is used, so ``encode_batch(decode_batch(b)) == b``
    for batches this module wrote.
    """
    attributes = batch.attributes
    if compression is not None:
        attributes = (attributes & ~_COMPRESSION_MASK) | codec_for_encoding(compression)
    if batch.magic != MAGIC:
        raise EncodeError(
            f"only magic v{MAGIC} record batches can be written, not magic {batch.magic}", message=RECORD_BATCH, field="magic"
        )
    _check_header_ranges(batch, attributes)
    codec = codec_for_encoding(attributes & _COMPRESSION_MASK)

    section = bytearray()
    for index, record in enumerate(batch.records):
        try:
            _encode_record(record, section)
        except ValueError as exc:  # includes UnicodeEncodeError from a header key
            raise EncodeError(str(exc), message=RECORD_BATCH, field=f"records[{index}]") from None
    payload = bytes(section) if codec is Compression.NONE else compress(codec, bytes(section))

    batch_length = _HEADER_SIZE - _LOG_OVERHEAD + len(payload)
    if batch_length > _INT32_RANGE[1] or len(batch.records) > _INT32_RANGE[1]:
        raise EncodeError(
            f"batch of {batch_length} bytes does not fit an int32 batchLength", message=RECORD_BATCH, field="batchLength"
        )
    after_crc = _AFTER_CRC.pack(
        attributes,
        batch.last_offset_delta,
        batch.base_timestamp,
        batch.max_timestamp,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        len(batch.records),
    )
    crc = crc32c(payload, crc32c(after_crc))
    return b"".join(
        (
            _BEFORE_CRC.pack(batch.base_offset, batch_length, batch.partition_leader_epoch, MAGIC),
            _CRC.pack(crc),
            after_crc,
            payload,
        )
    )


def _check_header_ranges(batch: RecordBatch, attributes: int) -> None:
    # Checked by name first so the error says which field, rather than struct.error's "argument out of range".
    for name, value, (low, high) in (
        ("base_offset", batch.base_offset, _INT64),
        ("partition_leader_epoch", batch.partition_leader_epoch, _INT32_RANGE),
        ("attributes", attributes, _INT16),
        ("last_offset_delta", batch.last_offset_delta, _INT32_RANGE),
        ("base_timestamp", batch.base_timestamp, _INT64),
        ("max_timestamp", batch.max_timestamp, _INT64),
        ("producer_id", batch.producer_id, _INT64),
        ("producer_epoch", batch.producer_epoch, _INT16),
        ("base_sequence", batch.base_sequence, _INT32_RANGE),
    ):
        if not low <= value <= high:
            raise EncodeError(f"{value} is outside [{low}, {high}]", message=RECORD_BATCH, field=name)


def _encode_record(record: Record, out: bytearray) -> None:
    if not _INT8[0] <= record.attributes <= _INT8[1]:
        raise ValueError(f"record attributes {record.attributes} do not fit an int8")
    body = bytearray()
    body.append(record.attributes & 0xFF)
    body += write_varlong(record.timestamp_delta)
    body += write_varint(record.offset_delta)
    _write_nullable_bytes(body, record.key)
    _write_nullable_bytes(body, record.value)
    body += write_varint(len(record.headers))
    for header in record.headers:
        key = header.key.encode("utf-8")
        body += write_varint(len(key))
        body += key
        _write_nullable_bytes(body, header.value)
    out += write_varint(len(body))
    out += body


def _write_nullable_bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out += write_varint(-1)
    else:
        out += write_varint(len(value))
        out += value


# ---------------------------------------------------------------------------
# Decoding


def decode_batches_with_tail(
    data: bytes | bytearray | memoryview, *, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED, as_kafka_reads: bool = False
) -> tuple[list[RecordBatch], bytes]:
    """All complete batches in ``data``, and the bytes of a trailing partial batch (``b""`` if none).

    A tail is partial when it is shorter than the 12 bytes that give a batch's
    length, or shorter than that length says; anything else wrong is a DecodeError.
    ``as_kafka_reads``: records read as a broker reads those it stores (``whole_records``: a key, value or header
    value size below -1 is null, invalid UTF-8 in a header key is replaced as Java replaces it, a long varint's extra
    bits are dropped), not refused as a strict decoder refuses them.
    """
    view = memoryview(data).cast("B")
    end = len(view)
    batches: list[RecordBatch] = []
    pos = 0
    while end - pos >= _LOG_OVERHEAD:
        try:
            (batch_length,) = _INT32.unpack_from(view, pos + 8)
            # Before the length check: a v0/v1 message set is shorter, and "wrong magic" is the useful error.
            if end - pos > _MAGIC_OFFSET:
                _check_magic(view[pos + _MAGIC_OFFSET])
            if batch_length < _MIN_BATCH_LENGTH:
                raise DecodeError(
                    f"batchLength {batch_length} is shorter than the {_MIN_BATCH_LENGTH}-byte batch header",
                    message=RECORD_BATCH,
                    field="batchLength",
                )
            batch_end = pos + _LOG_OVERHEAD + batch_length
            if batch_end > end:
                break
            batches.append(_decode_batch(view[pos:batch_end], max_decompressed, as_kafka_reads))
        except UnsupportedCompressionError:
            # Kept as its own type: a broker answers UNSUPPORTED_COMPRESSION_TYPE for it, not CORRUPT_MESSAGE.
            raise
        except DecodeError as exc:
            raise DecodeError(f"{exc.reason} (batch at byte {pos})", message=exc.message, field=exc.field) from None
        pos = batch_end
    return batches, bytes(view[pos:])


def decode_batches(
    data: bytes | bytearray | memoryview,
    *,
    allow_partial_tail: bool = False,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
    as_kafka_reads: bool = False,
) -> list[RecordBatch]:
    """All batches in ``data``; a trailing partial batch is an error unless ``allow_partial_tail`` (then it is dropped)."""
    batches, tail = decode_batches_with_tail(data, max_decompressed=max_decompressed, as_kafka_reads=as_kafka_reads)
    if tail and not allow_partial_tail:
        raise DecodeError(f"{len(tail)} trailing bytes are not a complete record batch", message=RECORD_BATCH)
    return batches


def decode_batch(data: bytes | bytearray | memoryview, *, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
                 as_kafka_reads: bool = False) -> RecordBatch:
    """Exactly one batch, with nothing after it (``as_kafka_reads``: see ``decode_batches_with_tail``)."""
    batches = decode_batches(data, max_decompressed=max_decompressed, as_kafka_reads=as_kafka_reads)
    if len(batches) != 1:
        raise DecodeError(f"expected exactly one record batch, found {len(batches)}", message=RECORD_BATCH)
    return batches[0]


def _check_magic(magic: int) -> None:
    if magic != MAGIC:
        signed = magic - 256 if magic > 127 else magic
        raise DecodeError(
            f"only magic v{MAGIC} record batches are supported, found magic {signed}", message=RECORD_BATCH, field="magic"
        )


def _decode_batch(view: memoryview, max_decompressed: int, as_kafka_reads: bool = False) -> RecordBatch:
    """One batch; ``view`` holds exactly its bytes (length and magic already checked)."""
    base_offset, _, partition_leader_epoch, magic = _BEFORE_CRC.unpack_from(view, 0)
    (stored_crc,) = _CRC.unpack_from(view, _CRC_START)
    computed_crc = crc32c(view[_ATTRIBUTES_START:])
    if stored_crc != computed_crc:
        raise DecodeError(
            f"CRC-32C mismatch: stored {stored_crc:#010x}, computed {computed_crc:#010x}", message=RECORD_BATCH, field="crc"
        )
    (
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = _AFTER_CRC.unpack_from(view, _ATTRIBUTES_START)

    codec_bits = attributes & _COMPRESSION_MASK
    if codec_bits > max(Compression):
        raise DecodeError(f"unknown compression codec {codec_bits}", message=RECORD_BATCH, field="attributes")
    codec = Compression(codec_bits)
    if count < 0:
        raise DecodeError(f"negative recordsCount {count}", message=RECORD_BATCH, field="recordsCount")

    payload = view[_HEADER_SIZE:]
    if codec is Compression.NONE:
        section = bytes(payload)
    else:
        # Refuse before decompressing: no output within the cap could hold this many records.
        if count > max_decompressed // _MIN_RECORD_SIZE:
            raise DecodeError(
                f"recordsCount {count} cannot fit in the {max_decompressed}-byte decompression limit",
                message=RECORD_BATCH,
                field="recordsCount",
            )
        section = decompress(codec, payload, max_decompressed)
    if count > len(section) // _MIN_RECORD_SIZE:
        raise DecodeError(
            f"recordsCount {count} cannot fit in {len(section)} bytes of records", message=RECORD_BATCH, field="recordsCount"
        )

    return RecordBatch(
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        magic=magic,
        attributes=attributes,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        records=_records_as_kafka_reads(section, count, codec) if as_kafka_reads else _decode_records(section, count),
    )


def _records_as_kafka_reads(buf: bytes, count: int, codec: Compression) -> list[Record]:
    try:
        read = read_uncompressed(buf, count) if codec is Compression.NONE else read_stream(buf, count)
    except (WholeRecordError, IllegalLength) as exc:
        raise DecodeError(str(exc) or "a record length varint longer than 5 bytes", message=RECORD_BATCH,
                          field="records") from None
    return [Record(r.offset_delta, r.timestamp_delta, r.key, r.value, [Header(java_decode(k), v) for k, v in r.headers],
                   r.attributes) for r in read]


def _decode_records(buf: bytes, count: int) -> list[Record]:
    records: list[Record] = []
    end = len(buf)
    pos = 0
    part = "length"

    def fail(reason: str) -> DecodeError:
        # The record being read is always the next one to be appended.
        return DecodeError(reason, message=RECORD_BATCH, field=f"records[{len(records)}].{part}")

    try:
        for _ in range(count):
            part = "length"
            length, pos = read_varint(buf, pos)
            if not _MIN_RECORD_BODY <= length <= end - pos:
                raise fail(f"record length {length} is not between {_MIN_RECORD_BODY} and the {end - pos} bytes left")
            record_end = pos + length

            part = "attributes"
            attributes = buf[pos]
            if attributes > 127:
                attributes -= 256
            pos += 1

            part = "timestampDelta"
            timestamp_delta, pos = read_varlong(buf, pos)
            if not _INT64[0] <= timestamp_delta <= _INT64[1]:
                raise fail(f"timestampDelta {timestamp_delta} does not fit an int64")

            part = "offsetDelta"
            offset_delta, pos = read_varint(buf, pos)
            if not _INT32_RANGE[0] <= offset_delta <= _INT32_RANGE[1]:
                raise fail(f"offsetDelta {offset_delta} does not fit an int32")

            part = "key"
            key, pos = _read_nullable_bytes(buf, pos, record_end, fail)
            part = "value"
            value, pos = _read_nullable_bytes(buf, pos, record_end, fail)

            part = "headersCount"
            header_count, pos = read_varint(buf, pos)
            if not 0 <= header_count <= (record_end - pos) // _MIN_HEADER_SIZE:
                raise fail(f"headersCount {header_count} cannot fit in the {max(record_end - pos, 0)} bytes left in the record")
            headers = []
            for header_index in range(header_count):
                part = f"headers[{header_index}].key"
                raw_key, pos = _read_nullable_bytes(buf, pos, record_end, fail)
                if raw_key is None:
                    raise fail("header keys cannot be null")
                try:
                    header_key = raw_key.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise fail(f"header key is not UTF-8: {exc.reason}") from None
                part = f"headers[{header_index}].value"
                header_value, pos = _read_nullable_bytes(buf, pos, record_end, fail)
                headers.append(Header(header_key, header_value))

            if pos != record_end:
                part = "length"
                raise fail(f"record length says {length} bytes but its fields take {length + pos - record_end}")
            records.append(Record(offset_delta, timestamp_delta, key, value, headers, attributes))
    except (IndexError, Malformed) as exc:
        # IndexError: a varint ran off the end of the buffer; Malformed: one longer than its type allows.
        detail = str(exc) if isinstance(exc, Malformed) else "truncated varint"
        raise fail(detail) from None
    if pos != end:
        raise DecodeError(f"{end - pos} bytes left over after {count} records", message=RECORD_BATCH, field="records")
    return records


def _read_nullable_bytes(buf: bytes, pos: int, limit: int, fail: Callable[[str], DecodeError]) -> tuple[bytes | None, int]:
    length, pos = read_varint(buf, pos)
    if length == -1:
        return None, pos
    if not 0 <= length <= limit - pos:
        raise fail(f"length {length} is not between -1 and the {max(limit - pos, 0)} bytes left in the record")
    return buf[pos : pos + length], pos + length
