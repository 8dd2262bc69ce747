"""SASL/OAUTHBEARER with Kafka's secured validator (KIP-768: OAuthBearerValidatorCallbackHandler, keys from a JWKS),
against a real Kafka 3.9: the same signed tokens accepted or refused, as the same principals, with the same answers.

Both brokers read one JWKS file (``file:`` URL) holding keys of every kind the validator takes and some it must not
use, expect the audience ``kafka-shim-tests`` and the issuer ``https://issuer.test``, and allow Kafka's default 30 s
of clock skew. A second pair expects neither; a third reads the same keys from an ``https`` endpoint whose
certificate only the JAAS entry's ``ssl.truststore.*`` options trust.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.differential.test_oauthbearer import ACK, CREATE_TOPIC, HANDSHAKE, authenticate, compare, first_message
from tests.support.jwks_server import JwksServer
from tests.support.peers import RealKafka, start_real_kafka, stop_real_kafka
from tests.support.sasl_setup import sasl_properties
from tests.support.signed_jwt import (
    DROP,
    SigningKey,
    b64url,
    certificate_der,
    ec_key,
    ed25519_key,
    hmac_key,
    jwks_document,
    rsa_key,
    signed_jwt,
    standard_claims,
)
from tests.support.tls_material import shared_tls_material

AUDIENCE = "kafka-shim-tests"
ISSUER = "https://issuer.test"
KEYS = {
    "rsa": rsa_key("rsa"),
    "rsa-2": rsa_key("rsa-2"),
    "small": rsa_key("small", bits=1024),
    "enc": rsa_key("enc", use="enc"),
    "rs384-only": rsa_key("rs384-only", alg="RS384"),
    "ec": ec_key("ec"),
    "ec-384": ec_key("ec-384", ec.SECP384R1()),
    "ed": ed25519_key("ed"),
    "hmac": hmac_key("hmac"),
    "short-hmac": hmac_key("short-hmac", size=16),
}
OUTSIDER = rsa_key("rsa")  # the same kid as a key of the set, another key
NO_KID = ec_key(None, ec.SECP521R1())  # the set's only P-521 key, without a kid


def token(key: str = "rsa", alg: str = "RS256", **replace: Any) -> Callable[[], str]:
    return lambda: signed_jwt(KEYS[key], alg, _claims(replace))


def _claims(replace: dict[str, Any]) -> dict[str, Any]:
    """The standard claims with the audience and issuer both brokers expect, changed by ``replace`` (a callable is
    called when the token is made: times are relative to then, not to the collection of the tests)."""
    base = standard_claims(aud=AUDIENCE, iss=ISSUER) | {k: v() if callable(v) else v for k, v in replace.items()}
    return {name: value for name, value in base.items() if value is not DROP}


def now(offset: float = 0, whole: bool = True) -> Callable[[], float]:
    return lambda: int(time.time() + offset) if whole else time.time() + offset


@pytest.fixture(scope="module")
def jwks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("jwks") / "keys.json"
    path.write_text(jwks_document([*KEYS.values(), NO_KID]))
    return path


def overrides(jwks: Path, expect: bool = True) -> dict[str, str]:
    prefix = "listener.name.sasl_plaintext.oauthbearer."
    return {"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
            prefix + "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;",
            prefix + "sasl.server.callback.handler.class":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
            "sasl.oauthbearer.jwks.endpoint.url": jwks.as_uri()} | (
           {"sasl.oauthbearer.expected.audience": AUDIENCE, "sasl.oauthbearer.expected.issuer": ISSUER} if expect else {})


def _kafka(tmp_path_factory: pytest.TempPathFactory, jwks: Path, expect: bool) -> Iterator[RealKafka]:
    oracle = start_real_kafka(tmp_path_factory.mktemp("kafka-oauthbearer-secured"),
                              *(f"{k}={v}" for k, v in overrides(jwks, expect).items()))
    yield oracle
    stop_real_kafka(oracle)


def _shim(jwks: Path, expect: bool) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(BrokerConfig.from_properties(sasl_properties() | overrides(jwks, expect))) as broker:
        yield broker


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory, jwks: Path) -> Iterator[RealKafka]:
    yield from _kafka(tmp_path_factory, jwks, expect=True)


@pytest.fixture(scope="module")
def shim(jwks: Path) -> Iterator[EmbeddedBroker]:
    yield from _shim(jwks, expect=True)


ACCEPTED = {
    "rs256": token(),
    "rs512": token(alg="RS512"),
    "ps256": token(alg="PS256"),
    "es256": token("ec", "ES256"),
    "es384": token("ec-384", "ES384"),
    "eddsa": token("ed", "EdDSA"),
    "hs256": token("hmac", "HS256"),
    "rs384-key-with-its-alg": token("rs384-only", "RS384"),
    "audience-among-several": token(aud=["other", AUDIENCE]),
    "scope-list": token(scope=["read", "write"]),
    "scope-string-with-spaces": token(scope="read write"),
    "scope-a-number": token(scope=7),
    "scope-empty-list": token(scope=[]),
    "sub-padded": token(sub="  alice "),
    "expired-within-skew": token(exp=now(-10), iat=now(-3600)),
    "issued-in-the-future": token(iat=now(600)),
    "exp-equal-to-iat": token(exp=now(100), iat=now(100)),
    "exp-far-future": token(exp=1e11),
    "key-with-another-alg-member": token("rs384-only", "RS256"),
    "padded-base64": lambda: _padded(),
    "fractional-times": token(exp=now(3600.7, whole=False), iat=now(-0.5, whole=False)),
    "not-before-past": token(nbf=now(-60)),
    "not-before-within-skew": token(nbf=now(10)),
    "typ-at+jwt": lambda: signed_jwt(KEYS["rsa"], "RS256", _claims({}), {"typ": "at+jwt"}),
    "no-kid-one-candidate": lambda: signed_jwt(NO_KID, "ES512", _claims({})),
    "crit-empty": lambda: signed_jwt(KEYS["rsa"], "RS256", _claims({}), {"crit": []}),
    "crit-b64": lambda: signed_jwt(KEYS["rsa"], "RS256", _claims({}), {"crit": ["b64"], "b64": True}),
    "nbf-equal-to-exp-within-skew": token(nbf=now(20), exp=now(20)),
    "jti-and-a-null-scope": token(jti="j-1", scope=None),
    "standard-alphabet-signature": lambda: _standard_alphabet(),
    "x5t-the-key-does-not-have": lambda: signed_jwt(KEYS["rsa"], "RS256", _claims({}), {"x5t": "AAAA"}),
}

REFUSED = {
    "expired": token(exp=now(-600)),
    "expired-within-skew-before-iat": token(exp=now(-10)),
    "exp-before-iat": token(exp=now(100), iat=now(200)),
    "exp-past-a-java-long": token(exp=10**19),
    "negative-exp": token(exp=-1, iat=-5),
    "no-exp": token(exp=DROP),
    "no-iat": token(iat=DROP),
    "exp-a-string": token(exp=lambda: str(int(time.time()) + 600)),
    "not-before-future": token(nbf=now(600)),
    "other-audience": token(aud="somebody-else"),
    "no-audience": token(aud=DROP),
    "other-issuer": token(iss="https://elsewhere.test"),
    "no-issuer": token(iss=DROP),
    "no-sub": token(sub=DROP),
    "blank-sub": token(sub="   "),
    "empty-sub": token(sub=""),
    "sub-a-number": token(sub=42),
    "empty-scope": token(scope=""),
    "repeated-scope": token(scope=["read", "read"]),
    "repeated-after-trim": token(scope=["read", " read"]),
    "null-scope-item": token(scope=[None]),
    "negative-iat": token(iat=-5),
    "unknown-kid": lambda: signed_jwt(KEYS["rsa"], "RS256", _claims({}), kid="nobody"),
    "other-key-same-kid": lambda: signed_jwt(OUTSIDER, "RS256", _claims({})),
    "rsa-1024": token("small"),
    "short-hmac": token("short-hmac", "HS256"),
    "key-for-encryption": token("enc"),
    "hs256-with-an-rsa-kid": lambda: signed_jwt(KEYS["hmac"], "HS256", _claims({}), kid="rsa"),
    "es256-der-signature": lambda: signed_jwt(KEYS["ec"], "ES256", _claims({}), der=True),
    "es256-on-a-p384-key": lambda: signed_jwt(KEYS["ec-384"], "ES256", _claims({})),
    "alg-none": lambda: b64url(b'{"alg":"none"}') + "." + b64url(b'{"sub":"alice"}') + ".",
    "alg-none-with-signature": lambda: _resigned({"alg": "none", "kid": "rsa"}),
    "unknown-alg": lambda: _resigned({"alg": "RS999", "kid": "rsa"}),
    "exp-null": token(exp=None),
    "nbf-after-exp": token(nbf=now(700), exp=now(600)),
    "jti-a-number": token(jti=5),
    "iss-a-number": token(iss=5),
    "kid-a-number": lambda: signed_jwt(KEYS["rsa"], "RS256", _claims({}), {"kid": 7}),
    "crit-a-string": lambda: signed_jwt(KEYS["rsa"], "RS256", _claims({}), {"crit": "b64"}),
    "b64-false": lambda: signed_jwt(KEYS["rsa"], "RS256", _claims({}), {"crit": ["b64"], "b64": False}),
    "trailing-dot": lambda: signed_jwt(KEYS["rsa"], "RS256", _claims({})) + ".",
    "empty-audience-list": token(aud=[]),
    "crit-header": lambda: signed_jwt(KEYS["rsa"], "RS256", _claims({}), {"crit": ["exp"], "exp": 1}),
    "tampered-claims": lambda: _tampered(),
    "two-sections": lambda: ".".join(signed_jwt(KEYS["rsa"], "RS256", _claims({})).split(".")[:2]),
    "four-sections": lambda: signed_jwt(KEYS["rsa"], "RS256", _claims({})) + ".e30",
    "header-not-json": lambda: "bm90IGpzb24." + signed_jwt(KEYS["rsa"], "RS256", _claims({})).split(".", 1)[1],
    "claims-an-array": lambda: signed_jwt(KEYS["rsa"], "RS256", [1, 2]),  # type: ignore[arg-type]
}


def _resigned(header: dict[str, Any]) -> str:
    parts = signed_jwt(KEYS["rsa"], "RS256", _claims({})).split(".")
    return b64url(json.dumps(header).encode()) + "." + parts[1] + "." + parts[2]


def _tampered() -> str:
    head, _, signature = signed_jwt(KEYS["rsa"], "RS256", _claims({})).split(".")
    return head + "." + b64url(json.dumps(_claims({"sub": "mallory"})).encode()) + "." + signature


def _standard_alphabet() -> str:
    """A token whose signature is written in base64's standard alphabet ('+' and '/'), which jose4j also reads."""
    while True:
        head, body, signature = signed_jwt(KEYS["rsa"], "RS256", _claims({})).split(".")
        if "-" in signature or "_" in signature:
            return head + "." + body + "." + signature.replace("-", "+").replace("_", "/")


