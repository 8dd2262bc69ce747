"""SASL/OAUTHBEARER with Kafka's default (unsecured JWT) validator, against a real Kafka 3.9: the same exchanges, the
same answers (codes, messages, error challenges, session lifetimes) or the same closed connections.

Both brokers enable OAUTHBEARER beside PLAIN and SCRAM on SASL_PLAINTEXT, with ``unsecuredValidatorRequiredScope``
"kafka" and two minutes of allowed clock skew, PLAIN with its own ``connections.max.reauth.ms`` of 30 minutes (none
for the listener's other mechanisms), and run the authorizer (admin a super user).
"""

from __future__ import annotations

import base64
import json
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import CreateTopicsRequest, SaslAuthenticateRequest, SaslHandshakeRequest
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.compare import assert_same
from tests.support.peers import RealKafka, start_real_kafka, stop_real_kafka
from tests.support.sasl_setup import listener_address, sasl_properties
from tests.support.wire import Answer, Wire

MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"
JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
        'unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="kafka" '
        'unsecuredValidatorAllowableClockSkewMs="120000";')
REAUTH_MS = 1_800_000
OVERRIDES = {"listener.name.sasl_plaintext.sasl.enabled.mechanisms": MECHANISMS,
             "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": JAAS,
             "listener.name.sasl_plaintext.plain.connections.max.reauth.ms": str(REAUTH_MS)}
# A session lifetime is the token's expiry minus the moment each broker completes the exchange.
LIFETIME_SLACK_MS = 30_000


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKafka]:
    oracle = start_real_kafka(tmp_path_factory.mktemp("kafka-oauthbearer"), *(f"{k}={v}" for k, v in OVERRIDES.items()))
    yield oracle
    stop_real_kafka(oracle)


@pytest.fixture(scope="module")
def shim() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(BrokerConfig.from_properties(sasl_properties() | OVERRIDES)) as broker:
        yield broker


def b64(data: bytes, url: bool = False) -> str:
    return (base64.urlsafe_b64encode(data) if url else base64.b64encode(data)).decode().rstrip("=")


def jwt(claims: dict[str, Any] | str | None = None, header: dict[str, Any] | str | None = None, signature: str = "",
        **replace: Any) -> str:
    """An unsecured JWS: header {"alg":"none"}, claims sub alice, scope kafka, issued now, expiring in an hour."""
    now = int(time.time())
    if claims is None:
        claims = {"sub": "alice", "scope": "kafka", "iat": now, "exp": now + 3600, **replace}
        claims = {k: v for k, v in claims.items() if v is not _DROP}
    header = {"alg": "none"} if header is None else header
    parts = [json.dumps(p, separators=(",", ":")) if not isinstance(p, str) else p for p in (header, claims)]
    return ".".join(b64(p.encode()) for p in parts) + "." + signature


_DROP = object()


def first_message(token: str, authzid: str = "", extensions: str = "", scheme: str = "Bearer") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth={scheme} {token}\x01{extensions}\x01".encode()


def frame(api_key: int, version: int, body: Any) -> tuple[bytes, int, int]:
    return encode_request(api_key, version, 9, body, client_id="differential"), api_key, version


HANDSHAKE = frame(17, 1, SaslHandshakeRequest(mechanism="OAUTHBEARER"))
ACK = frame(36, 2, SaslAuthenticateRequest(auth_bytes=b"\x01"))
CREATE_TOPIC = frame(19, 7, CreateTopicsRequest(timeout_ms=30000, validate_only=True, topics=[
    CreateTopicsRequest.CreatableTopic(name="oauth-probe", num_partitions=1, replication_factor=1)]))


def authenticate(message: bytes, version: int = 2) -> tuple[bytes, int, int]:
    return frame(36, version, SaslAuthenticateRequest(auth_bytes=message))


def run(address: tuple[str, int], steps: list[tuple[bytes, int, int]]) -> list[Answer]:
    """Each frame after the previous answer, stopping at a closed connection."""
    answers = []
    with Wire(address) as wire:
        for data, key, version in steps:
            answers.append(wire.exchange(data, key, version))
            if answers[-1].closed:
                break
    return answers


def compare(kafka: RealKafka, shim: EmbeddedBroker, steps: list[tuple[bytes, int, int]]) -> list[Answer]:
    """Both brokers' answers, equal but for the session lifetime (checked to within LIFETIME_SLACK_MS)."""
    theirs, ours = run(kafka.sasl, steps), run(listener_address(shim.broker, "SASL_PLAINTEXT"), steps)
    assert [a.closed for a in ours] == [a.closed for a in theirs], (theirs, ours)
    for step, (their, our) in enumerate(zip(theirs, ours, strict=True)):
        if their.closed:
            continue
        their_life, our_life = (getattr(a.body, "session_lifetime_ms", 0) for a in (their, our))
        assert abs(their_life - our_life) <= LIFETIME_SLACK_MS, (step, their_life, our_life)
        assert_same(their, our, ignore=("session_lifetime_ms",), what=f"step {step}")
    return ours


