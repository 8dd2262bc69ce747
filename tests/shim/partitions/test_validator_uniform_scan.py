"""The uniform-record fast path of Produce's record scan gives exactly the walk's answers.

The fast path (shim.partitions.validator: records of one shape checked by the regular-expression engine) must accept
exactly what DefaultRecord.readFrom's walk accepts, with the same count, max timestamp and offset order, and leave
everything else to the walk, whose refusals are Kafka's. Randomized batches, uncompressed and compressed, whole and
with bytes flipped, cut or added, are scanned both ways and the outcomes compared.
"""

from __future__ import annotations

import random

import pytest

from kafka_shim.protocol.records import Compression, Record, RecordBatch, TimestampType, batch_attributes, encode_batch
from kafka_shim.protocol.records.batch import Header
from kafka_shim.shim.partitions import record_scans, validator


def _outcome(batch_bytes: bytes, codec: Compression, fast: bool, monkeypatch: pytest.MonkeyPatch) -> object:
    with monkeypatch.context() as patch:
        if not fast:
            patch.setattr(validator, "_scan_uniform", lambda *_: None)
        try:
            shallow = validator.shallow_batches(batch_bytes)
            if not shallow or not shallow[0].header:
                return "no batch"
            scan = validator._scan_v2(shallow[0]) if codec is Compression.NONE else _compressed_scan(shallow[0])
            # The offset order matters only for a compressed batch (kept in place or rebuilt); the fast path does
            # not read it for an uncompressed one.
            return scan if codec is not Compression.NONE else (scan.count, scan.max_timestamp)
        except validator._Refused as refused:
            return refused.refusal
        except validator._Wraps:
            return "wraps"


def _compressed_scan(batch) -> object:
    """A compressed batch kept in place, as the validator reads it: the fixed-layout scan (unless patched away), else
    the records read as Kafka reads them partially."""
    buf = validator._decompressed(batch)
    count = batch.header[12]
    uniform = validator._scan_uniform(buf, count, True)
    if uniform is not None:
        return validator._scanned(batch.header, count, *uniform)
    records = validator._partially_read(batch, buf)
    return validator._Scan(len(records), max((r.timestamp for r in records), default=validator.NO_TIMESTAMP),
                           all(r.offset == i for i, r in enumerate(records)))


def _batch(rng: random.Random, codec: Compression) -> bytes:
    count = rng.choice([1, 2, 5, 63, 64, 65, 200, 8200])
    key_size = rng.choice([None, 0, 3, 100])
    value_size = rng.choice([None, 0, 1, 100, 1024, 9000])
    if count * (value_size or 1) > 2_000_000:
        count = 50
    shuffle = rng.random() < 0.2
    offsets = list(range(count))
    if shuffle:
        rng.shuffle(offsets)
    spread = rng.choice([0, 5, 100, 100_000, 2**40])
    headers = [Header("h", b"v")] if rng.random() < 0.1 else []
    records = [Record(offsets[i], rng.randrange(-spread, spread + 1) if spread else 0,
                      None if key_size is None else bytes(rng.randrange(256) for _ in range(key_size)),
                      None if value_size is None else rng.randbytes(value_size),
                      headers if rng.random() < 0.5 else [])
               for i in range(count)]
    return encode_batch(RecordBatch(attributes=batch_attributes(codec, TimestampType.CREATE_TIME),
                                    last_offset_delta=count - 1, base_timestamp=1_700_000_000_000,
                                    max_timestamp=1_700_000_000_000, records=records))


