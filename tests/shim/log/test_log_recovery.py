"""Recovery at open: a torn or corrupt last batch is cut, never served; what came before stays; appends go on."""

from __future__ import annotations

import pytest

from kafka_shim.shim.log.log_config import LogConfig
from kafka_shim.shim.log.partition_log import PartitionLog
from kafka_shim.shim.log.storage import Storage
from tests.support.log_batches import FakeClock, batch_bytes, visible

LOG = "00000000000000000000.log"


def _written(storage: Storage, clock: FakeClock) -> tuple[PartitionLog, list[int]]:
    log = PartitionLog.open(storage.open("t-0"), LogConfig(index_interval_bytes=1), clock=clock)
    sizes = []
    for n in range(3):
        data = batch_bytes([b"%d-%d" % (n, i) for i in range(3)])
        log.append(data)
        sizes.append(len(data))
    return log, sizes


def _reopen(storage: Storage, clock: FakeClock) -> PartitionLog:
    return PartitionLog.open(storage.open("t-0"), LogConfig(index_interval_bytes=1), clock=clock)


@pytest.mark.parametrize("cut", [1, 11, 30, -1], ids=["1-byte", "in-length", "in-header", "last-byte"])
def test_a_torn_last_batch_is_cut_and_appends_continue(storage: Storage, clock: FakeClock, cut: int) -> None:
    _, sizes = _written(storage, clock)
    directory = storage.open("t-0")
    keep = sizes[0] + sizes[1] + (cut if cut > 0 else sizes[2] + cut)
    directory.truncate(LOG, keep)  # a crash in the middle of writing the third batch

    log = _reopen(storage, clock)
    assert log.log_end_offset == 6
    assert directory.size(LOG) == sizes[0] + sizes[1]
    assert [o for o, _ in visible(log.read(0, 1 << 20).records)] == list(range(6))
    assert log.append(batch_bytes([b"after"])).base_offset == 6
    assert visible(log.read(6, 1 << 20).records) == [(6, b"after")]
    # The rebuilt offset index points at whole batches only.
    assert all(position < directory.size(LOG) for position in log.active.offset_index.positions)


def test_a_batch_with_a_bad_crc_and_everything_after_it_is_cut(storage: Storage, clock: FakeClock) -> None:
    _, sizes = _written(storage, clock)
    directory = storage.open("t-0")
    stored = bytearray(directory.read(LOG, 0, directory.size(LOG)))
    stored[sizes[0] + 70] ^= 0x01  # a byte inside the second batch's records
    directory.replace(LOG, bytes(stored))

    log = _reopen(storage, clock)
    assert log.log_end_offset == 3
    assert visible(log.read(0, 1 << 20).records) == [(0, b"0-0"), (1, b"0-1"), (2, b"0-2")]
    assert log.append(batch_bytes([b"after"])).base_offset == 3


def test_a_clean_reopen_keeps_everything_and_a_bad_index_is_rebuilt(storage: Storage, clock: FakeClock) -> None:
    log, _ = _written(storage, clock)
    log.roll()
    log.append(batch_bytes([b"tail"]))
    log.close()
    directory = storage.open("t-0")
    directory.append("00000000000000000000.index", b"\x00\x00\x00")  # not a whole entry: fails the sanity check

    reopened = _reopen(storage, clock)
    assert [s.base_offset for s in reopened.segments] == [0, 9]
    assert reopened.log_end_offset == 10
    assert directory.size("00000000000000000000.index") % 8 == 0
    for offset in range(10):
        assert offset in [o for o, _ in visible(reopened.read(offset, 1).records)]
    found = reopened.offset_for_timestamp(0)
    assert found is not None and found.offset == 0