def test_a_valid_token_authenticates_as_its_subject_for_its_lifetime(kafka, shim) -> None:
    ours = compare(kafka, shim, [HANDSHAKE, authenticate(first_message(jwt())), CREATE_TOPIC])
    assert ours[1].body.error_code == 0 and ours[1].body.auth_bytes == b""
    assert 3_500_000 < ours[1].body.session_lifetime_ms <= 3_600_000  # until the token's exp
    # alice has no ACLs: the request is hers, refused.
    assert ours[2].body.topics[0].error_code == 29


@pytest.mark.parametrize("token", [
    pytest.param(jwt(exp=int(time.time()) - 600), id="expired"),
    pytest.param(jwt(exp=_DROP), id="no-exp"),
    pytest.param(jwt(exp="4102444800"), id="exp-a-string"),
    pytest.param(jwt(sub=_DROP), id="no-sub"),
    pytest.param(jwt(sub=" "), id="blank-sub"),
    pytest.param(jwt(sub=42), id="sub-a-number"),
    pytest.param(jwt(iat=int(time.time()) + 3000), id="issued-in-the-future"),
    pytest.param(jwt(iat=int(time.time()) + 7200), id="exp-before-iat"),
    pytest.param(jwt(header={"alg": "HS256"}), id="signed-alg"),
    pytest.param(jwt(signature="c2ln"), id="with-signature"),
    pytest.param(jwt(scope=7), id="scope-a-number"),
    pytest.param(jwt(claims="not json"), id="claims-not-json"),
    pytest.param(jwt(claims=[1, 2]), id="claims-an-array"),
    pytest.param(b64(b'{"alg":"none"}') + "." + b64(b'{"sub":"alice?>?","exp":4102444800,"scope":"kafka"}', url=True) + ".",
                 id="url-safe-base64"),
    pytest.param(b64(b'{"alg":"none"}') + "." + "x" * 5 + ".", id="bad-base64-length"),
    pytest.param("a.b", id="two-parts"),
    pytest.param(jwt() + "..", id="double-dot"),
])
def test_a_refused_token_gets_an_error_challenge_then_58(kafka, shim, token: str) -> None:
    ours = compare(kafka, shim, [HANDSHAKE, authenticate(first_message(token)), ACK])
    assert ours[1].body.error_code == 0 and ours[1].body.auth_bytes == b'{"status":"invalid_token"}'
    assert ours[2].body.error_code == 58 and ours[2].body.error_message == '{"status":"invalid_token"}'


@pytest.mark.parametrize("scope", [_DROP, "kafka other", ["other"], ""], ids=["none", "one-string-with-a-space", "other", "blank"])
def test_a_token_without_the_required_scope_gets_insufficient_scope(kafka, shim, scope) -> None:
    ours = compare(kafka, shim, [HANDSHAKE, authenticate(first_message(jwt(scope=scope))), ACK])
    assert ours[2].body.error_message == '{"status":"insufficient_scope", "scope":"[kafka]"}'


@pytest.mark.parametrize("claims", [
    {"scope": ["other", " kafka "]},
    {"sub": True},  # Jackson's text of true: the principal User:true
    {"sub": "alice", "iat": _DROP},
    {"exp": 4102444800.5, "iat": 1.5},
], ids=["scope-list", "sub-true", "no-iat", "fractional-times"])
def test_tokens_kafka_accepts(kafka, shim, claims) -> None:
    ours = compare(kafka, shim, [HANDSHAKE, authenticate(first_message(jwt(**claims))), CREATE_TOPIC])
    assert ours[1].body.error_code == 0


@pytest.mark.parametrize("message", [
    pytest.param(b"n,,\x01auth=Bearer abc\x01", id="unterminated"),
    pytest.param(b"y,,\x01auth=Bearer abc\x01\x01", id="not-n"),
    pytest.param(b"n,,\x01foo=bar\x01\x01", id="no-auth"),
    pytest.param(b"n,,\x01auth=Bearer\x01\x01", id="no-token"),
    pytest.param(b"n,,\x01auth=Bearer a b\x01\x01", id="token-with-a-space"),
    pytest.param(b"", id="empty"),
    pytest.param(b"\x01", id="lone-control-a"),
])
def test_a_first_message_that_does_not_parse_gets_the_generic_refusal(kafka, shim, message: bytes) -> None:
    ours = compare(kafka, shim, [HANDSHAKE, authenticate(message)])
    assert ours[1].body.error_code == 58
    assert ours[1].body.error_message == ("Authentication failed during authentication due to invalid credentials with "
                                          "SASL mechanism OAUTHBEARER")


@pytest.mark.parametrize("message", [
    pytest.param(first_message(jwt(), scheme="Basic"), id="scheme-not-bearer"),
    pytest.param(first_message(jwt(header={"typ": "JWT"})), id="header-without-alg"),
])
def test_what_crashes_kafkas_server_closes_the_connection(kafka, shim, message: bytes) -> None:
    ours = compare(kafka, shim, [HANDSHAKE, authenticate(message)])
    assert ours[-1].closed


