"""Record batches a broken or hostile client might send: each a valid batch with one thing wrong (or plain garbage).

Used by the client fault tests (tests/clients/test_data_plane_faults.py) and compared with Kafka 3.9
(tests/differential/test_malformed_batches.py). The cases sit at the edges of what Kafka reads before it trusts a
batch: the size and magic of each batch's header (ByteBufferLogInputStream), a size that overflows its int
arithmetic, batches too short for the fields Kafka reads next, and a second batch after a good one.
"""

from __future__ import annotations

import gzip
import struct
import zlib

import crc32c

from kafka_shim.protocol.records import build_batch, encode_batch
from tests.support.appending import T0, batch, values

INT_MAX = 2**31 - 1


def _with_crc(data: bytearray) -> bytes:
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def _with_length(data: bytes, length: int, *, cut: bool = False) -> bytes:
    """``data`` with its first batch's length field set to ``length``; ``cut``: the bytes end where that length
    says (so the batch is whole, only shorter than its fields)."""
    out = bytearray(data)
    struct.pack_into(">i", out, 8, length)
    return bytes(out[: 12 + length]) if cut else bytes(out)


def _with_base_offset(data: bytes, offset: int) -> bytes:
    return struct.pack(">q", offset) + data[8:]


def _with_byte(data: bytes, at: int, value: int) -> bytes:
    out = bytearray(data)
    out[at] = value
    return bytes(out)


def legacy_message(magic: int, value: bytes | None, *, key: bytes | None = None, offset: int = 0, timestamp: int = 0,
                   attributes: int = 0, size: int | None = None) -> bytes:
    """One magic 0/1 message (offset, size, CRC-32, magic, attributes, [timestamp], key, value); ``size`` overrides
    the size field (the CRC still covers the bytes as written)."""
    body = bytes([magic, attributes]) + (struct.pack(">q", timestamp) if magic == 1 else b"")
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    entry = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(entry) if size is None else size) + entry


def malformed_batches() -> dict[str, bytes]:
    """Malformed batches by name, each refused by a Produce v3+ request (magic-2 offsets: length at 8, magic at 16,
    CRC at 17, attributes at 21, producer id at 43, record count at 57, records at 61)."""
    good = batch(values("m", 3))
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    huge_count = bytearray(good)
    struct.pack_into(">i", huge_count, 57, INT_MAX)
    zero_count = bytearray(good)
    struct.pack_into(">i", zero_count, 57, 0)
    garbage_records = bytearray(good)
    garbage_records[61:] = bytes((i * 37 + 11) % 256 for i in range(len(good) - 61))
    negative_record_length = bytearray(good)
    negative_record_length[61] = 0x01  # zig-zag varint -1
    garbage = bytes((i * 131 + 7) % 256 for i in range(200))
    cases = {
        "bad-crc": bytes(bad_crc),
        "truncated": good[: len(good) - 7],
        "header-only": good[:40],
        "garbage": garbage,
        "wrong-magic": _with_crc(bytearray(_with_byte(good, 16, 7))),
        "negative-magic": _with_byte(good, 16, 0xFF),
        "absurd-batch-length": _with_length(good, INT_MAX),
        "tiny-batch-length": _with_length(good, 5),
        "absurd-record-count": _with_crc(huge_count),
        "zero-record-count": _with_crc(zero_count),
        "garbage-records": _with_crc(garbage_records),
        "negative-record-length": _with_crc(negative_record_length),
        "no-records-valid-crc": _with_crc(bytearray(_with_length(good, 49, cut=True))),
        "empty": b"",
        # Less than a header: nothing whole to read.
        "first-11-bytes": good[:11],
        "first-16-bytes": good[:16],
        "first-17-bytes": good[:17],
        # ... though the size and magic are judged as soon as they are there.
        "first-12-bytes-tiny-length": _with_length(good[:12], 13),
        "first-17-bytes-wrong-magic": _with_byte(good[:17], 16, 3),
        # A good batch, then a broken one.
        "then-garbage": good + garbage,
        "then-tiny-batch-length": good + _with_length(good, 0),
        "then-absurd-batch-length": good + _with_length(good, INT_MAX),
    }
    # The size field at and around its edges: below the smallest message (14), a batch too short to hold the
    # producer id (51 bytes in all) or the whole header (61), and sizes whose sum with the 12-byte log overhead
    # no longer fits an int (from 2^31 - 12).
    for length in (-(2**31), -1, 0, 11, 12, 13):
        cases[f"batch-length-{length}"] = _with_length(good, length)
    for length in (14, 38, 39, 48, 49):
        cases[f"batch-length-{length}-cut"] = _with_length(good, length, cut=True)
    for length in (INT_MAX - 12, INT_MAX - 11, INT_MAX - 10):
        cases[f"batch-length-2^31-{2**31 - length}"] = _with_length(good, length)
    # Too short for the header, and not at base offset 0: the base offset is checked first.
    cases["batch-length-48-cut-base-offset-5"] = _with_length(_with_base_offset(good, 5), 48, cut=True)
    # A codec id Kafka does not know (5-7).
    cases["unknown-codec"] = _with_crc(bytearray(_with_byte(good, 22, 5)))
    # Too short for the header, but transactional: the transactional id is asked for first.
    cases["transactional-batch-length-14-cut"] = _with_length(_with_byte(good, 22, 0x10), 14, cut=True)
    return cases


