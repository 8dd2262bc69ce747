"""A broker restarted on its data, against a real Kafka 3.9 restarted the same way (``scripts/real-kafka restart``).

A single-node KRaft broker comes back with every partition's leader epoch two higher (the controller takes the
leadership away at shutdown and gives it back at registration), the new epoch starting at the log end: Metadata,
ListOffsets (latest, and earliest with the epoch its log start was written in), OffsetForLeaderEpoch and the batches
written afterwards show it. kafka-shim keeps its epochs in each partition's leader-epoch-checkpoint, as Kafka does.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_shim.protocol.messages import (
    CreateTopicsRequest,
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetForLeaderEpochRequest,
)
from kafka_shim.protocol.records import build_batch, decode_batches, encode_batch
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.compare import field_diff
from tests.support.peers import RealKafka, restart_real_kafka, start_real_kafka, stop_real_kafka
from tests.support.produce import produce_once_led
from tests.support.sasl_setup import USERS, listener_address, sasl_properties
from tests.support.wire import Wire

pytestmark = pytest.mark.oracle

PRODUCE, FETCH, LIST_OFFSETS, METADATA, CREATE_TOPICS, OFFSET_FOR_LEADER_EPOCH = 0, 1, 2, 3, 19, 23
TOPIC = "restart-epochs"


@pytest.fixture(scope="module")
def kafka(tmp_path_factory, oracle) -> Iterator[RealKafka]:
    kafka = start_real_kafka(tmp_path_factory.mktemp("kafka-restart"))
    yield kafka
    stop_real_kafka(kafka)


class ShimSide:
    """An embedded kafka-shim on a data directory, stopped and started again like a process."""

    def __init__(self, data: Path) -> None:
        self.config = BrokerConfig.from_properties({**sasl_properties(), "log.dirs": str(data)})
        self.broker: EmbeddedBroker | None = None

    def start(self) -> tuple[str, int]:
        self.broker = EmbeddedBroker(self.config).__enter__()
        return listener_address(self.broker.broker, "SASL_PLAINTEXT")

    def stop(self) -> None:
        if self.broker is not None:
            self.broker.__exit__(None, None, None)
            self.broker = None


def _admin(address: tuple[str, int]) -> Wire:
    wire = Wire(address, timeout=60)
    wire.sasl_plain("admin", USERS["admin"])
    return wire


def _produce(wire: Wire, partition: int, values: list[bytes]) -> None:
    produce_once_led(wire, TOPIC, partition, encode_batch(build_batch([(None, v, [], int(time.time() * 1000)) for v in values])))


def _leaders(wire: Wire, min_epoch: int) -> list[tuple[int, int, int]]:
    """(partition, leader, leader epoch), once every partition has a leader at ``min_epoch`` or later. Kafka's
    controller re-elects the leader a moment after a restarted broker registers; after a kill, Kafka serves the
    old epoch until the new incarnation is registered (~12 s), then fences the old one and re-elects."""
    deadline = time.monotonic() + 90
    while True:
        body = wire.request(METADATA, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)],
                                                         allow_auto_topic_creation=False)).body
        parts = sorted((p.partition_index, p.leader_id, p.leader_epoch) for p in body.topics[0].partitions)
        if parts and all(leader >= 0 and epoch >= min_epoch for _, leader, epoch in parts):
            return parts
        assert time.monotonic() < deadline, f"{TOPIC} has no leader at epoch {min_epoch} or later: {parts}"
        time.sleep(0.1)


def _snapshot(address: tuple[str, int], stage: str, min_epoch: int) -> dict:
    with _admin(address) as wire:
        leaders = _leaders(wire, min_epoch)
        if stage != "created":
            _produce(wire, 0, [f"{stage}-{i}".encode() for i in range(2)])
        ends = {e: wire.request(OFFSET_FOR_LEADER_EPOCH, 4, OffsetForLeaderEpochRequest(replica_id=-1, topics=[
            OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=TOPIC, partitions=[
                OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=p, current_leader_epoch=-1, leader_epoch=e)
                for p in (0, 1)])])).body.to_dict()["topics"] for e in range(6)}
        latest, earliest = (wire.request(LIST_OFFSETS, 8, ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=TOPIC, partitions=[
                ListOffsetsRequest.ListOffsetsPartition(partition_index=p, current_leader_epoch=-1, timestamp=timestamp)
                for p in (0, 1)])])) for timestamp in (-1, -2))
        fetched = wire.request(FETCH, 12, FetchRequest(
            replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
            topics=[FetchRequest.FetchTopic(topic=TOPIC, partitions=[FetchRequest.FetchPartition(
                partition=0, fetch_offset=0, log_start_offset=-1, partition_max_bytes=1 << 20, current_leader_epoch=-1)])],
            forgotten_topics_data=[], rack_id="")).body.responses[0].partitions[0]
    return {
        "leaders": [(p, epoch) for p, _, epoch in leaders],
        "end_offsets_for_epochs": ends,
        "latest": [(p.partition_index, p.offset, p.leader_epoch) for p in latest.body.topics[0].partitions],
        # the epoch the log start offset was written in, not the current one
        "earliest": [(p.partition_index, p.offset, p.leader_epoch) for p in earliest.body.topics[0].partitions],
        "batch_epochs": [(b.base_offset, b.partition_leader_epoch) for b in decode_batches(fetched.records)],
    }


def test_leader_epochs_move_on_at_each_restart(kafka: RealKafka, tmp_path: Path) -> None:
    shim = ShimSide(tmp_path / "shim-data")
    shim_address = shim.start()
    try:
        for address in (kafka.sasl, shim_address):
            with _admin(address) as wire:
                created = wire.request(CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30_000, validate_only=False, topics=[
                    CreateTopicsRequest.CreatableTopic(name=TOPIC, num_partitions=2, replication_factor=1, assignments=[], configs=[])]))
                assert created.body.topics[0].error_code == 0
                _produce(wire, 0, [b"a", b"b", b"c"])
        stages = {"created": (_snapshot(kafka.sasl, "created", 0), _snapshot(shim_address, "created", 0))}
        # Only controlled shutdowns: after a kill -9, Kafka's epochs depend on timing (whether the old registration's
        # session is still alive when the new incarnation registers: +2 then, unchanged otherwise).
        for stage, epoch in (("after a restart", 2), ("after another restart", 4)):
            restart_real_kafka(kafka)
            shim.stop()
            shim_address = shim.start()
            stages[stage] = (_snapshot(kafka.sasl, stage, epoch), _snapshot(shim_address, stage, epoch))
    finally:
        shim.stop()
    problems = [f"{stage}: {d}" for stage, (k, s) in stages.items() for d in field_diff(k, s)]
    assert not problems, "Kafka and kafka-shim disagree:\n  " + "\n  ".join(problems)
    assert stages["after another restart"][1]["leaders"] == [(0, 4), (1, 4)]
    assert (tmp_path / "shim-data" / f"{TOPIC}-0" / "leader-epoch-checkpoint").read_text() == "0\n3\n0 0\n2 3\n4 5\n"
