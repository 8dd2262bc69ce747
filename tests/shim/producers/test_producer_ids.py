"""Producer ids for non-transactional InitProducerId: increasing, epoch 0, never repeated across restarts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_shim.shim.producers.ids import (
    ID_FILE_NAME,
    PRODUCER_ID_BLOCK_SIZE,
    ProducerIdAllocator,
    ProducerIdAndEpoch,
    ProducerIdFileError,
    ProducerIdsExhausted,
)


def test_ids_start_at_zero_and_increase_with_epoch_zero() -> None:
    allocator = ProducerIdAllocator()
    assert [allocator.init_idempotent_producer() for _ in range(3)] == [ProducerIdAndEpoch(i, 0) for i in range(3)]


def test_ids_never_repeat_across_restarts(tmp_path: Path) -> None:
    path = tmp_path / ID_FILE_NAME
    seen: list[int] = []
    for run, count in enumerate([3, 0, PRODUCER_ID_BLOCK_SIZE + 5, 1, 2]):
        allocator = ProducerIdAllocator(path)
        seen.extend(allocator.allocate() for _ in range(count))
        assert seen == sorted(seen), f"run {run}: ids went backwards"
    assert len(set(seen)) == len(seen)
    # As Kafka's broker after a restart, a new run starts at a fresh block.
    assert seen[:3] == [0, 1, 2]
    assert seen[3] == PRODUCER_ID_BLOCK_SIZE


def test_a_block_is_on_disk_before_any_of_its_ids_is_handed_out(tmp_path: Path) -> None:
    path = tmp_path / ID_FILE_NAME
    allocator = ProducerIdAllocator(path, block_size=10)
    assert not path.exists()
    assert allocator.allocate() == 0
    assert json.loads(path.read_text())["next_block_start"] == 10
    for _ in range(9):
        allocator.allocate()
    assert allocator.allocate() == 10
    assert json.loads(path.read_text())["next_block_start"] == 20


def test_without_a_data_directory_ids_live_in_memory(tmp_path: Path) -> None:
    assert ProducerIdAllocator().allocate() == 0
    assert list(tmp_path.iterdir()) == []


def test_an_unreadable_id_file_is_refused_rather_than_guessed(tmp_path: Path) -> None:
    path = tmp_path / ID_FILE_NAME
    for text in ["{", json.dumps({"version": 9, "next_block_start": 5}), json.dumps({"version": 1, "next_block_start": -3})]:
        path.write_text(text)
        with pytest.raises(ProducerIdFileError):
            ProducerIdAllocator(path)


def test_ids_run_out_below_int64_max(tmp_path: Path) -> None:
    path = tmp_path / ID_FILE_NAME
    path.write_text(json.dumps({"version": 1, "next_block_start": 2**63 - 1 - 5}))
    with pytest.raises(ProducerIdsExhausted):
        ProducerIdAllocator(path, block_size=10).allocate()
