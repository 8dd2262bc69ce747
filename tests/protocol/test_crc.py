"""protocol/records/crc.py: the crc32c package's own function, loaded without the package's metadata read."""

from __future__ import annotations

import subprocess
import sys

import crc32c as public

from kafka_shim.protocol.records.crc import crc32c


def test_it_is_crc32c_with_its_check_value_and_continuation() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    data = bytes(range(256)) * 7
    assert crc32c(data) == public.crc32c(data)
    assert crc32c(data[100:], crc32c(data[:100])) == crc32c(data)
    assert crc32c(memoryview(data)[3:]) == public.crc32c(data[3:])


def test_importing_it_leaves_importlib_metadata_unimported() -> None:
    script = "import sys; from kafka_shim.protocol.records.crc import crc32c; print('importlib.metadata' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"
