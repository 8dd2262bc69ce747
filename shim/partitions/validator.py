"""What a leader checks in a producer's records before it writes them, and what it writes (Kafka 3.9's LogValidator).

Kafka's counterparts: ``UnifiedLog.analyzeAndValidateRecords`` (base offset 0, ``max.message.bytes``, CRC) and
``LogValidator.validateMessagesAndAssignOffsets`` with its three paths, chosen as Kafka chooses them:

- **in place** (magic 2, the producer's codec is the topic's, or both uncompressed): the bytes are kept as sent;
  only the max timestamp may be corrected to the largest record timestamp (CreateTime), CRC recomputed. The log
  then stamps offsets, the leader epoch and, for LogAppendTime topics, the append time.
- **converted** (magic 0/1 message sets from clients before 0.11, uncompressed): one magic-2 batch of the same
  records, the record timestamps kept (``-1`` for magic 0).
- **rebuilt** (the topic's ``compression.type`` names another codec than the producer used, magic 0/1 compressed
  wrappers, or a compressed batch whose record offset deltas are not 0, 1, 2...): one new magic-2 batch, compressed
  with the topic's codec, carrying the producer id, epoch, base sequence and transactional flag of the batch sent.

Refusals carry Kafka's codes: CORRUPT_MESSAGE (2) for an unreadable set or a CRC that fails, MESSAGE_TOO_LARGE (10)
for a batch above ``max.message.bytes``, INVALID_RECORD (87) for broken batch rules (plain, no message in the
response), UNKNOWN_SERVER_ERROR (-1) where Kafka trips over the bytes with a plain Java exception (a codec id above
4, a magic 0/1 key or value length past the message's end), and RecordValidationException's INVALID_RECORD / INVALID_TIMESTAMP (32) with per-record ``record_errors`` and an
``error_message`` (the only partition refusals that carry one, as in ReplicaManager).

Some batches Kafka cannot even walk, and the exception escapes KafkaApis.handleProduceRequest: then the whole
request fails (:class:`RequestFailed`, ProduceRequest.getErrorResponse), every partition with the error and, unless it
is UNKNOWN_SERVER_ERROR, the exception's text in ``error_message`` (ApiError.fromThrowable). Where Kafka walks them:
the first batch of each partition for its transactional bit (RequestUtils.hasTransactionalRecords, before anything
else), the second batch in ProduceRequest.validateRecords (v3+), every batch for its producer id
(ReplicaManager.handleProduceAppend). What fails there: a size below 14 or a magic outside 0-2 (CorruptRecordException
from ByteBufferLogInputStream.nextBatchSize: CORRUPT_MESSAGE with its text), a size of 2^31-12 or more (size + 12
overflows an int: IllegalArgumentException, UNKNOWN_SERVER_ERROR), a magic-2 batch too short for its producer id
(51 bytes) or a transactional one for its base sequence (57), and from v3 to v6 a codec id above 4 (both
UNKNOWN_SERVER_ERROR); validateRecords answers a CorruptRecordException of the second batch in its partition alone. Everything here is a pure
function of the request bytes, the topic's settings and the clock, so a large request is validated off the event
loop (shim.requests.work).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.protocol.errors import DecodeError
from kafka_shim.protocol.java_utf8 import java_decode
from kafka_shim.protocol.records import (
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    Compression,
    Header,
    Record,
    RecordBatch,
    TimestampType,
    UnsupportedCompressionError,
    batch_attributes,
    encode_batch,
)
from kafka_shim.protocol.records.compression import decompress
from kafka_shim.protocol.records.crc import crc32c
from kafka_shim.protocol.records.whole_records import IllegalLength, WholeRecordError, read_stream, read_uncompressed
from kafka_shim.shim.javacompat.java_long import java_long
from kafka_shim.shim.partitions import legacy
from kafka_shim.shim.partitions.partial_records import PartialRecordError, read_partially
from kafka_shim.shim.partitions.record_scans import scan_uniform as _scan_uniform
from kafka_shim.shim.partitions.record_scans import uvarint as _uvarint
from kafka_shim.shim.producers.state import increment_sequence

LOG_OVERHEAD = 12
V2_HEADER_SIZE = 61
_HEADER_UP_TO_MAGIC = 17
NO_TIMESTAMP = -1
# Batches decompress up to this many bytes; Kafka has no such cap, but max.message.bytes bounds what it stores.
MAX_DECOMPRESSED = 256 * 1024 * 1024

# baseOffset, length, leader epoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp, maxTimestamp,
# producerId, producerEpoch, baseSequence, recordsCount
_V2 = struct.Struct(">qiibIhiqqqhii")
_MAX_TIMESTAMP = struct.Struct(">q")
_CRC = struct.Struct(">I")
_INT32 = struct.Struct(">i")
_INT16, _INT64 = struct.Struct(">h"), struct.Struct(">q")
_CRC_AT, _ATTRIBUTES_AT, _MAX_TIMESTAMP_AT = 17, 21, 35
_CODEC_MASK, _TIMESTAMP_TYPE_BIT, _TRANSACTIONAL_BIT, _CONTROL_BIT = 0x07, 0x08, 0x10, 0x20
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1

_TARGETS = {"uncompressed": Compression.NONE, "gzip": Compression.GZIP, "snappy": Compression.SNAPPY,
            "lz4": Compression.LZ4, "zstd": Compression.ZSTD}


@dataclass(frozen=True, slots=True)
class AppendSettings:
    """The topic configs the append path obeys (from its effective values: override, broker key, default)."""

    max_message_bytes: int = 1048588
    target_compression: Compression | None = None  # None: compression.type=producer, keep the producer's codec
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    timestamp_before_max_ms: int = 2**63 - 1
    timestamp_after_max_ms: int = 2**63 - 1
    compacted: bool = False
    min_insync_replicas: int = 1

    @classmethod
    def from_values(cls, values: Mapping[str, object]) -> AppendSettings:
        return cls(
            max_message_bytes=int(values["max.message.bytes"]),  # type: ignore[call-overload]
            target_compression=_TARGETS.get(str(values["compression.type"])),
            timestamp_type=(TimestampType.LOG_APPEND_TIME if values["message.timestamp.type"] == "LogAppendTime"
                            else TimestampType.CREATE_TIME),
            timestamp_before_max_ms=int(values["message.timestamp.before.max.ms"]),  # type: ignore[call-overload]
            timestamp_after_max_ms=int(values["message.timestamp.after.max.ms"]),  # type: ignore[call-overload]
            compacted="compact" in values["cleanup.policy"],  # type: ignore[operator]
            min_insync_replicas=int(values["min.insync.replicas"]),  # type: ignore[call-overload]
        )


@dataclass(frozen=True, slots=True)
class RecordError:
    """One record refused (the Produce response's BatchIndexAndErrorMessage)."""

    batch_index: int
    message: str | None

    def __str__(self) -> str:  # Java's RecordError.toString, which Kafka's error message quotes
        return f"RecordError(batchIndex={self.batch_index}, message={'null' if self.message is None else repr_java(self.message)})"


def repr_java(text: str) -> str:
    return f"'{text}'"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the records are not written. ``message`` goes into the response (v8+) only for record validation."""

    error: ErrorCode
    detail: str  # for the broker's log
    message: str | None = None
    record_errors: tuple[RecordError, ...] = ()


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """What the producer state needs of one batch to be written (offsets are relative to the first batch)."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    first_offset_delta: int  # offset of its first record, from the first record of the append
    record_count: int
    max_timestamp: int
    transactional: bool

    @property
    def last_sequence(self) -> int:
        return increment_sequence(self.base_sequence, self.record_count - 1) if self.base_sequence >= 0 else self.base_sequence


@dataclass(frozen=True, slots=True)
class Validated:
    """Records ready for PartitionLog.append (magic 2, base offset 0) and what each batch is."""

    # A bytearray is handed to PartitionLog.append, which stamps it in place; a memoryview (of the request's bytes,
    # kept as sent) is stored in pieces, its headers stamped apart.
    records: bytes | bytearray | memoryview
    batches: tuple[BatchInfo, ...] = ()
    converted: bool = False  # rebuilt or converted rather than kept as sent

    @property
    def empty(self) -> bool:
        return not self.batches


@dataclass(slots=True)
class _Shallow:
    magic: int
    view: memoryview
    legacy: legacy.LegacyBatch | None = None  # for magic 0/1
    header: tuple = field(default_factory=tuple)  # for magic 2, the unpacked _V2 fields


class _Refused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        self.refusal = refusal


class RequestFailed(Exception):
    """Kafka's walk over the batches threw out of KafkaApis.handleProduceRequest: the whole request answers with
    ``refusal`` in every partition (or, with acks=0, the connection closes). Its ``message`` is what
    ApiError.fromThrowable keeps: the exception's text, except for UNKNOWN_SERVER_ERROR."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.detail)
        message = None if refusal.error is ErrorCode.UNKNOWN_SERVER_ERROR else refusal.detail
        self.refusal = Refusal(refusal.error, refusal.detail, message)


# Sizes from here on overflow Java's int when Kafka adds the log overhead (ByteBufferLogInputStream.nextBatch).
_OVERFLOWING_SIZE = 2**31 - 1 - LOG_OVERHEAD + 1
# How far Kafka reads a magic-2 batch's header in ReplicaManager.handleProduceAppend: the producer id; a
# transactional batch with one also its epoch and base sequence.
_PRODUCER_ID_END, _BASE_SEQUENCE_END = 51, 57


def _size_refused(size: int) -> _Refused:
    return _Refused(Refusal(ErrorCode.CORRUPT_MESSAGE,
                            f"Record size {size} is less than the minimum record overhead ({legacy.RECORD_OVERHEAD_V0})"))


def _magic_refused(magic: int) -> _Refused:
    return _Refused(Refusal(ErrorCode.CORRUPT_MESSAGE, f"Invalid magic found in record: {magic}"))


def _overflow_refused(size: int) -> _Refused:
    return _Refused(Refusal(ErrorCode.UNKNOWN_SERVER_ERROR,
                            f"batch size {size} plus the log overhead overflows Java's int: Kafka fails with "
                            f"IllegalArgumentException (newLimit < 0)"))


def _signed(byte: int) -> int:
    return byte - 256 if byte > 127 else byte


# -- request-level checks (ProduceRequest.validateRecords) --------------------------------------------------------


# Recently split bytes objects and their batches: a Produce request's records are split by the request check, the
# transaction checks and the validation in turn (four times for each partition), always the same objects. Only bytes
# (which cannot change) of small requests are kept, and the whole memo is dropped when full: what it holds on to
# stays small, and a request's partitions, split in turn, still find theirs.
_recent_splits: dict[int, tuple[bytes, list[_Shallow]]] = {}
_SPLITS_KEPT = 32
_SPLIT_KEPT_UP_TO = 64 * 1024


def shallow_batches(records: bytes | memoryview) -> list[_Shallow]:
    """The whole batches (or legacy entries) in ``records``, a partial tail dropped (ByteBufferLogInputStream).
    Raises :class:`_Refused` with CORRUPT_MESSAGE for an impossible size or magic, UNKNOWN_SERVER_ERROR for a size
    that overflows. The list is shared with later calls for the same bytes: read it, do not change it."""
    hit = _recent_splits.get(id(records))
    if hit is not None and hit[0] is records:  # the memo holds the object, so its id cannot have been reused
        return hit[1]
    out = _split(records)
    if type(records) is bytes and len(records) <= _SPLIT_KEPT_UP_TO:
        if len(_recent_splits) >= _SPLITS_KEPT:
            _recent_splits.clear()
        _recent_splits[id(records)] = (records, out)
    return out


def _split(records: bytes | memoryview) -> list[_Shallow]:
    view = memoryview(records)
    out: list[_Shallow] = []
    at = 0
    while len(view) - at >= LOG_OVERHEAD:
        (size,) = _INT32.unpack_from(view, at + 8)
        if size < legacy.RECORD_OVERHEAD_V0:
            raise _size_refused(size)
        if len(view) - at < _HEADER_UP_TO_MAGIC:
            break
        magic = view[at + 16]
        if magic > 2:
            raise _magic_refused(_signed(magic))
        if size >= _OVERFLOWING_SIZE:
            raise _overflow_refused(size)
        if len(view) - at < LOG_OVERHEAD + size:
            break
        entry = view[at : at + LOG_OVERHEAD + size]
        if magic == 2:
            header = _V2.unpack_from(entry) if len(entry) >= V2_HEADER_SIZE else ()
            out.append(_Shallow(2, entry, header=header))
        else:
            out.append(_Shallow(magic, entry, legacy=legacy.shallow_entries(entry)[0][0]))
        at += LOG_OVERHEAD + size
    return out


def check_request(version: int, records: bytes | None) -> Refusal | None:
    """ProduceRequest.validateRecords: from v3 exactly one magic-2 batch per partition, zstd only from v7. Raises
    :class:`RequestFailed` where Kafka's check throws something other than an ApiException."""
    if version < 3:
        return None
    try:
        batches = shallow_batches(records or b"")
    except _Refused as refused:
        if refused.refusal.error is ErrorCode.UNKNOWN_SERVER_ERROR:
            raise RequestFailed(refused.refusal) from None
        return refused.refusal  # KafkaApis catches the CorruptRecordException: this partition only, no message
    if not batches:
        return Refusal(ErrorCode.INVALID_RECORD,
                       f"Produce requests with version {version} must have at least one record batch per partition")
    first = batches[0]
    if first.magic != 2:
        return Refusal(ErrorCode.INVALID_RECORD,
                       f"Produce requests with version {version} are only allowed to contain record batches with magic version 2")
    codec = first.view[_ATTRIBUTES_AT + 1] & _CODEC_MASK
    if version < 7 and codec > Compression.ZSTD:  # CompressionType.forId throws IllegalArgumentException
        raise RequestFailed(_unknown_codec(codec))
    if version < 7 and codec == Compression.ZSTD:
        return Refusal(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                       f"Produce requests with version {version} are not allowed to use ZStandard compression")
    if len(batches) > 1:
        return Refusal(ErrorCode.INVALID_RECORD,
                       f"Produce requests with version {version} are only allowed to contain exactly one record batch per partition")
    return None


def first_batch_transactional(records: bytes | None) -> bool:
    """Whether the first batch is transactional: RequestUtils.hasTransactionalRecords reads the first whole batch of
    each partition, first of all in a Produce request. Raises :class:`RequestFailed` for a first batch whose size or
    magic ByteBufferLogInputStream refuses or whose size overflows."""
    if records is None:
        return False
    remaining = len(records)
    if remaining < LOG_OVERHEAD:
        return False
    (size,) = _INT32.unpack_from(records, 8)
    try:
        if size < legacy.RECORD_OVERHEAD_V0:
            raise _size_refused(size)
        if remaining < _HEADER_UP_TO_MAGIC:
            return False
        magic = _signed(records[16])
        if not 0 <= magic <= 2:
            raise _magic_refused(magic)
        if size >= _OVERFLOWING_SIZE:
            raise _overflow_refused(size)
    except _Refused as refused:
        raise RequestFailed(refused.refusal) from None
    if remaining < LOG_OVERHEAD + size or magic != 2:
        return False
    return bool(records[_ATTRIBUTES_AT + 1] & _TRANSACTIONAL_BIT)


def first_batch_idempotent(records: bytes | None) -> bool:
    """Whether the first whole v2 batch has a producer id and is not transactional: what a broker before 2.8 (KIP-679)
    checked IDEMPOTENT_WRITE for. Called after ``first_batch_transactional`` read the same batch, so it only reads."""
    if records is None or len(records) < _PRODUCER_ID_AT + 8 or records[16] != 2:
        return False
    (size,) = _INT32.unpack_from(records, 8)
    if len(records) < LOG_OVERHEAD + size or records[_ATTRIBUTES_AT + 1] & _TRANSACTIONAL_BIT:
        return False
    return int.from_bytes(records[_PRODUCER_ID_AT:_PRODUCER_ID_AT + 8], "big", signed=True) >= 0


# The v2 batch header up to the producer id: base offset, length, leader epoch, magic, crc, attributes, last offset
# delta, first and max timestamps.
_PRODUCER_ID_AT = 8 + 4 + 4 + 1 + 4 + 2 + 4 + 8 + 8


def transactional_producers(records: bytes | None) -> set[tuple[int, int]]:
    """(producer id, epoch) of the transactional batches that have a producer id: what ReplicaManager verifies with
    the transaction coordinator. ReplicaManager.handleProduceAppend reads every batch of every partition for them;
    what it cannot read raises :class:`RequestFailed` (see the module's notes)."""
    try:
        batches = shallow_batches(records or b"")
    except _Refused as refused:
        raise RequestFailed(refused.refusal) from None
    found = set()
    for b in batches:
        if b.magic != 2:
            continue  # a legacy batch has no producer id
        if len(b.view) < _PRODUCER_ID_END:
            raise RequestFailed(_too_short(len(b.view), "producer id"))
        producer_id = b.header[9] if b.header else _INT64.unpack_from(b.view, 43)[0]
        if producer_id >= 0 and b.view[_ATTRIBUTES_AT + 1] & _TRANSACTIONAL_BIT:
            # Then it reads this batch's epoch and the first batch's base sequence.
            first = batches[0]
            if len(b.view) < _BASE_SEQUENCE_END or (first.magic == 2 and len(first.view) < _BASE_SEQUENCE_END):
                raise RequestFailed(_too_short(min(len(b.view), len(first.view)), "producer epoch and base sequence"))
            found.add((producer_id, _INT16.unpack_from(b.view, 51)[0]))
    return found


def first_base_sequence(records: bytes) -> int:
    """records.firstBatch.baseSequence, which ReplicaManager.handleProduceAppend verifies a partition with (a legacy
    first batch has none); :func:`transactional_producers` has checked that a magic-2 first batch is long enough."""
    if len(records) < _BASE_SEQUENCE_END or records[16] != 2:
        return NO_SEQUENCE
    return _INT32.unpack_from(records, _BASE_SEQUENCE_END - 4)[0]


def _too_short(size: int, fields: str) -> Refusal:
    return Refusal(ErrorCode.UNKNOWN_SERVER_ERROR,
                   f"a record batch of {size} bytes ends before its {fields}: Kafka fails with IndexOutOfBoundsException")


def _unknown_codec(codec: int) -> Refusal:
    return Refusal(ErrorCode.UNKNOWN_SERVER_ERROR, f"Unknown compression type id: {codec}")


# -- the log's checks ---------------------------------------------------------------------------------------------


def validate(records: bytes | None, settings: AppendSettings, now_ms: int, partition: str) -> Validated | Refusal:
    """Kafka's checks of a leader append and the magic-2 bytes to write, or why nothing is written."""
    try:
        return _validate(records or b"", settings, now_ms, partition)
    except _Refused as refused:
        return refused.refusal


def validate_by_scans(records: bytes | None, settings: AppendSettings, now_ms: int, partition: str) -> Validated | Refusal | None:
    """What :func:`validate` answers, when the fast record scans of record_scans.py can tell it (uncompressed magic-2
    records that no record check can refuse, in the shapes producers write); None when the records would have to be
    read one by one, which costs ten times as much a record. The produce path asks this first on the loop for
    requests of many small records, and hands the rest to its worker thread."""
    try:
        return _validate(records or b"", settings, now_ms, partition, walk=False)
    except _NeedsWalk:
        return None
    except _Refused as refused:
        return refused.refusal


class _NeedsWalk(Exception):
    """validate_by_scans: the records would have to be read one by one."""


def _validate(records: bytes, settings: AppendSettings, now: int, partition: str, walk: bool = True) -> Validated:
    batches = shallow_batches(records)
    source = Compression.NONE
    for batch in batches:  # UnifiedLog.analyzeAndValidateRecords
        size = len(batch.view)
        if batch.magic == 2 and (base := batch.header[0] if batch.header else _INT64.unpack_from(batch.view)[0]) != 0:
            raise _Refused(Refusal(ErrorCode.INVALID_RECORD, f"The baseOffset of the record batch in the append to {partition} "
                                   f"should be 0, but it is {base}"))
        if size > settings.max_message_bytes:
            raise _Refused(Refusal(ErrorCode.MESSAGE_TOO_LARGE, f"The record batch size in the append to {partition} is {size} "
                                   f"bytes which exceeds the maximum configured value of {settings.max_message_bytes}."))
        crc = _crc_problem(batch)
        if crc is not None:
            raise _Refused(Refusal(ErrorCode.CORRUPT_MESSAGE, f"Record is corrupt (stored crc = {crc}) in topic partition {partition}."))
        codec = _codec(batch)
        if codec is not Compression.NONE:
            source = codec
    if not batches:
        return Validated(b"")
    # LogValidator.getFirstBatchAndMaybeValidateNoMoreBatches, on every path: magic 2 or compressed means one batch.
    if (batches[0].magic == 2 or source is not Compression.NONE) and len(batches) > 1:
        raise _invalid("Compressed outer record has more than one batch")
    target = source if settings.target_compression is None else settings.target_compression
    if source is Compression.NONE and target is Compression.NONE:
        if all(b.magic == 2 for b in batches):
            return _in_place_uncompressed(batches, settings, now, partition, walk)
        if not walk:
            raise _NeedsWalk
        return _convert_uncompressed(batches, settings, now, partition)
    if not walk:
        raise _NeedsWalk
    return _compressed(batches, source, target, settings, now, partition)


def _crc_problem(batch: _Shallow) -> int | None:
    """The stored CRC when the batch is not valid (Kafka's isValid), else None."""
    if batch.magic == 2:
        if not batch.header:  # shorter than the header: never valid (DefaultRecordBatch.isValid)
            return _CRC.unpack_from(batch.view, _CRC_AT)[0]
        stored = batch.header[4]
        return None if crc32c(batch.view[_ATTRIBUTES_AT:]) == stored else stored
    assert batch.legacy is not None
    return None if batch.legacy.valid else batch.legacy.stored_crc


def _codec(batch: _Shallow) -> Compression:
    bits = batch.header[5] & _CODEC_MASK if batch.magic == 2 else batch.legacy.wrapper.codec  # type: ignore[union-attr]
    if bits > Compression.ZSTD:  # CompressionType.forId's IllegalArgumentException
        raise _Refused(_unknown_codec(bits))
    return Compression(bits)


def _validate_batch(first: _Shallow, batch: _Shallow, partition: str) -> None:
    """LogValidator.validateBatch for a client append: plain InvalidRecordExceptions (87, no message answered)."""
    if first.magic != batch.magic:
        raise _invalid(f"Batch magic {batch.magic} is not the same as the first batch's magic byte {first.magic} in topic partition {partition}")
    if batch.magic != 2:
        return
    (base, _l, _e, _m, _c, attributes, last_delta, _bt, _mt, producer_id, _pe, base_seq, count) = batch.header
    last = base + last_delta
    from_offsets = last - base + 1
    if from_offsets <= 0:
        raise _invalid(f"Batch has an invalid offset range: [{base}, {last}] in topic partition {partition}")
    if count <= 0:
        raise _invalid(f"Invalid reported count for record batch: {count} in topic partition {partition}")
    if from_offsets != count:
        raise _invalid(f"Inconsistent batch offset range [{base}, {last}] and count of records {count} in topic partition {partition}")
    if attributes & _CONTROL_BIT:
        raise _invalid(f"Clients are not allowed to write control records in topic partition {partition}")
    if producer_id >= 0 and base_seq < 0:
        raise _invalid(f"Invalid sequence number {base_seq} in record batch with producerId {producer_id} in topic partition {partition}")


def _invalid(detail: str) -> _Refused:
    return _Refused(Refusal(ErrorCode.INVALID_RECORD, detail))


@dataclass(frozen=True, slots=True)
class _Rec:
    """A record as LogValidator sees it (Record's offset, timestamp, key, value, headers)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple = ()
    text: str = ""  # its toString, for messages
    magic: int = 2
    compressed: bool = False




# Batches of fewer records are walked record by record: the fixed-layout scan's own set-up (~7 µs) costs more than
# the walk of so few (a one-record batch validates in 15 µs with the scan, 8.5 µs with the walk; at 8 records the
# two cost the same).
_UNIFORM_FROM = 8


@dataclass(frozen=True, slots=True)
class _Scan:
    count: int
    max_timestamp: int
    offsets_in_order: bool  # offset deltas 0, 1, 2...


def _scan_v2(batch: _Shallow, walk: bool = True) -> _Scan:
    """The records' count, max timestamp and offset order of an uncompressed batch, the structure checked as
    DefaultRecord.readFrom checks it, without building records: the in-place path needs no more, and keeps the bytes
    as sent. Varints of one byte (the common case) are read inline: this loop is the produce path's cost per record.
    (A compressed batch kept in place is read as Kafka reads it: shim.partitions.partial_records.)"""
    header = batch.header
    payload = batch.view[V2_HEADER_SIZE:]
    count = header[12]
    # The regex engine reads the view; the fixed-layout scan wants the bytes object itself (strided slices of a view
    # are slow), which the view is when the batch is the partition's whole records (the usual one batch).
    view = batch.view
    backing = (view.obj, V2_HEADER_SIZE) if type(view.obj) is bytes and len(view) == len(view.obj) else None
    uniform = _scan_uniform(payload, count, False, backing) if count >= _UNIFORM_FROM else None
    if uniform is not None:
        return _scanned(header, count, *uniform)
    if not walk:
        raise _NeedsWalk
    buf = bytes(payload)
    end, pos = len(buf), 0
    low = high = None
    in_order = True
    uvarint = _uvarint
    try:
        for index in range(count):
            # Varints of one and two bytes (every field of a record up to 8 KiB) are read inline: a call per
            # varint would double this loop's cost, which is the produce path's cost per record.
            b = buf[pos]
            if b < 0x80:
                raw = b
                pos += 1
            elif buf[pos + 1] < 0x80:
                raw = (b & 0x7F) | (buf[pos + 1] << 7)
                pos += 2
            else:
                raw, pos = _record_length_varint(buf, pos)
            length = (raw >> 1) ^ -(raw & 1)
            record_end = pos + length
            if length < 6 or record_end > end:
                raise IndexError(f"record length {length}")
            b = buf[pos + 1]  # after the attributes byte: the timestamp delta
            if b < 0x80:
                raw = b
                pos += 2
            elif buf[pos + 2] < 0x80:
                raw = (b & 0x7F) | (buf[pos + 2] << 7)
                pos += 3
            else:
                raw, pos = uvarint(buf, pos + 1)
            delta = (raw >> 1) ^ -(raw & 1)
            if low is None:
                low = high = delta
            elif delta > high:
                high = delta
            elif delta < low:
                low = delta
            b = buf[pos]
            if b < 0x80:
                raw = b
                pos += 1
            elif buf[pos + 1] < 0x80:
                raw = (b & 0x7F) | (buf[pos + 1] << 7)
                pos += 2
            else:
                raw, pos = uvarint(buf, pos)
            if (raw >> 1) ^ -(raw & 1) != index:
                in_order = False
            for _field in (0, 1):  # key, value
                b = buf[pos]
                if b < 0x80:
                    raw = b
                    pos += 1
                elif buf[pos + 1] < 0x80:
                    raw = (b & 0x7F) | (buf[pos + 1] << 7)
                    pos += 2
                else:
                    raw, pos = uvarint(buf, pos)
                size = (raw >> 1) ^ -(raw & 1)
                if size > 0:  # any negative size is null (Utils.readBytes)
                    pos += size
            b = buf[pos]
            raw, pos = (b, pos + 1) if b < 0x80 else uvarint(buf, pos)
            headers = (raw >> 1) ^ -(raw & 1)
            if headers < 0:
                raise IndexError(f"Found invalid number of record headers {headers}")
            for _ in range(headers):
                raw, pos = uvarint(buf, pos)
                key_size = (raw >> 1) ^ -(raw & 1)
                if key_size < 0:
                    raise IndexError("Invalid negative header key size")
                pos += key_size
                raw, pos = uvarint(buf, pos)
                value_size = (raw >> 1) ^ -(raw & 1)
                if value_size > 0:
                    pos += value_size
            if pos != record_end:
                raise IndexError(f"Invalid record size: expected to read {length} bytes in record payload, but instead read "
                                 f"{length + pos - record_end}")
    except IndexError as exc:
        raise _Refused(Refusal(ErrorCode.INVALID_RECORD, f"Found invalid record structure: {exc}")) from None
    except _IllegalLength:
        raise _Refused(_ILLEGAL_LENGTH) from None
    if pos != end:
        raise _invalid("Incorrect declared batch size, records still remaining in file")
    return _scanned(header, count, low, high, in_order)


class _IllegalLength(Exception):
    """A record length varint whose fifth byte still has its continuation bit."""


# DefaultRecord.readFrom(ByteBuffer) reads a record's length outside the try that turns its exceptions into an
# InvalidRecordException, and the uncompressed iterator converts only a BufferUnderflowException: the
# IllegalArgumentException of a too long length varint reaches ReplicaManager as itself (UNKNOWN_SERVER_ERROR).
_ILLEGAL_LENGTH = Refusal(ErrorCode.UNKNOWN_SERVER_ERROR, "IllegalArgumentException: a record length varint longer than "
                          "5 bytes in an uncompressed batch (Kafka's readFrom lets it through as itself)")


def _record_length_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """ByteUtils.readUnsignedVarint(ByteBuffer): at most five bytes, the fifth's high bits dropped as Java's int
    arithmetic drops them; IndexError past the end (BufferUnderflowException)."""
    result = 0
    for shift in (0, 7, 14, 21):
        b = buf[pos]
        pos += 1
        if b < 0x80:
            return result | (b << shift), pos
        result |= (b & 0x7F) << shift
    b = buf[pos]
    if b >= 0x80:
        raise _IllegalLength
    return (result | (b << 28)) & 0xFFFFFFFF, pos + 1


def _scanned(header: tuple, count: int, low: int | None, high: int | None, in_order: bool) -> _Scan:
    """The scan's result from the smallest and largest timestamp delta."""
    if low is None or high is None:
        return _Scan(0, NO_TIMESTAMP, True)
    base = header[7]
    if header[5] & _TIMESTAMP_TYPE_BIT:
        max_timestamp = header[8]
    elif _LONG_MIN <= base + low and base + high <= _LONG_MAX:
        max_timestamp = base + high
    else:  # Kafka's sums wrap: the largest wrapped timestamp is one of the two ends' or needs every record's
        raise _Wraps
    return _Scan(count, max_timestamp, in_order)


class _Wraps(Exception):
    """Record timestamps overflow a Java long: read the records the slow way."""


def _cannot_refuse_a_record(batch: _Shallow, settings: AppendSettings) -> bool:
    """No record of this batch can fail validateRecord: the defaults (CreateTime, no timestamp bounds, not compacted)
    and a batch that does not claim LogAppendTime. Then only the structure and the max timestamp need reading."""
    return (settings.timestamp_type is TimestampType.CREATE_TIME and not settings.compacted
            and settings.timestamp_before_max_ms == _LONG_MAX and settings.timestamp_after_max_ms == _LONG_MAX
            and not batch.header[5] & _TIMESTAMP_TYPE_BIT)


def _fast_scan(batch: _Shallow, settings: AppendSettings, walk: bool = True) -> _Scan | None:
    if not _cannot_refuse_a_record(batch, settings):
        return None
    try:
        return _scan_v2(batch, walk)
    except _Wraps:
        return None


def _v2_records(batch: _Shallow) -> list[_Rec]:
    """Every record of a magic-2 batch as DefaultRecord.readFrom reads it (protocol.records.whole_records): from the
    batch's buffer when uncompressed, from the decompressed stream otherwise."""
    header = batch.header
    count = header[12]
    try:
        if header[5] & _CODEC_MASK == Compression.NONE:
            read = read_uncompressed(bytes(batch.view[V2_HEADER_SIZE:]), count)
        else:
            read = read_stream(_decompressed(batch), count)
    except WholeRecordError as exc:
        raise _invalid(str(exc)) from None
    except IllegalLength:
        raise _Refused(_ILLEGAL_LENGTH) from None
    base_offset, base_timestamp = header[0], header[7]
    log_append = header[8] if header[5] & _TIMESTAMP_TYPE_BIT else None
    out = []
    for r in read:
        timestamp = log_append if log_append is not None else java_long(base_timestamp + r.timestamp_delta)
        offset = java_long(base_offset + r.offset_delta)
        # A rebuilt batch writes header keys as Java strings: invalid UTF-8 comes out replaced, as Kafka's does.
        headers = tuple(Header(java_decode(key), value) for key, value in r.headers)
        out.append(_Rec(offset, timestamp, r.key, r.value, headers,
                        f"DefaultRecord(offset={offset}, timestamp={timestamp}, key={len(r.key or b'')} bytes, "
                        f"value={len(r.value or b'')} bytes)"))
    return out


def _legacy_records(batch: _Shallow) -> list[_Rec]:
    assert batch.legacy is not None
    try:
        messages = legacy.inner_messages(batch.legacy, MAX_DECOMPRESSED)
    except legacy.LegacyCorrupt as exc:
        raise _Refused(Refusal(ErrorCode.CORRUPT_MESSAGE, str(exc))) from None
    except legacy.LegacyInvalid as exc:
        raise _invalid(str(exc)) from None
    except legacy.LegacyUnreadable as exc:
        raise _Refused(Refusal(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))) from None
    out = []
    for m in messages:
        codec = Compression(m.codec).name if m.codec <= Compression.ZSTD else str(m.codec)
        stamp = "" if m.magic == 0 else f", {'LogAppendTime' if m.log_append_time else 'CreateTime'}={m.timestamp}"
        out.append(_Rec(m.offset, m.timestamp, m.key, m.value, (),
                        f"Record(magic={m.magic}, attributes={m.attributes}, compression={codec}{stamp}, "
                        f"key={len(m.key or b'')} bytes, value={len(m.value or b'')} bytes)", m.magic, m.codec != 0))
    return out


