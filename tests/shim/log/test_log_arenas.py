"""The in-memory log copies large appends into shared arenas of warm memory: what is read back is what was
appended (across arena boundaries, interleaved partitions, truncations), a batch's header and records stay one
chunk, and an arena is unmapped once no segment refers to it."""

from __future__ import annotations

import gc
import random
import time
import weakref

from kafka_shim.protocol.records import Record, RecordBatch, encode_batch
from kafka_shim.shim.log.arena import ArenaPool
from kafka_shim.shim.log.log_config import LogConfig
from kafka_shim.shim.log.partition_log import PartitionLog
from kafka_shim.shim.log.storage import MemoryStorage


def test_interleaved_files_read_back_as_appended_across_arena_boundaries() -> None:
    rng = random.Random(11)
    pool = ArenaPool(arena_bytes=64 * 1024, spare=2)
    storage = MemoryStorage(clock=lambda: 0, pool=pool)
    directories = [storage.open(f"t-{i}") for i in range(3)]
    models = [bytearray() for _ in directories]
    for _ in range(2000):
        i = rng.randrange(len(directories))
        directory, model = directories[i], models[i]
        action = rng.random()
        if action < 0.55:
            pieces = [rng.randbytes(rng.choice([1, 61, 4095, 4096, 9000, 70000, 200000])) for _ in range(rng.randint(1, 3))]
            directory.append("f", pieces if len(pieces) > 1 else pieces[0])
            for piece in pieces:
                model += piece
        elif action < 0.95:
            position = rng.randrange(len(model) + 10)
            size = rng.randrange(300000)
            assert directory.read("f", position, size) == bytes(model[position : position + size])
        else:
            size = rng.randrange(len(model) + 1)
            directory.truncate("f", size)
            del model[size:]
        assert directory.size("f") == len(model)
    for directory, model in zip(directories, models, strict=True):
        assert directory.read("f", 0, len(model) + 1) == bytes(model)


def test_a_stored_buffer_is_a_copy_so_the_request_may_reuse_its_memory() -> None:
    directory = MemoryStorage(clock=lambda: 0, pool=ArenaPool(arena_bytes=1 << 20, spare=1)).open("t-0")
    sent = bytearray(b"a" * 10000)
    directory.append("f", sent)
    sent[:] = b"b" * 10000
    assert directory.read("f", 0, 10000) == b"a" * 10000


def _batch(values: int, size: int) -> bytes:
    return encode_batch(RecordBatch(last_offset_delta=values - 1, base_timestamp=1, max_timestamp=1,
                                    records=[Record(i, 0, None, b"v" * size) for i in range(values)]))


def test_batches_of_two_partitions_stay_whole_chunks_and_arenas_are_freed_with_their_segments() -> None:
    pool = ArenaPool(arena_bytes=256 * 1024, spare=1)
    storage = MemoryStorage(clock=lambda: 0, pool=pool)
    logs = [PartitionLog.open(storage.open(f"t-{i}"), LogConfig(segment_bytes=1 << 20)) for i in range(2)]
    batch = _batch(50, 1000)
    for _ in range(20):
        for partition_log in logs:
            # A memoryview is stored as a stamped header copy and the rest of the view: two pieces, one chunk.
            partition_log.append(memoryview(batch), crc_checked=True)
    files = [partition_log.active.directory._files[partition_log.active.log_file] for partition_log in logs]  # type: ignore[attr-defined]
    for log_file in files:
        # Each batch is one chunk (its header beside its records), unless an arena ended inside it: a read of a
        # batch is one copy, not a join of pieces.
        arena_ends = 2 * 20 * len(batch) // pool.arena_bytes + 1
        assert len(log_file.chunks) <= 20 + arena_ends
        assert log_file.size == 20 * len(batch)
    read = logs[0].read(5 * 50, len(batch))
    assert read.records[8:12] == batch[8:12] and read.records[61:] == batch[61:]
    arenas = [weakref.ref(arena) for arena in {id(c.obj): c.obj for log_file in files for c in log_file.chunks}.values()]
    assert len(arenas) >= 2
    for partition_log in logs:
        partition_log.roll()
        partition_log.delete_records(partition_log.log_end_offset)
        assert partition_log.apply_retention() == 1
    pool.store([b"x" * pool.arena_bytes])  # the pool lets go of the arena it was filling
    del files, log_file, read
    gc.collect()
    assert all(ref() is None for ref in arenas)


def test_read_view_gives_arena_bytes_uncopied_and_never_pins_a_growing_chunk() -> None:
    directory = MemoryStorage(clock=lambda: 0, pool=ArenaPool(arena_bytes=1 << 20, spare=1)).open("t-0")
    big = bytes(range(256)) * 64  # 16 KiB: into the arena
    directory.append("f", big)
    view = directory.read_view("f", 100, 5000)
    assert type(view) is memoryview and view == big[100:5100]
    directory.append("f", b"small")  # a small append starts the file's own growing chunk
    held = directory.read_view("f", len(big), 5)
    assert type(held) is bytes and held == b"small"  # a copy: a view would stop the chunk from growing
    directory.append("f", b"-more")
    assert directory.read_view("f", len(big), 10) == b"small-more"
    assert view == big[100:5100]  # arena bytes never change under a reader


