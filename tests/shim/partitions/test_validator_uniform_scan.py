"""The uniform-record fast path of Produce's record scan gives exactly the walk's answers.

The fast path (shim.partitions.validator: records of one shape checked by the regular-expression engine) must accept
exactly what DefaultRecord.readFrom's walk accepts, with the same count, max timestamp and offset order, and leave
everything else to the walk, whose refusals are Kafka's. Randomized batches, uncompressed and compressed, whole and
with bytes flipped, cut or added, are scanned both ways and the outcomes compared.
"""

from __future__ import annotations

import random

import pytest

from kafka_shim.protocol.primitives import write_varlong
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


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_validation_by_scans_answers_as_validation_or_steps_aside(codec: Compression) -> None:
    """validate_by_scans (tried on the loop for requests of many small records) gives validate's whole answer, the
    bytes to write included, or None; never another answer. Batches whole and damaged, under the default settings and
    under settings that can refuse a record (LogAppendTime, timestamp bounds, compaction), where it steps aside."""
    rng = random.Random(20261127 + int(codec))
    settings = [validator.AppendSettings(), validator.AppendSettings(timestamp_type=TimestampType.LOG_APPEND_TIME),
                validator.AppendSettings(timestamp_before_max_ms=3_600_000), validator.AppendSettings(compacted=True),
                validator.AppendSettings(max_message_bytes=5000)]
    answered = written = 0
    for _ in range(80 if codec is Compression.NONE else 30):
        whole = _batch(rng, codec)
        for data in [whole] + ([_damaged(rng, whole) for _ in range(3)] if codec is Compression.NONE else []):
            for setting in settings:
                quick = validator.validate_by_scans(data, setting, 1_700_000_000_000, "t-0")
                if quick is not None:
                    answered += 1
                    written += isinstance(quick, validator.Validated)
                    assert _comparable(quick) == _comparable(validator.validate(data, setting, 1_700_000_000_000, "t-0"))
    if codec is Compression.NONE:
        assert written > 40  # the producers' shapes are answered, not only stepped aside from
    else:
        assert written == 0  # compressed records are only refused here (a batch too large), else left to the worker


def _comparable(outcome: object) -> object:
    if isinstance(outcome, validator.Validated):
        return bytes(outcome.records), outcome.batches, outcome.converted
    return outcome


@pytest.mark.parametrize("width", [1, 2])
def test_delta_bounds_are_the_smallest_and_largest_delta(width: int) -> None:
    """The fixed-layout scan's bounds of a run's timestamp deltas, checked at once when the first and last records hold
    them (records stamped in order), are the exact smallest and largest delta, whatever the order: ascending,
    descending, shuffled, negative, all alike, one record."""
    rng = random.Random(2026_11_27 + width)
    top = 63 if width == 1 else 8191

    def delta(lo: int, hi: int) -> int:  # a delta whose varint takes exactly ``width`` bytes
        while True:
            value = rng.randint(lo, hi)
            if len(write_varlong(value)) == width:
                return value

    for _ in range(400):
        count = rng.choice([1, 2, 3, 50, 700])
        lo, hi = sorted(delta(-top - 1, top) for _ in range(2))
        if rng.random() < 0.5 and hi >= 0:  # the common case: deltas from 0 up
            lo = delta(max(lo, 0), hi) if width == 1 else delta(max(lo, 64), max(hi, 64))
        lo, hi = min(lo, hi), max(lo, hi)
        deltas = sorted(delta(lo, hi) if lo < hi else lo for _ in range(count))
        shape = rng.choice(["ascending", "descending", "shuffled", "ends-inside", "same"])
        if shape == "descending":
            deltas.reverse()
        elif shape == "shuffled":
            rng.shuffle(deltas)
        elif shape == "ends-inside" and count > 3:  # the first and last records not the extremes
            deltas[0], deltas[-1] = deltas[count // 2 - 1], deltas[count // 2 + 1]
        elif shape == "same":
            deltas = [deltas[0]] * count
        stride = 5 + width
        data = bytearray(rng.randbytes(3 + stride * count))
        for i, value in enumerate(deltas):
            data[3 + i * stride : 3 + i * stride + width] = write_varlong(value)
        assert record_scans._delta_bounds(bytes(data), 3, 3 + stride * count, stride, width) == (min(deltas), max(deltas)), (shape, deltas)