def _batch_timestamp_type(batch: _Shallow) -> TimestampType:
    if batch.magic == 2:
        return TimestampType.LOG_APPEND_TIME if batch.header[5] & _TIMESTAMP_TYPE_BIT else TimestampType.CREATE_TIME
    assert batch.legacy is not None
    return TimestampType.LOG_APPEND_TIME if batch.legacy.wrapper.log_append_time else TimestampType.CREATE_TIME


def _record_error(batch: _Shallow, record: _Rec, index: int, settings: AppendSettings, now: int,
                  partition: str) -> tuple[ErrorCode, RecordError] | None:
    """LogValidator.validateRecord: magic, key of a compacted topic, timestamp bounds and type."""
    if record.magic != batch.magic:
        return ErrorCode.INVALID_RECORD, RecordError(
            index, f"Record {record.text}'s magic does not match outer magic {batch.magic} in topic partition {partition}")
    if settings.compacted and record.key is None:
        return ErrorCode.INVALID_RECORD, RecordError(
            index, f"Compacted topic cannot accept message without key in topic partition {partition}")
    if settings.timestamp_type is TimestampType.CREATE_TIME and record.timestamp != NO_TIMESTAMP:
        diff = java_long(now - record.timestamp)
        if diff > settings.timestamp_before_max_ms or java_long(-diff) > settings.timestamp_after_max_ms:
            low = java_long(now - settings.timestamp_before_max_ms)
            high = java_long(now + settings.timestamp_after_max_ms)
            return ErrorCode.INVALID_TIMESTAMP, RecordError(
                index, f"Timestamp {record.timestamp} of message with offset {record.offset} is out of range. "
                f"The timestamp should be within [{low}, {high}]")
    elif _batch_timestamp_type(batch) is TimestampType.LOG_APPEND_TIME:
        return ErrorCode.INVALID_TIMESTAMP, RecordError(
            index, f"Invalid timestamp type in message {record.text}. Producer should not set timestamp type to LogAppendTime.")
    return None


