"""Large frames arriving in many chunks (collected and joined once) come out whole and in order."""

from __future__ import annotations

import random
import struct

import pytest

from kafka_shim.protocol.errors import FrameTooLarge
from kafka_shim.protocol.framing import FrameSplitter


def test_mixed_frames_in_random_chunks_come_out_in_order() -> None:
    rng = random.Random(11)
    for _ in range(40):
        frames = [rng.randbytes(rng.choice([0, 3, 100, 70_000, 300_000, 1_000_000])) for _ in range(rng.randint(1, 6))]
        stream = b"".join(struct.pack(">i", len(f)) + f for f in frames)
        splitter = FrameSplitter(2_000_000)
        got: list[bytes] = []
        at = 0
        while at < len(stream):
            step = rng.choice([1, 3, 4, 5, 1000, 65536, 262144, 2_000_000])
            splitter.receive(stream[at : at + step])
            at += step
            assert splitter.buffered == len(stream[:at]) - sum(4 + len(f) for f in got)
            while rng.random() < 0.7 and (frame := splitter.next_frame()) is not None:  # pulls lag behind at times
                got.append(frame)
        while (frame := splitter.next_frame()) is not None:
            got.append(frame)
        assert got == frames
        assert splitter.buffered == 0 and not splitter.frame_ready


def _frames_and_stream(rng: random.Random) -> tuple[list[bytes], bytes]:
    frames = [rng.randbytes(rng.choice([0, 3, 100, 65_535, 65_536, 70_000, 300_000, 1_000_000]))
              for _ in range(rng.randint(1, 6))]
    return frames, b"".join(struct.pack(">i", len(f)) + f for f in frames)


def _read_into_buffers(splitter: FrameSplitter, stream: bytes, at: int, step: int, scratch: bytearray) -> int:
    """One read as asyncio's BufferedProtocol does it: into the frame under way when the splitter offers it, else into
    one scratch buffer reused for every read. Returns how many bytes were read."""
    target = splitter.frame_buffer()
    if target is not None:
        n = min(step, len(target), len(stream) - at)
        target[:n] = stream[at : at + n]
        splitter.frame_filled(n)
        return n
    n = min(step, len(scratch), len(stream) - at)
    scratch[:n] = stream[at : at + n]
    splitter.receive(memoryview(scratch)[:n])
    scratch[:n] = b"\xee" * n  # the next read overwrites it: nothing may still point into it
    return n


def _read_as_chunks(splitter: FrameSplitter, stream: bytes, at: int, step: int, scratch: bytearray) -> int:
    """One read handed over with receive() alone (a caller that never asks for frame_buffer), its memory reused."""
    chunk = bytearray(stream[at : at + step])
    splitter.receive(memoryview(chunk))
    chunk[:] = b"\x00" * len(chunk)
    return len(chunk)


@pytest.mark.parametrize("read", [_read_into_buffers, _read_as_chunks])
def test_in_place_filling_gives_every_frame_whole_as_bytes(read) -> None:
    rng = random.Random(12)
    scratch = bytearray(262_144)
    for _ in range(60):
        frames, stream = _frames_and_stream(rng)
        splitter = FrameSplitter(2_000_000, fill_in_place=True)
        got: list[bytes] = []
        at = 0
        while at < len(stream):
            at += read(splitter, stream, at, rng.choice([1, 3, 4, 5, 1000, 65536, 262144, 2_000_000]), scratch)
            assert splitter.buffered == at - sum(4 + len(f) for f in got)
            while rng.random() < 0.7 and (frame := splitter.next_frame()) is not None:  # pulls lag behind at times
                got.append(frame)
        while (frame := splitter.next_frame()) is not None:
            got.append(frame)
        assert got == frames
        assert all(type(frame) is bytes for frame in got)
        assert splitter.buffered == 0 and not splitter.frame_ready


def test_in_place_filling_still_refuses_a_size_above_the_limit() -> None:
    splitter = FrameSplitter(100_000, fill_in_place=True)
    good = b"x" * 70_000
    splitter.receive(struct.pack(">i", len(good)) + good + struct.pack(">i", 100_001) + b"y" * 10)
    assert splitter.next_frame() == good
    with pytest.raises(FrameTooLarge) as refused:
        splitter.next_frame()
    assert refused.value.size == 100_001


def test_without_in_place_filling_the_frames_are_collected_as_before(monkeypatch) -> None:
    """On a Python without ctypes.pythonapi (PyPy) the splitter collects chunks and joins them instead."""
    from kafka_shim.protocol import frame_memory

    monkeypatch.setattr(frame_memory, "AVAILABLE", False)
    rng = random.Random(14)
    scratch = bytearray(262_144)
    for _ in range(20):
        splitter = FrameSplitter(2_000_000, fill_in_place=True)
        assert not splitter.fill_in_place and splitter.frame_buffer() is None
        frames, stream = _frames_and_stream(rng)
        at = 0
        while at < len(stream):  # the reused buffer is overwritten after each read: nothing may keep a view of it
            at += _read_into_buffers(splitter, stream, at, rng.choice([1000, 65_536, 262_144]), scratch)
        assert splitter.feed(b"") == frames
