"""kafka-python, aiokafka and kafkajs producers write to kafka-shim (idempotent where the client offers it, each
compression codec the client has, keys, headers, timestamps); the test reads the partition log back and checks
every record unchanged. KIP-679 with real producers: WRITE on a prefixed topic pattern is enough for an idempotent
producer; a DENY that dominates it, or a literal `*` DENY, makes InitProducerId fail with 31 as the client reports it."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from kafka_shim.authorizer import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.produce import create_topic, fetch_advertised, stored_records

pytestmark = pytest.mark.clients
TIMEOUT = 60
BASE_TS = 1_700_000_000_000
KAFKAJS_DIR = Path(__file__).resolve().parents[2] / "tests" / "kafkajs"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def _broker(**props: str) -> EmbeddedBroker:
    base = {"listeners": "PLAINTEXT://127.0.0.1:0", "auto.create.topics.enable": "false"}
    return EmbeddedBroker(BrokerConfig.from_properties({**base, **props}))


@pytest.fixture
def broker():
    with fetch_advertised(), _broker() as running:
        yield running


def _messages(count: int, tag: str) -> list[tuple[bytes | None, bytes, list[tuple[str, bytes]], int]]:
    return [(f"{tag}-k{i}".encode() if i % 4 else None, (f"{tag} value {i} " * 5).encode(),
             [("n", str(i).encode()), ("tag", tag.encode())] if i % 2 else [], BASE_TS + i)
            for i in range(count)]


def _check(broker, topic: str, sent: list) -> None:
    # With acks=0 a producer is done once its requests are on the socket: the broker may still be appending them.
    deadline = time.monotonic() + 60
    while len(stored := stored_records(broker, topic)) < len(sent) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [(s.key, s.value, list(s.headers), s.timestamp) for s in stored] == [(k, v, h, ts) for k, v, h, ts in sent]
    assert [s.offset for s in stored] == list(range(len(sent)))


# -- kafka-python --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("codec", "acks", "idempotent"), [
    (None, "all", True), ("gzip", "all", True), ("snappy", 1, False), ("lz4", "all", True), ("zstd", 0, False)])
def test_kafka_python_producer(broker, codec, acks, idempotent) -> None:
    from kafka import KafkaProducer

    create_topic(broker, "kp")
    sent = _messages(30, f"kp-{codec}")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, compression_type=codec, acks=acks,
                             enable_idempotence=idempotent, linger_ms=5, request_timeout_ms=30000)
    futures = [producer.send("kp", key=k, value=v, headers=h, timestamp_ms=ts, partition=0) for k, v, h, ts in sent]
    producer.flush(timeout=TIMEOUT)
    metadata = [f.get(timeout=TIMEOUT) for f in futures]
    producer.close(timeout=TIMEOUT)
    _check(broker, "kp", sent)
    if acks != 0:  # with acks=0 there is no answer, so no offsets
        assert [m.offset for m in metadata] == list(range(len(sent)))


# -- aiokafka ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("codec", "acks", "idempotent"), [
    (None, "all", True), ("gzip", "all", True), ("snappy", 1, False), ("lz4", "all", True), ("zstd", "all", True)])
def test_aiokafka_producer(broker, codec, acks, idempotent) -> None:
    from aiokafka import AIOKafkaProducer

    create_topic(broker, "aio")
    sent = _messages(30, f"aio-{codec}")

    async def produce() -> list:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, compression_type=codec, acks=acks,
                                    enable_idempotence=idempotent, request_timeout_ms=30000)
        await producer.start()
        try:
            sends = [await producer.send("aio", key=k, value=v, headers=h, timestamp_ms=ts, partition=0) for k, v, h, ts in sent]
            return [await asyncio.wait_for(s, TIMEOUT) for s in sends]
        finally:
            await producer.stop()

    metadata = asyncio.run(produce())
    assert [m.offset for m in metadata] == list(range(len(sent)))
    _check(broker, "aio", sent)
    assert {s.producer_id >= 0 for s in stored_records(broker, "aio")} == {idempotent}


# -- kafkajs -------------------------------------------------------------------------------------------------------


def run_kafkajs_producer(bootstrap: str, topic: str, messages: list, **options: object) -> dict:
    node = shutil.which("node")
    if node is None or not (KAFKAJS_DIR / "node_modules" / "kafkajs").is_dir():
        pytest.fail("kafkajs is not installed: run scripts/test (or scripts/ensure-node tests/kafkajs)", pytrace=False)
    request = {"brokers": [bootstrap], "topic": topic, "messages": messages, **options}
    proc = subprocess.run([node, str(KAFKAJS_DIR / "produce.js")], input=json.dumps(request), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize(("compression", "acks", "idempotent"), [("none", -1, True), ("gzip", -1, True), ("none", 1, False)])
def test_kafkajs_producer(broker, compression, acks, idempotent) -> None:
    create_topic(broker, "js")
    sent = [(k, v, h, ts) for k, v, h, ts in _messages(25, f"js-{compression}")]
    messages = [{"key": k.decode() if k is not None else None, "value": v.decode(), "timestamp": str(ts), "partition": 0,
                 "headers": {name: value.decode() for name, value in h}} for k, v, h, ts in sent]
    result = run_kafkajs_producer(broker.bootstrap_servers, "js", messages, compression=compression, acks=acks, idempotent=idempotent)
    assert result["ok"], result
    assert [(r["topicName"], r["partition"], r["errorCode"], r["baseOffset"]) for r in result["value"]] == [("js", 0, 0, "0")]
    _check(broker, "js", sent)


# -- KIP-679 with real producers -----------------------------------------------------------------------------------


def _acl(rtype: ResourceType, name: str, pattern: PatternType, operation: AclOperation, permission: AclPermissionType) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry("User:ANONYMOUS", "*", operation, permission))


_WRITE_PAY = _acl(ResourceType.TOPIC, "pay", PatternType.PREFIXED, AclOperation.WRITE, AclPermissionType.ALLOW)
_DESCRIBE_ALL = _acl(ResourceType.TOPIC, "*", PatternType.LITERAL, AclOperation.DESCRIBE, AclPermissionType.ALLOW)
KIP_679 = {
    "prefixed-write": ([_WRITE_PAY, _DESCRIBE_ALL], True),
    "dominated-by-prefixed-deny": ([_WRITE_PAY, _DESCRIBE_ALL,
                                    _acl(ResourceType.TOPIC, "pa", PatternType.PREFIXED, AclOperation.WRITE, AclPermissionType.DENY)], False),
    "literal-star-deny": ([_WRITE_PAY, _DESCRIBE_ALL,
                           _acl(ResourceType.TOPIC, "*", PatternType.LITERAL, AclOperation.WRITE, AclPermissionType.DENY)], False),
    "idempotent-write": ([_DESCRIBE_ALL, _acl(ResourceType.TOPIC, "payments", PatternType.LITERAL, AclOperation.WRITE, AclPermissionType.ALLOW),
                          _acl(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, AclOperation.IDEMPOTENT_WRITE,
                               AclPermissionType.ALLOW)], True),
}


@pytest.fixture(params=sorted(KIP_679))
def acl_case(request):
    acls, works = KIP_679[request.param]
    with fetch_advertised(), _broker(**{"authorizer.class.name": STANDARD_AUTHORIZER}) as running:
        create_topic(running, "payments")

        def add() -> None:
            results = running.broker.services.authorizer.create_acls(acls)
            assert all(r.error is None for r in results), results

        running.call(add)
        yield running, works


def test_kip_679_confluent_idempotent_producer(acl_case) -> None:
    import time

    from confluent_kafka import KafkaError, KafkaException, Producer

    broker, works = acl_case
    errors: list = []
    reports: list = []
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True, "message.timeout.ms": 20000,
                         "error_cb": errors.append})
    try:
        producer.produce("payments", value=b"kip-679", partition=0, on_delivery=lambda err, msg: reports.append(err))
        deadline = time.monotonic() + TIMEOUT
        while not reports and not any(e.fatal() for e in errors) and time.monotonic() < deadline:
            producer.poll(0.2)
    except KafkaException as exc:  # the producer turned fatal while produce() ran
        errors.append(exc.args[0])
    if works:
        assert reports == [None] and errors == []
        assert [s.value for s in stored_records(broker, "payments")] == [b"kip-679"]
    else:
        fatal = [e for e in errors if e.fatal()]
        assert fatal and fatal[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED, errors
        assert "Failed to acquire idempotence PID" in fatal[0].str()
        assert stored_records(broker, "payments") == []


def test_kip_679_kafka_python_idempotent_producer(acl_case) -> None:
    from kafka import KafkaProducer
    from kafka.errors import ClusterAuthorizationFailedError, KafkaError

    broker, works = acl_case
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True, max_block_ms=20000)
    try:
        if works:
            producer.send("payments", value=b"kip-679", partition=0).get(timeout=TIMEOUT)
            assert [s.value for s in stored_records(broker, "payments")] == [b"kip-679"]
        else:
            with pytest.raises(KafkaError) as raised:
                producer.send("payments", value=b"kip-679", partition=0).get(timeout=TIMEOUT)
            assert isinstance(raised.value, ClusterAuthorizationFailedError) or "ClusterAuthorizationFailed" in repr(raised.value)
            assert stored_records(broker, "payments") == []
    finally:
        producer.close(timeout=5)
