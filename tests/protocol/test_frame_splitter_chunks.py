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
