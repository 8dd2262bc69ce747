"""CRC-32C (Castagnoli), the checksum of record batches (v2), of producer snapshots and of kafka-shim's own files.

The C function of the crc32c package, loaded from its extension module without running the package's ``__init__``:
that one also reads the package's distribution metadata (``importlib.metadata``, which imports email, zipfile,
tempfile and more) for a version string nothing here uses, about 20 ms of kafka-shim's start-up. Where the
extension is not found (a crc32c release laid out differently), the public import is used.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from importlib.machinery import EXTENSION_SUFFIXES

Crc32c = Callable[..., int]  # (data, value=0) -> the CRC-32C of data, continuing from value


def _load() -> Crc32c:
    package = importlib.util.find_spec("crc32c")  # finds the package without importing it
    for location in (package.submodule_search_locations or []) if package is not None else []:
        for suffix in EXTENSION_SUFFIXES:
            path = os.path.join(location, "_crc32c" + suffix)
            if os.path.isfile(path):
                spec = importlib.util.spec_from_file_location("crc32c._crc32c", path)
                if spec is not None and spec.loader is not None:
                    module = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(module)
                    return module.crc32c
    from crc32c import crc32c as public

    return public


crc32c: Crc32c = _load()

__all__ = ["crc32c"]