def test_authorization_ids_and_extensions(kafka, shim) -> None:
    ours = compare(kafka, shim, [HANDSHAKE, authenticate(first_message(jwt(), authzid="bob"))])
    assert ours[1].body.error_message == ("Authentication failed: Client requested an authorization id (bob) that is "
                                          "different from the token's principal name (alice)")
    ours = compare(kafka, shim, [HANDSHAKE, authenticate(first_message(jwt(), authzid="alice", extensions="traceId=abc 1\x01"))])
    assert ours[1].body.error_code == 0


def test_a_client_may_try_another_token_after_the_error_challenge(kafka, shim) -> None:
    expired = jwt(exp=int(time.time()) - 600)
    ours = compare(kafka, shim, [HANDSHAKE, authenticate(first_message(expired)), authenticate(first_message(jwt())), CREATE_TOPIC])
    assert ours[2].body.error_code == 0 and ours[3].body.topics[0].error_code == 29


def test_reauthentication_keeps_the_principal(kafka, shim) -> None:
    same = [HANDSHAKE, authenticate(first_message(jwt())), HANDSHAKE, authenticate(first_message(jwt(exp=int(time.time()) + 600)))]
    ours = compare(kafka, shim, same)
    assert ours[3].body.error_code == 0 and 500_000 < ours[3].body.session_lifetime_ms <= 600_000
    other = [HANDSHAKE, authenticate(first_message(jwt())), HANDSHAKE, authenticate(first_message(jwt(sub="bob")))]
    ours = compare(kafka, shim, other)
    assert ours[3].body.error_message == "Cannot change principals during re-authentication from User.alice: User.bob"


def raw_exchange(address: tuple[str, int], tokens: list[bytes]) -> list[bytes | None]:
    """A v0 handshake, then bare size-prefixed tokens (no SaslAuthenticate): each reply token, None once closed."""
    replies: list[bytes | None] = []
    with Wire(address) as wire:
        assert wire.exchange(*frame(17, 0, SaslHandshakeRequest(mechanism="OAUTHBEARER"))).body.error_code == 0
        for token in tokens:
            wire.send_frame(struct.pack(">i", len(token)) + token)
            head = wire._read_exact(4)
            replies.append(None if head is None else wire._read_exact(struct.unpack(">i", head)[0]))
            if replies[-1] is None:
                break
    return replies


@pytest.mark.parametrize("tokens", [
    [first_message(jwt())],
    [first_message(jwt(exp=int(time.time()) - 600)), b"\x01"],
], ids=["valid", "refused"])
def test_bare_tokens_after_a_v0_handshake(kafka, shim, tokens) -> None:
    theirs = raw_exchange(kafka.sasl, tokens)
    assert raw_exchange(listener_address(shim.broker, "SASL_PLAINTEXT"), tokens) == theirs


def test_sessions_that_end_at_once(kafka, shim) -> None:
    """A token expired within the allowed clock skew is accepted with a session of 0 ms; one that lives for more
    than ~292 years wraps Kafka's nanosecond arithmetic into the past: both close at the next request. A merely
    large expiry wraps into the future and keeps working."""
    for claims in ({"exp": int(time.time()) - 30, "iat": int(time.time()) - 3600}, {"exp": int(time.time()) + 300 * 366 * 86400}, {"exp": 1e20}):
        ours = compare(kafka, shim, [HANDSHAKE, authenticate(first_message(jwt(**claims))), CREATE_TOPIC])
        assert ours[1].body.error_code == 0 and ours[-1].closed, claims
        if claims["exp"] < time.time():
            assert ours[1].body.session_lifetime_ms == 0  # Kafka's zeroIfNegative, not a millisecond of grace
    assert compare(kafka, shim, [HANDSHAKE, authenticate(first_message(jwt(exp=99_999_999_999))), CREATE_TOPIC])[2].body


def test_the_reauth_interval_belongs_to_its_mechanism(kafka, shim) -> None:
    plain = frame(17, 1, SaslHandshakeRequest(mechanism="PLAIN"))
    ours = compare(kafka, shim, [plain, authenticate(b"\x00alice\x00alice-secret")])
    assert ours[1].body.error_code == 0 and ours[1].body.session_lifetime_ms == REAUTH_MS


@pytest.mark.parametrize("mechanism", ["PLAIN", "GSSAPI"])
def test_reauthentication_with_another_mechanism_closes_the_connection(kafka, shim, mechanism: str) -> None:
    """An enabled other mechanism: its handshake is answered, its first token closes the connection unanswered;
    one not enabled closes at the handshake."""
    steps = [HANDSHAKE, authenticate(first_message(jwt())), frame(17, 1, SaslHandshakeRequest(mechanism=mechanism)),
             authenticate(b"\x00alice\x00alice-secret")]
    ours = compare(kafka, shim, steps)
    assert ours[-1].closed and len(ours) == (4 if mechanism == "PLAIN" else 3)
