"""Warm memory for the in-memory log: records are copied into arenas whose pages are already faulted in.

Kafka's counterpart is the page cache its ``FileRecords`` write into: memory the kernel has ready. A Python process
has no such thing: every new buffer a kept batch would be stored in is fresh memory, and on the virtual machines
CI runs on the kernel faults it in at about 1-1.5 ms per MiB (measured: writing 1 MiB into fresh anonymous memory
1.4 ms, into memory already faulted 0.11 ms). A produce-heavy broker then spends most of its time in page faults,
on the event loop. Here the log's bytes go into arenas (anonymous ``mmap`` of ARENA_BYTES) that a helper thread maps
with ``MAP_POPULATE`` ahead of need: the kernel faults the pages in during ``mmap`` (0.5 ms per MiB, in a call that
does not hold the GIL), so the event loop only copies into warm memory. The request's own buffers are then freed at once and reused warm by the
allocator for the next request.

Every stored byte is kept (no eviction): an arena lives as long as any chunk of a segment refers to it (its
memoryviews keep it mapped). When the last goes (segments deleted by retention, DeleteRecords or topic deletion)
it is kept for reuse, still warm, up to RECYCLED_BURST_ARENAS at once, and unmapped otherwise; of those kept, all but
RECYCLED_ARENAS go back to the kernel once writes stop taking them. Arenas are shared by all partitions, filled in
order, so memory in use stays within one arena of the bytes stored, plus the spare ones (one at first, at most
SPARE_ARENAS under a steady stream of writes) and the recycled ones. Without ``MAP_POPULATE`` (not Linux) the arenas
are plain mappings the first write faults in, as any buffer would be.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import threading
import time
from collections import deque
from collections.abc import Callable

from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.os_threads import name_os_thread

log = get_logger(__name__)

# An arena's size: large enough that mapping one is rare next to the copies into it, small enough that the last,
# partly filled one (and the spares) stay small next to what a busy log holds.
ARENA_BYTES = 4 * 1024 * 1024
# The most arenas kept mapped and faulted in ahead of need (about 100 ms of writes at 300 MB/s). The pool starts
# with one spare and doubles its count each time the loop found none ready, so a broker that stores little keeps
# little beyond its data.
SPARE_ARENAS = 8
# The arenas kept for good after the segments in them were deleted, for reuse (64 MiB): what a test suite deleting its
# topics between tests frees, or a steady stream of writes between two retention checks.
RECYCLED_ARENAS = 16
# The most kept at once (512 MiB): a busy writer under retention frees arenas in bursts, one retention check's worth
# at a time (at 1 GB/s and a 250 ms ``log.retention.check.interval.ms``, some 60; more when a loaded loop runs the
# check late), and maps as many afresh before the next check unless they are kept. Eight producers of 1 KiB records
# at ~600 MB/s left 80-110 waiting at once; with 64 kept, 2.3x as many arenas were mapped afresh and the helper
# thread's page faults cost 0.14-0.25 ms per MiB produced against 0.08-0.11 with 128 (the resident set after such a
# run is higher: 557-617 MiB against 442-444). Those beyond RECYCLED_ARENAS are kept only while the log keeps taking
# them: any that were not needed for a whole RECYCLED_TRIM_SECONDS go back to the kernel (the helper thread's check).
RECYCLED_BURST_ARENAS = 128
RECYCLED_TRIM_SECONDS = 5.0


def _map_arena(size: int, arena_type: type | None) -> memoryview:
    """A writable view of ``size`` bytes of anonymous memory, faulted in when the platform allows it ahead of use.
    ``arena_type``: the pool's ctypes array type to view it as (its ``__del__`` decides what becomes of the memory);
    None where libc's ``mmap`` cannot populate (a plain ``mmap`` then).

    Python's ``mmap`` holds the GIL while the kernel populates the pages (a 4 MiB arena held the event loop ~2 ms
    in a helper thread), so on Linux the mapping is made through libc with ctypes, which releases the GIL for the
    call: the helper thread then faults the pages in while the loop runs on."""
    if arena_type is not None:
        address = _LIBC.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, _MAP_FLAGS, -1, 0)
        if address is not None and address != _MAP_FAILED:
            return memoryview(arena_type.from_address(address)).cast("B")
        error = ctypes.get_errno()
        raise OSError(error, f"cannot map a {size}-byte log arena: {os.strerror(error)}")
    return memoryview(mmap.mmap(-1, size))


_MAP_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
_MAP_FLAGS = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0) | _MAP_POPULATE
_MAP_FAILED = ctypes.c_void_p(-1).value


def _load_libc() -> ctypes.CDLL | None:
    if not _MAP_POPULATE:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.restype = ctypes.c_int
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _load_libc()


def _populated_arena_type(size: int, recycle: Callable[[int], bool]) -> type | None:
    """A pool's ctypes array type of ``size`` bytes whose memory, when it goes (the last view of it released), is
    handed to ``recycle`` (its address; True: kept) or else unmapped. None without libc's populating ``mmap``."""
    if _LIBC is None:
        return None
    libc = _LIBC

    def release(self: ctypes.Array) -> None:
        address = ctypes.addressof(self)
        if not recycle(address):
            libc.munmap(address, size)

    return type(f"LogArena{size}", (ctypes.c_char * size,), {"__del__": release})


