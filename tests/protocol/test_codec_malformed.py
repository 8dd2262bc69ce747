"""Malformed input: the decoders must fail with DecodeError, fast, and say where.

* random bytes and mutated valid encodings fed to the decoders of every
  (message, version) may only raise :class:`protocol.errors.DecodeError` - never
  IndexError, struct.error, MemoryError, ...;
* every proper prefix of a valid encoding raises DecodeError. Decoding is a
  deterministic left-to-right parse, so a prefix follows exactly the path the full
  message took and must eventually need a byte past its end: it can never decode
  as a shorter message, whether or not ``whole=True`` (which additionally rejects
  trailing bytes);
* hostile lengths (arrays of 2**31 - 1 elements, strings and tagged fields
  running past the end) fail at once, naming message, version and field;
* FrameSplitter refuses oversized and negative sizes before buffering a body,
  and reassembles frames cut at arbitrary chunk boundaries.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kafka_shim.protocol.errors import DecodeError, EncodeError, FrameTooLarge, ProtocolError
from kafka_shim.protocol.framing import FrameSplitter, decode_response, parse_request
from kafka_shim.protocol.messages import Struct, message_class
from kafka_shim.protocol.schema import api_index
from tests.support.schema_strategies import all_message_versions, message_strategy, pair_id, sort_unknown_tags

PAIRS = all_message_versions()

SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def decode_or_decode_error(name: str, version: int, data: bytes, *, whole: bool):
    """Decode; a DecodeError (with the right message and version) is fine and gives None."""
    cls = message_class(name)
    try:
        return cls.decode(data, version, whole=whole)
    except DecodeError as exc:
        assert exc.message == name
        assert exc.version == version
        assert exc.api_key == cls.api_key
        return None


def check_accepted_message(name: str, version: int, msg) -> None:
    """Whatever the decoder accepts, the encoder writes back, and that decodes to the same."""
    cls = message_class(name)
    encoded = msg.encode(version)
    again = cls.decode(encoded, version, whole=True)
    assert again.encode(version) == encoded
    # A float64 read from random bytes may be NaN, which equals nothing: the values are compared as written out.
    assert repr(sort_unknown_tags(again)) == repr(sort_unknown_tags(msg))


# -- random and mutated bytes ----------------------------------------------------------------


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
@settings(SETTINGS, max_examples=4)
@given(data=st.binary(max_size=48))
def test_random_bytes_raise_only_decode_error(pair: tuple[str, int], data: bytes) -> None:
    name, version = pair
    for whole in (False, True):
        msg = decode_or_decode_error(name, version, data, whole=whole)
        if msg is not None and _varints_fit_in_32_bits(msg):
            check_accepted_message(name, version, msg)


@st.composite
def mutated_encoding(draw: st.DrawFn) -> tuple[str, int, bytes]:
    """A valid encoding of a random message with a few random edits."""
    name, version = draw(st.sampled_from(PAIRS), label="pair")
    data = bytearray(draw(message_strategy(name, version), label="message").encode(version))
    for _ in range(draw(st.integers(1, 3), label="edits")):
        pos = draw(st.integers(0, len(data)), label="pos")
        kind = draw(st.sampled_from(["set", "insert", "delete", "big", "varint"]), label="edit")
        if kind == "set" and pos < len(data):
            data[pos] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=4))
        elif kind == "delete":
            del data[pos : pos + draw(st.integers(1, 4))]
        elif kind == "big":  # a hostile length or count
            data[pos : pos + 4] = draw(
                st.sampled_from([b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\x80\x00\x00\x00", b"\x7f\xff"])
            )
        else:  # a long or over-long unsigned varint
            data[pos : pos + 1] = draw(
                st.sampled_from([b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\x7f", b"\x80\x80\x80\x80\x80\x01", b"\xff\x7f"])
            )
    return name, version, bytes(data)


@settings(SETTINGS, max_examples=1500)
@given(case=mutated_encoding())
def test_mutated_encodings_raise_only_decode_error(case: tuple[str, int, bytes]) -> None:
    name, version, data = case
    for whole in (False, True):
        msg = decode_or_decode_error(name, version, data, whole=whole)
        if msg is not None and _varints_fit_in_32_bits(msg):
            check_accepted_message(name, version, msg)


def _varints_fit_in_32_bits(msg) -> bool:
    """False if the message holds a tag the decoder should have refused (see test_varint_above_32_bits_rejected)."""

    def ok(v) -> bool:
        if isinstance(v, Struct):
            if any(tag > 0xFFFFFFFF for tag, _ in v.unknown_tagged_fields or ()):
                return False
            return all(ok(getattr(v, f)) for f in v._fields)
        if isinstance(v, list):
            return all(ok(x) for x in v)
        return True

    return ok(msg)


@settings(SETTINGS, max_examples=400)
@given(
    payload=st.one_of(
        st.binary(max_size=40),
        st.tuples(st.sampled_from(sorted(api_index())), st.integers(-1, 20), st.binary(max_size=40)).map(
            lambda t: t[0].to_bytes(2, "big") + t[1].to_bytes(2, "big", signed=True) + t[2]
        ),
    )
)
def test_parse_request_raises_only_decode_error(payload: bytes) -> None:
    try:
        frame = parse_request(payload)
        frame.decode_body()
    except DecodeError:
        pass


@settings(SETTINGS, max_examples=300)
@given(api_key=st.sampled_from(sorted(api_index())), version=st.integers(0, 20), payload=st.binary(max_size=40))
def test_decode_response_raises_only_decode_error(api_key: int, version: int, payload: bytes) -> None:
    try:
        decode_response(api_key, version, payload)
    except DecodeError:
        pass


# -- truncation ------------------------------------------------------------------------------


# A failing decode reruns a freshly compiled, traced decoder to name the field (about
# 0.4-2 ms each), so the per-(message, version) test samples cut points and the
# exhaustive one is kept to a few messages.


def assert_truncations_fail(name: str, version: int, encoded: bytes, cuts, *, modes=(True, False)) -> None:
    cls = message_class(name)
    for cut in cuts:
        for whole in modes:
            with pytest.raises(DecodeError) as info:
                cls.decode(encoded[:cut], version, whole=whole)
            assert info.value.message == name and info.value.version == version


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
@settings(SETTINGS, max_examples=2)
@given(data=st.data())
def test_every_truncation_raises_decode_error(pair: tuple[str, int], data: st.DataObject) -> None:
    """Every (message, version): the first and last cuts and a random sample between."""
    name, version = pair
    encoded = data.draw(message_strategy(name, version), label="message").encode(version)
    n = len(encoded)
    if n == 0:  # e.g. ApiVersionsRequest v0: nothing to cut
        return
    sample = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=2, unique=True), label="cuts")
    edges = {0, 1, n - 2, n - 1} & set(range(n))
    assert_truncations_fail(name, version, encoded, sorted(edges), modes=(True,))
    assert_truncations_fail(name, version, encoded, sorted({*sample, n - 1}))


THOROUGH = [
    ("RequestHeader", 2),
    ("ApiVersionsRequest", 3),
    ("ApiVersionsResponse", 3),
    ("MetadataRequest", 8),
    ("MetadataRequest", 12),
    ("MetadataResponse", 12),
    ("DescribeAclsResponse", 1),
    ("ProduceRequest", 9),
    ("FetchRequest", 16),
    ("ConsumerGroupHeartbeatResponse", 0),
]


@pytest.mark.parametrize("pair", THOROUGH, ids=pair_id)
@settings(SETTINGS, max_examples=3)
@given(data=st.data())
def test_every_truncation_raises_decode_error_all_cuts(pair: tuple[str, int], data: st.DataObject) -> None:
    """A few messages, every cut (for long encodings: every cut in the first and last 40 bytes, 40 between)."""
    name, version = pair
    encoded = data.draw(message_strategy(name, version), label="message").encode(version)
    n = len(encoded)
    cuts = range(n)
    if n > 120:
        middle = data.draw(st.lists(st.integers(40, n - 41), max_size=40, unique=True), label="cuts")
        cuts = sorted({*range(40), *middle, *range(n - 40, n)})
    assert_truncations_fail(name, version, encoded, cuts)


@pytest.mark.parametrize(
    ("name", "version"), [("MetadataResponse", 12), ("FetchRequest", 16), ("RequestHeader", 2), ("ProduceRequest", 3)]
)
def test_trailing_bytes_rejected_only_with_whole(name: str, version: int) -> None:
    cls = message_class(name)
    msg = cls()
    encoded = msg.encode(version)
    assert cls.decode(encoded + b"\x00", version) == msg
    with pytest.raises(DecodeError) as info:
        cls.decode(encoded + b"\x00", version, whole=True)
    assert (info.value.message, info.value.version) == (name, version)
    assert "1 unexpected bytes" in str(info.value)


# -- hostile lengths -------------------------------------------------------------------------


def expect_decode_error(name: str, version: int, data: bytes, field: str, *, fast: bool = True) -> DecodeError:
    cls = message_class(name)
    cls.decoder(version)  # build the fast codec outside the timed part
    start = time.perf_counter()
    with pytest.raises(DecodeError) as info:
        cls.decode(data, version)
    elapsed = time.perf_counter() - start
    err = info.value
    assert err.message == name
    assert err.version == version
    assert err.api_key == cls.api_key
    assert err.field == field, str(err)
    assert name in str(err) and f"v{version}" in str(err) and field in str(err)
    if fast:
        assert elapsed < 0.1, f"took {elapsed:.3f}s"
    return err


HUGE_ARRAYS = [
    pytest.param(
        "MetadataRequest",
        8,
        bytes.fromhex("7fffffff") + bytes.fromhex("0003666f6f") * 7 + b"\x01\x00\x01",  # Topics: ARRAY count 2**31 - 1
        "Topics",
        id="MetadataRequest-v8-int32-count",
    ),
    pytest.param(
        "MetadataRequest",
        12,
        bytes.fromhex("8080808008") + bytes(36),  # Topics: COMPACT_ARRAY uvarint 2**31 = (2**31 - 1) + 1
        "Topics",
        id="MetadataRequest-v12-compact-count",
    ),
    pytest.param(
        "MetadataResponse",
        8,
        bytes.fromhex(
            "00000000"  # ThrottleTimeMs
            "00000000"  # Brokers: []
            "ffff"  # ClusterId: null
            "00000001"  # ControllerId
            "00000001"  # Topics: 1
            "0000 0001 61 00"  # ErrorCode, Name "a", IsInternal
            "00000001"  # Partitions: 1
            "0000 00000000 00000001 00000000"  # ErrorCode, PartitionIndex, LeaderId, LeaderEpoch
            "7fffffff"  # ReplicaNodes: ARRAY of int32, count 2**31 - 1
        )
        + bytes(8),
        "Topics.Partitions.ReplicaNodes",
        id="MetadataResponse-v8-int32-array",
    ),
    pytest.param(
        "MetadataResponse",
        12,
        bytes.fromhex(
            "00000000"  # ThrottleTimeMs
            "01"  # Brokers: []
            "00"  # ClusterId: null
            "00000001"  # ControllerId
            "02"  # Topics: 1
            "0000 0261"  # ErrorCode, Name "a"
            "00000000000000000000000000000000 00"  # TopicId, IsInternal
            "02"  # Partitions: 1
            "0000 00000000 00000001 00000000"  # ErrorCode, PartitionIndex, LeaderId, LeaderEpoch
            "8080808008"  # ReplicaNodes: COMPACT_ARRAY of int32, uvarint 2**31: 2**31 - 1 elements
        )
        + bytes(8),
        "Topics.Partitions.ReplicaNodes",
        id="MetadataResponse-v12-compact-int32-array",
    ),
    pytest.param(
        "DescribeGroupsRequest",
        0,
        bytes.fromhex("7fffffff") + bytes.fromhex("000161") * 12,  # Groups: ARRAY of STRING, count 2**31 - 1
        "Groups",
        id="DescribeGroupsRequest-v0-string-array",
    ),
]


@pytest.mark.parametrize(("name", "version", "data", "field"), HUGE_ARRAYS)
def test_huge_array_count_fails_fast(name: str, version: int, data: bytes, field: str) -> None:
    assert len(data) <= 64
    err = expect_decode_error(name, version, data, field)
    assert "2147483647" in str(err)


def test_compact_string_length_past_end() -> None:
    # ClientSoftwareName: COMPACT_STRING, uvarint 0x7f = 126 bytes, but 3 follow.
    expect_decode_error("ApiVersionsRequest", 3, bytes.fromhex("7f 616263"), "ClientSoftwareName")
    # Two-byte uvarint length (0xff 0x01 = 255, so 254 bytes): the general path.
    expect_decode_error("ApiVersionsRequest", 3, bytes.fromhex("ff01 616263"), "ClientSoftwareName")
    # The second string: 02 "a" is fine, then 0x10 = 15 bytes claimed.
    expect_decode_error("ApiVersionsRequest", 3, bytes.fromhex("0261 10 6263"), "ClientSoftwareVersion")
    # A compact string inside an array element.
    expect_decode_error("MetadataRequest", 12, bytes.fromhex("02 " + "00" * 16 + "30 61"), "Topics.Name")


def test_string_length_past_end_non_flexible() -> None:
    # Topics[0].Name: STRING length 0x7fff, 3 bytes follow.
    expect_decode_error("MetadataRequest", 8, bytes.fromhex("00000001 7fff 666f6f 010001"), "Topics.Name")
    # BYTES length (int32) past the end: SaslAuthenticateRequest v0 AuthBytes.
    expect_decode_error("SaslAuthenticateRequest", 0, bytes.fromhex("00001000 00"), "AuthBytes")


def test_negative_and_null_lengths() -> None:
    # Topics is not nullable in v0: a count of -1 is an error.
    expect_decode_error("MetadataRequest", 0, bytes.fromhex("ffffffff"), "Topics")
    # ... but it is from v1 on.
    assert message_class("MetadataRequest").decode(bytes.fromhex("ffffffff"), 1).topics is None
    # A NULLABLE_STRING of any negative length is null, as Kafka's generated readers take it (-2 here).
    assert message_class("DescribeAclsResponse").decode(bytes.fromhex("00000000 0000 fffe 00000000"), 1).error_message is None
    # A non-nullable STRING cannot be null.
    expect_decode_error("MetadataRequest", 8, bytes.fromhex("00000001 ffff 010001"), "Topics.Name")
    # A non-nullable COMPACT_STRING cannot be null (0).
    expect_decode_error("ApiVersionsRequest", 3, bytes.fromhex("00 00 00"), "ClientSoftwareName")


def test_overlong_varint() -> None:
    # Six bytes of unsigned varint: Kafka allows at most five.
    expect_decode_error("ApiVersionsRequest", 3, bytes.fromhex("808080808001 00 00"), "ClientSoftwareName")


def test_unknown_tagged_field_size_past_end() -> None:
    body = bytes.fromhex(
        "01"  # Topics: COMPACT_NULLABLE_ARRAY, empty
        "01"  # AllowAutoTopicCreation
        "00"  # IncludeTopicAuthorizedOperations
        "01"  # tagged fields: 1
        "05 10 aa"  # tag 5, size 16, one byte follows
    )
    err = expect_decode_error("MetadataRequest", 12, body, "<tagged fields>")
    assert "tagged field" in err.reason


def test_nested_tagged_field_size_past_end() -> None:
    body = bytes.fromhex(
        "02"  # Topics: 1
        "00000000000000000000000000000000"  # TopicId
        "0261"  # Name "a"
        "01 07 7f 00"  # topic tagged fields: 1; tag 7, size 127, 1 byte
    )
    expect_decode_error("MetadataRequest", 12, body, "Topics.<tagged fields>")


def test_known_tagged_field_runs_past_the_end() -> None:
    body = bytes.fromhex(
        "0000 01 00000000"  # ErrorCode, ApiKeys [], ThrottleTimeMs
        "01"  # tagged fields: 1
        "01 08 000000"  # tag 1 (FinalizedFeaturesEpoch, int64), size 8, 3 bytes follow
    )
    expect_decode_error("ApiVersionsResponse", 3, body, "FinalizedFeaturesEpoch")


def test_a_known_tagged_fields_size_is_not_read() -> None:
    """Kafka's generated readers read a known tag's value where it starts and skip its size: a size that disagrees
    with the value changes nothing (the fuzzing probe's Fetch v17 ClusterId case)."""
    body = bytes.fromhex(
        "0000 01 00000000"  # ErrorCode, ApiKeys [], ThrottleTimeMs
        "01"  # tagged fields: 1
        "01 09 0000000000000005"  # tag 1 (int64) but size 9
    )
    decoded = message_class("ApiVersionsResponse").decode(body, 3, whole=True)
    assert decoded.finalized_features_epoch == 5


def test_a_negative_tagged_field_count_reads_as_none() -> None:
    """A count of 2^31 or more is a negative Java int: the reading loop runs no time, the request is served."""
    body = bytes.fromhex("01 01 00" "ffffffff0f")  # Topics [], flags, tagged fields: 0xFFFFFFFF
    decoded = message_class("MetadataRequest").decode(body, 12, whole=True)
    assert (decoded.topics, decoded.unknown_tagged_fields) == ([], None)


def test_a_compact_length_past_2_to_the_31_is_null() -> None:
    """Kafka takes a compact length of 0xFFFFFFFF (-1 as an int, less one -2) as null where null is allowed."""
    body = bytes.fromhex("ffffffff0f 01 00 00")  # Topics: uvarint 0xFFFFFFFF, flags, tagged fields: none
    assert message_class("MetadataRequest").decode(body, 12, whole=True).topics is None


def test_unsupported_versions() -> None:
    cls = message_class("MetadataRequest")
    with pytest.raises(DecodeError) as info:
        cls.decode(b"\x00" * 8, 13)
    assert (info.value.message, info.value.version, info.value.field) == ("MetadataRequest", 13, None)
    with pytest.raises(EncodeError):
        cls().encode(-1)


def test_varint_bits_above_32_are_dropped_as_in_java() -> None:
    """ByteUtils.readUnsignedVarint shifts a fifth byte into an int: what lies past bit 31 is lost, not refused."""
    body = bytes.fromhex(
        "01 01 00"  # Topics [], AllowAutoTopicCreation, IncludeTopicAuthorizedOperations
        "01"  # tagged fields: 1
        "8080808040 00"  # tag: uvarint 0x40 << 28 = 2**34, which a Java int holds as 0; size 0
    )
    assert message_class("MetadataRequest").decode(body, 12, whole=True).unknown_tagged_fields == [(0, b"")]
    with pytest.raises(DecodeError):  # a sixth byte is refused
        message_class("MetadataRequest").decode(bytes.fromhex("01 01 00 01 808080808001 00"), 12, whole=True)


def test_compact_string_longer_than_int16_rejected() -> None:
    body = (
        bytes.fromhex("818002")  # ClientSoftwareName: uvarint 32769 = length 32768 + 1
        + b"a" * 32768
        + bytes.fromhex("0262 00")  # ClientSoftwareVersion "b", tagged fields: none
    )
    expect_decode_error("ApiVersionsRequest", 3, body, "ClientSoftwareName")


# -- FrameSplitter ---------------------------------------------------------------------------


def size(n: int) -> bytes:
    return n.to_bytes(4, "big", signed=True)


def test_frame_too_large_refused_from_the_size_prefix_alone() -> None:
    splitter = FrameSplitter(max_size=1000)
    with pytest.raises(FrameTooLarge) as info:
        splitter.feed(size(1001))  # no body sent at all: refused before any is buffered
    assert (info.value.size, info.value.limit) == (1001, 1000)
    assert isinstance(info.value, ProtocolError)


def test_frame_too_large_prefix_split_across_chunks() -> None:
    splitter = FrameSplitter(max_size=1000)
    assert splitter.feed(b"\x7f\xff") == []
    with pytest.raises(FrameTooLarge):
        splitter.feed(b"\xff\xff" + b"x" * 10)


def test_frame_too_large_after_a_good_frame() -> None:
    splitter = FrameSplitter(max_size=16)
    with pytest.raises(FrameTooLarge):
        splitter.feed(size(3) + b"abc" + size(2**31 - 1))


def test_frame_at_the_limit_is_accepted() -> None:
    splitter = FrameSplitter(max_size=16)
    assert splitter.feed(size(16) + b"y" * 16) == [b"y" * 16]
    assert splitter.buffered == 0


@pytest.mark.parametrize("n", [-1, -2, -(2**31)])
def test_negative_frame_size(n: int) -> None:
    splitter = FrameSplitter(max_size=1000)
    with pytest.raises(ProtocolError) as info:
        splitter.feed(size(n))
    assert not isinstance(info.value, FrameTooLarge)


def test_empty_frames() -> None:
    splitter = FrameSplitter(max_size=10)
    assert splitter.feed(size(0) + size(0) + size(1) + b"z") == [b"", b"", b"z"]
    assert splitter.buffered == 0


@settings(SETTINGS, max_examples=300)
@given(
    frames=st.lists(st.binary(max_size=300), max_size=8),
    partial=st.binary(max_size=3),
    data=st.data(),
)
def test_frames_reassemble_across_arbitrary_chunks(frames: list[bytes], partial: bytes, data: st.DataObject) -> None:
    stream = b"".join(size(len(f)) + f for f in frames) + partial  # `partial`: an incomplete size prefix
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=20), label="cuts"))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    splitter = FrameSplitter(max_size=300)
    got: list[bytes] = []
    for chunk in chunks:
        got.extend(splitter.feed(chunk))
    assert got == frames
    assert splitter.buffered == len(partial)


