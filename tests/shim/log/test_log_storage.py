"""The storages behave the same; the files are laid out as Kafka lays them out; the manager keeps the partitions."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.javacompat.kafka_uuid import kafka_uuid_string
from kafka_shim.shim.log import partition_metadata
from kafka_shim.shim.log.errors import InconsistentTopicId
from kafka_shim.shim.log.log_config import LogConfig
from kafka_shim.shim.log.log_manager import LogManager, parse_directory_name
from kafka_shim.shim.log.storage import FileStorage, Storage
from tests.support.log_batches import FakeClock, batch_bytes, visible

TOPIC_ID = uuid.UUID("6f1bbd42-11a4-4b7e-9a53-7c5a0d3e9f01")


def test_directory_operations_match(storage: Storage) -> None:
    directory = storage.open("t-0")
    assert directory.list() == [] and directory.size("a") == 0 and directory.read("a", 0, 10) == b""
    directory.append("a", b"hello ")
    directory.append("a", b"world")
    assert (directory.read("a", 6, 100), directory.size("a")) == (b"world", 11)
    directory.truncate("a", 5)
    directory.replace("b", b"whole")
    assert (directory.read("a", 0, 100), directory.read("b", 0, 100)) == (b"hello", b"whole")
    assert directory.list() == ["a", "b"] and directory.exists("b")
    directory.sync("a")
    directory.delete("b")
    directory.delete("missing")
    assert directory.list() == ["a"]
    assert storage.directories() == ["t-0"]
    storage.remove("t-0")
    assert storage.directories() == []


def test_kafka_uuid_strings() -> None:
    assert kafka_uuid_string(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert partition_metadata.parse_kafka_uuid(kafka_uuid_string(TOPIC_ID)) == TOPIC_ID


def test_files_are_in_kafkas_layout(tmp_path: Path, clock: FakeClock) -> None:
    manager = LogManager(FileStorage(tmp_path), clock=clock)
    log = manager.create("orders", 2, topic_id=TOPIC_ID, config=LogConfig(index_interval_bytes=1))
    for _ in range(3):
        log.append(batch_bytes([b"v" * 10]))
    manager.close()

    folder = tmp_path / "orders-2"
    assert sorted(p.name for p in folder.iterdir()) == [
        "00000000000000000000.index", "00000000000000000000.log", "00000000000000000000.timeindex", "partition.metadata"]
    assert (folder / "partition.metadata").read_text() == f"version: 0\ntopic_id: {kafka_uuid_string(TOPIC_ID)}"
    one = len(batch_bytes([b"v" * 10]))
    # Offset index: (relative offset, position) int32 pairs, big-endian; the time index: (timestamp int64, offset int32).
    index = (folder / "00000000000000000000.index").read_bytes()
    assert index == (1).to_bytes(4, "big") + one.to_bytes(4, "big") + (2).to_bytes(4, "big") + (2 * one).to_bytes(4, "big")
    # Every batch has the same timestamp, so the one entry names the first batch that reached it (offset 0).
    assert (folder / "00000000000000000000.timeindex").read_bytes() == (1_700_000_000_000).to_bytes(8, "big") + (0).to_bytes(4, "big")
    assert (folder / "00000000000000000000.log").stat().st_size == 3 * one


def test_the_manager_reopens_partitions_with_their_log_start_offsets(storage: Storage, clock: FakeClock) -> None:
    manager = LogManager(storage, clock=clock)
    for partition in (0, 1):
        log = manager.create("t", partition, topic_id=TOPIC_ID)
        for _ in range(4):
            log.append(batch_bytes([b"x"]))
    manager.create("other", 0).append(batch_bytes([b"y"]))
    assert manager.get("t", 1).delete_records(3) == 3  # type: ignore[union-attr]
    manager.close()

    again = LogManager(storage, clock=clock)  # a restart over the same storage
    assert again.stored_partitions() == [("other", 0), ("t", 0), ("t", 1)]
    reopened = again.create("t", 1, topic_id=TOPIC_ID)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (3, 4)
    assert visible(reopened.read(3, 100).records) == [(3, b"x")]

    with pytest.raises(InconsistentTopicId) as raised:
        again.create("t", 0, topic_id=uuid.UUID(int=7))
    assert raised.value.error_code is ErrorCode.INCONSISTENT_TOPIC_ID

    again.delete_topic("t")
    assert again.stored_partitions() == [("other", 0)]
    assert again.get("t", 1) is None
    assert again.create("t", 0).log_end_offset == 0  # a new topic of the same name starts empty


def test_flush_policy(storage: Storage, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    manager = LogManager(storage, clock=clock)
    every_two = manager.create("a", 0, config=LogConfig(flush_messages=2))
    by_time = manager.create("b", 0, config=LogConfig(flush_ms=1000))
    never = manager.create("c", 0)
    synced: list[str] = []
    for log in (every_two, by_time, never):
        monkeypatch.setattr(log.directory, "sync", lambda file, name=log.directory.name: synced.append(name))

    for log in (every_two, by_time, never):
        log.append(batch_bytes([b"1"]))
    assert synced == []
    every_two.append(batch_bytes([b"2"]))
    assert set(synced) == {"a-0"}
    synced.clear()
    clock.now += 1000
    assert manager.flush_due() == 1 and set(synced) == {"b-0"}


def test_directory_names() -> None:
    assert parse_directory_name("my-topic-12") == ("my-topic", 12)
    assert parse_directory_name("t-0.9b1f6d-delete") is None
    assert parse_directory_name("meta.properties") is None