def _raise_record_errors(errors: list[tuple[ErrorCode, RecordError]]) -> None:
    """LogValidator.processRecordErrors: a RecordValidationException, INVALID_TIMESTAMP when any record has one."""
    if not errors:
        return
    found = tuple(e for _, e in errors)
    if any(code is ErrorCode.INVALID_TIMESTAMP for code, _ in errors):
        message = "One or more records have been rejected due to invalid timestamp"
        raise _Refused(Refusal(ErrorCode.INVALID_TIMESTAMP, message, message, found))
    shown = ", ".join(str(e) for e in found[:3])
    message = (f"One or more records have been rejected due to {len(found)} record errors in total, and only showing "
               f"the first three errors at most: [{shown}]")
    raise _Refused(Refusal(ErrorCode.INVALID_RECORD, message, message, found))


def _info(header: tuple, first_delta: int, count: int, max_timestamp: int) -> BatchInfo:
    return BatchInfo(header[9], header[10], header[11], first_delta, count, max_timestamp, bool(header[5] & _TRANSACTIONAL_BIT))


# The attribute bits DefaultRecordBatch.computeAttributes writes besides the timestamp type: codec, transactional,
# control, delete horizon.
_ATTRIBUTES_KEPT = _CODEC_MASK | _TRANSACTIONAL_BIT | _CONTROL_BIT | 0x40


