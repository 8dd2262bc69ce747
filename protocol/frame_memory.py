"""A bytes object of a given size whose memory can be written once, before anyone reads it.

A large request frame is read from the socket straight into the bytes object the codec then decodes (see
FrameSplitter's in-place filling): without it every such frame is copied once more, from the chunks the socket
delivered into the frame (a MiB-sized Produce request spends about 5% of the event loop's time in that copy).
CPython's C API makes bytes this way (``PyBytes_FromStringAndSize(NULL, n)``: "the contents are uninitialized") and
fills them before handing them out; this module does the same through ctypes, so it is CPython-only, as the rest
of kafka-shim's memory handling is (shim/log/arena.py).
"""

from __future__ import annotations

import ctypes
import sys

# Elsewhere (PyPy has no ctypes.pythonapi) frames are collected chunk by chunk and joined, as before this module.
AVAILABLE = sys.implementation.name == "cpython" and hasattr(ctypes, "pythonapi")

if AVAILABLE:
    _new_bytes = ctypes.pythonapi.PyBytes_FromStringAndSize
    _new_bytes.restype = ctypes.py_object
    _new_bytes.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t)
    # A view straight over memory, without a ctypes array type: ``ctypes.c_char * size`` makes a new type for
    # every size, which costs ~20 µs and is left to the cyclic collector (frames come in all sizes).
    _view_of_memory = ctypes.pythonapi.PyMemoryView_FromMemory
    _view_of_memory.restype = ctypes.py_object
    _view_of_memory.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int)

_PyBUF_WRITE = 0x200

# Where a bytes object's characters start: its fixed header, of which the trailing NUL byte is the last member.
_DATA_OFFSET = bytes.__basicsize__ - 1


def unfilled_bytes(size: int) -> tuple[bytes, memoryview]:
    """A new ``bytes`` of ``size`` bytes and a writable view of its contents. Fill the whole view, release it, and
    only then let the bytes be read or hashed: until then they hold whatever the allocator left there."""
    if not AVAILABLE:
        raise RuntimeError("bytes cannot be filled in place on this Python implementation (see AVAILABLE)")
    if size <= 0:
        return b"", memoryview(bytearray())
    data = _new_bytes(None, size)
    return data, _view_of_memory(id(data) + _DATA_OFFSET, size, _PyBUF_WRITE)
