"""A compacted topic as real clients see it: confluent-kafka writes keyed records and tombstones, kafka-python reads
the partition from the start after the log cleaner ran; each key keeps its last value, deleted keys go once their
tombstones are older than ``delete.retention.ms`` and a later cleaning comes by."""

from __future__ import annotations

import time
import uuid

import pytest

from kafka_shim.shim.config.broker_config import BrokerConfig

pytestmark = pytest.mark.clients

KEYS = 12


@pytest.fixture
def broker_config() -> BrokerConfig:
    return BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "7",
                                         "log.cleaner.backoff.ms": "50"})


def _create(bootstrap: str, configs: dict[str, str]) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"compacted-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config=configs)])[name].result(60)
    return name


def _produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes | None]]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.size": 1000,
                         "enable.idempotence": False})
    errors: list = []
    for key, value in records:
        producer.produce(topic, value, key=key, on_delivery=lambda err, _msg: err is not None and errors.append(err))
        producer.poll(0)
    assert producer.flush(60) == 0 and errors == []


def _read_all(bootstrap: str, topic: str) -> list[tuple[int, bytes, bytes | None]]:
    """Every record from the log start to the high watermark, read by kafka-python."""
    from kafka import KafkaConsumer, TopicPartition

    partition = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        end = consumer.end_offsets([partition])[partition]
        got: list[tuple[int, bytes, bytes | None]] = []
        deadline = time.monotonic() + 60
        while consumer.position(partition) < end:
            assert time.monotonic() < deadline, f"could not read {topic} up to {end}"
            for records in consumer.poll(timeout_ms=500).values():
                got += [(r.offset, r.key, r.value) for r in records]
        return got
    finally:
        consumer.close()


def _wait_for(bootstrap: str, topic: str, done, what: str, between=None) -> list[tuple[int, bytes, bytes | None]]:
    deadline = time.monotonic() + 90
    while True:
        seen = _read_all(bootstrap, topic)
        if done(seen):
            return seen
        assert time.monotonic() < deadline, f"the log cleaner never {what}: {seen}"
        if between is not None:
            between()
        time.sleep(0.1)


def test_readers_see_the_last_value_of_each_key_then_deleted_keys_go(broker) -> None:
    bootstrap = broker.bootstrap_servers
    topic = _create(bootstrap, {"cleanup.policy": "compact", "segment.bytes": "3000", "min.cleanable.dirty.ratio": "0.01",
                                "delete.retention.ms": "500"})
    updates = [(b"key-%d" % (i % KEYS), b"value-%d" % i) for i in range(400)]
    deleted = [(b"key-%d" % k, None) for k in range(3)]
    _produce(bootstrap, topic, updates + deleted)
    last = dict(updates + deleted)

    def compacted(seen: list[tuple[int, bytes, bytes | None]]) -> bool:
        # Below the active segment (at most 3000 bytes: a few dozen records) each key appears once.
        return len(seen) < KEYS + 120 and {k: v for _, k, v in seen} == last

    seen = _wait_for(bootstrap, topic, compacted, "compacted the topic")
    offsets = [offset for offset, _, _ in seen]
    assert offsets == sorted(offsets) and offsets[-1] == len(updates + deleted) - 1  # offsets never change
    # Once the tombstones are older than delete.retention.ms, a cleaning (later writes make the log dirty again)
    # drops them: the deleted keys are gone from the partition.
    gone = {key for key, _ in deleted}

    def more_writes() -> None:
        _produce(bootstrap, topic, [(b"key-%d" % (i % (KEYS - 3) + 3), b"later-%d" % i) for i in range(60)])

    seen = _wait_for(bootstrap, topic, lambda s: not gone & {k for _, k, _ in s}, "dropped the tombstones", more_writes)
    assert {k for _, k, _ in seen} == {b"key-%d" % k for k in range(3, KEYS)}