def _address(view: memoryview) -> int:
    import ctypes

    return ctypes.addressof(ctypes.c_char.from_buffer(view))


def test_arenas_freed_by_retention_come_back_warm_up_to_the_recycled_count() -> None:
    """A steady stream of writes under retention frees arenas as fast as it fills them: those are reused first (their
    pages already faulted in), not unmapped and mapped afresh; beyond the recycled count they go back to the kernel."""
    pool = ArenaPool(arena_bytes=64 * 1024, spare=2, recycled=3, burst=3)
    storage = MemoryStorage(clock=lambda: 0, pool=pool)
    partition_log = PartitionLog.open(storage.open("t-0"), LogConfig(segment_bytes=64 * 1024))
    batch = _batch(30, 1000)
    for _ in range(40):  # about 1.2 MB: some 18 arenas, each in a segment of its own or two
        partition_log.append(memoryview(batch), crc_checked=True)
    log_file = partition_log.segments[0].directory._files[partition_log.segments[0].log_file]  # type: ignore[attr-defined]
    first_arena = _address(log_file.chunks[0].obj)
    del log_file
    partition_log.roll()
    partition_log.delete_records(partition_log.log_end_offset)
    assert partition_log.apply_retention() >= 10
    gc.collect()
    recycled = [_address(arena) for arena in pool._recycled]  # type: ignore[attr-defined]
    assert len(recycled) == pool.recycled == 3  # the other arenas (some 15) were unmapped
    assert recycled[0] == first_arena
    mapped_before = pool.mapped_by_loop
    stored = pool.store([b"y" * (2 * pool.arena_bytes)])  # the current arena's rest, then the recycled ones in order
    assert [_address(arena) for arena, _, _ in stored][1:] == recycled[: len(stored) - 1]
    assert pool.mapped_by_loop == mapped_before
    assert all(arena[start:end] == b"y" * (end - start) for arena, start, end in stored)


def _mapped(address: int) -> bool:
    with open("/proc/self/maps") as maps:
        for line in maps:
            start, _, end = line.split(" ", 1)[0].partition("-")
            if int(start, 16) <= address < int(end, 16):
                return True
    return False


def _free_arenas(pool: ArenaPool, count: int) -> None:
    """Fill ``count`` arenas with one partition's log, then delete it all (retention after DeleteRecords)."""
    storage = MemoryStorage(clock=lambda: 0, pool=pool)
    partition_log = PartitionLog.open(storage.open("t-0"), LogConfig(segment_bytes=pool.arena_bytes))
    batch = _batch(30, 1000)
    while pool.mapped_by_loop + len(pool._ready) < count + 2:  # type: ignore[attr-defined]
        partition_log.append(memoryview(batch), crc_checked=True)
    partition_log.roll()
    partition_log.delete_records(partition_log.log_end_offset)
    partition_log.apply_retention()
    pool.store([b"x" * pool.arena_bytes])  # the pool lets go of the arena it was filling
    gc.collect()


def test_a_burst_of_freed_arenas_is_kept_while_taken_and_given_back_when_not() -> None:
    """Retention frees a busy log's arenas a whole check at a time: up to the burst count are kept, so the writes
    until the next check take warm memory; those beyond the recycled count that no write took for a whole trim
    interval are unmapped (a broker that stopped writing does not keep them)."""
    pool = ArenaPool(arena_bytes=64 * 1024, spare=1, recycled=2, burst=6, trim_seconds=3600)
    if pool._arena_type is None:  # type: ignore[attr-defined]
        return  # no populating mmap here: arenas are plain mappings, never recycled
    _free_arenas(pool, 10)
    kept = [_address(arena) for arena in pool._recycled]  # type: ignore[attr-defined]
    assert len(kept) == 6  # the burst count, not the 2 kept for good
    assert pool.trim_recycled() == 0  # just freed: not yet known to be unneeded
    # A write takes one (the oldest freed), and the full arena the pool let go of for it comes back: 6 on hand, of
    # which 5 were there all along, never taken.
    pool.store([b"y" * pool.arena_bytes])
    recycled = pool.recycled
    assert pool.trim_recycled() == 4  # down to the 2 kept for good, the last freed first
    left = [_address(arena) for arena in pool._recycled]  # type: ignore[attr-defined]
    assert left == kept[1:3]
    assert not any(_mapped(address) for address in kept[3:]) and all(_mapped(address) for address in left)
    assert pool.recycled == recycled  # the given-back ones were unmapped, not recycled again
    assert pool.trim_recycled() == 0 and len(pool._recycled) == 2  # type: ignore[attr-defined]


def test_the_helper_thread_gives_back_unneeded_recycled_arenas_on_its_own() -> None:
    pool = ArenaPool(arena_bytes=64 * 1024, spare=1, recycled=1, burst=4, trim_seconds=0.05)
    if pool._arena_type is None:  # type: ignore[attr-defined]
        return
    _free_arenas(pool, 6)
    deadline = time.monotonic() + 60
    # Two trim intervals at least; how the helper's checks fall among the frees does not matter, only where it ends.
    while len(pool._recycled) > 1 and time.monotonic() < deadline:  # type: ignore[attr-defined]
        time.sleep(0.01)
    assert len(pool._recycled) == 1 and pool.trimmed >= 3  # type: ignore[attr-defined]
    assert pool.trim_recycled() == 0  # the one kept for good stays
