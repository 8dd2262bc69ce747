"""Delegation tokens against a real Kafka 3.9 (KRaft, StandardAuthorizer, the same SCRAM/PLAIN users, the same
``delegation.token.secret.key``): Create/Renew/Expire/DescribeDelegationToken (38-41), allowed and refused, and a
SCRAM login with ``tokenauth=true``.

The same conversation runs on both brokers with each broker's own tokens. Normalised before comparing: token ids and
HMACs (compared as present, and the HMAC checked against the secret on each side), timestamps (a time, -1 or 0; a
created token's lifetime and expiry period compared exactly), and the order of described tokens (Kafka lists them in
a hash map's order of their random ids).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_shim.protocol.messages import (
    CreateAclsRequest,
    CreateDelegationTokenRequest,
    DescribeAclsRequest,
    DescribeDelegationTokenRequest,
    ExpireDelegationTokenRequest,
    MetadataRequest,
    RenewDelegationTokenRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.compare import field_diff
from tests.support.peers import start_real_kafka, stop_real_kafka
from tests.support.sasl_setup import USERS, listener_address, sasl_properties
from tests.support.scram_probe import ScramProbe
from tests.support.wire import Answer, Wire

SECRET = "differential-token-secret"
CREATE, RENEW, EXPIRE, DESCRIBE, CREATE_ACLS, DESCRIBE_ACLS, METADATA = 38, 39, 40, 41, 30, 29, 3
HOUR, DAY = 3_600_000, 86_400_000
_Renewer = CreateDelegationTokenRequest.CreatableRenewers
_Owner = DescribeDelegationTokenRequest.DescribeDelegationTokenOwner


@pytest.fixture(scope="module")
def kafka_with_tokens(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    kafka = start_real_kafka(tmp_path_factory.mktemp("kafka-tokens"), f"delegation.token.secret.key={SECRET}")
    yield kafka
    stop_real_kafka(kafka)


@pytest.fixture(scope="module")
def brokers(kafka_with_tokens, oracle) -> Iterator[dict[str, dict[str, tuple[str, int]]]]:
    """Each side: SASL and PLAINTEXT listeners with tokens enabled, and a SASL listener with tokens disabled."""
    with EmbeddedBroker(BrokerConfig.from_properties({**sasl_properties(), "delegation.token.secret.key": SECRET})) as shim, \
            EmbeddedBroker(BrokerConfig.from_properties(sasl_properties())) as shim_disabled:
        yield {
            "kafka": {"SASL_PLAINTEXT": kafka_with_tokens.sasl, "PLAINTEXT": kafka_with_tokens.plaintext,
                      "disabled": oracle.sasl},
            "shim": {"SASL_PLAINTEXT": listener_address(shim.broker, "SASL_PLAINTEXT"),
                     "PLAINTEXT": listener_address(shim.broker, "PLAINTEXT"),
                     "disabled": listener_address(shim_disabled.broker, "SASL_PLAINTEXT")},
        }


def _times(tree: Any, key: str = "") -> Any:
    if isinstance(tree, dict):
        out = {k: _times(v, k) for k, v in tree.items() if k != "throttle_time_ms"}
        if "issue_timestamp_ms" in tree or "issue_timestamp" in tree:
            issue = tree.get("issue_timestamp_ms", tree.get("issue_timestamp"))
            expiry = tree.get("expiry_timestamp_ms", tree.get("expiry_timestamp"))
            most = tree.get("max_timestamp_ms", tree.get("max_timestamp"))
            if issue > 0:
                out["lifetime_ms"], out["expiry_period_ms"] = most - issue, expiry - issue
        return out
    if isinstance(tree, list):
        return [_times(v) for v in tree]
    if key in ("token_id",) and tree:
        return "<token id>"
    if key == "hmac" and tree:
        return f"<{len(tree)}-byte hmac>"
    if "timestamp" in key and isinstance(tree, int) and tree > 1_000_000_000_000:
        return "<time>"
    return tree


def _plain(answer: Answer) -> Any:
    body = _times(answer.body.to_dict())
    if isinstance(body.get("tokens"), list):
        body["tokens"].sort(key=repr)
    return body


class Side:
    """One broker's connections, one per user (PLAIN over SASL_PLAINTEXT), opened on first use."""

    def __init__(self, addresses: dict[str, tuple[str, int]]) -> None:
        self.addresses = addresses
        self.wires: dict[str, Wire] = {}

    def wire(self, user: str | None, listener: str = "SASL_PLAINTEXT") -> Wire:
        key = f"{user}@{listener}"
        if key not in self.wires:
            wire = Wire(self.addresses["PLAINTEXT" if user is None else listener])
            if user is not None:
                wire.sasl_plain(user, USERS[user])
            self.wires[key] = wire
        return self.wires[key]

    def close(self) -> None:
        for wire in self.wires.values():
            wire.close()


