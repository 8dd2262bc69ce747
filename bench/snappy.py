"""Snappy compression cost: kafka-shim's byte-exact snappy (snappy 1.1.10's bytes, as Kafka 3.9 writes them) against
the cramjam-only compression it replaced, and gzip for scale, on records sections of several sizes.

What is timed is ``compress(Compression.SNAPPY, section)`` (xerial framing, 32 KiB blocks: what a batch rebuilt for a
``compression.type=snappy`` topic, a down-conversion or the log cleaner pays) against the old path (each block by
``cramjam.snappy.compress_raw``) and ``compress(Compression.GZIP, section)``. Blocks of 8,192 bytes or less are
compressed in Python (cramjam hashes differently below its largest table, see protocol/records/snappy_raw.py), longer
ones by cramjam: so sections up to 8 KiB, and a section's last block when it is that short, pay the Python price.

Shapes: ``json`` (a records section of JSON-valued records with keys and some headers, as tests/support/snappy_inputs
builds them) and ``random`` (incompressible values). Samples of the three paths are taken round-robin, each lasting at
least 20 ms, and the median per call is reported, with the Python path's cost per KiB.

    .venv/bin/python bench/snappy.py [--rounds 7] [--sizes 256,1024,4096,8192,8193,16384,65536]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import cramjam  # noqa: E402

from kafka_shim.protocol.records.compression import Compression, compress, decompress  # noqa: E402
from tests.support.snappy_inputs import input_for  # noqa: E402

_XERIAL = struct.pack(">8sii", b"\x82SNAPPY\x00", 1, 1)


def old_snappy(data: bytes) -> bytes:
    """What kafka-shim wrote before: xerial framing around cramjam's raw blocks."""
    parts = [_XERIAL]
    for start in range(0, len(data), 32 * 1024):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + 32 * 1024]))
        parts += (struct.pack(">i", len(block)), block)
    return b"".join(parts)


def per_call(function: Callable[[bytes], bytes], data: bytes) -> float:
    loops = 1
    while True:
        started = time.perf_counter()
        for _ in range(loops):
            function(data)
        elapsed = time.perf_counter() - started
        if elapsed >= 0.02:
            return elapsed / loops
        loops *= 2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sizes", default="256,1024,4096,8192,8193,16384,65536")
    args = parser.parse_args()
    print(f"python {platform.python_version()}, cramjam {cramjam.__version__}, {platform.machine()}")
    paths = {"exact": lambda d: compress(Compression.SNAPPY, d), "old cramjam": old_snappy,
             "gzip": lambda d: compress(Compression.GZIP, d)}
    print(f"{'shape':7} {'bytes':>6} {'exact us':>9} {'old us':>8} {'gzip us':>8} {'exact/old':>9} {'exact us/KiB':>12}")
    for shape in ("json", "random"):
        for size in (int(s) for s in args.sizes.split(",")):
            data = input_for("record_batch" if shape == "json" else "random", size, 1)
            exact = paths["exact"](data)
            assert decompress(Compression.SNAPPY, memoryview(exact), 1 << 20) == data
            samples: dict[str, list[float]] = {name: [] for name in paths}
            for _ in range(args.rounds):
                for name, function in paths.items():
                    samples[name].append(per_call(function, data))
            median = {name: statistics.median(times) for name, times in samples.items()}
            print(f"{shape:7} {size:6} {median['exact'] * 1e6:9.1f} {median['old cramjam'] * 1e6:8.1f} "
                  f"{median['gzip'] * 1e6:8.1f} {median['exact'] / median['old cramjam']:9.1f} "
                  f"{median['exact'] * 1e6 / (size / 1024):12.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
