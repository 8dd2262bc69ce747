"""SASL/PLAIN server: the cases of Kafka's PlainSaslServerTest, and the texts a real Kafka 3.9 sent for them."""

from __future__ import annotations

import pytest

from kafka_shim.shim.security.sasl import (
    IllegalSaslStateError,
    SaslAuthenticationError,
    SaslSettings,
    ScramCredentialStore,
    create_server,
)
from kafka_shim.shim.security.sasl.plain import PlainServer

USERS = {"userA": "passwordA", "userB": "passwordB", "ünï": "pässwörd"}


def server() -> PlainServer:
    return PlainServer(USERS.get)


def refusal(token: bytes) -> str:
    with pytest.raises(SaslAuthenticationError) as raised:
        server().evaluate(token)
    assert not raised.value.close_without_response
    return str(raised.value)


def test_no_authorization_id() -> None:
    s = server()
    assert s.evaluate(b"\0userA\0passwordA") == b""
    assert s.complete and s.authorization_id == "userA"


def test_authorization_id_equal_to_the_user() -> None:
    s = server()
    s.evaluate(b"userA\0userA\0passwordA")
    assert s.authorization_id == "userA"


def test_utf8_names_and_passwords() -> None:
    s = server()
    s.evaluate("\0ünï\0pässwörd".encode())
    assert s.authorization_id == "ünï"


@pytest.mark.parametrize(("token", "kafka_says"), [
    (b"userB\0userA\0passwordA", "Authentication failed: Client requested an authorization id that is different from username"),
    (b"\0userA\0wrong", "Authentication failed: Invalid username or password"),
    (b"\0mallory\0passwordA", "Authentication failed: Invalid username or password"),
    (b"\0\0passwordA", "Authentication failed: username not specified"),
    (b"\0\0", "Authentication failed: username not specified"),
    (b"\0userA\0", "Authentication failed: password not specified"),
    (b"", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"userA", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"\0userA", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (b"\0userA\0passwordA\0", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    (b"\0userA\0passwordA\0x\0y\0z", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    # Not UTF-8: decoded with replacement characters as Java does, so the authorization id is not the user.
    (b"\xff\xfe\0userA\0passwordA", "Authentication failed: Client requested an authorization id that is different from username"),
    (b"\0userA\0password\xff", "Authentication failed: Invalid username or password"),
])
def test_refusals_carry_kafkas_text(token: bytes, kafka_says: str) -> None:
    assert refusal(token) == kafka_says


def test_an_unknown_user_and_a_wrong_password_read_the_same() -> None:
    assert refusal(b"\0mallory\0x") == refusal(b"\0userA\0x")


def test_the_authorization_id_is_checked_only_after_the_password() -> None:
    assert refusal(b"userB\0userA\0wrong") == "Authentication failed: Invalid username or password"


def test_huge_garbage_is_an_authentication_error() -> None:
    assert refusal(b"\x00" * 600_000).startswith("Invalid SASL/PLAIN response")
    assert refusal(bytes(range(256)) * 2000).startswith("Invalid SASL/PLAIN response")


def test_no_second_token_after_success_or_failure() -> None:
    s = server()
    s.evaluate(b"\0userA\0passwordA")
    with pytest.raises(IllegalSaslStateError) as raised:
        s.evaluate(b"\0userA\0passwordA")
    assert raised.value.close_without_response
    s = server()
    with pytest.raises(SaslAuthenticationError):
        s.evaluate(b"\0userA\0bad")
    with pytest.raises(IllegalSaslStateError):
        s.evaluate(b"\0userA\0passwordA")


def test_no_authorization_id_before_completion() -> None:
    with pytest.raises(RuntimeError):
        _ = server().authorization_id


def test_create_server_uses_the_listeners_plain_users() -> None:
    props = {"sasl.enabled.mechanisms": "PLAIN",
             "listener.name.sasl_plaintext.plain.sasl.jaas.config":
                 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'}
    settings = SaslSettings.from_properties(props, ["SASL_PLAINTEXT"])
    s = create_server("PLAIN", "SASL_PLAINTEXT", settings, ScramCredentialStore())
    assert s.mechanism == "PLAIN"
    s.evaluate(b"\0alice\0alice-secret")
    assert s.authorization_id == "alice"
    with pytest.raises(ValueError, match="not enabled"):
        create_server("SCRAM-SHA-256", "SASL_PLAINTEXT", settings, ScramCredentialStore())
