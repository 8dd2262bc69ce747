"""The lz4 frame header checksum of magic 0 messages, as Kafka writes and reads it (KafkaLZ4BlockOutputStream and
KafkaLZ4BlockInputStream with Kafka 0.8's checksum)."""

from __future__ import annotations

import pytest

from kafka_shim.protocol.errors import DecodeError
from kafka_shim.protocol.records.compression import Compression, compress, decompress

DATA = b"an inner message set " * 40


def test_magic_0_frames_carry_kafka_08s_header_checksum_and_later_ones_the_specified_one() -> None:
    # FLG 0x60 (version 1, independent blocks), BD 0x40 (64 KiB blocks); Kafka 3.9 writes 0x1a for magic 0 (its
    # hash from the frame's magic number on), 0x82 otherwise (the lz4 format's, from the FLG byte on).
    assert compress(Compression.LZ4, DATA, 0)[:7] == bytes.fromhex("04224d1860401a")
    for magic in (1, 2):
        assert compress(Compression.LZ4, DATA, magic)[:7] == bytes.fromhex("04224d18604082")


@pytest.mark.parametrize("checksum", [0x1A, 0x82, 0x00, 0xFF])
def test_a_magic_0_frame_is_read_whatever_its_header_checksum(checksum: int) -> None:
    frame = bytearray(compress(Compression.LZ4, DATA, 1))
    frame[6] = checksum
    assert decompress(Compression.LZ4, memoryview(bytes(frame)), 1 << 20, 0) == DATA


def test_later_magics_check_the_header_checksum() -> None:
    frame = bytearray(compress(Compression.LZ4, DATA, 1))
    frame[6] = 0x1A
    with pytest.raises(DecodeError):
        decompress(Compression.LZ4, memoryview(bytes(frame)), 1 << 20, 1)


def test_a_content_size_moves_the_checksum_byte() -> None:
    import lz4.frame

    frame = bytearray(lz4.frame.compress(DATA, store_size=True, content_checksum=False))
    assert frame[4] & 0x08  # the content size follows the BD byte
    frame[14] ^= 0x5A
    assert decompress(Compression.LZ4, memoryview(bytes(frame)), 1 << 20, 0) == DATA
    with pytest.raises(DecodeError):
        decompress(Compression.LZ4, memoryview(bytes(frame)), 1 << 20, 2)


def test_short_or_foreign_input_is_left_to_the_codec() -> None:
    for data in (b"\x04\x22\x4d\x18\x60", b"not an lz4 frame at all"):
        with pytest.raises(DecodeError):
            decompress(Compression.LZ4, memoryview(data), 1 << 20, 0)
