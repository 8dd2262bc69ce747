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


def test_request_time_is_a_percentage_of_a_second_and_its_throttle_is_bounded() -> None:
    now = [100.0]
    quotas = ClientQuotas()
    quotas.alter([Alteration((("user", "alice"),), [("request_percentage", 10.0)])], validate_only=False)
    meters = QuotaMeters(quotas, clock=lambda: now[0])
    # 0.5 s of handler time in a fresh 10 s window: 5 percent, within 10
    assert meters.record_request_time("User:alice", "app", 500_000_000) == 0
    # 1.5 s more: 20 percent, twice the quota: Kafka's formula gives the whole window, bounded by one window (1 s)
    assert meters.record_request_time("User:alice", "app", 1_500_000_000) == round(WINDOW_S * 1000)


def test_the_mutation_token_bucket_is_kafkas() -> None:
    now = [100.0]
    quotas = ClientQuotas()
    quotas.alter([Alteration((("user", "alice"),), [("controller_mutation_rate", 2.0)])], validate_only=False)
    meters = QuotaMeters(quotas, clock=lambda: now[0])
    strict = meters.mutations.for_request("User:alice", "app", strict=True)
    # a full bucket holds SAMPLES windows' worth: 22 partitions; a mutation is let through while tokens remain
    assert strict.record(20) and strict.record(10) and strict.throttle_ms == 0
    # 8 partitions in debt: refused, and told to wait until the bucket is back at zero (8 / 2 per second)
    assert not strict.record(1) and strict.throttle_ms == 4000
    now[0] += 1.0
    assert strict.throttle_ms == 3000  # the recorded wait, less the time since
    permissive = meters.mutations.for_request("User:alice", "app", strict=False)
    assert permissive.record(4) and permissive.throttle_ms == 5000  # applied anyway: (8 - 2 + 4) / 2 per s
    assert meters.mutations.for_request("User:bob", "app", strict=True) is None


def _create(wire: Wire, version: int, *names: str, partitions: int = 10):
    from kafka_shim.protocol.messages import CreateTopicsRequest as C

    return wire.request(ApiKey.CREATE_TOPICS, version, C(timeout_ms=30_000, topics=[
        C.CreatableTopic(name=n, num_partitions=partitions, replication_factor=1) for n in names])).body


def test_controller_mutation_rate_refuses_topic_creations_past_the_burst() -> None:
    with KafkaShim() as shim:
        _set_quota(shim, {"user": None}, "controller_mutation_rate", 1.0)  # a burst of 11 partitions
        host, port = shim.bootstrap_servers.split(":")
        with Wire((host, int(port)), timeout=_BOUND_S) as wire:
            answer = _create(wire, 6, "first", "second", "third")
            codes = {t.name: (t.error_code, t.error_message) for t in answer.topics}
            assert codes["first"] == (0, None) and codes["second"] == (0, None)  # 11 - 10 - 10 = -9: let through
            assert codes["third"] == (89, None)  # Kafka leaves out a message that is the error's default one
            assert 8_000 <= answer.throttle_time_ms <= 9_000  # 9 partitions of debt at 1 per second
            assert {"first", "second"} <= set(shim.topics()) and "third" not in shim.topics()
        with Wire((host, int(port)), timeout=_BOUND_S) as wire:
            # CreateTopics v5 (before KIP-599's strict quota): created all the same, only throttled
            answer = _create(wire, 5, "fourth", partitions=2)
            assert answer.topics[0].error_code == 0 and answer.throttle_time_ms > 9_000
            assert "fourth" in shim.topics()


