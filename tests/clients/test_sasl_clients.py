"""Real clients log in over SASL_PLAINTEXT with every mechanism and are then seen as who they are.

Who a client is shows in what it may see: alice may describe only the topic an ACL gives her, admin (a super
user) sees every topic, and a wrong password fails with the client's own authentication error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from structlog.testing import capture_logs

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
from tests.support.sasl_setup import MECHANISMS, listener_address, sasl_properties

pytestmark = pytest.mark.clients

TOPICS = {"alice-topic", "bob-topic"}


@pytest.fixture(scope="module")
def sasl_broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(BrokerConfig.from_properties(sasl_properties())) as broker:
        for name in sorted(TOPICS):
            broker.call(broker.broker.state.add_topic, name, 1)
        grants = [
            AclBinding(ResourcePattern(ResourceType.TOPIC, f"{user}-topic", PatternType.LITERAL),
                       AccessControlEntry(f"User:{user}", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW))
            for user in ("alice", "bob")
        ]
        results = broker.call(broker.broker.authorizer.create_acls, grants)
        assert all(r.error is None for r in results)
        yield broker


def _bootstrap(broker: EmbeddedBroker, listener: str = "SASL_PLAINTEXT") -> str:
    host, port = listener_address(broker.broker, listener)
    return f"{host}:{port}"


def _expected(user: str) -> set[str]:
    return TOPICS if user == "admin" else {f"{user}-topic"}


# -- confluent-kafka (librdkafka) -------------------------------------------------------------
def _confluent_topics(bootstrap: str, mechanism: str, user: str, password: str) -> set[str]:
    from confluent_kafka.admin import AdminClient

    errors = []
    admin = AdminClient({
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
        "error_cb": errors.append,
    })
    try:
        return set(admin.list_topics(timeout=10).topics)
    except Exception:
        if errors:
            raise errors[0] if isinstance(errors[0], BaseException) else RuntimeError(errors[0]) from None
        raise


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("user", ["alice", "admin"])
def test_confluent_kafka_logs_in(sasl_broker: EmbeddedBroker, mechanism: str, user: str) -> None:
    assert _confluent_topics(_bootstrap(sasl_broker), mechanism, user, f"{user}-secret") == _expected(user)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_wrong_password_is_an_authentication_error(sasl_broker: EmbeddedBroker, mechanism: str) -> None:
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient

    errors: list[KafkaError] = []
    admin = AdminClient({
        "bootstrap.servers": _bootstrap(sasl_broker),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": "alice",
        "sasl.password": "not-her-password",
        "error_cb": errors.append,
    })
    with pytest.raises(Exception):  # noqa: B017 — librdkafka reports the cause through error_cb
        admin.list_topics(timeout=3)
    admin.poll(0.5)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    assert any("Authentication failed" in e.str() for e in errors), errors


# -- kafka-python ------------------------------------------------------------------------------
def _kafka_python_admin(bootstrap: str, mechanism: str, user: str, password: str):
    from kafka import KafkaAdminClient

    return KafkaAdminClient(
        bootstrap_servers=bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password=password,
        request_timeout_ms=10000,
    )


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_logs_in(sasl_broker: EmbeddedBroker, mechanism: str) -> None:
    admin = _kafka_python_admin(_bootstrap(sasl_broker), mechanism, "bob", "bob-secret")
    try:
        assert set(admin.list_topics()) == _expected("bob")
    finally:
        admin.close()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_wrong_password_is_an_authentication_error(
    sasl_broker: EmbeddedBroker, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    from kafka.errors import KafkaError

    # kafka-python 3.0.12 keeps retrying the bootstrap and gives up when bootstrap_timeout_ms (30 s by default) is out.
    with caplog.at_level("ERROR", logger="kafka"), capture_logs() as broker_events, pytest.raises(KafkaError):
        from kafka import KafkaAdminClient

        KafkaAdminClient(bootstrap_servers=_bootstrap(sasl_broker), security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism,
                         sasl_plain_username="bob", sasl_plain_password="wrong", request_timeout_ms=3000,
                         bootstrap_timeout_ms=5000).close()
    # Every attempt was refused as a failed authentication, not closed for another reason.
    refusals = [event["reason"] for event in broker_events if event["event"] == "authentication_failed"]
    assert refusals and all("Authentication failed" in reason for reason in refusals), refusals
    # The broker answers with SaslAuthenticate error 58 and then closes, as Kafka does. kafka-python logs that error
    # when it reads the answer before it sees the close; when both reach it in one read (a busy machine), it logs
    # only the disconnect. Either way it never reports another cause.
    messages = [r.getMessage() for r in caplog.records]
    assert any("Authentication failed" in m or "socket disconnected" in m for m in messages), messages
    assert not any("Authentication failed" not in m and ("SASL" in m or "uthenticat" in m) for m in messages), messages


# -- aiokafka ------------------------------------------------------------------------------------
async def _aiokafka_topics(bootstrap: str, mechanism: str, user: str, password: str) -> set[str]:
    from aiokafka import AIOKafkaClient

    client = AIOKafkaClient(
        bootstrap_servers=bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password=password,
        request_timeout_ms=10000,
    )
    await client.bootstrap()
    try:
        metadata = await client.fetch_all_metadata()
        return set(metadata.topics())
    finally:
        await client.close()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka_logs_in(sasl_broker: EmbeddedBroker, mechanism: str) -> None:
    assert asyncio.run(_aiokafka_topics(_bootstrap(sasl_broker), mechanism, "alice", "alice-secret")) == _expected("alice")


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka_wrong_password_is_an_authentication_error(
    sasl_broker: EmbeddedBroker, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    from aiokafka.errors import KafkaConnectionError

    # aiokafka fails the bootstrap and logs the broker's answer: [Error 58] SaslAuthenticationFailed.
    with caplog.at_level("ERROR", logger="aiokafka"), pytest.raises(KafkaConnectionError):
        asyncio.run(_aiokafka_topics(_bootstrap(sasl_broker), mechanism, "alice", "wrong"))
    assert any("[Error 58] SaslAuthenticationFailed" in r.getMessage() for r in caplog.records)


# -- two listeners, two principals ------------------------------------------------------------
def test_two_listeners_give_two_principals(sasl_broker: EmbeddedBroker) -> None:
    from confluent_kafka.admin import AdminClient

    anonymous = AdminClient({"bootstrap.servers": _bootstrap(sasl_broker, "PLAINTEXT")})
    assert set(anonymous.list_topics(timeout=10).topics) == set()  # User:ANONYMOUS holds no ACL
    assert _confluent_topics(_bootstrap(sasl_broker), "PLAIN", "alice", "alice-secret") == {"alice-topic"}