def _set_max_timestamp(data: bytearray, at: int, timestamp: int) -> None:
    # DefaultRecordBatch.setMaxTimestamp(CREATE_TIME, timestamp): only when the type or the timestamp changes, and then
    # with the attributes computed again (a LogAppendTime claimed by the producer, and unknown bits, go); the CRC
    # covers both.
    (current,) = _MAX_TIMESTAMP.unpack_from(data, at + _MAX_TIMESTAMP_AT)
    (attributes,) = _INT16.unpack_from(data, at + _ATTRIBUTES_AT)
    if current == timestamp and not attributes & _TIMESTAMP_TYPE_BIT:
        return
    _INT16.pack_into(data, at + _ATTRIBUTES_AT, attributes & _ATTRIBUTES_KEPT)
    _MAX_TIMESTAMP.pack_into(data, at + _MAX_TIMESTAMP_AT, timestamp)
    (length,) = _INT32.unpack_from(data, at + 8)
    _CRC.pack_into(data, at + _CRC_AT, crc32c(memoryview(data)[at + _ATTRIBUTES_AT : at + LOG_OVERHEAD + length]))


def _in_place_uncompressed(batches: list[_Shallow], settings: AppendSettings, now: int, partition: str,
                           walk: bool = True) -> Validated:
    """LogValidator.assignOffsetsNonCompressed: every batch kept as sent, its max timestamp made right."""
    data = bytearray()
    infos: list[BatchInfo] = []
    delta = 0
    for batch in batches:
        _validate_batch(batches[0], batch, partition)
        scanned = _fast_scan(batch, settings, walk)
        if scanned is not None:
            max_timestamp, count = scanned.max_timestamp, scanned.count
        elif not walk:
            raise _NeedsWalk
        else:
            records = _v2_records(batch)
            errors = [e for i, r in enumerate(records) if (e := _record_error(batch, r, i, settings, now, partition)) is not None]
            _raise_record_errors(errors)
            max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)
            count = len(records)
        infos.append(_info(batch.header, delta, count, max_timestamp))
        delta += count
    if len(batches) == 1:
        timestamp = max(max_timestamp, NO_TIMESTAMP) if settings.timestamp_type is TimestampType.CREATE_TIME else None
        return Validated(_kept(batches[0], timestamp), tuple(infos))
    data = bytearray()
    for batch, info in zip(batches, infos, strict=True):
        at = len(data)
        data += batch.view
        if settings.timestamp_type is TimestampType.CREATE_TIME:
            _set_max_timestamp(data, at, max(info.max_timestamp, NO_TIMESTAMP))
    return Validated(data, tuple(infos))


