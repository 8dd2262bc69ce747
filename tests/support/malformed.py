"""Record batches a broken or hostile client might send: each a valid batch with one thing wrong (or plain garbage).

Used by the client fault tests (tests/clients/test_data_plane_faults.py) and compared with Kafka 3.9
(tests/differential/test_malformed_batches.py).
"""

from __future__ import annotations

import struct

import crc32c

from tests.support.appending import batch, values


def _with_crc(data: bytearray) -> bytes:
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def malformed_batches() -> dict[str, bytes]:
    """Malformed batches by name (magic-2 offsets: length at 8, magic at 16, CRC at 17, record count at 57)."""
    good = batch(values("m", 3))
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    wrong_magic = bytearray(good)
    wrong_magic[16] = 7
    huge_length = bytearray(good)
    struct.pack_into(">i", huge_length, 8, 2**31 - 1)
    tiny_length = bytearray(good)
    struct.pack_into(">i", tiny_length, 8, 5)
    huge_count = bytearray(good)
    struct.pack_into(">i", huge_count, 57, 2**31 - 1)
    garbage_records = bytearray(good)
    garbage_records[61:] = bytes((i * 37 + 11) % 256 for i in range(len(good) - 61))
    negative_record_length = bytearray(good)
    negative_record_length[61] = 0x01  # zig-zag varint -1
    return {
        "bad-crc": bytes(bad_crc),
        "truncated": good[: len(good) - 7],
        "header-only": good[:40],
        "garbage": bytes((i * 131 + 7) % 256 for i in range(200)),
        "wrong-magic": _with_crc(wrong_magic),
        "absurd-batch-length": bytes(huge_length),
        "tiny-batch-length": bytes(tiny_length),
        "absurd-record-count": _with_crc(huge_count),
        "garbage-records": _with_crc(garbage_records),
        "negative-record-length": _with_crc(negative_record_length),
    }
