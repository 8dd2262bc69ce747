"""Partition faults and throttling as confluent-kafka sees them, and the record of what the broker received."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_shim.shim.faults.errors import FaultError
from kafka_shim.shim.testing.handle import KafkaShim

_BOUND_S = 60  # generous: a busy machine is slow, never wrong


def _deliver(producer: Producer, topic: str, value: bytes) -> KafkaError | None:
    reports: list[KafkaError | None] = []
    producer.produce(topic, value, on_delivery=lambda err, msg: reports.append(err))
    producer.flush(_BOUND_S)
    assert len(reports) == 1, f"no delivery report within {_BOUND_S} s"
    return reports[0]


def _next_value(consumer: Consumer) -> bytes:
    deadline = time.monotonic() + _BOUND_S
    while time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None:
            assert message.error() is None, message.error()
            return message.value()
    raise AssertionError(f"no record within {_BOUND_S} s")


def _wait_for_metadata_after_last_produce(shim: KafkaShim) -> None:
    deadline = time.monotonic() + _BOUND_S
    while time.monotonic() < deadline:
        apis = [r.api for r in shim.received()]
        last_produce = len(apis) - 1 - apis[::-1].index("Produce")
        if "Metadata" in apis[last_produce:]:
            return
        time.sleep(0.02)
    raise AssertionError(f"no Metadata request after the refused Produce within {_BOUND_S} s")


def _leader(admin: AdminClient, topic: str) -> tuple[int, KafkaError | None]:
    partition = admin.list_topics(topic, timeout=_BOUND_S).topics[topic].partitions[0]
    return partition.leader, partition.error


def test_a_leaderless_partition_holds_the_producer_until_it_is_led_again_and_the_consumer_goes_on() -> None:
    with KafkaShim() as shim:
        shim.create_topic("orders")
        config = shim.confluent_config()
        producer = Producer(config | {"message.timeout.ms": _BOUND_S * 1000, "retry.backoff.ms": 20})
        consumer = Consumer(config | {"group.id": "billing", "auto.offset.reset": "earliest"})
        consumer.assign([TopicPartition("orders", 0, 0)])
        assert _deliver(producer, "orders", b"before") is None
        assert _next_value(consumer) == b"before"

        fault = shim.faults.leaderless("orders", 0)
        admin = AdminClient(config)
        leader, error = _leader(admin, "orders")
        assert leader == -1 and error is not None and error.code() == KafkaError.LEADER_NOT_AVAILABLE
        reports: list[KafkaError | None] = []
        producer.produce("orders", b"during", on_delivery=lambda err, msg: reports.append(err))
        # The producer's Produce is refused (NOT_LEADER_OR_FOLLOWER); it asks Metadata again and finds no leader.
        shim.received.wait_for("Produce", 2, topic="orders")
        _wait_for_metadata_after_last_produce(shim)
        producer.poll(0)
        assert reports == []  # still held: retriable, within message.timeout.ms
        assert shim.faults.remove(fault)
        producer.flush(_BOUND_S)
        assert reports == [None]
        assert _leader(admin, "orders") == (1, None)  # node.id 1 leads it again
        # Two epoch changes later, the consumer validates its position (OffsetForLeaderEpoch) and reads on: no
        # truncation is detected and nothing is read twice.
        assert _next_value(consumer) == b"during"
        assert shim.received("OffsetForLeaderEpoch", topic="orders") != []
        consumer.close()


def test_a_timed_leaderless_fault_ends_by_itself() -> None:
    with KafkaShim() as shim:
        shim.create_topic("orders", partitions=2)
        shim.faults.leaderless("orders", duration_ms=1500)  # every partition of the topic
        assert [f["kind"] for f in shim.faults.rules()] == ["leaderless"]
        producer = Producer(shim.confluent_config() | {"message.timeout.ms": _BOUND_S * 1000})
        assert _deliver(producer, "orders", b"late") is None  # delivered once the partitions are led again
        assert shim.faults.rules() == []


def test_a_stalled_fetch_holds_back_one_partition_while_the_others_flow() -> None:
    with KafkaShim() as shim:
        shim.create_topics({"slow": 1, "fast": 1})
        producer = Producer(shim.confluent_config())
        assert _deliver(producer, "slow", b"held") is None
        fault = shim.faults.stall_fetch("slow", 0)
        assert _deliver(producer, "fast", b"flows") is None
        consumer = Consumer(shim.confluent_config() | {"group.id": "g", "fetch.wait.max.ms": 100})
        consumer.assign([TopicPartition("slow", 0, 0), TopicPartition("fast", 0, 0)])
        assert _next_value(consumer) == b"flows"
        # Five more fetches of the stalled partition, each answered with no records: the record stays held back.
        seen = len(shim.received("Fetch", topic="slow"))
        deadline = time.monotonic() + _BOUND_S
        while len(shim.received("Fetch", topic="slow")) < seen + 5 and time.monotonic() < deadline:
            assert consumer.poll(0.1) is None
        assert len(shim.received("Fetch", topic="slow")) >= seen + 5
        shim.faults.remove(fault)
        assert _next_value(consumer) == b"held"
        consumer.close()


def test_a_throttled_answer_reaches_the_clients_throttle_callback() -> None:
    with KafkaShim() as shim:
        shim.create_topic("orders")
        events = []
        producer = Producer(shim.confluent_config() | {"throttle_cb": events.append})
        shim.faults.throttle("Produce", 700, topic="orders")
        assert _deliver(producer, "orders", b"v") is None
        deadline = time.monotonic() + _BOUND_S
        while not events and time.monotonic() < deadline:
            producer.poll(0.1)
        assert [round(e.throttle_time, 3) for e in events] == [0.7]
        assert shim.faults.rules() == []


def test_the_record_of_received_requests_names_principal_client_and_body() -> None:
    with KafkaShim() as shim:
        shim.create_topic("orders")
        producer = Producer(shim.confluent_config() | {"client.id": "checkout", "acks": "1"})
        assert _deliver(producer, "orders", b"v") is None
        [produce] = shim.received("Produce", topic="orders")
        assert (produce.api, produce.principal, produce.client_id, produce.listener) == \
            ("Produce", "User:ANONYMOUS", "checkout", "PLAINTEXT")
        assert produce.request.acks == 1
        assert [t.name for t in produce.request.topic_data] == ["orders"]
        assert shim.received("Produce", topic="other") == []
        assert {r.api for r in shim.received()} >= {"ApiVersions", "Metadata", "Produce"}
        shim.reset()
        assert shim.received() == []  # each test starts with an empty record


def test_partition_faults_refuse_what_cannot_fail() -> None:
    with KafkaShim() as shim:
        shim.create_topic("orders", partitions=2)
        with pytest.raises(FaultError, match="there is no topic 'nope'"):
            shim.faults.leaderless("nope")
        with pytest.raises(FaultError, match="partitions 0 to 1; partition 2 does not exist"):
            shim.faults.stall_fetch("orders", 2)
        with pytest.raises(FaultError, match="duration_ms=0"):
            shim.faults.leaderless("orders", 0, duration_ms=0)