class Conversation:
    def __init__(self, brokers) -> None:
        self.kafka, self.shim = Side(brokers["kafka"]), Side(brokers["shim"])
        self.problems: list[str] = []

    def both(self, what: str, user: str | None, api_key: int, version: int, body: Any | None = None, *,
             listener: str = "SASL_PLAINTEXT", bodies: tuple[Any, Any] | None = None) -> tuple[Answer, Answer]:
        kafka_body, shim_body = bodies if bodies is not None else (body, body)
        kafka = self.kafka.wire(user, listener).request(api_key, version, kafka_body)
        shim = self.shim.wire(user, listener).request(api_key, version, shim_body)
        assert not kafka.closed and not shim.closed, f"{what}: Kafka closed={kafka.closed}, kafka-shim closed={shim.closed}"
        diff = field_diff(_plain(kafka), _plain(shim))
        if diff:
            self.problems.append(f"{what}:\n    " + "\n    ".join(diff))
        if api_key == CREATE and kafka.body.error_code == 0:
            # The ids differ, their form does not: Uuid.randomUuid().toString() (22 URL-safe base64 characters).
            assert [_id_form(a.body.token_id) for a in (kafka, shim)] == [True, True], (kafka.body.token_id, shim.body.token_id)
            self.kafka_published(lambda ids: kafka.body.token_id in ids)
        return kafka, shim

    def kafka_published(self, done) -> None:
        """Kafka's broker describes (and authenticates) a token once it has replayed the controller's record, a
        moment after the controller answered: wait until the broker's token cache shows the change."""
        deadline = time.monotonic() + 60
        while True:
            ids = {t.token_id for t in self.kafka.wire("admin").request(DESCRIBE, 3, _describe(None)).body.tokens}
            if done(ids):
                return
            assert time.monotonic() < deadline, "Kafka's broker never showed the token change"
            time.sleep(0.05)

    def close(self) -> None:
        self.kafka.close()
        self.shim.close()


def _create(owner: str | None = None, renewers: tuple[str, ...] = (), max_lifetime_ms: int = -1) -> CreateDelegationTokenRequest:
    named = {"owner_principal_type": owner.split(":", 1)[0], "owner_principal_name": owner.split(":", 1)[1]} if owner else {}
    return CreateDelegationTokenRequest(**named, max_lifetime_ms=max_lifetime_ms, renewers=[_Renewer(principal_type=r.split(":")[0], principal_name=r.split(":")[1])
                                                  for r in renewers])


def _describe(*owners: str | None) -> DescribeDelegationTokenRequest:
    if owners == (None,):
        return DescribeDelegationTokenRequest(owners=None)
    return DescribeDelegationTokenRequest(owners=[_Owner(principal_type=o.split(":")[0], principal_name=o.split(":")[1])
                                                  for o in owners])


def _grant(side: Side, principal: str, operation: int, resource_type: int, name: str) -> None:
    """An ALLOW ACL, waited for until the broker's authorizer has it (Kafka's broker replays it after the answer)."""
    answer = side.wire("admin").request(CREATE_ACLS, 3, CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
        resource_type=resource_type, resource_name=name, resource_pattern_type=3, principal=principal, host="*",
        operation=operation, permission_type=3)]))
    assert answer.body.results[0].error_code == 0, answer
    described = DescribeAclsRequest(resource_type_filter=resource_type, resource_name_filter=name, pattern_type_filter=3,
                                    principal_filter=principal, host_filter="*", operation=operation, permission_type=3)
    deadline = time.monotonic() + 60
    while not side.wire("admin").request(DESCRIBE_ACLS, 3, described).body.resources:
        assert time.monotonic() < deadline, f"the ACL never showed at {side.addresses}"
        time.sleep(0.05)