def _kept(batch: _Shallow, max_timestamp: int | None) -> bytes | bytearray | memoryview:
    """The batch as sent, its max timestamp set to ``max_timestamp`` (None: left alone). When nothing changes and
    the request's bytes cannot change (``bytes``), a view of them: the log then stores them without a copy."""
    if type(batch.view.obj) is bytes and (max_timestamp is None or (batch.header[8] == max_timestamp
                                                                   and not batch.header[5] & _TIMESTAMP_TYPE_BIT)):
        return batch.view
    data = bytearray(batch.view)
    if max_timestamp is not None:
        _set_max_timestamp(data, 0, max_timestamp)
    return data


def _convert_uncompressed(batches: list[_Shallow], settings: AppendSettings, now: int, partition: str) -> Validated:
    """LogValidator.convertAndAssignOffsetsNonCompressed: magic 0/1 messages become one magic-2 batch."""
    kept: list[_Rec] = []
    for batch in batches:
        _validate_batch(batches[0], batch, partition)
        records = _legacy_records(batch) if batch.magic < 2 else _v2_records(batch)
        errors = [e for i, r in enumerate(records) if (e := _record_error(batch, r, i, settings, now, partition)) is not None]
        _raise_record_errors(errors)
        kept += records
    first = batches[0]
    producer = first.header if first.magic == 2 else None
    return _rebuilt(kept, Compression.NONE, producer, settings)