def _padded() -> str:
    head, body, signature = signed_jwt(KEYS["rsa"], "RS256", _claims({"sub": "al"})).split(".")
    return head + "=" * (-len(head) % 4) + "." + body + "." + signature


@pytest.mark.parametrize("make", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_tokens_kafka_accepts(kafka, shim, make) -> None:
    ours = compare(kafka, shim, [HANDSHAKE, authenticate(first_message(make())), CREATE_TOPIC])
    assert ours[1].body.error_code == 0 and ours[1].body.auth_bytes == b""


@pytest.mark.parametrize("make", REFUSED.values(), ids=REFUSED.keys())
def test_tokens_kafka_refuses(kafka, shim, make) -> None:
    ours = compare(kafka, shim, [HANDSHAKE, authenticate(first_message(make())), ACK])
    assert ours[1].body.auth_bytes == b'{"status":"invalid_token"}'
    assert ours[2].body.error_code == 58 and ours[2].body.error_message == '{"status":"invalid_token"}'


@pytest.mark.parametrize("make", [token(exp=1e30), token(scope=["read", 1])], ids=["exp-overflows-millis", "scope-item-a-number"])
def test_what_crashes_kafkas_validator_closes_the_connection(kafka, shim, make) -> None:
    assert compare(kafka, shim, [HANDSHAKE, authenticate(first_message(make()))])[-1].closed


def test_the_principal_is_the_trimmed_subject(kafka, shim) -> None:
    for authzid, expected in (("alice", 0), ("bob", 58)):
        steps = [HANDSHAKE, authenticate(first_message(signed_jwt(KEYS["rsa"], "RS256", _claims({"sub": " alice "})),
                                                       authzid=authzid))]
        assert compare(kafka, shim, steps)[1].body.error_code == expected


def test_a_session_lasts_until_the_tokens_exp(kafka, shim) -> None:
    exp = int(time.time()) + 600
    ours = compare(kafka, shim, [HANDSHAKE, authenticate(first_message(token(exp=exp)()))])
    assert 500_000 < ours[1].body.session_lifetime_ms <= 600_000


@pytest.mark.parametrize("key, alg", [("rsa", "RS256"), ("rsa-2", "RS256"), ("hmac", "HS256"), ("ec", "ES256")],
                         ids=["first-rsa-key", "second-rsa-key", "hmac", "ec"])
def test_tokens_without_a_kid_among_several_candidate_keys(kafka, shim, key: str, alg: str) -> None:
    compare(kafka, shim, [HANDSHAKE, authenticate(first_message(signed_jwt(KEYS[key], alg, _claims({}), kid=False))), ACK])


@pytest.fixture(scope="module")
def kafka_expecting_nothing(tmp_path_factory: pytest.TempPathFactory, jwks: Path) -> Iterator[RealKafka]:
    yield from _kafka(tmp_path_factory, jwks, expect=False)


@pytest.fixture(scope="module")
def shim_expecting_nothing(jwks: Path) -> Iterator[EmbeddedBroker]:
    yield from _shim(jwks, expect=False)


@pytest.mark.parametrize("replace, accepted", [
    ({"aud": DROP, "iss": DROP}, True),
    ({"aud": DROP}, True),  # any issuer
    ({}, False),  # an audience, and none expected: jose4j refuses it
    ({"aud": []}, False),
    ({"aud": DROP, "iss": 5}, False),
], ids=["neither", "issuer-only", "audience", "empty-audience-list", "issuer-a-number"])
def test_a_broker_expecting_no_audience_or_issuer(kafka_expecting_nothing, shim_expecting_nothing, replace, accepted) -> None:
    ours = compare(kafka_expecting_nothing, shim_expecting_nothing,
                   [HANDSHAKE, authenticate(first_message(signed_jwt(KEYS["rsa"], "RS256", _claims(replace)))), ACK])
    assert (ours[1].body.auth_bytes == b"") == accepted


# -- an https JWKS endpoint, trusted through the JAAS entry's ssl.* options (JaasOptionsUtils) ------------------------


# Keys with members jose4j reads strictly, first in the https pair's set. Each signs a token without a kid in an
# algorithm that, among the set's RSA keys, only it and the keys without an alg fit: jose4j picks it when it kept the
# key (accepted), the set's first RSA key otherwise (refused).
ODD_KEYS = {
    "kid-a-number": SigningKey(None, rsa_key(None).private, {"kid": 5, "alg": "PS256"}),
    "use-a-number": SigningKey(None, rsa_key(None).private, {"use": 1, "alg": "PS384"}),
    "x5t-a-number": SigningKey(None, rsa_key(None).private, {"x5t": 7, "alg": "PS512"}),
    "key-ops-a-string": SigningKey(None, rsa_key(None).private, {"key_ops": "verify", "alg": "RS384"}),
    "x5c-unreadable": SigningKey(None, rsa_key(None).private, {"x5c": ["AAAA"], "alg": "RS512"}),
    "x5c-null": SigningKey(None, rsa_key(None).private, {"x5c": None, "alg": "RS256"}),
}
_X5C = rsa_key("x5c")
_X5C.extra["x5c"] = [base64.b64encode(certificate_der(_X5C)).decode()]
X5C_KEYS = {"x5c": _X5C, "oct-x5t-a-number": hmac_key("oct-x5t-a-number", x5t=5)}  # type: ignore[arg-type]


def _thumbprint(name: str, right: bool) -> str:
    der = certificate_der(_X5C) if not right else base64.b64decode(_X5C.extra["x5c"][0])
    return b64url((hashlib.sha1 if name == "x5t" else hashlib.sha256)(der).digest())


@pytest.fixture(scope="module")
def https_jwks() -> Iterator[str]:
    """The key set served over TLS by the shared test CA's server certificate (localhost)."""
    server = JwksServer(jwks_document([*ODD_KEYS.values(), *KEYS.values(), NO_KID, *X5C_KEYS.values()]), tls=True)
    yield server.url
    server.close()


def _https_overrides(url: str) -> dict[str, str]:
    # With options in its JAAS entry the broker's own login makes an unsecured token at start-up: it needs a subject.
    jaas = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="broker" '
            f'ssl.truststore.type="PEM" ssl.truststore.location="{shared_tls_material().ca_path}";')
    return overrides(Path("/unused"), expect=True) | {"sasl.oauthbearer.jwks.endpoint.url": url,
                                                     "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": jaas}