def transactional_batch() -> bytes:
    """A valid transactional batch of producer 5, epoch 0."""
    return encode_batch(build_batch(values("t", 2), transactional=True, producer_id=5, producer_epoch=0, base_sequence=0))


def malformed_transactional_batches() -> dict[str, bytes]:
    """Transactional batches (sent with a transactional id) cut short of the producer fields Kafka reads before it
    asks the transaction coordinator (producer id at 43, epoch at 51, base sequence at 53)."""
    good = transactional_batch()
    return {f"transactional-batch-length-{n}-cut": _with_length(good, n, cut=True) for n in (38, 39, 40, 44, 45)}


def _legacy_raw(body: bytes) -> bytes:
    """A magic 0/1 message of ``body`` (magic, attributes, [timestamp], then anything), its size and CRC-32 right."""
    entry = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", 0, len(entry)) + entry


_NULL = struct.pack(">i", -1)
_STAMP = struct.pack(">q", 1_700_000_000_000)


def odd_message_sets() -> dict[str, bytes]:
    """Magic 0/1 messages that look wrong but that Kafka reads (by their lengths) and keeps."""
    return {
        "v0-bytes-after-the-value": _legacy_raw(b"\x00\x00" + _NULL + struct.pack(">i", 1) + b"a" + b"zz"),
        "v0-value-length--2": _legacy_raw(b"\x00\x00" + _NULL + struct.pack(">i", -2)),
        "v0-key-length--5": _legacy_raw(b"\x00\x00" + struct.pack(">i", -5) + _NULL),
    }


