"""Broker.reset: a running broker back to a fresh start's state without closing its listeners (the pytest plugin's
reset between tests). Everything a test can leave behind is checked through real clients after the reset."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from kafka_shim.shim.config.broker_config import BrokerConfig, ConfigError
from kafka_shim.shim.testing.handle import KafkaShim
from kafka_shim.shim.testing.options import ShimOptions


def _commit(config: dict, topic: str, offset: int) -> None:
    consumer = Consumer(config | {"group.id": "kept-offsets", "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    consumer.close()


def _committed(config: dict, topic: str) -> int:
    consumer = Consumer(config | {"group.id": "kept-offsets"})
    try:
        return consumer.committed([TopicPartition(topic, 0)], timeout=30)[0].offset
    finally:
        consumer.close()


def test_reset_forgets_topics_records_offsets_acls_and_scram_users() -> None:
    options = ShimOptions.from_marker({"listener": "SASL_PLAINTEXT", "authorizer": True,
                                       "acls": [{"resource_type": "topic", "resource_name": "preloaded",
                                                 "principal": "User:bob", "operation": "Read"}]})
    with KafkaShim(options) as shim:
        admin_config = shim.confluent_config("admin")
        port = shim.bootstrap_servers
        shim.create_topic("orders")
        producer = Producer(admin_config)
        producer.produce("orders", b"kept?")
        assert producer.flush(30) == 0
        _commit(admin_config, "orders", 1)
        shim.create_acls({"resource_type": "topic", "resource_name": "orders", "principal": "User:alice", "operation": "Write"})
        admin = AdminClient(admin_config)
        admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"carol-secret")])["carol"].result(30)
        assert "carol" in admin.describe_user_scram_credentials().result(30)

        shim.reset()

        assert shim.bootstrap_servers == port  # the same listener: no restart
        assert "orders" not in shim.topics()
        assert [(a.pattern.name, a.entry.principal) for a in shim.acls()] == [("preloaded", "User:bob")]
        admin = AdminClient(admin_config)
        users = admin.describe_user_scram_credentials().result(30)
        assert "carol" not in users and {"admin", "alice", "bob"} <= set(users)  # the JAAS users come back
        shim.create_topic("orders")  # the same name again: no TOPIC_ALREADY_EXISTS
        assert _committed(admin_config, "orders") < 0  # no committed offset survived
        consumer = Consumer(admin_config | {"group.id": "fresh"})
        try:
            assert consumer.get_watermark_offsets(TopicPartition("orders", 0), timeout=30) == (0, 0)  # no old records
        finally:
            consumer.close()


def _logs_in(bootstrap: str, user: str, password: str, mechanism: str) -> bool:
    """True once a request is answered, False once librdkafka reports the login refused (its error callback)."""
    refused = threading.Event()

    def on_error(error: KafkaError) -> None:
        if error.code() == KafkaError._AUTHENTICATION:
            refused.set()

    admin = AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
                         "sasl.username": user, "sasl.password": password, "error_cb": on_error})
    deadline = time.monotonic() + 60
    while not refused.is_set() and time.monotonic() < deadline:
        try:
            admin.list_topics(timeout=1)
            return True
        except KafkaException:
            admin.poll(0.1)  # serves the error callback
    assert refused.is_set(), f"{user} was neither answered nor refused within 60 s"
    return False


def test_reset_brings_back_jaas_users_changed_or_deleted_at_run_time() -> None:
    with KafkaShim(ShimOptions.from_marker({"listener": "SASL_PLAINTEXT", "authorizer": True})) as shim:
        bootstrap = shim.bootstrap_servers
        admin = AdminClient(shim.confluent_config("admin"))
        changed = admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"changed"),
            UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_512)])
        for future in changed.values():
            future.result(30)
        assert _logs_in(bootstrap, "alice", "changed", "SCRAM-SHA-256")
        assert not _logs_in(bootstrap, "bob", "bob-secret", "SCRAM-SHA-512")

        shim.reset()

        assert _logs_in(bootstrap, "alice", "alice-secret", "SCRAM-SHA-256")
        assert not _logs_in(bootstrap, "alice", "changed", "SCRAM-SHA-256")
        assert _logs_in(bootstrap, "bob", "bob-secret", "SCRAM-SHA-512")
        admin = AdminClient(shim.confluent_config("admin"))
        admin.alter_user_scram_credentials([UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_512)])["bob"].result(30)
        shim.reset()  # and again: a change after a reset does not change what the next one brings back
        assert _logs_in(bootstrap, "bob", "bob-secret", "SCRAM-SHA-512")


def test_reset_refuses_a_broker_with_a_data_directory(tmp_path) -> None:
    from kafka_shim.shim.testing.embedded import EmbeddedBroker

    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)})
    with EmbeddedBroker(config) as broker:
        with pytest.raises(ConfigError, match="in-memory brokers"):
            broker.reset()
        assert (tmp_path).exists()
