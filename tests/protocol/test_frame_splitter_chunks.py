"""Large frames arriving in many chunks (collected and joined once) come out whole and in order."""

from __future__ import annotations

import random
import struct

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


def test_in_place_filling_as_a_buffered_reader_does() -> None:
    """The reader writes into the frame under way when the splitter offers it (asyncio's BufferedProtocol), else into
    one scratch buffer it reuses for every read: every frame comes out whole, as bytes, whatever the read sizes."""
    rng = random.Random(12)
    scratch = bytearray(262_144)
    for _ in range(60):
        frames, stream = _frames_and_stream(rng)
        splitter = FrameSplitter(2_000_000, fill_in_place=True)
        got: list[bytes] = []
        at = 0
        while at < len(stream):
            step = rng.choice([1, 3, 4, 5, 1000, 65536, 262144])
            target = splitter.frame_buffer()
            if target is not None:
                n = min(step, len(target), len(stream) - at)
                target[:n] = stream[at : at + n]
                splitter.frame_filled(n)
            else:
                n = min(step, len(scratch), len(stream) - at)
                scratch[:n] = stream[at : at + n]
                splitter.receive(memoryview(scratch)[:n])
                scratch[:n] = b"\xee" * n  # the next read overwrites it: nothing may still point into it
            at += n
            assert splitter.buffered == at - sum(4 + len(f) for f in got)
            while rng.random() < 0.7 and (frame := splitter.next_frame()) is not None:
                got.append(frame)
        while (frame := splitter.next_frame()) is not None:
            got.append(frame)
        assert got == frames
        assert all(type(frame) is bytes for frame in got)
        assert splitter.buffered == 0 and not splitter.frame_ready


def test_in_place_filling_handed_chunks_the_usual_way() -> None:
    """receive() alone (a caller that never asks for frame_buffer) works the same in in-place mode."""
    rng = random.Random(13)
    for _ in range(40):
        frames, stream = _frames_and_stream(rng)
        splitter = FrameSplitter(2_000_000, fill_in_place=True)
        got: list[bytes] = []
        at = 0
        while at < len(stream):
            step = rng.choice([1, 4, 1000, 65536, 262144, 2_000_000])
            chunk = bytearray(stream[at : at + step])
            splitter.receive(memoryview(chunk))
            chunk[:] = b"\x00" * len(chunk)
            at += step
            while rng.random() < 0.7 and (frame := splitter.next_frame()) is not None:
                got.append(frame)
        while (frame := splitter.next_frame()) is not None:
            got.append(frame)
        assert got == frames


def test_in_place_filling_still_refuses_a_size_above_the_limit() -> None:
    splitter = FrameSplitter(100_000, fill_in_place=True)
    good = b"x" * 70_000
    splitter.receive(struct.pack(">i", len(good)) + good + struct.pack(">i", 100_001) + b"y" * 10)
    assert splitter.next_frame() == good
    try:
        splitter.next_frame()
    except Exception as exc:  # FrameTooLarge
        assert "100001" in str(exc) or "100,001" in str(exc)
    else:
        raise AssertionError("a frame above the limit was not refused")
