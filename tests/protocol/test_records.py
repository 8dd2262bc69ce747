"""Record batches (magic v2): a hand-written vector, round trips, hostile input, and kafka-python as a peer."""

from __future__ import annotations

import gzip
import struct
import time

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shim.protocol.errors import DecodeError, EncodeError
from kafka_shim.protocol.records import (
    Compression,
    Header,
    Record,
    RecordBatch,
    TimestampType,
    UnsupportedCompressionError,
    batch_attributes,
    build_batch,
    decode_batch,
    decode_batches,
    decode_batches_with_tail,
    encode_batch,
    supported_compressions,
)
from kafka_shim.protocol.records.compression import compress

# Written by hand from the v2 layout, field by field. 89 bytes in all.
VECTOR = bytes.fromhex(
    "0000000000000064"  # baseOffset = 100
    "0000004d"  # batchLength = 77 (everything after this field: 89 - 12)
    "00000003"  # partitionLeaderEpoch = 3
    "02"  # magic = 2
    "68a67217"  # crc: CRC-32C over the bytes from attributes to the end of the batch
    "0000"  # attributes: no compression, CreateTime, not transactional, not control
    "00000001"  # lastOffsetDelta = 1
    "0000018bcfe56800"  # baseTimestamp = 1_700_000_000_000
    "0000018bcfe56805"  # maxTimestamp = 1_700_000_000_005
    "0000000000001092"  # producerId = 4242
    "0001"  # producerEpoch = 1
    "00000000"  # baseSequence = 0
    "00000002"  # recordsCount = 2
    # record 0 (varints are zig-zag: n -> 2n, -1 -> 1)
    "24"  # length = 18
    "00"  # attributes
    "00"  # timestampDelta = 0
    "00"  # offsetDelta = 0
    "06"  # keyLength = 3
    "6b6579"  # key = b"key"
    "0a"  # valueLength = 5
    "76616c7565"  # value = b"value"
    "02"  # headersCount = 1
    "02"  # header keyLength = 1
    "68"  # header key = "h"
    "02"  # header valueLength = 1
    "78"  # header value = b"x"
    # record 1
    "10"  # length = 8
    "00"  # attributes
    "0a"  # timestampDelta = 5
    "02"  # offsetDelta = 1
    "01"  # keyLength = -1 (null key)
    "04"  # valueLength = 2
    "6869"  # value = b"hi"
    "00"  # headersCount = 0
)

VECTOR_BATCH = RecordBatch(
    base_offset=100,
    partition_leader_epoch=3,
    attributes=0,
    last_offset_delta=1,
    base_timestamp=1_700_000_000_000,
    max_timestamp=1_700_000_000_005,
    producer_id=4242,
    producer_epoch=1,
    base_sequence=0,
    records=[
        Record(offset_delta=0, timestamp_delta=0, key=b"key", value=b"value", headers=[Header("h", b"x")]),
        Record(offset_delta=1, timestamp_delta=5, key=None, value=b"hi", headers=[]),
    ],
)

HEADER_SIZE = 61
CRC_AT = 17
ATTRIBUTES_AT = 21
COUNT_AT = 57


def recrc(batch: bytes | bytearray) -> bytes:
    """Fix the CRC after a test edits a batch, so the edit reaches the parser behind the CRC check."""
    out = bytearray(batch)
    out[CRC_AT:ATTRIBUTES_AT] = struct.pack(">I", crc32c.crc32c(bytes(out[ATTRIBUTES_AT:])))
    return bytes(out)


def raw_batch(section: bytes, count: int, attributes: int = 0) -> bytes:
    """A batch around an arbitrary records section, with correct length and CRC."""
    out = bytearray(VECTOR[:HEADER_SIZE])
    out[8:12] = struct.pack(">i", HEADER_SIZE - 12 + len(section))
    out[ATTRIBUTES_AT : ATTRIBUTES_AT + 2] = struct.pack(">h", attributes)
    out[COUNT_AT:HEADER_SIZE] = struct.pack(">i", count)
    return recrc(out + section)


# ---------------------------------------------------------------------------
# The hand-written vector


