"""Inputs for comparing kafka-shim's snappy with snappy-java's, rebuilt from a recipe (shape, size, seed).

The recipe, not the bytes, is what tests keep: ``input_for(shape, size, seed)`` is deterministic (a str seed is hashed
with SHA-512 by ``random.Random``, the same stream on every CPython 3), so a fixture holds only the recipe
and the sha256 of what snappy-java 1.1.10.5 made of it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from kafka_shim.protocol.records import build_batch, encode_batch

RECORDS_AT = 61  # a v2 batch's records section starts after its 61-byte header: what Kafka compresses


def _random(r: random.Random, size: int) -> bytes:
    return r.randbytes(size)


def _low_entropy(r: random.Random, size: int) -> bytes:
    alphabet = r.choice([b"ab", b"abcdefgh ", b"ACGT", b"0123456789,\n"])
    return bytes(r.choices(alphabet, k=size))


def _words(r: random.Random, size: int) -> bytes:
    vocabulary = [bytes(r.choices(b"abcdefghijklmnopqrstuvwxyz", k=r.randrange(1, 12))) for _ in range(r.randrange(5, 200))]
    out = bytearray()
    while len(out) < size:
        out += r.choice(vocabulary) + r.choice([b" ", b" ", b", ", b".\n"])
    return bytes(out[:size])


def _repeated_records(r: random.Random, size: int) -> bytes:
    out = bytearray()
    while len(out) < size:
        out += b"key-%d value-%d " % (r.randrange(1000), r.randrange(100))
    return bytes(out[:size])


def _json(r: random.Random, size: int) -> bytes:
    out = bytearray()
    while len(out) < size:
        event = {"id": r.randrange(10**9), "user": f"user-{r.randrange(500)}", "ts": 1_700_000_000_000 + r.randrange(10**8),
                 "action": r.choice(["view", "click", "buy", "logout"]), "score": round(r.random() * 100, r.randrange(4)),
                 "tags": r.sample(["a", "bb", "ccc", "red", "green", "blue"], r.randrange(4))}
        out += json.dumps(event).encode() + b"\n"
    return bytes(out[:size])


def _record_batch(r: random.Random, size: int) -> bytes:
    """A Kafka records section (varint records, keys, JSON-ish values, headers), cut to ``size``."""
    out = bytearray()
    while len(out) < size:
        records = []
        for i in range(r.randrange(1, 50)):
            value = _json(r, r.randrange(0, 300)) if r.random() < 0.7 else r.randbytes(r.randrange(0, 100))
            key = None if r.random() < 0.3 else b"key-%d" % r.randrange(100)
            headers = [("trace", b"%016x" % r.getrandbits(64))] if r.random() < 0.3 else []
            records.append((key, value, headers, 1_700_000_000_000 + i))
        out += encode_batch(build_batch(records))[RECORDS_AT:]
    return bytes(out[:size])


def _runs(r: random.Random, size: int) -> bytes:
    """Long repeats at short and long distances: overlapping copies, copies split into 64-byte pieces."""
    out = bytearray()
    while len(out) < size:
        kind = r.randrange(4)
        if kind == 0:
            out += bytes([r.randrange(256)]) * r.randrange(1, 3000)
        elif kind == 1:
            out += r.randbytes(r.randrange(1, 9)) * r.randrange(1, 500)
        elif kind == 2 and out:
            start = r.randrange(len(out))
            out += out[start : start + r.randrange(1, 5000)]
        else:
            out += r.randbytes(r.randrange(1, 200))
    return bytes(out[:size])


def _mixed(r: random.Random, size: int) -> bytes:
    out = bytearray()
    makers = [_random, _low_entropy, _words, _repeated_records, _json, _runs]
    while len(out) < size:
        out += r.choice(makers)(r, r.randrange(1, 4000))
    return bytes(out[:size])


SHAPES: dict[str, Callable[[random.Random, int], bytes]] = {
    "random": _random, "low_entropy": _low_entropy, "words": _words, "repeated_records": _repeated_records,
    "json": _json, "record_batch": _record_batch, "runs": _runs, "mixed": _mixed,
}


def input_for(shape: str, size: int, seed: int) -> bytes:
    """The ``size`` bytes of ``shape`` that ``seed`` picks."""
    return SHAPES[shape](random.Random(f"{shape}/{size}/{seed}"), size)