def _damaged(rng: random.Random, data: bytes) -> bytes:
    """The batch with its records section changed (the header and CRC refreshed so that the scan is what decides)."""
    body = bytearray(data[validator.V2_HEADER_SIZE:])
    what = rng.choice(["flip", "cut", "add", "count"])
    header = bytearray(data[:validator.V2_HEADER_SIZE])
    if what == "flip" and body:
        for _ in range(rng.randint(1, 3)):
            body[rng.randrange(len(body))] = rng.randrange(256)
    elif what == "cut" and body:
        del body[rng.randrange(len(body)):]
    elif what == "add":
        body += rng.randbytes(rng.randint(1, 4))
    else:
        header[57:61] = (int.from_bytes(header[57:61], "big") + rng.choice([-1, 1])).to_bytes(4, "big", signed=True)
    out = header + body
    out[8:12] = (len(out) - 12).to_bytes(4, "big")
    return bytes(out)


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_fast_path_answers_as_the_walk(codec: Compression, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(20261123 + int(codec))
    for _ in range(150 if codec is Compression.NONE else 60):
        whole = _batch(rng, codec)
        cases = [whole]
        if codec is Compression.NONE:
            cases += [_damaged(rng, whole) for _ in range(4)]
        for data in cases:
            assert _outcome(data, codec, True, monkeypatch) == _outcome(data, codec, False, monkeypatch)


def test_fast_path_takes_a_producers_batch() -> None:
    """A batch such as librdkafka sends (no key, 100 B values, 500 records) is read by the fast path."""
    records = [Record(i, i // 50, None, b"x" * 100) for i in range(500)]
    data = encode_batch(RecordBatch(last_offset_delta=499, base_timestamp=1_700_000_000_000,
                                    max_timestamp=1_700_000_000_000, records=records))
    low, high, in_order = validator._scan_uniform(data[validator.V2_HEADER_SIZE:], 500, True)
    assert (low, high, in_order) == (0, 9, True)


def _walked(data: bytes, codec: Compression, monkeypatch: pytest.MonkeyPatch) -> object:
    return _outcome(data, codec, False, monkeypatch)


def _fixed_only(data: bytes, codec: Compression) -> object:
    """What the fixed-layout scan alone answers, in _outcome's terms (None: it leaves the batch to the others)."""
    shallow = validator.shallow_batches(data)
    if not shallow or not shallow[0].header:
        return None
    header = shallow[0].header
    payload = bytes(shallow[0].view[validator.V2_HEADER_SIZE:])
    if codec is not Compression.NONE:
        payload = validator.decompress(codec, payload, validator.MAX_DECOMPRESSED)
    count = header[12]
    try:
        pos = record_scans.uvarint(payload, 0)[1]
        pos = record_scans.uvarint(payload, record_scans.uvarint(payload, pos + 1)[1])[1]
        key_size, pos = record_scans._field_size(payload, pos)
        value_size, _ = record_scans._field_size(payload, pos + max(key_size, 0))
    except IndexError:
        return None
    found = record_scans.scan_fixed(payload, 0, count, codec is not Compression.NONE, key_size, value_size)
    if found is None:
        return None
    scan = validator._scanned(header, count, *found)
    return scan if codec is not Compression.NONE else (scan.count, scan.max_timestamp)


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_fixed_layout_scan_answers_as_the_walk(codec: Compression, monkeypatch: pytest.MonkeyPatch) -> None:
    """The strided-slice scan, on its own: whenever it answers, the walk answers the same; it answers for the batches
    producers send (one-byte timestamp deltas, offsets in order, no headers), and not for anything damaged."""
    rng = random.Random(7_2026_1123 + int(codec))
    answered = 0
    for _ in range(200 if codec is Compression.NONE else 60):
        whole = _batch(rng, codec)
        cases = [whole] + ([_damaged(rng, whole) for _ in range(4)] if codec is Compression.NONE else [])
        for data in cases:
            fixed = _fixed_only(data, codec)
            if fixed is not None:
                answered += 1
                assert fixed == _walked(data, codec, monkeypatch)
    assert answered >= 20  # the random batches include the common producer shapes


@pytest.mark.parametrize("count", [1, 63, 64, 65, 8191, 8192, 8200])
def test_fixed_layout_scan_checks_every_field_of_every_record(count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A producer's batch across the offset-delta widths (1, 2, 3 bytes) is taken; a byte changed in any fixed field
    of the first, a middle or the last record makes the fixed scan step aside, and the full scan then answers as the
    walk does."""
    records = [Record(i, (i * 7) % 60 - 3, None, b"v" * 20) for i in range(count)]
    data = encode_batch(RecordBatch(last_offset_delta=count - 1, base_timestamp=1_700_000_000_000,
                                    max_timestamp=1_700_000_000_000, records=records))
    assert _fixed_only(data, Compression.NONE) == _walked(data, Compression.NONE, monkeypatch)
    assert _fixed_only(data, Compression.NONE) is not None
    starts, at = [], validator.V2_HEADER_SIZE
    for _ in range(count):
        starts.append(at)
        length, pos = record_scans.uvarint(data, at)
        at = pos + (length >> 1)
    for record in {0, count // 2, count - 1}:
        start = starts[record]
        end = starts[record + 1] if record + 1 < count else len(data)
        width = 1 if record < 64 else 2 if record < 8192 else 3
        # (where, bits): the length, the timestamp delta's and the offset delta's widths, the key's and the value's
        # sizes, the header count. (The attributes byte, at 1, is read and ignored, as Kafka does.)
        for offset, bits in ((0, 0x01), (2, 0x80), (3, 0x80), (3 + width, 0x01), (4 + width, 0x01), (end - start - 1, 0x01)):
            broken = bytearray(data)
            broken[start + offset] ^= bits
            broken[17:21] = validator.crc32c(bytes(broken[21:])).to_bytes(4, "big")
            walked = _walked(bytes(broken), Compression.NONE, monkeypatch)
            fixed = _fixed_only(bytes(broken), Compression.NONE)
            # A record unlike the first must make it step aside; the first record alone defines the shape (a single
            # record whose null key became empty is still a whole batch), and then it must answer as the walk.
            assert fixed is None if record else fixed in (None, walked), (record, offset)
            assert _outcome(bytes(broken), Compression.NONE, True, monkeypatch) == _walked(bytes(broken), Compression.NONE, monkeypatch)


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_fixed_layout_scan_follows_timestamp_deltas_that_widen(codec: Compression, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch filled over more than 63 ms (timestamp deltas of one byte, then two) is taken in runs, and answers as the
    walk; deltas beyond two bytes, or deltas that change width too often, are left to the other paths."""
    for deltas in ([i // 40 for i in range(9000)], [(i * 3) % 200 for i in range(300)], [-70, 5, 100, -3] * 20,
                   [i * 3 for i in range(4000)]):
        records = [Record(i, d, b"key", b"v" * 50) for i, d in enumerate(deltas)]
        data = encode_batch(RecordBatch(attributes=batch_attributes(codec, TimestampType.CREATE_TIME),
                                        last_offset_delta=len(records) - 1, base_timestamp=1_700_000_000_000,
                                        max_timestamp=1_700_000_000_000, records=records))
        fixed = _fixed_only(data, codec)
        assert fixed in (None, _walked(data, codec, monkeypatch))
        assert _outcome(data, codec, True, monkeypatch) == _walked(data, codec, monkeypatch)
        if deltas[0] == 0 and max(deltas) < 8192 and len(deltas) == 9000:
            assert fixed is not None  # two runs of timestamp widths across three offset widths