@pytest.fixture(scope="module")
def kafka_over_https(tmp_path_factory: pytest.TempPathFactory, https_jwks: str) -> Iterator[RealKafka]:
    oracle = start_real_kafka(tmp_path_factory.mktemp("kafka-oauthbearer-https"),
                              *(f"{k}={v}" for k, v in _https_overrides(https_jwks).items()))
    yield oracle
    stop_real_kafka(oracle)


@pytest.fixture(scope="module")
def shim_over_https(https_jwks: str) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(BrokerConfig.from_properties(sasl_properties() | _https_overrides(https_jwks))) as broker:
        yield broker


@pytest.mark.parametrize("make, accepted", [(token(), True), (token("ed", "EdDSA"), True), (token(sub="mallory", exp=now(-3600)), False),
                                            (lambda: signed_jwt(OUTSIDER, "RS256", _claims({})), False)],
                         ids=["rs256", "eddsa", "expired", "signed-by-an-outsider"])
def test_keys_from_an_https_endpoint_trusted_through_the_jaas_ssl_options(kafka_over_https, shim_over_https, make,
                                                                          accepted: bool) -> None:
    ours = compare(kafka_over_https, shim_over_https, [HANDSHAKE, authenticate(first_message(make())), ACK])
    assert (ours[1].body.auth_bytes == b"") == accepted