def test_vector_decodes_to_expected_fields() -> None:
    batch = decode_batch(VECTOR)
    assert batch == VECTOR_BATCH
    assert batch.compression is Compression.NONE
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert not batch.is_transactional
    assert not batch.is_control
    assert not batch.has_delete_horizon
    assert batch.last_offset == 101


def test_vector_encodes_to_exact_bytes() -> None:
    assert encode_batch(VECTOR_BATCH) == VECTOR


def test_vector_crc_is_crc32c_from_attributes() -> None:
    assert struct.unpack_from(">I", VECTOR, CRC_AT)[0] == crc32c.crc32c(VECTOR[ATTRIBUTES_AT:])


def test_build_batch_reproduces_vector() -> None:
    built = build_batch(
        [(b"key", b"value", [("h", b"x")], 1_700_000_000_000), (None, b"hi", [], 1_700_000_000_005)],
        base_offset=100,
        partition_leader_epoch=3,
        producer_id=4242,
        producer_epoch=1,
        base_sequence=0,
    )
    assert built == VECTOR_BATCH


def test_build_batch_computes_deltas_and_max_timestamp() -> None:
    batch = build_batch([(b"a", b"1", [], 50), (b"b", b"2", [Header("k", None)], 80), (b"c", b"3", [], 40)])
    assert [(r.offset_delta, r.timestamp_delta) for r in batch.records] == [(0, 0), (1, 30), (2, -10)]
    assert batch.last_offset_delta == 2
    assert batch.base_timestamp == 50
    assert batch.max_timestamp == 80
    assert batch.records[1].headers == [Header("k", None)]
    with pytest.raises(ValueError):
        build_batch([])


def test_attribute_properties() -> None:
    attributes = batch_attributes(
        Compression.ZSTD, TimestampType.LOG_APPEND_TIME, transactional=True, control=True, delete_horizon=True
    )
    batch = RecordBatch(attributes=attributes, last_offset_delta=0, base_timestamp=0, max_timestamp=0)
    assert batch.compression is Compression.ZSTD
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.is_transactional and batch.is_control and batch.has_delete_horizon
    assert attributes == 0b111_1100


def test_several_batches_and_partial_tail() -> None:
    second = encode_batch(build_batch([(b"x", None, [], 7)], base_offset=102))
    data = VECTOR + second
    assert decode_batches(data) == [VECTOR_BATCH, decode_batch(second)]
    batches, tail = decode_batches_with_tail(data + second[:30])
    assert len(batches) == 2
    assert tail == second[:30]
    assert len(decode_batches(data + second[:30], allow_partial_tail=True)) == 2
    with pytest.raises(DecodeError, match="trailing bytes"):
        decode_batches(data + second[:30])
    assert decode_batches(b"") == []


# ---------------------------------------------------------------------------
# Round trips