def _token_login(address: tuple[str, int], token_id: str, token_hmac: bytes) -> tuple[Wire, Answer]:
    wire = Wire(address)
    wire.request(17, 1, SaslHandshakeRequest(mechanism="SCRAM-SHA-256"))
    client = ScramProbe("SCRAM-SHA-256", token_id, base64.b64encode(token_hmac).decode(), first_extra=",tokenauth=true")
    first = wire.request(36, 2, SaslAuthenticateRequest(auth_bytes=client.first_message()))
    if first.body.error_code != 0:
        return wire, first
    return wire, wire.request(36, 2, SaslAuthenticateRequest(auth_bytes=client.final_message(first.body.auth_bytes)))


def _token_login_when_published(address: tuple[str, int], token_id: str, token_hmac: bytes) -> tuple[Wire, Answer]:
    """Kafka's broker learns of a token when it replays the controller's record, a moment after CreateDelegationToken
    answers: retry a refused login for a while (kafka-shim's first try succeeds)."""
    deadline = time.monotonic() + 60
    while True:
        wire, answer = _token_login(address, token_id, token_hmac)
        if answer.body.error_code == 0 or time.monotonic() > deadline:
            return wire, answer
        wire.close()
        time.sleep(0.1)


def test_delegation_tokens_answer_as_kafka(brokers) -> None:
    talk = Conversation(brokers)
    try:
        for api_key, body in ((CREATE, _create()), (RENEW, RenewDelegationTokenRequest(hmac=b"x", renew_period_ms=-1)),
                              (EXPIRE, ExpireDelegationTokenRequest(hmac=b"x", expiry_time_period_ms=-1)),
                              (DESCRIBE, _describe(None))):
            talk.both(f"api {api_key} on PLAINTEXT", None, api_key, 2, body)
            talk.both(f"api {api_key} with tokens disabled", "alice", api_key, 2, body, listener="disabled")
        for version in (0, 1, 2, 3):
            talk.both(f"alice creates a token v{version}", "alice", CREATE, version,
                      _create(renewers=("User:bob",), max_lifetime_ms=HOUR if version else -1))
        talk.both("alice creates for bob without CREATE_TOKENS", "alice", CREATE, 3, _create("User:bob"))
        talk.both("alice names herself as the owner", "alice", CREATE, 3, _create("User:alice", max_lifetime_ms=2 * DAY))
        talk.both("a Group renewer", "alice", CREATE, 3, _create(renewers=("Group:g",)))
        for side in (talk.kafka, talk.shim):
            _grant(side, "User:alice", 13, 7, "User:bob")  # CREATE_TOKENS on USER bob
        kafka, shim = talk.both("alice creates for bob with CREATE_TOKENS", "alice", CREATE, 3,
                                _create("User:bob", renewers=("User:admin",)))
        for version in (0, 3):
            talk.both(f"alice describes v{version}", "alice", DESCRIBE, version, _describe(None))
            talk.both(f"bob describes v{version}", "bob", DESCRIBE, version, _describe(None))
        talk.both("describe no owners", "alice", DESCRIBE, 3, _describe())
        talk.both("describe bob's", "alice", DESCRIBE, 3, _describe("User:bob"))
        talk.both("describe an unknown owner's", "admin", DESCRIBE, 3, _describe("User:nobody"))
        talk.both("the super user describes every token", "admin", DESCRIBE, 3, _describe(None))
        bobs = (kafka.body.hmac, shim.body.hmac)
        talk.both("the renewer renews", "admin", RENEW, 2, bodies=tuple(RenewDelegationTokenRequest(hmac=h, renew_period_ms=HOUR) for h in bobs))
        talk.both("the owner renews for longer than allowed", "bob", RENEW, 2,
                  bodies=tuple(RenewDelegationTokenRequest(hmac=h, renew_period_ms=10 * DAY) for h in bobs))
        talk.both("another user renews", "alice", RENEW, 1, bodies=tuple(RenewDelegationTokenRequest(hmac=h, renew_period_ms=HOUR) for h in bobs))
        talk.both("an unknown hmac", "alice", RENEW, 2, RenewDelegationTokenRequest(hmac=b"not a token", renew_period_ms=HOUR))
        talk.both("another user expires", "alice", EXPIRE, 2, bodies=tuple(ExpireDelegationTokenRequest(hmac=h, expiry_time_period_ms=-1) for h in bobs))
        talk.both("expire later", "bob", EXPIRE, 2, bodies=tuple(ExpireDelegationTokenRequest(hmac=h, expiry_time_period_ms=HOUR) for h in bobs))
        # A login with a token: the owner's principal, refused every token request.
        kafka_token, shim_token = talk.both("a token to log in with", "alice", CREATE, 3, _create())
        logins = []
        for side, token in ((talk.kafka, kafka_token.body), (talk.shim, shim_token.body)):
            expected = hmac.new(SECRET.encode(), token.token_id.encode(), hashlib.sha512).digest()
            assert token.hmac == expected, "the HMAC is HmacSHA512 of the token id keyed by the secret"
            wire, answer = _token_login_when_published(side.addresses["SASL_PLAINTEXT"], token.token_id, token.hmac)
            assert answer.body.error_code == 0, f"{side.addresses}: {answer}"
            logins.append(wire)
        try:
            for what, api_key, body in (("create", CREATE, _create()), ("describe", DESCRIBE, _describe(None))):
                kafka, shim = (w.request(api_key, 3, body) for w in logins)
                diff = field_diff(_plain(kafka), _plain(shim))
                assert not diff and kafka.body.error_code == 64, f"{what} after a token login: {diff} {kafka}"
            kafka, shim = (w.request(METADATA, 10, MetadataRequest(topics=None, include_cluster_authorized_operations=True))
                           for w in logins)
            assert kafka.body.cluster_authorized_operations == shim.body.cluster_authorized_operations
        finally:
            for wire in logins:
                wire.close()
        for side, token in ((talk.kafka, kafka_token.body), (talk.shim, shim_token.body)):
            wire, answer = _token_login(side.addresses["SASL_PLAINTEXT"], token.token_id, b"wrong" + token.hmac)
            wire.close()
            assert answer.body.error_code == 58, f"a wrong token password: {answer}"
        talk.both("the owner expires it now", "alice", EXPIRE, 2,
                  bodies=(ExpireDelegationTokenRequest(hmac=kafka_token.body.hmac, expiry_time_period_ms=-1),
                          ExpireDelegationTokenRequest(hmac=shim_token.body.hmac, expiry_time_period_ms=-1)))
        talk.kafka_published(lambda ids: kafka_token.body.token_id not in ids)
        for side, token in ((talk.kafka, kafka_token.body), (talk.shim, shim_token.body)):
            wire, answer = _token_login(side.addresses["SASL_PLAINTEXT"], token.token_id, token.hmac)
            wire.close()
            assert answer.body.error_code == 58, f"a login with an expired (removed) token: {answer}"
        assert not talk.problems, "Kafka and kafka-shim disagree:\n  " + "\n  ".join(talk.problems)
    finally:
        talk.close()


