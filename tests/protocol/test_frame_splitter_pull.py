"""FrameSplitter one frame at a time: every frame before a refused size prefix is returned before the refusal.

A connection relies on this to answer the requests that arrived ahead of a bad size (Kafka reads and answers
one request at a time), and to leave frames unparsed while it applies back-pressure.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shim.protocol.errors import FrameTooLarge, ProtocolError
from kafka_shim.protocol.framing import FrameSplitter

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=200)
LIMIT = 40


def size(n: int) -> bytes:
    return n.to_bytes(4, "big", signed=True)


def drain(splitter: FrameSplitter) -> list[bytes]:
    frames = []
    while (frame := splitter.next_frame()) is not None:
        frames.append(frame)
    return frames


def test_good_frames_before_a_negative_size_come_first() -> None:
    splitter = FrameSplitter(max_size=LIMIT)
    splitter.receive(size(3) + b"abc" + size(0) + b"\xff\xff\xff\xff")
    assert splitter.next_frame() == b"abc"
    assert splitter.next_frame() == b""
    assert splitter.frame_ready  # the refusal is what comes next
    with pytest.raises(ProtocolError) as info:
        splitter.next_frame()
    assert not isinstance(info.value, FrameTooLarge)
    with pytest.raises(ProtocolError):  # and it stays refused
        splitter.next_frame()


def test_an_oversized_prefix_is_refused_without_its_body() -> None:
    splitter = FrameSplitter(max_size=LIMIT)
    splitter.receive(size(2) + b"ok" + size(LIMIT + 1))
    assert splitter.next_frame() == b"ok"
    with pytest.raises(FrameTooLarge) as info:
        splitter.next_frame()
    assert (info.value.size, info.value.limit) == (LIMIT + 1, LIMIT)


def test_frames_wait_unparsed_until_taken() -> None:
    splitter = FrameSplitter(max_size=LIMIT)
    splitter.receive(size(1) + b"a" + size(1) + b"b" + size(5) + b"cc")
    assert splitter.next_frame() == b"a"
    assert splitter.buffered == 5 + 6  # "b" and the partial third frame, untouched
    splitter.receive(b"ccc")  # more bytes while frames wait: nothing is lost or reordered
    assert drain(splitter) == [b"b", b"ccccc"]
    assert (splitter.buffered, splitter.frame_ready) == (0, False)


@SETTINGS
@given(
    frames=st.lists(st.binary(max_size=LIMIT), max_size=6),
    bad=st.one_of(st.integers(-(2**31), -1), st.integers(LIMIT + 1, 2**31 - 1)),
    trailing=st.binary(max_size=8),
    data=st.data(),
)
def test_every_frame_before_a_refused_size_is_returned_wherever_the_chunks_fall(
    frames: list[bytes], bad: int, trailing: bytes, data: st.DataObject
) -> None:
    stream = b"".join(size(len(f)) + f for f in frames) + size(bad) + trailing
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8), label="cuts"))
    splitter = FrameSplitter(max_size=LIMIT)
    got: list[bytes] = []
    refused = False
    for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        splitter.receive(stream[a:b])
        try:
            while (frame := splitter.next_frame()) is not None:
                got.append(frame)
        except ProtocolError as exc:
            assert isinstance(exc, FrameTooLarge) == (bad > 0)
            refused = True
            break
    assert refused
    assert got == frames


@SETTINGS
@given(frames=st.lists(st.binary(max_size=LIMIT), max_size=6), partial=st.binary(max_size=3), data=st.data())
def test_frame_ready_says_whether_next_frame_has_one(frames: list[bytes], partial: bytes, data: st.DataObject) -> None:
    stream = b"".join(size(len(f)) + f for f in frames) + partial
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8), label="cuts"))
    splitter = FrameSplitter(max_size=LIMIT)
    got: list[bytes] = []
    for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        splitter.receive(stream[a:b])
        while splitter.frame_ready:
            frame = splitter.next_frame()
            assert frame is not None
            got.append(frame)
        assert splitter.next_frame() is None
    assert got == frames
    assert splitter.buffered == len(partial)