class ArenaPool:
    """Arenas faulted in ahead of need by a helper thread, and the arena being filled.

    :meth:`store` is called on one thread (the event loop); the helper only maps arenas and hands them over through
    a deque (whose append and popleft are atomic).
    """

    def __init__(self, arena_bytes: int = ARENA_BYTES, spare: int = SPARE_ARENAS, recycled: int = RECYCLED_ARENAS,
                 burst: int = RECYCLED_BURST_ARENAS, trim_seconds: float = RECYCLED_TRIM_SECONDS) -> None:
        self.arena_bytes = arena_bytes
        self._max_spare = spare
        self._spare = min(1, spare)  # arenas the helper keeps ready; grows when the loop finds none
        self._ready: deque[memoryview] = deque()
        self._recycled: deque[memoryview] = deque()  # arenas freed by deleted segments, used before the ready ones
        self._kept_recycled = recycled  # kept however long they wait
        self._max_recycled = max(burst, recycled)  # kept at once, the rest while they are being taken
        self._trim_seconds = trim_seconds
        # The fewest recycled arenas on hand since the last trim: that many were not needed in the whole interval.
        self._recycled_low = 0
        self._releasing: set[int] = set()  # addresses of recycled arenas being given back (not to be recycled again)
        self.trimmed = 0  # recycled arenas given back to the kernel because they were not needed
        self._wanted = threading.Event()
        self._thread: threading.Thread | None = None
        self._arena: memoryview | None = None  # the arena being filled, as a view (slices of it are the chunks)
        self._used = arena_bytes  # bytes of the current arena filled; arena_bytes: none yet
        self.mapped_by_loop = 0  # arenas the caller had to map itself (none ready)
        self.recycled = 0  # arenas given back by deleted segments and put back among the ready ones, still warm
        self._arena_type = _populated_arena_type(arena_bytes, self._recycle)

    def store(self, pieces: list[bytes | bytearray | memoryview]) -> list[tuple[memoryview, int, int]]:
        """Copy ``pieces`` into arena memory, in order, back to back: ``(arena, start, end)`` for each arena used
        (a view of the whole arena and where the bytes are in it)."""
        out: list[tuple[memoryview, int, int]] = []
        arena, used, full = self._arena, self._used, self.arena_bytes
        start = used
        for piece in pieces:
            at, left = 0, len(piece)
            while left:
                if used == full:
                    if arena is not None and used > start:
                        out.append((arena, start, used))
                    arena, used = self._next_arena(), 0
                    start = 0
                step = min(left, full - used)
                if at == 0 and step == left:
                    arena[used : used + step] = piece
                else:
                    with memoryview(piece) as view:
                        arena[used : used + step] = view[at : at + step]
                used += step
                at += step
                left -= step
        if arena is not None and used > start:
            out.append((arena, start, used))
        self._arena, self._used = arena, used
        return out

    def _next_arena(self) -> memoryview:
        if self._recycled:
            arena = self._recycled.popleft()
            if len(self._recycled) < self._recycled_low:
                self._recycled_low = len(self._recycled)
            return arena
        try:
            arena = self._ready.popleft()
        except IndexError:
            arena = _map_arena(self.arena_bytes, self._arena_type)
            self.mapped_by_loop += 1
            self._spare = min(max(self._spare * 2, 1), self._max_spare)
        if len(self._ready) <= self._spare // 2:  # woken for a few at a time: each wake-up costs the loop a GIL hand-over
            self._start_helper()
            self._wanted.set()
        return arena

    def _recycle(self, address: int) -> bool:
        """An arena no segment refers to any more (retention, DeleteRecords, a deleted topic): its pages are still
        faulted in, so up to RECYCLED_ARENAS of them are kept and used before any new one, rather than given back
        to the kernel: the next arenas cost no page faults (what a steady stream of writes under
        ``retention.bytes`` or ``retention.ms`` would otherwise pay for every byte). Runs on whichever thread let
        go of the last view; a deque's append is atomic, and a race on the count only lets the pool keep one more."""
        if len(self._recycled) >= self._max_recycled or address in self._releasing:
            self._releasing.discard(address)
            return False
        self._recycled.append(memoryview(self._arena_type.from_address(address)).cast("B"))
        self.recycled += 1
        return True

    def _start_helper(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._refill, name="kafka-shim-arenas", daemon=True)
            self._thread.start()

    def trim_recycled(self) -> int:
        """Give back to the kernel the recycled arenas beyond RECYCLED_ARENAS that none of the log's writes took
        since the last call; how many. The helper thread calls it every RECYCLED_TRIM_SECONDS."""
        surplus = min(self._recycled_low, len(self._recycled) - self._kept_recycled)
        given = 0
        while given < surplus:
            try:
                arena = self._recycled.pop()  # the last freed: the loop takes the oldest first
            except IndexError:  # the loop took the rest meanwhile
                break
            self._releasing.add(ctypes.addressof(arena.obj))
            del arena  # the last view of it: unmapped now, on this thread
            given += 1
        self._recycled_low = len(self._recycled)
        self.trimmed += given
        return given

    def _refill(self) -> None:
        name_os_thread()
        next_trim = time.monotonic() + self._trim_seconds
        while True:
            woken = self._wanted.wait(max(next_trim - time.monotonic(), 0.0))
            if time.monotonic() >= next_trim:
                self.trim_recycled()
                next_trim = time.monotonic() + self._trim_seconds
            if not woken:
                continue
            self._wanted.clear()
            try:
                while len(self._ready) < self._spare:
                    self._ready.append(_map_arena(self.arena_bytes, self._arena_type))
            except OSError as exc:  # out of memory: the loop maps its own (and fails there, visibly) until it passes
                log.warning("log_arena_map_failed", reason=str(exc),
                            hint="the machine is short of memory for the in-memory log; lower retention or use log.dirs")



