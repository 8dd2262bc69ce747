"""Real client libraries bootstrap against kafka-shim over TCP and report its metadata."""

from __future__ import annotations

import asyncio

import pytest

pytestmark = pytest.mark.clients


def _host_port(broker) -> tuple[str, int]:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return host, int(port)


def test_confluent_kafka_list_topics(broker) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    md = admin.list_topics(timeout=10)
    host, port = _host_port(broker)
    assert md.cluster_id == broker.broker.state.cluster_id
    assert md.controller_id == 7
    assert list(md.brokers) == [7]
    assert (md.brokers[7].host, md.brokers[7].port) == (host, port)
    assert md.topics == {}


def test_confluent_kafka_sees_topics(broker) -> None:
    from confluent_kafka.admin import AdminClient

    broker.call(broker.broker.state.add_topic, "payments", 3)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    md = admin.list_topics(timeout=10)
    assert set(md.topics) == {"payments"}
    topic = md.topics["payments"]
    assert sorted(topic.partitions) == [0, 1, 2]
    assert all(p.leader == 7 and p.replicas == [7] and p.isrs == [7] for p in topic.partitions.values())


def test_kafka_python_bootstrap(broker) -> None:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000)
    try:
        cluster = admin.describe_cluster()
        host, port = _host_port(broker)
        assert cluster["cluster_id"] == broker.broker.state.cluster_id
        assert cluster["controller_id"] == 7
        assert [(b["broker_id"], b["host"], b["port"], b["rack"]) for b in cluster["brokers"]] == [(7, host, port, None)]
        assert admin.list_topics() == []
    finally:
        admin.close()


def test_aiokafka_bootstrap(broker) -> None:
    from aiokafka import AIOKafkaClient

    async def run() -> None:
        client = AIOKafkaClient(bootstrap_servers=broker.bootstrap_servers)
        await client.bootstrap()
        try:
            host, port = _host_port(broker)
            brokers = client.cluster.brokers()
            assert [(b.nodeId, b.host, b.port) for b in brokers] == [(7, host, port)]
            assert client.cluster.controller.nodeId == 7
            assert client.cluster.topics() == set()
        finally:
            await client.close()

    asyncio.run(run())
