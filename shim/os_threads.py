"""Names for the broker's own threads as the operating system shows them (``top -H``, ``ps -L``, ``/proc/PID/task``).

Python (before 3.14) names its threads only for itself: every thread of a kafka-shim process shows up as the
interpreter's name, so neither an operator nor ``bench/data_plane.py`` can tell the event loop from the thread that
faults the log's memory in. Each helper thread calls :func:`name_os_thread` first thing. Kafka's threads carry names
for the same reason (``data-plane-kafka-request-handler-0``, ``kafka-log-cleaner-thread-0``).
"""

from __future__ import annotations

import ctypes
import sys
import threading

# Linux keeps 15 bytes of a thread's name (TASK_COMM_LEN 16, with the terminating NUL).
_MAX_NAME_BYTES = 15
_PR_SET_NAME = 15


def _load_prctl() -> object | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_prctl = _load_prctl()


def os_thread_name(name: str) -> bytes:
    """What the OS keeps of a thread name: "kafka-shim-" shortened to "shim-" (the process is kafka-shim's anyway),
    at most 15 bytes."""
    if name.startswith("kafka-shim-"):
        name = "shim-" + name[len("kafka-shim-"):]
    return name.encode("utf-8", "replace")[:_MAX_NAME_BYTES]


def name_os_thread(name: str | None = None) -> None:
    """Give the calling thread its name (by default its ``threading`` name) in the OS too; nothing where the OS has
    no such call. A failure changes nothing else: the name is only for people and tools that look."""
    if _prctl is None:
        return
    _prctl(_PR_SET_NAME, ctypes.c_char_p(os_thread_name(name or threading.current_thread().name)), 0, 0, 0)