@pytest.mark.parametrize("odd", ODD_KEYS, ids=ODD_KEYS.keys())
def test_keys_with_members_jose4j_reads_strictly(kafka_over_https, shim_over_https, odd: str) -> None:
    key = ODD_KEYS[odd]
    compare(kafka_over_https, shim_over_https,
            [HANDSHAKE, authenticate(first_message(signed_jwt(key, key.extra["alg"], _claims({}), kid=False))), ACK])


@pytest.mark.parametrize("header, accepted", [
    ({"x5t": "right"}, True), ({"x5t": "wrong"}, False), ({"x5t#S256": "right"}, True), ({"x5t#S256": "wrong"}, False),
], ids=["x5t", "another-x5t", "x5t-s256", "another-x5t-s256"])
def test_thumbprints_of_a_keys_x5c_certificate(kafka_over_https, shim_over_https, header, accepted: bool) -> None:
    """jose4j derives a key's x5t and x5t#S256 from its x5c certificate when the JWK has none to match a token's."""
    (name, which), = header.items()
    token = signed_jwt(_X5C, "RS256", _claims({}), {name: _thumbprint(name, which == "right")})
    ours = compare(kafka_over_https, shim_over_https, [HANDSHAKE, authenticate(first_message(token)), ACK])
    assert (ours[1].body.auth_bytes == b"") == accepted


def test_an_hmac_keys_thumbprint_members_are_not_read(kafka_over_https, shim_over_https) -> None:
    token = signed_jwt(X5C_KEYS["oct-x5t-a-number"], "HS256", _claims({}), {"x5t": "AAAA"})
    ours = compare(kafka_over_https, shim_over_https, [HANDSHAKE, authenticate(first_message(token)), ACK])
    assert ours[1].body.auth_bytes == b""