int8 = st.integers(-(2**7), 2**7 - 1)
int16 = st.integers(-(2**15), 2**15 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
nullable_bytes = st.none() | st.binary(max_size=40)

headers = st.lists(st.builds(Header, st.text(max_size=10), nullable_bytes), max_size=4)
records = st.builds(
    Record,
    offset_delta=int32,
    timestamp_delta=int64,
    key=nullable_bytes,
    value=nullable_bytes,
    headers=headers,
    attributes=int8,
)


def batches(codec: Compression) -> st.SearchStrategy[RecordBatch]:
    # Any int16 attributes, with the codec bits forced to the codec under test.
    attributes = int16.map(lambda a: (a & ~0b111) | codec)
    return st.builds(
        RecordBatch,
        base_offset=int64,
        partition_leader_epoch=int32,
        attributes=attributes,
        last_offset_delta=int32,
        base_timestamp=int64,
        max_timestamp=int64,
        producer_id=int64,
        producer_epoch=int16,
        base_sequence=int32,
        records=st.lists(records, max_size=8),
    )


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip(codec: Compression, data: st.DataObject) -> None:
    batch = data.draw(batches(codec))
    encoded = encode_batch(batch)
    decoded = decode_batch(encoded)
    assert decoded == batch
    assert encode_batch(decoded) == encoded


@settings(max_examples=50)
@given(st.lists(batches(Compression.NONE) | batches(Compression.GZIP), max_size=4))
def test_round_trip_concatenated(many: list[RecordBatch]) -> None:
    assert decode_batches(b"".join(encode_batch(b) for b in many)) == many


def test_compression_argument_overrides_attributes() -> None:
    gzipped = encode_batch(VECTOR_BATCH, Compression.GZIP)
    decoded = decode_batch(gzipped)
    assert decoded.compression is Compression.GZIP
    assert decoded.records == VECTOR_BATCH.records
    # Kafka's gzip is a plain gzip stream.
    assert gzip.decompress(gzipped[HEADER_SIZE:]) == VECTOR[HEADER_SIZE:]


# ---------------------------------------------------------------------------
# Hostile and malformed input


def test_flipped_crc_byte() -> None:
    for at in range(CRC_AT, ATTRIBUTES_AT):
        corrupt = bytearray(VECTOR)
        corrupt[at] ^= 0x01
        with pytest.raises(DecodeError, match="CRC-32C mismatch: stored 0x"):
            decode_batch(bytes(corrupt))


def test_flipped_byte_in_crc_coverage() -> None:
    for at in range(ATTRIBUTES_AT, len(VECTOR)):
        corrupt = bytearray(VECTOR)
        corrupt[at] ^= 0x80
        with pytest.raises(DecodeError, match="CRC-32C mismatch"):
            decode_batch(bytes(corrupt))


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_truncated_at_every_offset(codec: Compression) -> None:
    whole = encode_batch(VECTOR_BATCH, codec)
    for cut in range(1, len(whole)):  # cut 0 is empty input: zero batches, which is valid
        prefix = whole[:cut]
        with pytest.raises(DecodeError):
            decode_batches(prefix)
        # A cut batch is only a partial tail, never a wrong answer or a different exception.
        assert decode_batches_with_tail(prefix) == ([], prefix)
        assert decode_batches(prefix, allow_partial_tail=True) == []
        assert decode_batches_with_tail(whole + prefix) == ([decode_batch(whole)], prefix)


def test_truncated_inside_batch_with_fixed_up_length() -> None:
    # Cut the records but make batchLength and CRC agree, so the record parser sees the short data.
    for cut in range(HEADER_SIZE, len(VECTOR)):
        with pytest.raises(DecodeError):
            decode_batch(raw_batch(VECTOR[HEADER_SIZE:cut], 2))


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_huge_record_count_fails_fast(codec: Compression) -> None:
    section = encode_batch(VECTOR_BATCH, codec)[HEADER_SIZE:]
    start = time.perf_counter()
    for count in (2**31 - 1, 10**6, 5):
        with pytest.raises(DecodeError, match="recordsCount"):
            decode_batch(raw_batch(section, count, attributes=codec))
    assert time.perf_counter() - start < 1


def test_negative_record_count() -> None:
    with pytest.raises(DecodeError, match="negative recordsCount"):
        decode_batch(raw_batch(VECTOR[HEADER_SIZE:], -1))


def test_fewer_records_than_count_leaves_bytes() -> None:
    with pytest.raises(DecodeError, match="left over"):
        decode_batch(raw_batch(VECTOR[HEADER_SIZE:], 1))


@pytest.mark.parametrize("magic", [0, 1, 3, 0xFF])
def test_bad_magic(magic: int) -> None:
    corrupt = bytearray(VECTOR)
    corrupt[16] = magic
    with pytest.raises(DecodeError, match="only magic v2"):
        decode_batch(bytes(corrupt))


def test_v1_message_set_reports_magic() -> None:
    # offset, size 14, crc, magic 1, attributes, timestamp, null key, empty value
    v1 = struct.pack(">qiibbqii", 0, 22, 0, 1, 0, 0, -1, 0)
    with pytest.raises(DecodeError, match="only magic v2"):
        decode_batches(v1)


@pytest.mark.parametrize("length", [-1, -(2**31), 0, 48])
def test_bad_batch_length(length: int) -> None:
    corrupt = bytearray(VECTOR)
    corrupt[8:12] = struct.pack(">i", length)
    with pytest.raises(DecodeError, match="batchLength"):
        decode_batches(bytes(corrupt))


def record(body_hex: str) -> bytes:
    """A record with the given body (everything after the length) and its correct length prefix."""
    body = bytes.fromhex(body_hex)
    return bytes([len(body) * 2]) + body  # zig-zag varint, one byte for bodies under 64 bytes


@pytest.mark.parametrize(
    ("section", "match"),
    [
        # Bodies: attributes, timestampDelta, offsetDelta, keyLength, [key], valueLength, [value], headersCount, [headers]
        (record("00 00 00 03 00 00"), r"records\[0\].key: length -2"),
        (record("00 00 00 7e 00 00"), r"records\[0\].key: length 63"),
        (record("00 00 00 01 01 7f"), "headersCount -64"),
        (record("00 00 00 01 01 7e"), "headersCount 63 cannot fit"),
        (record("00 00 00 01 01 02 01 01"), "header keys cannot be null"),
        (record("00 00 00 01 01 02 02 ff 01"), "not UTF-8"),
        (record("00 00 00 01 01 00 00"), "record length says 7 bytes but its fields take 6"),
        (record("00 00 00 01 01 02 02 68"), r"headers\[0\].value"),  # header cut off by the record length
        (bytes.fromhex("01") + bytes(6), "record length -1"),
        (bytes.fromhex("7e") + bytes(10), "record length 63"),
        (bytes.fromhex("ff ff ff ff ff ff 00"), r"records\[0\].length: unsigned varint longer than 5 bytes"),
        (record("00" + "ff" * 10 + "00 00 01 01 00"), "timestampDelta: varlong longer than 10 bytes"),
        (record("00 00 ff ff ff ff 7f 01 01 00"), "more than 32 bits"),  # 5-byte varint past int32
    ],
)
def test_malformed_record(section: bytes, match: str) -> None:
    with pytest.raises(DecodeError, match=match):
        decode_batch(raw_batch(section, 1))


def test_record_count_larger_than_records() -> None:
    with pytest.raises(DecodeError, match=r"records\[2\].length: truncated varint"):
        decode_batch(raw_batch(VECTOR[HEADER_SIZE:], 3))


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_random_bytes_raise_only_decode_error(data: bytes) -> None:
    try:
        decode_batches_with_tail(data)
    except DecodeError:
        pass


@settings(max_examples=500)
@given(st.binary(min_size=1, max_size=60), st.integers(0, 3), st.integers(0, 27))
def test_mangled_records_behind_valid_crc(junk: bytes, count: int, splice_at: int) -> None:
    section = VECTOR[HEADER_SIZE:]
    mangled = section[:splice_at] + junk + section[splice_at + len(junk) :]
    try:
        batch = decode_batch(raw_batch(mangled, count))
    except DecodeError:
        return
    assert len(batch.records) == count
    assert decode_batch(encode_batch(batch)) == batch


def test_decompression_bomb_is_capped() -> None:
    huge = b"\0" * (4 * 1024 * 1024)
    bomb = raw_batch(gzip.compress(huge), 1, attributes=Compression.GZIP)
    assert len(bomb) < 10_000
    with pytest.raises(DecodeError, match="exceed the 1048576-byte limit"):
        decode_batch(bomb, max_decompressed=1024 * 1024)


@pytest.mark.parametrize(
    "payload",
    [b"", b"not gzip at all", gzip.compress(b"x" * 100)[:-9], gzip.compress(b"abc") + b"junk"],
    ids=["empty", "not-gzip", "truncated", "trailing-junk"],  # the bytes hold the clock time: xdist workers must agree
)
def test_bad_gzip(payload: bytes) -> None:
    with pytest.raises(DecodeError, match="gzip"):
        decode_batch(raw_batch(payload, 0, attributes=Compression.GZIP))


def test_concatenated_gzip_members() -> None:
    section = VECTOR[HEADER_SIZE:]
    payload = gzip.compress(section[:10]) + gzip.compress(section[10:])
    assert decode_batch(raw_batch(payload, 2, attributes=Compression.GZIP)).records == VECTOR_BATCH.records


# What Kafka 3.9's GZIP compression (java.util.zip.GZIPOutputStream, Java 17) wrote for GZIP_INPUT: its header's OS
# byte is 255, where Python's zlib writes 3.
GZIP_INPUT = bytes((ord("kafka-shim gzip "[i % 16]) + i // 700) & 0xFF for i in range(3000))
KAFKA_GZIP = bytes.fromhex(
    "1f8b08000000000000ffedc7c90d83301000c05630f025242599cbdecbe60a4890a4f6d4b1d2ce6fc84fe49b2d8214e182b9"
    "20bb5dc96f5c1c7781bbc70e985cb4dbb59c72091f5a4be9a3f4ed1bed762d1f9e07f15ce197b72a0d90ec762dcf23e6f175"
    "b22c35fd64afb5fe0f233d2f8cb80b0000"
)


def test_gzip_compresses_to_the_bytes_kafka_writes() -> None:
    assert KAFKA_GZIP[:10] == bytes.fromhex("1f8b08000000000000ff")
    assert compress(Compression.GZIP, GZIP_INPUT) == KAFKA_GZIP
    assert gzip.decompress(KAFKA_GZIP) == GZIP_INPUT


@pytest.mark.parametrize("codec_bits", [5, 6, 7])
def test_unknown_codec(codec_bits: int) -> None:
    with pytest.raises(DecodeError, match=f"unknown compression codec {codec_bits}"):
        decode_batch(raw_batch(b"", 0, attributes=codec_bits))
    with pytest.raises(EncodeError, match="unknown compression codec"):
        encode_batch(VECTOR_BATCH, codec_bits)


@pytest.mark.parametrize("codec", [Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_missing_optional_codec_is_explained(codec: Compression, monkeypatch: pytest.MonkeyPatch) -> None:
    # Behave as on a machine without the optional packages, installed or not here.
    from kafka_shim.protocol.records import compression

    monkeypatch.setattr(compression, "_optional_module", lambda name: None)
    compression._codec.cache_clear()
    monkeypatch.setattr(compression, "_codec", compression._codec.__wrapped__)
    assert codec not in supported_compressions()
    package = {Compression.SNAPPY: "cramjam", Compression.LZ4: "lz4", Compression.ZSTD: "zstandard"}[codec]
    with pytest.raises(UnsupportedCompressionError, match=package) as info:
        decode_batch(raw_batch(b"\0" * 20, 1, attributes=codec))
    assert info.value.compression is codec
    with pytest.raises(EncodeError, match=f"{codec.name.lower()} compression is not supported.*{package}"):
        encode_batch(VECTOR_BATCH, codec)


# ---------------------------------------------------------------------------
# Optional codecs, when their packages are installed


def needs(codec: Compression) -> None:
    if codec is not Compression.NONE and codec not in supported_compressions():
        pytest.skip(f"no {codec.name.lower()} package installed")


@pytest.mark.parametrize("codec", [Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_optional_codec_round_trip(codec: Compression, data: st.DataObject) -> None:
    needs(codec)
    batch = data.draw(batches(codec))
    encoded = encode_batch(batch)
    assert decode_batch(encoded) == batch
    assert encode_batch(decode_batch(encoded)) == encoded


@pytest.mark.parametrize("codec", [Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_optional_codec_bomb_and_truncation(codec: Compression) -> None:
    needs(codec)
    big = build_batch([(None, b"\0" * (2 * 1024 * 1024), [], 0)])
    encoded = encode_batch(big, codec)
    with pytest.raises(DecodeError, match="limit"):
        decode_batch(encoded, max_decompressed=1024 * 1024)
    payload = encoded[HEADER_SIZE:]
    for cut in (1, len(payload) // 2, len(payload) - 1):
        with pytest.raises(DecodeError):
            decode_batch(raw_batch(payload[:cut], 1, attributes=codec))


def test_snappy_raw_and_xerial_both_decode() -> None:
    needs(Compression.SNAPPY)
    cramjam = pytest.importorskip("cramjam")
    section = VECTOR[HEADER_SIZE:]
    raw = bytes(cramjam.snappy.compress_raw(section))
    xerial = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    for start in range(0, len(section), 10):
        block = bytes(cramjam.snappy.compress_raw(section[start : start + 10]))
        xerial += struct.pack(">i", len(block)) + block
    for payload in (raw, xerial):
        assert decode_batch(raw_batch(payload, 2, attributes=Compression.SNAPPY)).records == VECTOR_BATCH.records


# ---------------------------------------------------------------------------
# Encoding errors


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"base_offset": 2**63}, "base_offset"),
        ({"producer_epoch": 2**15}, "producer_epoch"),
        ({"attributes": -(2**15) - 1}, "attributes"),
        ({"magic": 1}, "magic"),
        ({"records": [Record(2**31, 0, None, None)]}, r"records\[0\]"),
        ({"records": [Record(0, 2**63, None, None)]}, r"records\[0\]"),
        ({"records": [Record(0, 0, None, None, attributes=128)]}, r"records\[0\]"),
        ({"records": [Record(0, 0, None, None, [Header("\udc80", None)])]}, r"records\[0\]"),
    ],
)
def test_encode_rejects_out_of_range(change: dict[str, object], field: str) -> None:
    fields = {name: getattr(VECTOR_BATCH, name) for name in RecordBatch.__dataclass_fields__}
    fields.update(change)
    with pytest.raises(EncodeError, match=field):
        encode_batch(RecordBatch(**fields))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# kafka-python 3.0.12 as a peer implementation

PEER_RECORDS = [
    (b"k0", b"v" * 300, [("h", b"x"), ("null-header", None)], 1_700_000_000_000),
    (None, b"w" * 300, [], 1_699_999_999_990),
    (b"k2", None, [("\u00e9", b"")], 1_700_000_000_020),
]


ALL_CODECS = list(Compression)


def needs_peer(codec: Compression) -> None:
    """Skip codecs that either side lacks a package for; none and gzip always run."""
    needs(codec)
    kafka_codec = pytest.importorskip("kafka.codec")
    available = {
        Compression.NONE: True,
        Compression.GZIP: kafka_codec.has_gzip(),
        Compression.SNAPPY: kafka_codec.has_snappy(),
        Compression.LZ4: kafka_codec.has_lz4(),
        Compression.ZSTD: kafka_codec.has_zstd(),
    }
    if not available[codec]:
        pytest.skip(f"kafka-python has no {codec.name.lower()} support here")


@pytest.mark.parametrize("codec", ALL_CODECS)
def test_we_read_kafka_python_batches(codec: Compression) -> None:
    needs_peer(codec)
    kafka_default_records = pytest.importorskip("kafka.record.default_records")
    builder = kafka_default_records.DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(codec),
        is_transactional=False,
        producer_id=77,
        producer_epoch=2,
        base_sequence=10,
        batch_size=1 << 20,
    )
    for offset, (key, value, hdrs, timestamp) in enumerate(PEER_RECORDS):
        builder.append(offset, timestamp=timestamp, key=key, value=value, headers=hdrs)
    raw = bytes(builder.build())

    batch = decode_batch(raw)
    # kafka-python skips compression that does not pay off; these values are compressible.
    assert batch.compression is codec
    expected = build_batch(
        PEER_RECORDS, compression=codec, partition_leader_epoch=0, producer_id=77, producer_epoch=2, base_sequence=10
    )
    assert batch.records == expected.records
    assert batch.last_offset_delta == 2
    assert batch.base_timestamp == 1_700_000_000_000
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 2, 10)
    if codec is Compression.NONE:
        # Same inputs, same bytes (kafka-python stores the first timestamp as maxTimestamp until built).
        assert encode_batch(batch) == raw


@pytest.mark.parametrize("codec", ALL_CODECS)
def test_kafka_python_reads_our_batches(codec: Compression) -> None:
    needs_peer(codec)
    kafka_memory_records = pytest.importorskip("kafka.record.memory_records")
    ours = build_batch(PEER_RECORDS, base_offset=500, compression=codec, producer_id=77, producer_epoch=2, base_sequence=10)
    second = build_batch([(b"z", b"z", [], 5)], base_offset=503)
    records = kafka_memory_records.MemoryRecords(encode_batch(ours) + encode_batch(second))

    peer = records.next_batch()
    assert peer.validate_crc()
    assert peer.base_offset == 500
    assert peer.compression_type == codec
    assert peer.max_timestamp == 1_700_000_000_020
    assert (peer.producer_id, peer.producer_epoch, peer.base_sequence) == (77, 2, 10)
    seen = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in peer]
    assert seen == [
        (500 + i, timestamp, key, value, [tuple(h) for h in hdrs]) for i, (key, value, hdrs, timestamp) in enumerate(PEER_RECORDS)
    ]
    assert [r.offset for r in records.next_batch()] == [503]
    assert records.next_batch() is None