def _compressed(batches: list[_Shallow], source: Compression, target: Compression, settings: AppendSettings, now: int,
                partition: str) -> Validated:
    """LogValidator.validateMessagesAndAssignOffsetsCompressed: one batch, in place or rebuilt with the topic's codec."""
    first = batches[0]
    in_place = source == target and first.magic == 2
    records: list[_Rec] = []
    if in_place:
        _validate_batch(first, first, partition)
        buf = _decompressed(first)
        count = first.header[12]
        if count >= _UNIFORM_FROM and _cannot_refuse_a_record(first, settings):
            uniform = _scan_uniform(buf, count, True)
            if uniform is not None and uniform[2]:
                try:
                    scanned = _scanned(first.header, count, *uniform)
                    return Validated(_kept(first, scanned.max_timestamp), (_info(first.header, 0, count, scanned.max_timestamp),))
                except _Wraps:
                    pass
        records = _partially_read(first, buf)
    else:
        for batch in batches:
            _validate_batch(first, batch, partition)
            records += _legacy_records(batch) if batch.magic < 2 else _v2_records(batch)
    errors: list[tuple[ErrorCode, RecordError]] = []
    kept: list[_Rec] = []
    max_timestamp = NO_TIMESTAMP
    for index, record in enumerate(records):
        error: tuple[ErrorCode, RecordError] | None = None
        if source is not Compression.NONE and record.compressed:
            error = ErrorCode.INVALID_RECORD, RecordError(
                index, f"Compressed outer record should not have an inner record with a compression attribute set: {record.text}")
        if error is None:
            error = _record_error(first, record, index, settings, now, partition)
        if error is None and first.magic > 0:
            max_timestamp = max(max_timestamp, record.timestamp)
            if record.offset != index:  # old clients' inner offsets: Kafka rewrites rather than refuses
                in_place = False
        if error is not None:
            errors.append(error)
        else:
            kept.append(record)
    _raise_record_errors(errors)
    if not in_place and source == target and first.magic == 2:
        # Kafka read these records partially (keys and values skipped) and cannot rebuild them: building the new batch
        # asks PartialDefaultRecord for its key, which throws UnsupportedOperationException (no message answered).
        raise _Refused(Refusal(ErrorCode.UNKNOWN_SERVER_ERROR, "inner offsets out of order in a compressed batch kept in "
                               "place: Kafka fails rebuilding it from partially read records (key is skipped in "
                               "PartialDefaultRecord)"))
    if not in_place:
        rebuilt = _rebuilt(kept, target, first.header if first.magic == 2 else None, settings)
        if len(rebuilt.records) > settings.max_message_bytes:
            raise _Refused(Refusal(ErrorCode.MESSAGE_TOO_LARGE, f"Message batch size is {len(rebuilt.records)} bytes in append "
                                   f"to partition {partition} which exceeds the maximum configured size of {settings.max_message_bytes}."))
        return rebuilt
    kept_timestamp = max_timestamp if settings.timestamp_type is TimestampType.CREATE_TIME else None
    return Validated(_kept(first, kept_timestamp), (_info(first.header, 0, len(records), max_timestamp),))


