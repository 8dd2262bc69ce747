"""Snappy written as Kafka 3.9 writes it: 300 inputs (recipes of tests/support/snappy_inputs.py, 0 to 70,000 bytes)
whose snappy-java 1.1.10.5 outputs, raw and in Kafka's xerial framing, are checked in as sha256 digests
(tests/protocol/snappy_java_digests.json, written by ``scripts/snappy-java-digests fixture``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kafka_shim.protocol.records.compression import Compression, compress, decompress
from kafka_shim.protocol.records.snappy_raw import compress_raw
from tests.support.snappy_inputs import input_for

CASES = json.loads(Path(__file__).with_name("snappy_java_digests.json").read_text(encoding="utf-8"))["cases"]
cramjam = pytest.importorskip("cramjam")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


def test_batches_compress_to_kafkas_snappy_bytes() -> None:
    """What a batch's records become with compression.type=snappy (xerial framing, 32 KiB blocks): Kafka's bytes."""
    wrong = []
    for shape, size, seed, _, kafka in CASES:
        data = input_for(shape, size, seed)
        framed = compress(Compression.SNAPPY, data)
        if _digest(framed) != kafka:
            wrong.append((shape, size, seed))
        assert decompress(Compression.SNAPPY, memoryview(framed), size) == data
    assert not wrong, f"{len(wrong)} of {len(CASES)} differ from snappy-java's, e.g. {wrong[:5]}"


def test_raw_blocks_are_snappy_java_compress() -> None:
    """Raw blocks (Snappy.compress) of up to 70,000 bytes, more than one 64 KiB fragment included; with cramjam doing
    the long fragments, and in Python alone (what kafka-shim does without cramjam) up to 16 KiB."""
    wrong = []
    for shape, size, seed, raw, _ in CASES:
        data = input_for(shape, size, seed)
        block = compress_raw(data, cramjam.snappy.compress_raw)
        if _digest(block) != raw or (size <= 16384 and compress_raw(data) != block):
            wrong.append((shape, size, seed))
        assert bytes(cramjam.snappy.decompress_raw(block)) == data
    assert not wrong, f"{len(wrong)} of {len(CASES)} differ from snappy-java's, e.g. {wrong[:5]}"