_shared: ArenaPool | None = None


def shared_pool() -> ArenaPool:
    """The process's pool: one helper thread and one partly filled arena however many brokers (tests) it runs."""
    global _shared
    if _shared is None:
        _shared = ArenaPool()
    return _shared


# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# Requests up to this size are allocated from the heap, and this much freed memory at the heap's top stays mapped.
_HEAP_REUSE_BYTES = 32 * 1024 * 1024
_HEAP_KEEP_BYTES = 32 * 1024 * 1024


def keep_freed_memory_warm() -> bool:
    """Let the C allocator reuse the buffers a request passes through (a frame, its decoded records: up to a
    megabyte each, freed once the records are in an arena) instead of returning them to the kernel and faulting
    fresh pages in for the next request. glibc maps each block above a threshold (adjusted as blocks are freed) on
    its own and unmaps it when freed, and gives back a heap top above another; both are raised here so that the
    same pages serve request after request. The cost: up to _HEAP_KEEP_BYTES of freed heap stays resident.

    Both are set because setting either one turns off glibc's own threshold adjustment, and with only the trim
    setting every multi-megabyte Fetch answer would be mapped fresh (the run of bench/data_plane.py that used it
    fetched 1 KiB records at 102-110 MB/s, the run before at 192-223; a same-run A/B after it showed no difference
    beyond this machine's noise). The measurements disagree between runs for produce too (one interleaved A/B put
    this setting behind the allocator's defaults; the full run in the README, ahead of the mock in 7 of 10 shapes,
    used it), and at 100 B records it leaves more resident (1.24-1.37 MiB per stored MiB against 1.16-1.17). Returns
    False where the allocator is not glibc's (nothing changes)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, _HEAP_REUSE_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, _HEAP_KEEP_BYTES))