def _decompressed(batch: _Shallow) -> bytes:
    try:
        return decompress(Compression(batch.header[5] & _CODEC_MASK), batch.view[V2_HEADER_SIZE:], MAX_DECOMPRESSED)
    except UnsupportedCompressionError as exc:
        raise _Refused(Refusal(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, str(exc))) from None
    except DecodeError as exc:
        raise _Refused(Refusal(ErrorCode.UNKNOWN_SERVER_ERROR, f"records cannot be decompressed: {exc}")) from None


def _partially_read(batch: _Shallow, buf: bytes) -> list[_Rec]:
    """The records as LogValidator sees a compressed batch it keeps in place (shim.partitions.partial_records)."""
    header = batch.header
    base_offset, base_timestamp = header[0], header[7]
    log_append = header[8] if header[5] & _TIMESTAMP_TYPE_BIT else None
    try:
        partial = read_partially(buf, header[12])
    except PartialRecordError as exc:
        raise _invalid(str(exc)) from None
    out = []
    for r in partial:
        offset = base_offset + r.offset_delta
        timestamp = log_append if log_append is not None else java_long(base_timestamp + r.timestamp_delta)
        out.append(_Rec(offset, timestamp, b"" if r.key_size >= 0 else None, None,
                        text=f"PartialDefaultRecord(offset={offset}, timestamp={timestamp}, key={r.key_size} bytes, "
                             f"value={r.value_size} bytes)"))
    return out