def test_a_token_survives_a_restart_with_a_data_directory(tmp_path) -> None:
    properties = {**sasl_properties(), "delegation.token.secret.key": SECRET, "log.dirs": str(tmp_path)}
    with EmbeddedBroker(BrokerConfig.from_properties(properties)) as shim, \
            Wire(listener_address(shim.broker, "SASL_PLAINTEXT")) as wire:
        wire.sasl_plain("alice", USERS["alice"])
        token = wire.request(CREATE, 3, _create(renewers=("User:bob",))).body
        assert token.error_code == 0
    with EmbeddedBroker(BrokerConfig.from_properties(properties)) as shim:
        wire, answer = _token_login(listener_address(shim.broker, "SASL_PLAINTEXT"), token.token_id, token.hmac)
        wire.close()
        assert answer.body.error_code == 0
        with Wire(listener_address(shim.broker, "SASL_PLAINTEXT")) as bob:
            bob.sasl_plain("bob", USERS["bob"])
            described = bob.request(DESCRIBE, 3, _describe(None)).body
        assert [(t.token_id, t.principal_name, [r.principal_name for r in t.renewers]) for t in described.tokens] == [
            (token.token_id, "alice", ["bob"])]
    assert _id_form(token.token_id)


def _id_form(token_id: str) -> bool:
    return re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{20}[AQgw]", token_id) is not None