def malformed_message_sets() -> dict[str, bytes]:
    """Malformed records for a Produce v2 request (Kafka's ProduceRequest checks nothing below v3, so everything
    reaches the log): batches after a good one, and magic 0/1 messages with sizes that do not fit."""
    good = batch(values("m", 3))
    garbage = bytes((i * 131 + 7) % 256 for i in range(200))
    v0 = legacy_message(0, b"value")
    v1 = legacy_message(1, b"value", timestamp=1_700_000_000_000)
    return {
        "garbage": garbage,
        "tiny-batch-length": _with_length(good, 5),
        "absurd-batch-length": _with_length(good, INT_MAX),
        "batch-length-14-cut": _with_length(good, 14, cut=True),
        "batch-length-39-cut": _with_length(good, 39, cut=True),
        "then-garbage": good + garbage,
        "then-tiny-batch-length": good + _with_length(good, 0),
        "then-absurd-batch-length": good + _with_length(good, INT_MAX),
        "then-batch-length-14-cut": good + _with_length(good, 14, cut=True),
        "v0-size-13": _with_length(v0, 13),
        "v0-wrong-magic": _with_byte(v0, 16, 5),
        "v0-then-garbage": v0 + garbage,
        "v1-size-13": _with_length(v1, 13),
        "v1-absurd-size": _with_length(v1, INT_MAX),
        "v1-bad-crc": _with_byte(v1, len(v1) - 1, 0),
        "v1-then-v1-absurd-size": v1 + _with_length(v1, INT_MAX),
        # Whole messages with a valid CRC whose key or value does not fit: Kafka trips over them in LogValidator.
        "v1-size-14": _legacy_raw(b"\x01\x00" + _STAMP),
        "v1-size-21": _legacy_raw(b"\x01\x00" + _STAMP + _NULL + b"\x00\x00\x00"),
        "v0-value-cut": _legacy_raw(b"\x00\x00" + _NULL + struct.pack(">i", 5) + b"a"),
        "v0-key-too-long": _legacy_raw(b"\x00\x00" + struct.pack(">i", 100) + b"abc" + _NULL),
        "v0-unknown-codec": _legacy_raw(b"\x00\x05" + _NULL + struct.pack(">i", 1) + b"a"),
        "v1-unknown-codec": _legacy_raw(b"\x01\x06" + _STAMP + _NULL + struct.pack(">i", 1) + b"a"),
        "v1-gzip-value-too-long": _legacy_raw(b"\x01\x01" + _STAMP + _NULL + struct.pack(">i", 50) + b"\x1f\x8b"),
    }


def varint(value: int) -> bytes:
    zigzag, out = (value << 1) ^ (value >> 63), bytearray()
    while True:
        byte, zigzag = zigzag & 0x7F, zigzag >> 7
        if not zigzag:
            return bytes(out + bytes([byte]))
        out.append(byte | 0x80)


def raw_record(offset_delta: int, key: bytes | None = b"k", value: bytes = b"v", *, key_size: int | None = None,
            headers: bytes = varint(0), length: int | None = None) -> bytes:
    """One magic-2 record; ``key_size``, ``headers`` (count and headers as bytes) and ``length`` override what is
    written for them."""
    size = key_size if key_size is not None else (-1 if key is None else len(key))
    body = (b"\0" + varint(0) + varint(offset_delta) + varint(size) + (key or b"") + varint(len(value)) + value
            + headers)
    return varint(len(body) if length is None else length) + body


def _gzip_batch(records: bytes, count: int, *, attributes: int = 1) -> bytes:
    """A magic-2 batch around raw ``records`` (base offset 0, no producer), gzip-compressed when ``attributes`` says
    so, its CRC right."""
    payload = gzip.compress(records) if attributes & 0x07 == 1 else records
    rest = struct.pack(">ibIhiqqqhii", -1, 2, 0, attributes, count - 1, T0, T0 + count, -1, -1, -1, count) + payload
    return _with_crc(bytearray(struct.pack(">qi", 0, len(rest)) + rest))


