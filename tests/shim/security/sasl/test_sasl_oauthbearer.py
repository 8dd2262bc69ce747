"""SASL/OAUTHBEARER with Kafka's default validator of unsecured JWTs: settings, the token checks and the exchange.

The answers as a client sees them are compared with a real Kafka 3.9 in tests/differential/test_oauthbearer.py; these
pin the pieces without a broker: what a misconfigured listener says at start-up, and the validator's reading of
token shapes the differential test does not send.
"""

from __future__ import annotations

import base64
import json

import pytest

from kafka_shim.protocol.sasl_oauthbearer import unsecured_token
from kafka_shim.shim.config.broker_config import ConfigError
from kafka_shim.shim.security.sasl.errors import InvalidCredentialsError, SaslAuthenticationError, SaslProtocolViolation
from kafka_shim.shim.security.sasl.oauthbearer import OAuthBearerServer
from kafka_shim.shim.security.sasl.settings import SaslSettings
from kafka_shim.shim.security.sasl.unsecured_jws import (
    IllegalToken,
    UnsecuredValidatorOptions,
    ValidatorCrash,
    validate,
)

PREFIX = "listener.name.sasl_plaintext."
MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
NOW_MS = 1_800_000_000_000


def settings(jaas: str | None = f"{MODULE} required;", **extra: str) -> SaslSettings:
    props = {PREFIX + "sasl.enabled.mechanisms": "OAUTHBEARER", **extra}
    if jaas is not None:
        props[PREFIX + "oauthbearer.sasl.jaas.config"] = jaas
    return SaslSettings.from_properties(props, ["SASL_PLAINTEXT"])


def token(claims: dict, header: dict | None = None) -> str:
    parts = (header or {"alg": "none"}, claims)
    return ".".join(base64.b64encode(json.dumps(p).encode()).decode().rstrip("=") for p in parts) + "."


