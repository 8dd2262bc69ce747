"""Byte-rate quotas as clients see them: a producer or consumer over its quota is told to wait (librdkafka's
throttle callback) and is muted that long, yet gets every record through."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import AlterClientQuotasRequest as A
from kafka_shim.shim.quotas.client_quotas import Alteration, ClientQuotas
from kafka_shim.shim.quotas.metering import SAMPLES, WINDOW_S, QuotaMeters
from kafka_shim.shim.testing.handle import KafkaShim
from tests.support.wire import Wire

_BOUND_S = 60


def _set_quota(shim: KafkaShim, entity: dict[str, str | None], key: str, value: float) -> None:
    host, port = shim.bootstrap_servers.split(":")
    with Wire((host, int(port)), timeout=_BOUND_S) as wire:
        answer = wire.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, A(entries=[A.EntryData(
            entity=[A.EntityData(entity_type=t, entity_name=n) for t, n in entity.items()], ops=[A.OpData(key=key, value=value)])]))
    assert answer.body.entries[0].error_code == 0, answer


def test_a_producer_over_its_byte_rate_is_throttled() -> None:
    with KafkaShim() as shim:
        shim.create_topic("orders")
        _set_quota(shim, {"user": None}, "producer_byte_rate", 20_000)  # the default user: ANONYMOUS on PLAINTEXT
        events = []
        delivered = []
        producer = Producer(shim.confluent_config() | {"throttle_cb": events.append, "linger.ms": 0})
        deadline = time.monotonic() + _BOUND_S
        while not events and time.monotonic() < deadline:  # 20 kB/s over a 10 s window: throttled past ~200 kB
            producer.produce("orders", b"x" * 9_000, on_delivery=lambda err, msg: delivered.append(err))
            producer.poll(0.01)
        assert events, f"no throttle within {_BOUND_S} s"
        assert events[0].throttle_time > 0 and events[0].broker_id == 1
        assert producer.flush(_BOUND_S) == 0 and set(delivered) == {None}  # throttled, never refused


def test_a_consumer_over_its_byte_rate_is_throttled() -> None:
    with KafkaShim() as shim:
        shim.create_topic("orders")
        producer = Producer(shim.confluent_config() | {"linger.ms": 0})
        for _ in range(40):
            producer.produce("orders", b"y" * 9_000)
            producer.flush(_BOUND_S)  # one batch each, so that fetches stay small
        _set_quota(shim, {"client-id": "slow-reader"}, "consumer_byte_rate", 10_000)
        events = []
        consumer = Consumer(shim.confluent_config() | {"group.id": "g", "client.id": "slow-reader", "throttle_cb": events.append,
                                                        "max.partition.fetch.bytes": 40_000})
        consumer.assign([TopicPartition("orders", 0, 0)])
        read, deadline = 0, time.monotonic() + _BOUND_S
        while not events and time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                read += 1
        consumer.close()
        assert events, f"no throttle within {_BOUND_S} s"
        assert events[0].throttle_time > 0 and read > 0  # 10 kB/s over a 10 s window: throttled past 100 kB fetched


def test_the_throttle_time_is_kafkas_formula_over_the_sampled_window() -> None:
    now = [100.0]
    quotas = ClientQuotas()
    quotas.alter([Alteration((("user", "alice"),), [("producer_byte_rate", 1000.0)])], validate_only=False)
    meters = QuotaMeters(quotas, clock=lambda: now[0])
    assert meters.record("producer_byte_rate", "User:alice", "app", 5_000) == 0  # 5000 B over 10 s: 500 B/s
    # 15000 B over the minimum window of (SAMPLES - 1) s: 1500 B/s, half again the quota: wait half the window
    assert meters.record("producer_byte_rate", "User:alice", "app", 10_000) == round(0.5 * (SAMPLES - 1) * WINDOW_S * 1000)
    assert meters.record("producer_byte_rate", "User:bob", "app", 10**9) == 0  # no quota applies to bob
