"""The order of DescribeLogDirs' answer beside a fresh Apache Kafka 3.9: partitions as Kafka's table of logs (a
ConcurrentHashMap keyed by TopicPartition, grown for the most logs the broker ever held) iterates them, topics as
the Scala HashMap of ``groupBy`` does. Both brokers start empty and go through the same history (topics made,
grown, deleted, made again), since the table's size depends on it; after each step the answers, order included,
must be equal but for the log directory's name and size fields (kafka-shim keeps these partitions in memory).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafka_shim.protocol.messages import CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest, DescribeLogDirsRequest
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.peers import RealKafka, _address, start_real_kafka, stop_real_kafka
from tests.support.wire import Wire

DESCRIBE_LOG_DIRS, CREATE_TOPICS, CREATE_PARTITIONS, DELETE_TOPICS, METADATA = 35, 19, 37, 20, 3
D = DescribeLogDirsRequest


@pytest.fixture(scope="module")
def fresh_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKafka]:
    kafka = start_real_kafka(tmp_path_factory.mktemp("kafka-log-order"))
    yield kafka
    stop_real_kafka(kafka)


@pytest.fixture(scope="module")
def fresh_shim() -> Iterator[EmbeddedBroker]:
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "auto.create.topics.enable": "false"})
    with EmbeddedBroker(config) as broker:
        yield broker


def _admins(kafka: RealKafka, shim: EmbeddedBroker) -> list[Wire]:
    admin = Wire(kafka.sasl)
    admin.sasl_plain("admin", "admin-secret")
    return [admin, Wire(_address("PLAINTEXT://" + shim.bootstrap_servers))]


def _on_both(wires: list[Wire], api_key: int, version: int, body) -> list:
    return [wire.request(api_key, version, body).body for wire in wires]


def _layout(answer) -> list[tuple[str, list[int]]]:
    return [(t.name, [p.partition_index for p in t.partitions]) for r in answer.results for t in r.topics]


def _wait_until_kafka_holds(wires: list[Wire], expected: int) -> None:
    """Kafka opens and removes logs after the controller's record reaches the broker: wait until its answer holds
    as many partitions as kafka-shim's."""
    deadline = time.monotonic() + 60
    while True:
        kafka = wires[0].request(DESCRIBE_LOG_DIRS, 4, D(topics=None)).body
        if sum(len(ps) for _, ps in _layout(kafka)) == expected:
            return
        assert time.monotonic() < deadline, f"Kafka never held {expected} partitions: {_layout(kafka)}"
        time.sleep(0.1)


def test_describe_log_dirs_lists_partitions_in_kafkas_order(fresh_kafka: RealKafka, fresh_shim: EmbeddedBroker) -> None:
    wires = _admins(fresh_kafka, fresh_shim)
    T = CreateTopicsRequest.CreatableTopic
    steps = [
        ("create", [T(name="orders", num_partitions=4, replication_factor=1), T(name="e2-adm", num_partitions=4, replication_factor=1)]),
        ("create", [T(name=f"many-{i}", num_partitions=1, replication_factor=1) for i in range(5)]),
        ("create", [T(name="wide", num_partitions=40, replication_factor=1)]),
        ("grow", ("orders", 9)),
        ("delete", ["wide"]),
        ("create", [T(name="wide", num_partitions=6, replication_factor=1)]),
    ]
    shuffled = False  # whether Kafka listed some topic's partitions out of numeric order (the case worth comparing)
    try:
        for kind, what in steps:
            if kind == "create":
                answers = _on_both(wires, CREATE_TOPICS, 7, CreateTopicsRequest(topics=what, timeout_ms=30000))
                assert all(t.error_code == 0 for a in answers for t in a.topics), answers
            elif kind == "grow":
                name, count = what
                answers = _on_both(wires, CREATE_PARTITIONS, 3, CreatePartitionsRequest(timeout_ms=30000, topics=[
                    CreatePartitionsRequest.CreatePartitionsTopic(name=name, count=count, assignments=None)]))
                assert all(r.error_code == 0 for a in answers for r in a.results), answers
            else:
                answers = _on_both(wires, DELETE_TOPICS, 6, DeleteTopicsRequest(timeout_ms=30000, topics=[
                    DeleteTopicsRequest.DeleteTopicState(name=n) for n in what]))
                assert all(r.error_code == 0 for a in answers for r in a.responses), answers
            shim_all = wires[1].request(DESCRIBE_LOG_DIRS, 4, D(topics=None)).body
            _wait_until_kafka_holds(wires, sum(len(ps) for _, ps in _layout(shim_all)))
            for body in (D(topics=None), D(topics=[D.DescribableLogDirTopic(topic="orders", partitions=[3, 0, 2, 1]),
                                                   D.DescribableLogDirTopic(topic="e2-adm", partitions=[0, 1, 2, 3]),
                                                   D.DescribableLogDirTopic(topic="missing", partitions=[0])])):
                kafka, shim = (_layout(a) for a in _on_both(wires, DESCRIBE_LOG_DIRS, 4, body))
                assert kafka == shim, f"after {kind} {what if kind != 'create' else [t.name for t in what]}:\n  Kafka {kafka}\n  shim  {shim}"
                shuffled = shuffled or any(ps != sorted(ps) for _, ps in kafka)
        assert shuffled, "Kafka listed every topic's partitions in numeric order: the history no longer tests the order"
    finally:
        for wire in wires:
            wire.close()
