"""SASL/OAUTHBEARER with Kafka's secured validator (KIP-768): settings, JWKS endpoints and a real client.

Which tokens are accepted, and the answers a client gets, are compared with a real Kafka 3.9 in
tests/differential/test_oauthbearer_secured.py; these pin what that comparison cannot: start-up refusals with their
keys named, an ``http`` JWKS endpoint read at start-up and again when a token names a new key, and librdkafka
authenticating with signed tokens.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient

from kafka_shim.shim.config.broker_config import BrokerConfig, ConfigError
from kafka_shim.shim.security.sasl.jwks import parse_jwks, select
from kafka_shim.shim.security.sasl.secured_jwt import SecuredValidatorOptions
from kafka_shim.shim.security.sasl.settings import SaslSettings
from kafka_shim.shim.security.sasl.unsecured_jws import IllegalToken
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.jwks_server import JwksServer
from tests.support.sasl_setup import listener_address, sasl_properties
from tests.support.signed_jwt import b64url, certificate_der, ec_key, jwks_document, rsa_key, signed_jwt, standard_claims
from tests.support.tls_material import shared_tls_material

PREFIX = "listener.name.sasl_plaintext."
MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
SECURED = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
WAIT_S = 60.0
NOW_MS = int(time.time() * 1000)
KEY = rsa_key("first")
NEW_KEY = ec_key("second")


def secured(**extra: str) -> dict[str, str]:
    return {PREFIX + "sasl.enabled.mechanisms": "OAUTHBEARER",
            PREFIX + "oauthbearer.sasl.jaas.config": f"{MODULE} required ;",
            PREFIX + "oauthbearer.sasl.server.callback.handler.class": SECURED} | extra


def options(props: dict[str, str]) -> SecuredValidatorOptions:
    found = SaslSettings.from_properties(props, ["SASL_PLAINTEXT"]).listener("SASL_PLAINTEXT").oauthbearer
    assert isinstance(found, SecuredValidatorOptions)
    return found


@pytest.fixture
def jwks_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys.json"
    path.write_text(jwks_document([KEY]))
    return path


def test_settings_take_kafkas_names_and_the_listeners_keys_first(jwks_file: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text(jwks_document([NEW_KEY]))
    found = options(secured(**{"sasl.oauthbearer.jwks.endpoint.url": other.as_uri(),
                               PREFIX + "oauthbearer.sasl.oauthbearer.jwks.endpoint.url": jwks_file.as_uri(),
                               "sasl.oauthbearer.expected.audience": " a, b ,", "sasl.oauthbearer.expected.issuer": " iss ",
                               PREFIX + "sasl.oauthbearer.sub.claim.name": "client_id"}))
    assert [k.kid for k in found.keys()] == ["first"]  # the listener's OAUTHBEARER key over the broker's
    assert (found.audiences, found.issuer, found.sub_claim, found.scope_claim, found.clock_skew_s) == (
        frozenset({"a", "b"}), "iss", "client_id", "scope", 30)
    token = signed_jwt(KEY, "RS256", standard_claims(client_id="svc-7", sub="ignored", aud="b", iss="iss"))
    assert found.validate(token, int(time.time() * 1000)).principal == "svc-7"


@pytest.mark.parametrize("extra, message", [
    ({"sasl.oauthbearer.jwks.endpoint.url": None}, r"sasl\.oauthbearer\.jwks\.endpoint\.url value must be non-null"),
    ({"sasl.oauthbearer.jwks.endpoint.url": "ftp://example.test/keys"}, r"invalid protocol \(ftp\)"),
    ({"sasl.oauthbearer.jwks.endpoint.url": "file:///nonexistent/keys.json"}, "that doesn't exist"),
    ({"sasl.oauthbearer.jwks.endpoint.url": "file:///tmp"}, r"references a directory"),
    ({"sasl.oauthbearer.jwks.endpoint.url": "http://127.0.0.1:9/keys"}, "cannot be read at start-up"),
    ({"sasl.oauthbearer.jwks.endpoint.refresh.ms": "-1"}, "must be at least 0"),
    ({"sasl.oauthbearer.sub.claim.name": "  "}, "must not contain only whitespace"),
])
def test_a_validator_kafka_would_not_start_with_is_refused(jwks_file: Path, extra: dict[str, str], message: str) -> None:
    props = secured(**{"sasl.oauthbearer.jwks.endpoint.url": jwks_file.as_uri()}) | extra
    with pytest.raises(ConfigError, match=message):
        options({key: value for key, value in props.items() if value is not None})


def test_a_jwks_file_that_is_not_a_key_set_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    for text, message in (("not json", "not a JSON document"), ('{"keys": {}}', r'"keys" array'),
                          ('{"keys": [], "keys": []}', "appears twice")):
        path.write_text(text)
        with pytest.raises(ConfigError, match=message):
            options(secured(**{"sasl.oauthbearer.jwks.endpoint.url": path.as_uri()}))


def test_keys_jose4j_cannot_read_or_does_not_know_are_dropped() -> None:
    keys = parse_jwks('{"keys": [{"kty": "EC", "crv": "P-192", "x": "AA", "y": "AA"}, {"kty": "OKP", "crv": "X25519", '
                      '"x": "AA"}, {"kty": "weird"}, {"kty": "RSA", "kid": "no-modulus"}, 7]}', "test")
    assert keys == [] and select(keys, {"alg": "ES256"}) is None


def test_keys_whose_members_jose4j_reads_strictly_are_dropped() -> None:
    """jose4j reads kid, use, alg (and a public key's thumbprints and x5c) strictly: another JSON type drops the key;
    an HMAC key's thumbprint members are not read at all (tests/differential compares these with Kafka)."""
    good = KEY.jwk()
    odd = [good | {"kid": 5}, good | {"use": 1}, good | {"x5t": 7}, good | {"key_ops": "verify"}, good | {"x5c": ["AAAA"]},
           good | {"x5c": None}, good | {"x5c": "not-a-list"}]
    kept = [good | {"kid": "odd-" + str(i)} for i in range(3)]
    keys = parse_jwks(json.dumps({"keys": odd + kept + [{"kty": "oct", "k": "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0",
                                                           "kid": "hmac", "x5t": 5}]}), "test")
    assert [k.kid for k in keys] == ["odd-0", "odd-1", "odd-2", "hmac"]


def test_a_keys_x5c_certificate_stands_in_for_its_thumbprints() -> None:
    certificate = certificate_der(KEY)
    keys = parse_jwks(json.dumps({"keys": [KEY.jwk() | {"x5c": [base64.b64encode(certificate).decode()]}]}), "test")
    sha1, sha256 = (b64url(h(certificate).digest()) for h in (hashlib.sha1, hashlib.sha256))
    assert select(keys, {"alg": "RS256", "kid": "first", "x5t": sha1}) == keys[0]
    assert select(keys, {"alg": "RS256", "kid": "first", "x5t#S256": sha256}) == keys[0]
    assert select(keys, {"alg": "RS256", "kid": "first", "x5t": sha256}) is None


@pytest.fixture
def endpoint() -> Iterator[JwksServer]:
    server = JwksServer(jwks_document([KEY]))
    yield server
    server.close()


def test_an_endpoint_is_read_again_when_a_token_names_a_key_it_did_not_have(endpoint: JwksServer) -> None:
    found = options(secured(**{"sasl.oauthbearer.jwks.endpoint.url": endpoint.url}))
    assert endpoint.reads == 1
    now_ms = int(time.time() * 1000)
    assert found.validate(signed_jwt(KEY, "RS256", standard_claims()), now_ms).principal == "alice"
    endpoint.documents.append(jwks_document([KEY, NEW_KEY]))  # the issuer rotates in a new key
    rotated = signed_jwt(NEW_KEY, "ES256", standard_claims(sub="bob"))
    with pytest.raises(IllegalToken):
        found.validate(rotated, now_ms)  # refused, as Kafka refuses it while it reads the set again
    deadline = time.monotonic() + WAIT_S
    while not any(k.kid == "second" for k in found.keys()):
        assert time.monotonic() < deadline, "the endpoint was not read again"
        time.sleep(0.05)
    assert found.validate(rotated, int(time.time() * 1000)).principal == "bob"
    # A key id still missing is asked for again only after a minute (RefreshingHttpsJwks's limit).
    source = found.missing_key.__self__  # type: ignore[attr-defined]
    source._wake.clear()
    found.missing_key("third")
    assert source._wake.is_set()
    source._wake.clear()
    found.missing_key("third")
    assert not source._wake.is_set()


@pytest.fixture
def https_endpoint() -> Iterator[str]:
    server = JwksServer(jwks_document([KEY]), tls=True)
    yield server.url
    server.close()


def _jaas_with(**jaas_options: str) -> str:
    # Kafka's broker logs in with this entry at start-up: with options, it must make a token of its own.
    quoted = " ".join(f'{name}="{value}"' for name, value in {"unsecuredLoginStringClaim_sub": "broker", **jaas_options}.items())
    return f"{MODULE} required {quoted};"


def test_an_https_endpoint_is_trusted_through_the_jaas_entrys_ssl_options(https_endpoint: str) -> None:
    """JaasOptionsUtils: the ssl.* options of the listener's OAUTHBEARER JAAS entry configure the TLS client that
    reads an https JWKS endpoint; without them the system's authorities are trusted, and the test CA is not one."""
    ca = str(shared_tls_material().ca_path)
    found = options(secured(**{"sasl.oauthbearer.jwks.endpoint.url": https_endpoint, PREFIX + "oauthbearer.sasl.jaas.config":
                               _jaas_with(**{"ssl.truststore.type": "PEM", "ssl.truststore.location": ca})}))
    assert found.validate(signed_jwt(KEY, "RS256", standard_claims()), int(time.time() * 1000)).principal == "alice"
    with pytest.raises(ConfigError, match=r"JWKS endpoint cannot be read at start-up: .*CERTIFICATE_VERIFY_FAILED"):
        options(secured(**{"sasl.oauthbearer.jwks.endpoint.url": https_endpoint,
                           PREFIX + "oauthbearer.sasl.jaas.config": _jaas_with(**{"ssl.truststore.type": "PEM"})}))
    # The host name is checked whatever ssl.endpoint.identification.algorithm says (jose4j reads through an
    # HttpsURLConnection): the certificate names localhost and 127.0.0.1, not 127.0.0.2.
    elsewhere = https_endpoint.replace("localhost", "127.0.0.2")
    with pytest.raises(ConfigError, match="cannot be read at start-up"):
        options(secured(**{"sasl.oauthbearer.jwks.endpoint.url": elsewhere, PREFIX + "oauthbearer.sasl.jaas.config": _jaas_with(
            **{"ssl.truststore.type": "PEM", "ssl.truststore.location": ca, "ssl.endpoint.identification.algorithm": ""})}))


def test_ssl_options_a_kafka_client_refuses_stop_the_broker(https_endpoint: str, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-ca.pem"
    with pytest.raises(ConfigError, match=r"oauthbearer\.sasl\.jaas\.config \(its ssl\.\* options, for the https JWKS endpoint") as refused:
        options(secured(**{"sasl.oauthbearer.jwks.endpoint.url": https_endpoint, PREFIX + "oauthbearer.sasl.jaas.config":
                           _jaas_with(**{"ssl.truststore.type": "PEM", "ssl.truststore.location": str(missing)})}))
    assert str(missing) in str(refused.value)


def test_librdkafka_authenticates_with_signed_tokens(jwks_file: Path) -> None:
    props = sasl_properties() | secured(**{"sasl.oauthbearer.jwks.endpoint.url": jwks_file.as_uri()})
    props["super.users"] = "User:admin;User:svc-reports"
    with EmbeddedBroker(BrokerConfig.from_properties(props)) as broker:
        host, port = listener_address(broker.broker, "SASL_PLAINTEXT")

        errors: list[KafkaError] = []

        def admin(key, sub: str) -> AdminClient:
            def oauth_cb(_config: str) -> tuple[str, float]:
                return signed_jwt(key, "RS256", standard_claims(sub=sub)), time.time() + 3600
            return AdminClient({"bootstrap.servers": f"{host}:{port}", "security.protocol": "SASL_PLAINTEXT",
                                "sasl.mechanism": "OAUTHBEARER", "oauth_cb": oauth_cb, "error_cb": errors.append})

        reports = admin(KEY, "svc-reports")
        reports.create_topics([_new_topic("reports")])["reports"].result(timeout=WAIT_S)  # a super user by its subject
        assert "reports" in reports.list_topics(timeout=WAIT_S).topics
        assert not errors
        outsider = admin(rsa_key("first"), "svc-reports")  # signed by a key the set does not hold
        deadline = time.monotonic() + WAIT_S
        while not any(e.code() == KafkaError._AUTHENTICATION for e in errors):
            assert time.monotonic() < deadline, f"no authentication error reported: {errors}"
            outsider.poll(0.1)


def _new_topic(name: str):
    from confluent_kafka.admin import NewTopic

    return NewTopic(name, num_partitions=1, replication_factor=1)


def test_an_emulated_broker_from_before_kafka_3_1_has_no_secured_validator(jwks_file: Path) -> None:
    props = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0"} | secured(**{"sasl.oauthbearer.jwks.endpoint.url": jwks_file.as_uri()})
    with EmbeddedBroker(BrokerConfig.from_properties(props | {"kafka.version": "3.1"})):
        pass
    with pytest.raises(ConfigError, match=r"before Kafka 3\.1, which has no secured OAUTHBEARER validator \(KIP-768\)"):
        EmbeddedBroker(BrokerConfig.from_properties(props | {"kafka.version": "3.0"})).start()
