"""What a random differential probe of delegation tokens and SASL conversations found, each against a real Kafka 3.9
with tokens enabled (the same ``delegation.token.secret.key`` on both brokers):

- an ExpireDelegationToken period near Long.MAX_VALUE: Kafka adds it to the clock in Java's wrapping long arithmetic,
  so the new expiry is negative, a renew then answers DELEGATION_TOKEN_EXPIRED, and a login with the token gets a
  session lifetime that wrapped to a huge positive value (the session then ends at its next request);
- a v3 CreateDelegationToken with an owner name but a null owner type: Kafka fails building the owner's principal
  and answers the request's generic error (UNKNOWN_SERVER_ERROR, ANONYMOUS), even on PLAINTEXT;
- an owner type holding a ':': the create answer names the owner as asked, a describe as the stored "Type:name"
  string parses back (split at its first ':').
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kafka_shim.protocol.messages import (
    CreateDelegationTokenRequest,
    ExpireDelegationTokenRequest,
    MetadataRequest,
    RenewDelegationTokenRequest,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.differential.test_delegation_tokens import (  # noqa: F401 (kafka_with_tokens is a fixture)
    CREATE,
    DESCRIBE,
    EXPIRE,
    METADATA,
    RENEW,
    SECRET,
    Conversation,
    _create,
    _describe,
    _token_login_when_published,
    kafka_with_tokens,
)
from tests.support.sasl_setup import listener_address, sasl_properties

LONG_MAX = 2**63 - 1
CLOCKS_APART_MS = 120_000  # the two brokers' clocks are read at different moments of the same test


@pytest.fixture(scope="module")
def token_brokers(kafka_with_tokens) -> Iterator[dict[str, dict[str, tuple[str, int]]]]:  # noqa: F811 (the fixture)
    with EmbeddedBroker(BrokerConfig.from_properties({**sasl_properties(), "delegation.token.secret.key": SECRET})) as shim:
        yield {
            "kafka": {"SASL_PLAINTEXT": kafka_with_tokens.sasl, "PLAINTEXT": kafka_with_tokens.plaintext},
            "shim": {"SASL_PLAINTEXT": listener_address(shim.broker, "SASL_PLAINTEXT"),
                     "PLAINTEXT": listener_address(shim.broker, "PLAINTEXT")},
        }


@pytest.fixture
def talk(token_brokers) -> Iterator[Conversation]:
    conversation = Conversation(token_brokers)
    yield conversation
    conversation.close()


def _close(kafka: int, shim: int) -> bool:
    """Two values of the same clock arithmetic, read a moment apart on the two brokers."""
    return abs(kafka - shim) < CLOCKS_APART_MS


def test_an_expire_period_near_long_max_wraps_as_java_longs_do(talk: Conversation) -> None:
    kafka_token, shim_token = (a.body for a in talk.both("alice's token", "alice", CREATE, 3, _create()))
    # Sent outside talk.both, whose comparison masks only positive times: the new expiry is compared here.
    kafka, shim = (side.wire("alice").request(EXPIRE, 2, ExpireDelegationTokenRequest(hmac=t.hmac, expiry_time_period_ms=LONG_MAX))
                   for side, t in ((talk.kafka, kafka_token), (talk.shim, shim_token)))
    expiries = kafka.body.expiry_timestamp_ms, shim.body.expiry_timestamp_ms
    assert (kafka.body.error_code, shim.body.error_code) == (0, 0)
    assert _close(*expiries), f"the new expiry: Kafka {expiries[0]}, kafka-shim {expiries[1]}"

    def kafka_shows_it() -> bool:
        described = talk.kafka.wire("admin").request(DESCRIBE, 3, _describe(None)).body.tokens
        return any(t.token_id == kafka_token.token_id and t.expiry_timestamp == expiries[0] for t in described)
    talk.kafka_published(lambda ids: kafka_shows_it())

    described = [next(t for t in side.wire("alice").request(DESCRIBE, 3, _describe(None)).body.tokens if t.token_id == token.token_id)
                 for side, token in ((talk.kafka, kafka_token), (talk.shim, shim_token))]
    assert _close(*(t.expiry_timestamp for t in described)), described
    talk.both("renew the token", "alice", RENEW, 2, bodies=tuple(
        RenewDelegationTokenRequest(hmac=t.hmac, renew_period_ms=1000) for t in (kafka_token, shim_token)))

    logins, lifetimes = [], []
    try:
        for side, token in ((talk.kafka, kafka_token), (talk.shim, shim_token)):
            wire, answer = _token_login_when_published(side.addresses["SASL_PLAINTEXT"], token.token_id, token.hmac)
            logins.append(wire)
            assert answer.body.error_code == 0, f"{side.addresses}: {answer}"
            lifetimes.append(answer.body.session_lifetime_ms)
        assert _close(*lifetimes), f"session_lifetime_ms: Kafka {lifetimes[0]}, kafka-shim {lifetimes[1]}"
        closed = [w.request(METADATA, 10, MetadataRequest(topics=None)).closed for w in logins]
        assert closed[0] == closed[1], f"the request after the login: Kafka closed={closed[0]}, kafka-shim closed={closed[1]}"
    finally:
        for wire in logins:
            wire.close()
    assert not talk.problems, "Kafka and kafka-shim disagree:\n  " + "\n  ".join(talk.problems)


def _owned_by(principal_type: str | None, principal_name: str) -> CreateDelegationTokenRequest:
    return CreateDelegationTokenRequest(owner_principal_type=principal_type, owner_principal_name=principal_name,
                                        renewers=[], max_lifetime_ms=-1)


def test_an_owner_name_with_a_null_owner_type(talk: Conversation) -> None:
    for who in ("admin", "alice", None):  # a super user, a user without CREATE_TOKENS, PLAINTEXT
        talk.both(f"{who} asks for a token owned by a null-typed bob", who, CREATE, 3, _owned_by(None, "bob"))
    talk.both("no token was made", "admin", DESCRIBE, 3, _describe("User:bob"))
    assert not talk.problems, "Kafka and kafka-shim disagree:\n  " + "\n  ".join(talk.problems)


def test_an_owner_type_with_a_colon(talk: Conversation) -> None:
    talk.both("alice, without CREATE_TOKENS, for A:B / c", "alice", CREATE, 3, _owned_by("A:B", "c"))
    kafka, shim = talk.both("the super user for A:B / c", "admin", CREATE, 3, _owned_by("A:B", "c"))
    assert kafka.body.error_code == 0, kafka
    owners = []
    for side, token_id in ((talk.kafka, kafka.body.token_id), (talk.shim, shim.body.token_id)):
        described = side.wire("admin").request(DESCRIBE, 3, _describe(None)).body.tokens
        owners.append([_owner(t) for t in described if t.token_id == token_id])
    assert owners[0] == owners[1], f"the described owner: Kafka {owners[0]}, kafka-shim {owners[1]}"
    assert not talk.problems, "Kafka and kafka-shim disagree:\n  " + "\n  ".join(talk.problems)


def _owner(token: Any) -> tuple[str, str, str, str]:
    return token.principal_type, token.principal_name, token.token_requester_principal_type, token.token_requester_principal_name