def first(token_text: str, authzid: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {token_text}\x01\x01".encode()


def test_the_validator_options_come_from_the_listeners_login_module() -> None:
    s = settings(f'{MODULE} required unsecuredLoginStringClaim_sub="admin" unsecuredValidatorPrincipalClaimName="uid" '
                 'unsecuredValidatorRequiredScope="read  write" unsecuredValidatorAllowableClockSkewMs=" 500 ";')
    assert s.listener("SASL_PLAINTEXT").oauthbearer == UnsecuredValidatorOptions("uid", "scope", ("read", "write"), 500)
    assert settings().listener("SASL_PLAINTEXT").oauthbearer == UnsecuredValidatorOptions()


@pytest.mark.parametrize("jaas, extra, message", [
    (None, {}, r"oauthbearer\.sasl\.jaas\.config is not set .*unsecuredLoginStringClaim_sub"),
    (f"{MODULE} required unsecuredValidatorRequiredScope=\"kafka\";", {}, r"No principal name in JWT claim: sub"),
    (f"{MODULE} required unsecuredLoginExtension_a=\"b\";", {}, "Extensions provided in login context without a token"),
    (f"{MODULE} required unsecuredLoginStringClaim_sub=a unsecuredValidatorAllowableClockSkewMs=\"-1\";", {},
     "between 0 and 2147483647"),
    (f"{MODULE} required unsecuredLoginStringClaim_sub=a unsecuredValidatorAllowableClockSkewMs=\"soon\";", {},
     "not a whole number"),
    (f"{MODULE} required;", {PREFIX + "oauthbearer.sasl.server.callback.handler.class": "com.example.TokenChecker"},
     "OAuthBearerUnsecuredValidatorCallbackHandler .* or its .*OAuthBearerValidatorCallbackHandler"),
    ("org.apache.kafka.common.security.plain.PlainLoginModule required;", {}, "needs " + MODULE),
])
def test_a_listener_kafka_would_not_serve_is_refused_at_start_up(jaas, extra, message) -> None:
    with pytest.raises(ConfigError, match=message):
        settings(jaas, **extra)


def test_kafkas_readings_of_odd_claims() -> None:
    options = UnsecuredValidatorOptions()
    # A claim that is neither a number nor a list is its JSON text.
    assert validate(token({"sub": True, "exp": 1_900_000_000}), options, NOW_MS).principal == "true"
    assert validate(token({"sub": None, "exp": 1_900_000_000}), options, NOW_MS).principal == "null"
    # An expiry beyond Java's long milliseconds saturates, as Math.round does.
    huge = token({"sub": "a", "exp": 0}).split(".")
    huge[1] = base64.b64encode(b'{"sub":"a","exp":1e400}').decode()
    assert validate(".".join(huge), options, NOW_MS).lifetime_ms == 2**63 - 1
    with pytest.raises(IllegalToken, match="not of type Number: String"):
        validate(token({"sub": "a", "exp": "1900000000"}), options, NOW_MS)
    with pytest.raises(IllegalToken, match="not of type String: Integer"):
        validate(token({"sub": 7, "exp": 1_900_000_000}), options, NOW_MS)
    with pytest.raises(ValidatorCrash):
        validate(token({"sub": "a", "exp": 1_900_000_000}, header={"typ": "JWT"}), options, NOW_MS)


def test_base64_as_javas_basic_decoder_reads_it() -> None:
    options = UnsecuredValidatorOptions()
    good = token({"sub": "alice", "exp": 1_900_000_000})
    header, claims, _ = good.split(".")
    padded = base64.b64encode(json.dumps({"sub": "alice", "exp": 1_900_000_000}).encode()).decode()
    assert validate(f"{header}.{padded}.", options, NOW_MS).principal == "alice"  # padding is optional
    for bad in (claims.replace("e", "-", 1) if "e" in claims else claims + "-", claims + "===", claims[:-1] + "=" + claims[-1]):
        with pytest.raises(IllegalToken):
            validate(f"{header}.{bad}.", options, NOW_MS)


def test_clock_skew_and_scope() -> None:
    late = token({"sub": "a", "exp": NOW_MS // 1000 - 1, "scope": "kafka"})
    with pytest.raises(IllegalToken):
        validate(late, UnsecuredValidatorOptions(), NOW_MS)
    assert validate(late, UnsecuredValidatorOptions(clock_skew_ms=5000), NOW_MS).principal == "a"
    with pytest.raises(IllegalToken) as refused:
        validate(token({"sub": "a", "exp": 1_900_000_000, "scope": ["read"]}),
                 UnsecuredValidatorOptions(required_scope=("read", "write")), NOW_MS)
    assert refused.value.failure_scope == "[read, write]"


def test_the_exchange_challenge_retry_and_authorization_id() -> None:
    clock = lambda: NOW_MS  # noqa: E731
    server = OAuthBearerServer(UnsecuredValidatorOptions(), clock_ms=clock)
    expired = token({"sub": "alice", "exp": NOW_MS // 1000 - 10})
    assert server.evaluate(first(expired)) == b'{"status":"invalid_token"}' and not server.complete
    with pytest.raises(SaslAuthenticationError, match=r'^\{"status":"invalid_token"\}$'):
        server.evaluate(b"\x01")
    retry = OAuthBearerServer(UnsecuredValidatorOptions(), clock_ms=clock)
    retry.evaluate(first(expired))
    assert retry.evaluate(first(unsecured_token("alice", now_s=NOW_MS / 1000))) == b"" and retry.complete
    assert retry.authorization_id == "alice" and retry.credential_expiry_ms == NOW_MS + 3_600_000
    mismatch = OAuthBearerServer(UnsecuredValidatorOptions(), clock_ms=clock)
    with pytest.raises(SaslAuthenticationError, match=r"authorization id \(bob\) that is different .* name \(alice\)"):
        mismatch.evaluate(first(unsecured_token("alice", now_s=NOW_MS / 1000), authzid="bob"))
    with pytest.raises(InvalidCredentialsError) as generic:
        OAuthBearerServer(UnsecuredValidatorOptions(), clock_ms=clock).evaluate(b"n,,\x01auth=Bearer x\x01")
    assert str(generic.value).endswith("with SASL mechanism OAUTHBEARER")
    with pytest.raises(SaslProtocolViolation):  # Kafka's server throws a runtime exception: no answer
        OAuthBearerServer(UnsecuredValidatorOptions(), clock_ms=clock).evaluate(b"n,,\x01auth=Basic abc\x01\x01")


def test_tokens_made_for_clients_use_the_alphabet_kafka_reads() -> None:
    # Principals whose JSON would hold '-' or '_' in URL-safe Base64 ('?' and '>' make 0x3f / 0x3e bytes).
    for principal in ("a?>b", "~~~", "ü"):
        made = unsecured_token(principal, scope=("kafka",), now_s=NOW_MS / 1000)
        assert "-" not in made and "_" not in made
        assert validate(made, UnsecuredValidatorOptions(required_scope=("kafka",)), NOW_MS).principal == principal


def test_an_emulated_broker_from_before_kafka_2_0_has_no_oauthbearer() -> None:
    from kafka_shim.shim.config.broker_config import BrokerConfig
    from kafka_shim.shim.testing.embedded import EmbeddedBroker

    props = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", PREFIX + "sasl.enabled.mechanisms": "OAUTHBEARER",
             PREFIX + "oauthbearer.sasl.jaas.config": f"{MODULE} required;"}
    with EmbeddedBroker(BrokerConfig.from_properties(props | {"kafka.version": "2.0"})):
        pass
    with pytest.raises(ConfigError, match=r"before Kafka 2.0 \(KIP-255\)"):
        EmbeddedBroker(BrokerConfig.from_properties(props | {"kafka.version": "1.1"})).start()
