"""Topic and broker configs through real admin clients: confluent-kafka's AdminClient (describe_configs,
alter_configs, incremental_alter_configs), kafka-python's KafkaAdminClient and aiokafka's AIOKafkaAdminClient.

Each change is checked twice: as the client reads it back, and in the partition log that has to obey it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker

pytestmark = pytest.mark.clients
TIMEOUT = 20


@pytest.fixture
def broker(tmp_path: Path):
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1",
                                           "log.retention.hours": "24", "log.dirs": str(tmp_path / "data")})
    with EmbeddedBroker(config) as running:
        yield running


def _topic(broker: EmbeddedBroker, name: str, configs: dict[str, str] | None = None) -> None:
    broker.call(broker.broker.services.partitions.create_topic, name, 1, configs or {})


def _log_config(broker: EmbeddedBroker, name: str):
    return broker.call(lambda: broker.broker.services.partitions.get(name, 0).log.config)


def _confluent(broker: EmbeddedBroker):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": broker.bootstrap_servers, "socket.timeout.ms": 10000})


def test_confluent_describe_and_incremental_alter_a_topic(broker) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

    _topic(broker, "orders", {"retention.ms": "60000"})
    admin = _confluent(broker)
    resource = ConfigResource(ConfigResource.Type.TOPIC, "orders")
    entries = admin.describe_configs([resource])[resource].result(timeout=TIMEOUT)
    assert entries["retention.ms"].value == "60000"
    assert entries["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["segment.bytes"].value == "1073741824" and entries["segment.bytes"].is_default
    assert not entries["segment.bytes"].is_read_only

    change = ConfigResource(ConfigResource.Type.TOPIC, "orders", incremental_configs=[
        ConfigEntry("segment.bytes", "100000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
    ])
    assert admin.incremental_alter_configs([change])[change].result(timeout=TIMEOUT) is None
    entries = admin.describe_configs([resource])[resource].result(timeout=TIMEOUT)
    assert entries["segment.bytes"].value == "100000"
    assert entries["cleanup.policy"].value == "delete,compact"
    assert entries["retention.ms"].value == str(24 * 3600 * 1000)  # back to the broker's log.retention.hours
    assert entries["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value  # Kafka: hours is not the primary synonym
    log_config = _log_config(broker, "orders")
    assert log_config.segment_bytes == 100000
    assert log_config.cleanup_policy == frozenset({"delete", "compact"})
    assert log_config.retention_ms == 24 * 3600 * 1000


def test_confluent_errors_carry_kafkas_codes_and_messages(broker) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    _topic(broker, "orders")
    admin = _confluent(broker)

    def failure(resource: ConfigResource) -> KafkaError:
        with pytest.raises(KafkaException) as caught:
            admin.incremental_alter_configs([resource])[resource].result(timeout=TIMEOUT)
        return caught.value.args[0]

    unknown = failure(ConfigResource(ConfigResource.Type.TOPIC, "orders", incremental_configs=[
        ConfigEntry("no.such.key", "1", incremental_operation=AlterConfigOpType.SET)]))
    assert unknown.code() == KafkaError.INVALID_CONFIG and "Unknown topic config name: no.such.key" in unknown.str()
    bad = failure(ConfigResource(ConfigResource.Type.TOPIC, "orders", incremental_configs=[
        ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)]))
    assert bad.code() == KafkaError.INVALID_CONFIG
    assert "Invalid value soon for configuration retention.ms: Not a number of type LONG" in bad.str()
    missing = failure(ConfigResource(ConfigResource.Type.TOPIC, "absent", incremental_configs=[
        ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)]))
    assert missing.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    static = failure(ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
        ConfigEntry("num.partitions", "3", incremental_operation=AlterConfigOpType.SET)]))
    assert static.code() == KafkaError.INVALID_REQUEST
    assert "Cannot update these configs dynamically: Set(num.partitions)" in static.str()


def test_confluent_dynamic_broker_config_reaches_the_topics(broker) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

    _topic(broker, "orders")
    admin = _confluent(broker)
    this_broker = ConfigResource(ConfigResource.Type.BROKER, "1")
    entries = admin.describe_configs([this_broker])[this_broker].result(timeout=TIMEOUT)
    assert entries["log.retention.hours"].value == "24"
    assert entries["log.retention.hours"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert entries["num.partitions"].is_read_only and not entries["message.max.bytes"].is_read_only

    change = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
        ConfigEntry("log.segment.bytes", "2000000", incremental_operation=AlterConfigOpType.SET)])
    assert admin.incremental_alter_configs([change])[change].result(timeout=TIMEOUT) is None
    entries = admin.describe_configs([this_broker])[this_broker].result(timeout=TIMEOUT)
    assert entries["log.segment.bytes"].value == "2000000"
    assert entries["log.segment.bytes"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert _log_config(broker, "orders").segment_bytes == 2000000
    topic = ConfigResource(ConfigResource.Type.TOPIC, "orders")
    described = admin.describe_configs([topic])[topic].result(timeout=TIMEOUT)["segment.bytes"]
    assert described.value == "2000000" and described.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_confluent_legacy_alter_replaces_every_override(broker) -> None:
    from confluent_kafka.admin import ConfigResource

    _topic(broker, "orders", {"retention.ms": "60000", "segment.ms": "3600000"})
    admin = _confluent(broker)
    change = ConfigResource(ConfigResource.Type.TOPIC, "orders", set_config={"max.message.bytes": "5000"})
    assert admin.alter_configs([change])[change].result(timeout=TIMEOUT) is None
    resource = ConfigResource(ConfigResource.Type.TOPIC, "orders")
    entries = admin.describe_configs([resource])[resource].result(timeout=TIMEOUT)
    overridden = {name for name, entry in entries.items() if not entry.is_default}
    assert overridden == {"max.message.bytes"}  # retention.ms: log.retention.hours is not its primary synonym
    assert entries["retention.ms"].value == str(24 * 3600 * 1000)
    assert _log_config(broker, "orders").segment_ms == 7 * 24 * 3600 * 1000


def test_changes_survive_a_restart(tmp_path: Path) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "log.dirs": str(tmp_path)})
    with EmbeddedBroker(config) as first:
        _topic(first, "orders")
        admin = _confluent(first)
        changes = [
            ConfigResource(ConfigResource.Type.TOPIC, "orders", incremental_configs=[
                ConfigEntry("retention.ms", "5000", incremental_operation=AlterConfigOpType.SET)]),
            ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
                ConfigEntry("log.segment.bytes", "3000000", incremental_operation=AlterConfigOpType.SET)]),
        ]
        for resource, future in admin.incremental_alter_configs(changes).items():
            assert future.result(timeout=TIMEOUT) is None, resource
    with EmbeddedBroker(config) as second:
        admin = _confluent(second)
        topic, this_broker = ConfigResource(ConfigResource.Type.TOPIC, "orders"), ConfigResource(ConfigResource.Type.BROKER, "1")
        described = admin.describe_configs([topic, this_broker])
        assert described[topic].result(timeout=TIMEOUT)["retention.ms"].value == "5000"
        assert described[this_broker].result(timeout=TIMEOUT)["log.segment.bytes"].value == "3000000"
        assert _log_config(second, "orders").segment_bytes == 3000000
        assert _log_config(second, "orders").retention_ms == 5000


def test_kafka_python_describe_and_alter(broker) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    _topic(broker, "orders")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000)
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "orders", configs={"retention.ms": "1234"})])
        # raise_on_unknown (the default) first checks that the key is dynamic for brokers: read_only must be right
        admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, "1", configs={"message.max.bytes": "2000000"})])
        topic = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "orders")], config_filter="all")
        assert topic["topic"]["orders"]["retention.ms"]["value"] == "1234"
        assert topic["topic"]["orders"]["max.message.bytes"]["value"] == "2000000"
        every = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], include_synonyms=True,
                                       config_filter="all")["broker"]["1"]
        assert every["log.retention.hours"]["value"] == "24"
        assert every["log.retention.hours"]["config_source"] == "STATIC_BROKER_CONFIG"
        assert every["message.max.bytes"]["config_source"] == "DYNAMIC_BROKER_CONFIG"
        assert [s["source"] for s in every["message.max.bytes"]["synonyms"]] == ["DYNAMIC_BROKER_CONFIG", "DEFAULT_CONFIG"]
        assert every["num.io.threads"]["config_source"] == "DEFAULT_CONFIG"
    finally:
        admin.close()
    assert _log_config(broker, "orders").retention_ms == 1234


def test_aiokafka_describe_and_alter(broker) -> None:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    _topic(broker, "orders")

    async def scenario() -> tuple[dict[str, str], dict[str, str]]:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000)
        await admin.start()
        try:
            await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "orders", configs={"segment.bytes": "50000"})])
            topic, = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "orders")])
            brokers, = await admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")])
            return ({e[0]: e[1] for e in topic.resources[0][4]}, {e[0]: e[1] for e in brokers.resources[0][4]})
        finally:
            await admin.close()

    topic, brokers = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert topic["segment.bytes"] == "50000"
    assert brokers["message.max.bytes"] == "1048588"
    assert _log_config(broker, "orders").segment_bytes == 50000
