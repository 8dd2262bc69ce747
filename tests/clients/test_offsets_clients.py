"""Committed offsets with real client libraries over TCP: OffsetCommit, OffsetFetch (KIP-163) and OffsetDelete.

- Consumers that assign() their partitions and commit by hand (a group that only stores offsets): confluent-kafka
  (librdkafka) ``commit`` / ``committed``, kafka-python ``commit`` / ``committed``, aiokafka ``commit`` /
  ``committed``; each reads what the others committed, metadata and leader epoch included.
- Admin clients: confluent-kafka ``list_consumer_group_offsets`` / ``alter_consumer_group_offsets`` (it has no
  OffsetDelete call), kafka-python ``list_group_offsets`` / ``delete_group_offsets``.
- KIP-163 over SASL (users of tests/support/sasl_setup.py): alice with DESCRIBE on the group and the topic reads the
  committed offsets but cannot commit (GROUP_AUTHORIZATION_FAILED); bob with nothing is refused; bob with READ on
  another group and DESCRIBE on one of its two topics sees only that topic's offsets, the other silently dropped.

Every client first asks FindCoordinator (the classic protocol's part of issue 14); without it these tests skip.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

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
from kafka_shim.protocol.codes import ApiKey
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.handlers import load_all
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.appending import create_topic
from tests.support.sasl_setup import USERS, listener_address, sasl_properties

pytestmark = [pytest.mark.clients,
              pytest.mark.skipif(ApiKey.FIND_COORDINATOR not in load_all(), reason="needs FindCoordinator (classic groups)")]
TIMEOUT = 30


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "auto.create.topics.enable": "false",
                                           "offsets.topic.replication.factor": "1"})
    with EmbeddedBroker(config) as b:
        create_topic(b, "oc-orders", 3)
        create_topic(b, "oc-audit", 1)
        yield b


def _group() -> str:
    return f"oc-{uuid.uuid4().hex[:8]}"


# -- each library commits and reads back ------------------------------------------------------------------------------


def _confluent_consumer(bootstrap: str, group: str, **extra: str):
    from confluent_kafka import Consumer

    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False, **extra})


def test_confluent_commit_and_committed(broker) -> None:
    from confluent_kafka import TopicPartition

    group = _group()
    consumer = _confluent_consumer(broker.bootstrap_servers, group)
    try:
        consumer.assign([TopicPartition("oc-orders", p) for p in range(3)])
        consumer.commit(offsets=[TopicPartition("oc-orders", 0, 5, metadata="from-librdkafka", leader_epoch=0),
                                 TopicPartition("oc-orders", 2, 9)], asynchronous=False)
        got = consumer.committed([TopicPartition("oc-orders", p) for p in range(3)], timeout=TIMEOUT)
    finally:
        consumer.close()
    assert [(tp.partition, tp.offset, tp.error) for tp in got] == [(0, 5, None), (1, -1001, None), (2, 9, None)]
    assert got[0].metadata == "from-librdkafka" and got[0].leader_epoch == 0


def test_kafka_python_reads_what_aiokafka_committed_and_back(broker) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import OffsetAndMetadata as AioOffset
    from aiokafka.structs import TopicPartition as AioTP
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    group = _group()

    async def aiokafka_commit() -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=group, enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([AioTP("oc-orders", 1)])
            await consumer.commit({AioTP("oc-orders", 1): AioOffset(41, "from-aiokafka")})
            assert await consumer.committed(AioTP("oc-orders", 1)) == 41
        finally:
            await consumer.stop()

    asyncio.run(aiokafka_commit())
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=group, enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition("oc-orders", 1), TopicPartition("oc-audit", 0)])
        assert consumer.committed(TopicPartition("oc-orders", 1), metadata=True) == OffsetAndMetadata(41, "from-aiokafka", -1)
        consumer.commit({TopicPartition("oc-audit", 0): OffsetAndMetadata(3, "from-kafka-python", -1)})
    finally:
        consumer.close()

    async def aiokafka_reads() -> int:
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=group, enable_auto_commit=False)
        await consumer.start()
        try:
            return await consumer.committed(AioTP("oc-audit", 0))
        finally:
            await consumer.stop()

    assert asyncio.run(aiokafka_reads()) == 3


def test_admin_clients_list_alter_and_delete_offsets(broker) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient
    from kafka import TopicPartition as KTP
    from kafka.admin import KafkaAdminClient

    group = _group()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    altered = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [
        TopicPartition("oc-orders", 0, 10), TopicPartition("oc-orders", 1, 11), TopicPartition("oc-audit", 0, 12)])])
    altered[group].result(timeout=TIMEOUT)
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=TIMEOUT)
    assert sorted((tp.topic, tp.partition, tp.offset) for tp in listed.topic_partitions) == [
        ("oc-audit", 0, 12), ("oc-orders", 0, 10), ("oc-orders", 1, 11)]

    kadmin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        offsets = kadmin.list_group_offsets({group: None})[group]
        assert {(tp.topic, tp.partition): o.offset for tp, o in offsets.items()} == {
            ("oc-audit", 0): 12, ("oc-orders", 0): 10, ("oc-orders", 1): 11}
        kadmin.delete_group_offsets(group, [KTP("oc-orders", 0), KTP("oc-audit", 0)])
    finally:
        kadmin.close()
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=TIMEOUT)
    assert [(tp.topic, tp.partition, tp.offset) for tp in listed.topic_partitions] == [("oc-orders", 1, 11)]


# -- KIP-163 ----------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def secured() -> Iterator[EmbeddedBroker]:
    config = BrokerConfig.from_properties(sasl_properties() | {"offsets.topic.replication.factor": "1"})
    with EmbeddedBroker(config) as b:
        create_topic(b, "oc-orders", 3)
        create_topic(b, "oc-hidden", 2)
        yield b


def _sasl(broker: EmbeddedBroker) -> str:
    host, port = broker.call(lambda: listener_address(broker.broker, "SASL_PLAINTEXT"))
    return f"{host}:{port}"


def _as(user: str) -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": USERS[user]}


def _allow(broker: EmbeddedBroker, user: str, rtype: ResourceType, name: str, *operations: AclOperation) -> None:
    bindings = [AclBinding(ResourcePattern(rtype, name, PatternType.LITERAL),
                           AccessControlEntry(f"User:{user}", "*", op, AclPermissionType.ALLOW)) for op in operations]
    broker.call(lambda: broker.broker.authorizer.create_acls(bindings))


def _seed_as_admin(broker: EmbeddedBroker, group: str, offsets: list[tuple[str, int, int]]) -> None:
    from confluent_kafka import TopicPartition

    consumer = _confluent_consumer(_sasl(broker), group, **_as("admin"))
    try:
        consumer.commit(offsets=[TopicPartition(t, p, o) for t, p, o in offsets], asynchronous=False)
    finally:
        consumer.close()


def _list_offsets(broker: EmbeddedBroker, user: str, group: str):
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": _sasl(broker), **_as(user)})
    return admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=TIMEOUT)


def test_kip163_describe_reads_committed_offsets_but_cannot_commit(secured) -> None:
    from confluent_kafka import KafkaError, KafkaException, TopicPartition
    from kafka import TopicPartition as KTP
    from kafka.admin import KafkaAdminClient

    group = _group()
    _seed_as_admin(secured, group, [("oc-orders", 0, 7), ("oc-orders", 2, 9)])
    _allow(secured, "alice", ResourceType.GROUP, group, AclOperation.DESCRIBE)
    _allow(secured, "alice", ResourceType.TOPIC, "oc-orders", AclOperation.DESCRIBE)

    listed = _list_offsets(secured, "alice", group)
    assert sorted((tp.partition, tp.offset) for tp in listed.topic_partitions) == [(0, 7), (2, 9)]
    host, port = _sasl(secured).rsplit(":", 1)
    kadmin = KafkaAdminClient(bootstrap_servers=f"{host}:{port}", security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                              sasl_plain_username="alice", sasl_plain_password=USERS["alice"])
    try:
        offsets = kadmin.list_group_offsets({group: [KTP("oc-orders", 0), KTP("oc-orders", 1)]})[group]
        assert {tp.partition: o.offset for tp, o in offsets.items()} == {0: 7, 1: -1}
    finally:
        kadmin.close()

    consumer = _confluent_consumer(_sasl(secured), group, **_as("alice"))
    try:
        with pytest.raises(KafkaException) as refused:
            consumer.commit(offsets=[TopicPartition("oc-orders", 0, 8)], asynchronous=False)
    finally:
        consumer.close()
    assert refused.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    assert sorted((tp.partition, tp.offset) for tp in _list_offsets(secured, "alice", group).topic_partitions) == [(0, 7), (2, 9)]


def test_kip163_nothing_is_refused_and_undescribable_topics_are_dropped(secured) -> None:
    from confluent_kafka import KafkaError, KafkaException

    group = _group()
    _seed_as_admin(secured, group, [("oc-orders", 1, 4), ("oc-hidden", 0, 2)])
    with pytest.raises(KafkaException) as refused:
        _list_offsets(secured, "bob", group)
    assert refused.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED

    _allow(secured, "bob", ResourceType.GROUP, group, AclOperation.READ)
    _allow(secured, "bob", ResourceType.TOPIC, "oc-orders", AclOperation.DESCRIBE)
    listed = _list_offsets(secured, "bob", group)
    assert [(tp.topic, tp.partition, tp.offset) for tp in listed.topic_partitions] == [("oc-orders", 1, 4)]