def compressed_kept_batches() -> dict[str, bytes]:
    """Compressed batches with something wrong inside that Kafka reads partially: a topic that keeps the producer's
    codec (compression.type=producer) validates them through skipKeyValueIterator (DefaultRecord.readPartiallyFrom),
    which never checks a record's declared length, skips a negative size, and cannot rebuild records whose offsets
    are out of order. Each is produced once gzip-compressed; the uncompressed twin of some shows the strict path."""
    good = [raw_record(i) for i in range(3)]
    cases = {
        "length-too-large": [good[0], raw_record(1, length=200), good[2]],
        "length-too-small": [good[0], raw_record(1, length=3), good[2]],
        "offsets-0-2-4": [raw_record(0), raw_record(2), raw_record(4)],
        "offsets-1-2-3": [raw_record(1), raw_record(2), raw_record(3)],
        "key-size-minus-5": [good[0], raw_record(1, key=None, key_size=-5), good[2]],
        "header-value-size-minus-3": [good[0], raw_record(1, headers=varint(1) + varint(1) + b"h" + varint(-3)), good[2]],
        "negative-header-count": [good[0], raw_record(1, headers=varint(-2)), good[2]],
        "negative-header-key-size": [good[0], raw_record(1, headers=varint(1) + varint(-1) + varint(0)), good[2]],
        "trailing-bytes": [*good, b"\x00\x01"],
        "one-record-missing": good[:2],
        "value-past-the-end": [good[0], good[1], good[2][:-3]],
        "overlong-offset-varint": [good[0], varint(9) + b"\0\0" + b"\xff" * 5 + b"\x01" + b"\x02k\x02v\x00", good[2]],
    }
    out = {name: _gzip_batch(b"".join(parts), 3) for name, parts in cases.items()}
    # The producer set LogAppendTime: the record error names the partially read record (PartialDefaultRecord(...)).
    out["log-append-time-set"] = _gzip_batch(b"".join(good), 3, attributes=1 | 0x08)
    # Uncompressed twins: Kafka reads those records whole (DefaultRecord.readFrom), lengths checked.
    out["uncompressed-log-append-time-set"] = _gzip_batch(b"".join(good), 3, attributes=0x08)
    out["uncompressed-length-too-large"] = _gzip_batch(b"".join(cases["length-too-large"]), 3, attributes=0)
    out["uncompressed-key-size-minus-5"] = _gzip_batch(b"".join(cases["key-size-minus-5"]), 3, attributes=0)
    # A record length varint of five bytes whose last still has its continuation bit: an IllegalArgumentException
    # that the uncompressed iterator does not turn into an InvalidRecordException.
    overlong = [good[0], b"\xff" * 5 + good[1][1:], good[2]]
    out["uncompressed-overlong-length-varint"] = _gzip_batch(b"".join(overlong), 3, attributes=0)
    out["overlong-length-varint"] = _gzip_batch(b"".join(overlong), 3)
    return out


def _record_body(body: bytes) -> bytes:
    return varint(len(body)) + body


def whole_read_records() -> dict[str, bytes]:
    """The records of a batch with something odd inside that Kafka reads whole (DefaultRecord.readFrom: a compacted
    topic, or a batch rebuilt with the topic's codec) and a strict decoder refuses or reads otherwise: a key size
    below -1 is a null key, a header value size below -1 a null value, a header key is not decoded at all, and the
    extra bits of a fifth varint byte (a varlong's tenth) are dropped by Java's arithmetic. Three records each (the
    odd one in the middle), raw: wrap them with ``_gzip_batch``."""
    good = [raw_record(i) for i in range(3)]
    # Offset delta 1 in five bytes, bits above 32 set in the last; timestamp delta 0 in ten bytes, the same.
    wide_offset = _record_body(b"\0" + varint(0) + b"\x82\x80\x80\x80\x70" + varint(1) + b"k" + varint(1) + b"v" + varint(0))
    wide_timestamp = _record_body(b"\0" + b"\x80" * 9 + b"\x7e" + varint(1) + varint(1) + b"k" + varint(1) + b"v" + varint(0))
    cases = {
        "key-size-minus-5": raw_record(1, key=None, key_size=-5),
        "header-value-size-minus-3": raw_record(1, headers=varint(1) + varint(1) + b"h" + varint(-3)),
        "header-key-not-utf8": raw_record(1, headers=varint(1) + varint(3) + b"\xff\xfeh" + varint(1) + b"v"),
        "header-key-surrogate-pair": raw_record(1, headers=varint(1) + varint(6) + b"\xed\xa0\xbd\xed\xb8\x80" + varint(0)),
        "offset-delta-fifth-byte-high-bits": wide_offset,
        "timestamp-delta-tenth-byte-high-bits": wide_timestamp,
        "header-count-beyond-the-record": raw_record(1, headers=varint(2)),
    }
    return {name: b"".join([good[0], odd, good[2]]) for name, odd in cases.items()}


def whole_read_batch(records: bytes, *, gzipped: bool) -> bytes:
    """Three raw records as one batch, gzip-compressed or not."""
    return _gzip_batch(records, 3, attributes=1 if gzipped else 0)