@settings(SETTINGS, max_examples=200)
@given(frames=st.lists(st.binary(max_size=50), min_size=1, max_size=5), body=st.binary(max_size=20), data=st.data())
def test_incomplete_last_frame_stays_buffered(frames: list[bytes], body: bytes, data: st.DataObject) -> None:
    stream = b"".join(size(len(f)) + f for f in frames)
    tail = size(len(body) + 1) + body  # one byte short
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream + tail)), max_size=10), label="cuts"))
    whole = stream + tail
    splitter = FrameSplitter(max_size=100)
    got: list[bytes] = []
    for a, b in zip([0, *cuts], [*cuts, len(whole)], strict=True):
        got.extend(splitter.feed(whole[a:b]))
    assert got == frames
    assert splitter.buffered == len(tail)
    assert splitter.feed(b"!") == [body + b"!"]
    assert splitter.buffered == 0


@settings(SETTINGS, max_examples=200)
@given(frames=st.lists(st.binary(max_size=40), max_size=4), limit=st.integers(0, 40), data=st.data())
def test_oversized_frame_refused_wherever_it_falls(frames: list[bytes], limit: int, data: st.DataObject) -> None:
    """The first frame above the limit raises FrameTooLarge; none before its size prefix is lost."""
    assume(any(len(f) > limit for f in frames))
    stream = b"".join(size(len(f)) + f for f in frames)
    first_big = next(i for i, f in enumerate(frames) if len(f) > limit)
    big_prefix_end = sum(4 + len(f) for f in frames[:first_big]) + 4
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8), label="cuts"))
    splitter = FrameSplitter(max_size=limit)
    got: list[bytes] = []
    fed = 0
    with pytest.raises(FrameTooLarge):
        for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True):
            got.extend(splitter.feed(stream[a:b]))
            fed = b
    # It raised in the feed that delivered the big frame's size prefix, not later.
    assert fed < big_prefix_end
    assert got == frames[:first_big][: len(got)]
