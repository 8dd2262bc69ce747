"""kafka-shim capture-proxy in front of a real Kafka 3.9 (the session's ``oracle``, SASL_PLAINTEXT): confluent-kafka
(PLAIN) creates a topic and produces, kafka-python (SCRAM-SHA-512) consumes in a group; the clients only ever
reach Kafka through the proxy, and the trace holds Kafka's own answers with the recovered username.
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.traces.format import iter_requests
from tests.support.proxy_thread import ProxyThread
from tests.support.sasl_setup import USERS

pytestmark = [pytest.mark.oracle, pytest.mark.clients]
TIMEOUT = 60


def test_clients_reach_kafka_through_the_proxy_and_the_trace_holds_its_answers(oracle, tmp_path) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka import KafkaConsumer

    topic, group = f"proxied-{uuid.uuid4().hex[:8]}", f"proxied-group-{uuid.uuid4().hex[:8]}"
    plain = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "admin",
             "sasl.password": USERS["admin"]}
    with ProxyThread(oracle.sasl, tmp_path, "SASL_PLAINTEXT") as proxy:
        admin = AdminClient({"bootstrap.servers": proxy.bootstrap, **plain})
        for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
            future.result(timeout=TIMEOUT)
        brokers = {(b.host, b.port) for b in admin.list_topics(timeout=TIMEOUT).brokers.values()}
        assert brokers == {proxy.address}
        producer = Producer({"bootstrap.servers": proxy.bootstrap, **plain})
        for i in range(3):
            producer.produce(topic, f"k{i}".encode())
        assert producer.flush(TIMEOUT) == 0
        consumer = KafkaConsumer(topic, bootstrap_servers=proxy.bootstrap, security_protocol="SASL_PLAINTEXT",
                                 sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="admin",
                                 sasl_plain_password=USERS["admin"], group_id=group, auto_offset_reset="earliest",
                                 consumer_timeout_ms=TIMEOUT * 1000)
        assert [r.value for _, r in zip(range(3), consumer, strict=False)] == [b"k0", b"k1", b"k2"]
        consumer.close()
    rows = list(iter_requests(tmp_path))
    assert rows and all(r.decode_error is None for r in rows)
    by_api = Counter((r.row["api_key"], r.row["principal"]) for r in rows)
    assert by_api[(ApiKey.CREATE_TOPICS, "User:admin")] == 1
    assert by_api[(ApiKey.PRODUCE, "User:admin")] >= 1
    assert by_api[(ApiKey.FETCH, "User:admin")] >= 1 and by_api[(ApiKey.JOIN_GROUP, "User:admin")] >= 1
    answered = [r for r in rows if r.row["outcome"] == "response"]
    metadata = [r for r in answered if r.row["api_key"] == ApiKey.METADATA]
    assert metadata and all(r.row["response_rewritten"] for r in metadata)
    # The recorded answers are Kafka's own: they name Kafka's SASL listener.
    assert {(b.host, b.port) for r in metadata for b in r.response_body.brokers} == {oracle.sasl}
    coordinators = [r for r in answered if r.row["api_key"] == ApiKey.FIND_COORDINATOR and r.row["response_rewritten"]]
    assert coordinators
    sasl = [r.row for r in rows if r.row["api_key"] == ApiKey.SASL_AUTHENTICATE]
    assert sasl and all(r["request"] is None and r["principal"] == "User:ANONYMOUS" for r in sasl)
    for f in tmp_path.rglob("*.parquet"):
        assert USERS["admin"].encode() not in f.read_bytes()