def _rebuilt(records: list[_Rec], codec: Compression, producer: tuple | None, settings: AppendSettings) -> Validated:
    """LogValidator.buildRecordsAndAssignOffsets: a new magic-2 batch (base offset 0; the log assigns offsets)."""
    if not records:
        raise _invalid("Compressed outer record has no batches at all")
    negative = next((r for r in records if r.timestamp < NO_TIMESTAMP), None)
    if negative is not None:
        # Kafka's MemoryRecordsBuilder.appendWithOffset refuses a timestamp below -1 with an IllegalArgumentException,
        # which ReplicaManager answers as UNKNOWN_SERVER_ERROR (no message). Only a batch rebuilt here meets that
        # builder: one kept in place, with the same record, is written.
        raise _Refused(Refusal(ErrorCode.UNKNOWN_SERVER_ERROR, f"Invalid negative timestamp {negative.timestamp}"))
    first_timestamp = records[0].timestamp
    max_timestamp = max(r.timestamp for r in records)
    producer_id, epoch, sequence, transactional = NO_PRODUCER_ID, -1, -1, False
    if producer is not None:
        producer_id, epoch, sequence, transactional = producer[9], producer[10], producer[11], bool(producer[5] & _TRANSACTIONAL_BIT)
    batch = RecordBatch(
        attributes=batch_attributes(codec, TimestampType.CREATE_TIME, transactional=transactional),
        last_offset_delta=len(records) - 1,
        base_timestamp=first_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        records=[Record(i, java_long(r.timestamp - first_timestamp), r.key, r.value, list(r.headers)) for i, r in enumerate(records)],
    )
    data = encode_batch(batch)
    info = BatchInfo(producer_id, epoch, sequence, 0, len(records), max_timestamp, transactional)
    return Validated(data, (info,), converted=True)
