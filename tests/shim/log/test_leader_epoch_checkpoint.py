"""leader-epoch-checkpoint in Kafka's format, and what a restart does with it."""

from __future__ import annotations

from kafka_shim.shim.log import leader_epoch_checkpoint
from kafka_shim.shim.log.storage import MemoryStorage
from kafka_shim.shim.partitions.manager import assign_epoch


def test_written_and_read_in_kafkas_format() -> None:
    directory = MemoryStorage().open("t-0")
    leader_epoch_checkpoint.write(directory, [(0, 0), (2, 10)])
    assert directory.read("leader-epoch-checkpoint", 0, 100) == b"0\n2\n0 0\n2 10\n"
    assert leader_epoch_checkpoint.read(directory) == [(0, 0), (2, 10)]


def test_an_unreadable_file_reads_as_none() -> None:
    directory = MemoryStorage().open("t-0")
    assert leader_epoch_checkpoint.read(directory) is None
    for text in (b"1\n1\n0 0\n", b"0\n2\n0 0\n", b"0\nx\n", b""):
        directory.replace("leader-epoch-checkpoint", text)
        assert leader_epoch_checkpoint.read(directory) is None


def test_a_new_epoch_drops_the_entries_not_below_it() -> None:
    assert assign_epoch([(0, 0)], 2, 0) == [(2, 0)]  # no record at epoch 0: its entry goes
    assert assign_epoch([(0, 0), (2, 5)], 4, 5) == [(0, 0), (4, 5)]
    assert assign_epoch([(0, 0), (2, 5)], 4, 9) == [(0, 0), (2, 5), (4, 9)]