def test_request_percentage_throttles_a_busy_client() -> None:
    from kafka_shim.protocol.messages import MetadataRequest

    with KafkaShim() as shim:
        _set_quota(shim, {"client-id": "busy"}, "request_percentage", 0.01)  # 1 ms of handler time per 10 s
        host, port = shim.bootstrap_servers.split(":")
        with Wire((host, int(port)), timeout=_BOUND_S) as wire:
            throttles, deadline = [], time.monotonic() + _BOUND_S
            while not any(throttles) and time.monotonic() < deadline:
                answer = wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=None), client_id="busy")
                throttles.append(answer.body.throttle_time_ms)
            assert any(throttles), f"no throttle within {_BOUND_S} s"
            assert 0 < max(throttles) <= 1000  # bounded by one quota window
            other = wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=None), client_id="idle")
            assert other.body.throttle_time_ms == 0  # another client id is not charged


def test_a_throttled_fetch_is_empty_and_its_records_come_later() -> None:
    from kafka_shim.protocol.messages import FetchRequest as F

    with KafkaShim() as shim:
        shim.create_topic("orders")
        producer = Producer(shim.confluent_config() | {"linger.ms": 0})
        for i in range(30):
            producer.produce("orders", b"%05d" % i + b"z" * 9_000)
            producer.flush(_BOUND_S)
        _set_quota(shim, {"client-id": "reader"}, "consumer_byte_rate", 10_000)  # 100 kB over the 10 s window
        host, port = shim.bootstrap_servers.split(":")
        offsets, throttled = [], None
        with Wire((host, int(port)), timeout=_BOUND_S) as wire:
            offset, deadline = 0, time.monotonic() + _BOUND_S
            while offset < 30 and time.monotonic() < deadline:
                answer = wire.request(ApiKey.FETCH, 12, F(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                                                          isolation_level=0, session_id=0, session_epoch=-1, topics=[
                    F.FetchTopic(topic="orders", partitions=[F.FetchPartition(partition=0, fetch_offset=offset,
                                                                              partition_max_bytes=20_000)])]),
                                      client_id="reader").body
                if answer.throttle_time_ms > 0:
                    throttled = throttled or answer
                    assert answer.responses == [], "a throttled fetch carries nothing"
                    continue  # the broker mutes this connection for the throttle time; ask again after it
                from kafka_shim.protocol.records import decode_batches_with_tail

                for batch in decode_batches_with_tail(answer.responses[0].partitions[0].records or b"")[0]:
                    offsets += [batch.base_offset + r.offset_delta for r in batch.records]
                offset = offsets[-1] + 1 if offsets else 0
        assert throttled is not None, "never throttled"
        assert offsets == list(range(30))  # every record once, none lost to a throttled answer


def test_a_fetch_is_capped_at_what_the_quota_window_allows_so_the_consumer_is_never_stalled() -> None:
    from kafka_shim.protocol.messages import FetchRequest as F
    from kafka_shim.protocol.records import decode_batches_with_tail

    with KafkaShim() as shim:
        shim.create_topic("large-records")
        producer = Producer(shim.confluent_config() | {"linger.ms": 0, "compression.type": "none"})
        for i in range(3):
            producer.produce("large-records", b"%05d" % i + b"w" * 40_000)
            producer.flush(_BOUND_S)  # one batch each
        # 10 kB/s: 100 kB over the sampled windows but the current one. The three batches (120 kB) in one answer would
        # be throttled every time, answered empty, and never reach the consumer; Kafka caps the fetch at 100 kB.
        _set_quota(shim, {"client-id": "capped"}, "consumer_byte_rate", 10_000)
        host, port = shim.bootstrap_servers.split(":")
        with Wire((host, int(port)), timeout=_BOUND_S) as wire:
            answer = wire.request(ApiKey.FETCH, 12, F(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                                                      isolation_level=0, session_id=0, session_epoch=-1, topics=[
                F.FetchTopic(topic="large-records", partitions=[F.FetchPartition(partition=0, fetch_offset=0,
                                                                                  partition_max_bytes=1 << 20)])]),
                                  client_id="capped").body
        assert answer.throttle_time_ms == 0
        batches = decode_batches_with_tail(answer.responses[0].partitions[0].records or b"")[0]
        assert [b.base_offset for b in batches] == [0, 1]
