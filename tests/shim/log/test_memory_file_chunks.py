"""The in-memory directory keeps large appends as chunks: reads, sizes and truncations match a plain file's."""

from __future__ import annotations

import random

from kafka_shim.shim.log.storage import MemoryStorage


def test_chunked_memory_file_reads_as_one_file() -> None:
    rng = random.Random(7)
    directory = MemoryStorage(clock=lambda: 0).open("t-0")
    model = bytearray()
    for _ in range(3000):
        action = rng.random()
        if action < 0.5:
            data = rng.randbytes(rng.choice([1, 8, 12, 100, 4095, 4096, 5000, 70000]))
            directory.append("f", bytearray(data) if rng.random() < 0.5 else data)
            model += data
        elif action < 0.9:
            position = rng.randrange(len(model) + 10)
            size = rng.randrange(80000)
            assert directory.read("f", position, size) == bytes(model[position : position + size])
        else:
            size = rng.randrange(len(model) + 1)
            directory.truncate("f", size)
            del model[size:]
        assert directory.size("f") == len(model)
    assert directory.read("f", 0, len(model) + 1) == bytes(model)


def test_appends_after_reads_and_a_kept_buffer_is_not_copied() -> None:
    directory = MemoryStorage(clock=lambda: 0).open("t-0")
    directory.append("f", b"ab")
    assert directory.read("f", 0, 2) == b"ab"
    directory.append("f", b"cd")  # a small append extends a chunk a read looked at: no view may be left on it
    big = bytearray(b"x" * 10000)
    directory.append("f", big)
    assert directory.read("f", 2, 4) == b"cdxx"
    assert directory.read("missing", 0, 10) == b""
