"""A cluster of three brokers in one process (kafka.shim.brokers=3), as real clients see it: every node in
Metadata, leaders spread, a moved leader, a stopped broker and its coordinator moving, a broker back."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer, errors

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.shim.faults.errors import FaultError
from kafka_shim.shim.groups.offsets_log import OFFSETS_TOPIC
from kafka_shim.shim.testing.handle import KafkaShim
from kafka_shim.shim.testing.options import ShimOptions
from tests.support.appending import batch, values
from tests.support.wire import Wire

_BOUND_S = 60


@pytest.fixture
def cluster():
    with KafkaShim(ShimOptions(brokers=3)) as shim:
        yield shim


def _create(shim: KafkaShim, topic: str, partitions: int, factor: int) -> AdminClient:
    admin = AdminClient(shim.confluent_config())
    for future in admin.create_topics([NewTopic(topic, partitions, factor)]).values():
        future.result(_BOUND_S)
    return admin


def _layout(admin: AdminClient, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    partitions = admin.list_topics(topic, timeout=_BOUND_S).topics[topic].partitions
    return {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in partitions.values()}


def _consume(consumer: Consumer, count: int) -> list[bytes]:
    values, deadline = [], time.monotonic() + _BOUND_S
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            values.append(message.value())
    return values


def _produce_each_partition(producer: Producer, topic: str, partitions: int, tag: str) -> None:
    errors: list[KafkaError] = []
    for p in range(partitions):
        producer.produce(topic, f"{tag}-{p}".encode(), partition=p,
                         on_delivery=lambda err, msg: errors.append(err) if err is not None else None)
    assert producer.flush(_BOUND_S) == 0
    assert errors == []


def test_metadata_lists_every_node_and_spreads_leaders_and_replicas(cluster: KafkaShim) -> None:
    assert len(cluster.bootstrap_servers.split(",")) == 3
    admin = _create(cluster, "orders", 6, 3)
    metadata = admin.list_topics(timeout=_BOUND_S)
    assert sorted(metadata.brokers) == [1, 2, 3]
    assert len({(b.host, b.port) for b in metadata.brokers.values()}) == 3
    layout = _layout(admin, "orders")
    assert {leader for leader, _, _ in layout.values()} == {1, 2, 3}
    for leader, replicas, isr in layout.values():
        assert sorted(replicas) == [1, 2, 3] and sorted(isr) == [1, 2, 3] and replicas[0] == leader
    with pytest.raises(KafkaException) as refused:
        _create(cluster, "too-many-copies", 1, 4)
    assert refused.value.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR
    assert "only 3 broker(s) are registered" in refused.value.args[0].str()


def test_each_node_serves_only_the_partitions_it_leads(cluster: KafkaShim) -> None:
    admin = _create(cluster, "orders", 6, 1)
    producer = Producer(cluster.confluent_config())
    _produce_each_partition(producer, "orders", 6, "v")
    leaders = {p: leader for p, (leader, _, _) in _layout(admin, "orders").items()}
    for produce in cluster.received("Produce", topic="orders"):
        for topic in produce.request.topic_data:
            assert {leaders[p.index] for p in topic.partition_data} == {produce.node_id}


def test_a_moved_leader_sends_the_producer_to_the_new_one(cluster: KafkaShim) -> None:
    admin = _create(cluster, "orders", 1, 3)
    leader, replicas, _ = _layout(admin, "orders")[0]
    producer = Producer(cluster.confluent_config() | {"retry.backoff.ms": 20})
    _produce_each_partition(producer, "orders", 1, "before")
    new_leader = next(r for r in replicas if r != leader)
    cluster.faults.move_leader("orders", 0, new_leader)
    assert _layout(admin, "orders")[0][0] == new_leader
    _produce_each_partition(producer, "orders", 1, "after")  # NOT_LEADER_OR_FOLLOWER, a metadata refresh, a retry
    nodes = [r.node_id for r in cluster.received("Produce", topic="orders")]
    assert nodes[0] == leader and nodes[-1] == new_leader
    # kafka-python finds the new leader from Metadata too
    kp = KafkaProducer(**cluster.kafka_python_config())
    assert kp.send("orders", b"kafka-python", partition=0).get(timeout=_BOUND_S).offset == 2
    kp.close()
    consumer = Consumer(cluster.confluent_config() | {"group.id": "g", "auto.offset.reset": "earliest"})
    consumer.subscribe(["orders"])
    assert _consume(consumer, 3) == [b"before-0", b"after-0", b"kafka-python"]
    consumer.close()


def test_a_stopped_broker_moves_its_leaders_and_its_groups_coordinator(cluster: KafkaShim) -> None:
    admin = _create(cluster, "orders", 6, 3)
    producer = Producer(cluster.confluent_config() | {"retry.backoff.ms": 20})
    _produce_each_partition(producer, "orders", 6, "first")
    consumer = Consumer(cluster.confluent_config() | {"group.id": "billing", "auto.offset.reset": "earliest"})
    consumer.subscribe(["orders"])
    assert sorted(_consume(consumer, 6)) == sorted(f"first-{p}".encode() for p in range(6))
    coordinator = cluster.embedded.call(lambda: cluster.embedded.broker.state.coordinator(OFFSETS_TOPIC, "billing"))

    cluster.faults.stop_broker(coordinator)
    assert coordinator not in admin.list_topics(timeout=_BOUND_S).brokers
    for leader, _, isr in _layout(admin, "orders").values():
        assert leader != coordinator and coordinator not in isr
    _produce_each_partition(producer, "orders", 6, "second")
    # The consumer finds the group's new coordinator and goes on from its committed position.
    assert sorted(_consume(consumer, 6)) == sorted(f"second-{p}".encode() for p in range(6))
    moved_to = cluster.embedded.call(lambda: cluster.embedded.broker.state.coordinator(OFFSETS_TOPIC, "billing"))
    assert moved_to not in (coordinator, -1)

    def group_requests_at_new_coordinator() -> bool:
        asked = [r for api in ("Heartbeat", "JoinGroup", "OffsetCommit") for r in cluster.received(api, group="billing")]
        return any(r.node_id == moved_to for r in asked)

    deadline = time.monotonic() + _BOUND_S
    while not group_requests_at_new_coordinator() and time.monotonic() < deadline:
        consumer.poll(0.2)  # heartbeats and commits go on, now to the new coordinator
    assert group_requests_at_new_coordinator()

    cluster.faults.start_broker(coordinator)
    assert coordinator in admin.list_topics(timeout=_BOUND_S).brokers
    assert all(sorted(isr) == [1, 2, 3] for _, _, isr in _layout(admin, "orders").values())
    consumer.close()


def test_cluster_faults_refuse_what_cannot_be(cluster: KafkaShim) -> None:
    _create(cluster, "single", 1, 1)
    with pytest.raises(FaultError, match="there is no node 7"):
        cluster.faults.stop_broker(7)
    leader = cluster.embedded.call(lambda: cluster.embedded.broker.state.topics["single"].partitions[0].leader_id)
    other = next(n for n in (1, 2, 3) if n != leader)
    with pytest.raises(FaultError, match=f"node {other} holds no replica of single-0"):
        cluster.faults.move_leader("single", 0, other)
    cluster.faults.stop_broker(1)
    cluster.faults.stop_broker(2)
    with pytest.raises(FaultError, match="node 3 is the last one up"):
        cluster.faults.stop_broker(3)
    cluster.reset()  # a fresh start: every node up again
    assert sorted(AdminClient(cluster.confluent_config()).list_topics(timeout=_BOUND_S).brokers) == [1, 2, 3]


def test_a_stopped_broker_shrinks_the_isr_below_min_insync_replicas(cluster: KafkaShim) -> None:
    admin = AdminClient(cluster.confluent_config())
    topic = NewTopic("strict", 1, 3, config={"min.insync.replicas": "3"})
    for future in admin.create_topics([topic]).values():
        future.result(_BOUND_S)
    producer = KafkaProducer(**cluster.kafka_python_config(acks="all", retries=0))
    assert producer.send("strict", b"all-three").get(timeout=_BOUND_S).offset == 0
    follower = _layout(admin, "strict")[0][1][-1]
    cluster.faults.stop_broker(follower)
    with pytest.raises(errors.NotEnoughReplicasError):
        producer.send("strict", b"two-left").get(timeout=_BOUND_S)
    cluster.faults.start_broker(follower)
    assert producer.send("strict", b"three-again").get(timeout=_BOUND_S).offset == 1
    producer.close()


def test_a_produce_to_the_old_leader_names_the_new_one(cluster: KafkaShim) -> None:
    # KIP-951: Produce v10+ answers NOT_LEADER_OR_FOLLOWER with the current leader and its endpoint.
    admin = _create(cluster, "orders", 1, 3)
    leader, replicas, _ = _layout(admin, "orders")[0]
    new_leader = next(r for r in replicas if r != leader)
    cluster.faults.move_leader("orders", 0, new_leader)
    old_host, old_port = cluster.bootstrap_servers.split(",")[leader - 1].split(":")
    request = messages.ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[messages.ProduceRequest.TopicProduceData(
        name="orders", partition_data=[messages.ProduceRequest.PartitionProduceData(index=0, records=batch(values("v", 1)))])])
    with Wire((old_host, int(old_port)), timeout=_BOUND_S) as wire:
        answer = wire.request(ApiKey.PRODUCE, 10, request).body
    partition = answer.responses[0].partition_responses[0]
    assert partition.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (partition.current_leader.leader_id, partition.current_leader.leader_epoch) == (new_leader, 1)
    host, port = cluster.bootstrap_servers.split(",")[new_leader - 1].split(":")
    assert [(e.node_id, e.host, e.port) for e in answer.node_endpoints] == [(new_leader, host, int(port))]
