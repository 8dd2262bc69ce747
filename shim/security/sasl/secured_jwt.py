"""Signed JSON Web Tokens as Kafka 3.9's secured OAUTHBEARER validator (KIP-768) checks them.

A broker configured with ``...oauthbearer.sasl.server.callback.handler.class=
org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler`` validates each token with
ValidatorAccessTokenValidator: a signed JWS whose key is in the JWKS at ``sasl.oauthbearer.jwks.endpoint.url``
(shim.security.sasl.jwks_source), read as jose4j 0.9.4 reads it (a lenient base64url, ``crit`` only ``b64``), whose
``exp`` and ``iat`` are present, ``exp`` not past (allowing ``sasl.oauthbearer.clock.skew.seconds``) nor before
``iat`` or ``nbf``, ``nbf`` if present reached, ``aud`` as expected (and absent when no audience is configured),
``iss`` as expected, ``sub`` and ``jti`` strings if present; then Kafka's own checks of the subject (``sasl.oauthbearer.sub.claim.name``: a non-blank string, the
principal, trimmed) and the scope (``sasl.oauthbearer.scope.claim.name``: a string is one scope, a list must hold no
blank or repeated item). Whatever the reason, a refused token is told only ``invalid_token``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass

from kafka_shim.shim.javacompat.strings import java_trim
from kafka_shim.shim.security.sasl.jwks import (
    Jwk,
    SignatureError,
    known_algorithm,
    lenient_base64,
    no_duplicate_members,
    select,
    verify,
)
from kafka_shim.shim.security.sasl.unsecured_jws import IllegalToken, ValidatorCrash

_LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class SecuredToken:
    """A validated token: its principal name and expiry (ms since the epoch)."""

    principal: str
    lifetime_ms: int
    start_time_ms: int | None


@dataclass(frozen=True)
class SecuredValidatorOptions:
    keys: Callable[[], list[Jwk]]  # the JWKS's keys as last read
    missing_key: Callable[[str | None], None]  # told when no key fits a token (an endpoint is then read again)
    clock_skew_s: int = 30
    audiences: frozenset[str] | None = None
    issuer: str | None = None
    scope_claim: str = "scope"
    sub_claim: str = "sub"

    def validate(self, token: str, now_ms: int) -> SecuredToken:
        return validate(token, self, now_ms)


def validate(token: str, options: SecuredValidatorOptions, now_ms: int) -> SecuredToken:
    """IllegalToken for a token Kafka's validator refuses (``invalid_token``), ValidatorCrash where it throws."""
    header_part, payload_part, signature_part = _sections(token)
    header = _json_object(header_part, "header")
    alg = header.get("alg")
    if not isinstance(alg, str) or not alg:
        raise IllegalToken("the JWS header has no algorithm")
    if alg == "none" or not known_algorithm(alg):
        raise IllegalToken(f"the algorithm {alg!r} is not allowed")
    for name in ("kid", "x5t", "x5t#S256"):
        if header.get(name) is not None and not isinstance(header[name], str):
            raise IllegalToken(f"the JWS header's {name} is not a string")
    _check_crit(header)
    claims = _json_object(payload_part, "payload")
    signature = lenient_base64(signature_part)
    key = select(options.keys(), header)
    if key is None:
        options.missing_key(header.get("kid"))
        raise IllegalToken(f"no key in the JWKS fits a token signed with {alg} (kid {header.get('kid')!r})")
    signing_input = f"{header_part}.{payload_part}".encode("ascii")
    try:
        verify(key, alg, signing_input, signature)
    except SignatureError as exc:
        raise IllegalToken(str(exc)) from None
    _string_claims(claims, options)
    expiration, issued_at = _times(claims, options, now_ms)
    # Kafka's own checks, in ValidatorAccessTokenValidator.validate's order (a crash, where Java's arithmetic throws,
    # must come where Kafka's comes).
    subject = claims.get(options.sub_claim)
    if subject is not None and not isinstance(subject, str):
        raise IllegalToken(f"Could not extract the '{options.sub_claim}' claim from the access token")
    _scopes(claims.get(options.scope_claim), options.scope_claim)
    expiration_ms = _millis(expiration, "exp")
    if expiration_ms < 0:
        raise IllegalToken(f"exp value must be non-negative; value given was \"{expiration_ms}\"")
    principal = _text(options.sub_claim, subject)
    issued_at_ms = _millis(issued_at, "iat")
    if issued_at_ms < 0:
        raise IllegalToken(f"iat value must be null or non-negative; value given was \"{issued_at_ms}\"")
    return SecuredToken(principal, expiration_ms, issued_at_ms)


def _sections(token: str) -> tuple[str, str, str]:
    """SerializedJwt: the trimmed token in three non-blank dot-separated sections (Java's split drops trailing
    empty ones); then jose4j's own split, which keeps them (``a.b.c.`` has four parts for it)."""
    token = java_trim(token)
    if not token:
        raise IllegalToken("Empty JWT provided")
    splits = token.split(".")
    while splits and splits[-1] == "":
        splits.pop()
    if len(splits) != 3:
        raise IllegalToken(f"expected three sections, {len(splits)} provided")
    if any(not java_trim(part) for part in splits):
        raise IllegalToken("a section is missing")
    if token.count(".") != 2:
        raise IllegalToken("a JWS compact serialization has three parts")
    return splits[0], splits[1], splits[2]


def _json_object(part: str, what: str) -> dict[str, object]:
    try:
        value = json.loads(lenient_base64(part).decode("utf-8"), object_pairs_hook=no_duplicate_members, parse_constant=_no_constant)
    except ValueError:  # UnicodeDecodeError included
        raise IllegalToken(f"the {what} is not a JSON object") from None
    if not isinstance(value, dict):
        raise IllegalToken(f"the {what} is not a JSON object")
    return value


def _check_crit(header: dict[str, object]) -> None:
    """jose4j understands one critical header, ``b64``; an unencoded payload (``b64`` false) cannot be a token."""
    crit = header.get("crit")
    if crit is None:
        return
    if not isinstance(crit, list) or any(name != "b64" for name in crit):
        raise IllegalToken("the JWS header names critical extensions jose4j does not process")
    if header.get("b64") is False:
        raise IllegalToken("an unencoded payload (b64 false) is not JSON claims")


def _string_claims(claims: dict[str, object], options: SecuredValidatorOptions) -> None:
    """jose4j's validators of ``aud``, ``iss``, ``sub`` and ``jti``: ``aud`` only when an audience is expected,
    and then required; the others strings when present."""
    audience = claims.get("aud")
    if options.audiences:
        if audience is None:
            raise IllegalToken("No Audience (aud) claim present")
        values = [audience] if isinstance(audience, str) else audience
        if not isinstance(values, list) or not all(isinstance(item, str) for item in values):
            raise IllegalToken("the aud claim is not a string or an array of strings")
        if not options.audiences.intersection(values):
            raise IllegalToken("Audience (aud) claim does not contain an acceptable identifier")
    elif audience is not None:
        raise IllegalToken("Audience (aud) claim present in the JWT but no expected audience value(s) were provided")
    issuer = claims.get("iss")
    if options.issuer is not None and issuer is None:
        raise IllegalToken("No Issuer (iss) claim present")
    if issuer is not None and (not isinstance(issuer, str) or (options.issuer is not None and issuer != options.issuer)):
        raise IllegalToken("Issuer (iss) claim value is not the expected one")
    for name in ("sub", "jti"):
        if claims.get(name) is not None and not isinstance(claims[name], str):
            raise IllegalToken(f"the {name} claim is not a string")


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _numeric_date(claims: dict[str, object], name: str) -> int | None:
    """A NumericDate claim as jose4j reads it: the number's Java ``longValue`` (a fraction dropped, a double
    saturating); IllegalToken for a value that is not a number, or an integer past a long (a BigInteger)."""
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise IllegalToken(f"the {name} claim is not a number")
    if isinstance(value, float):
        if math.isnan(value):
            return 0
        if value >= 2.0**63:
            return _LONG_MAX
        if value <= -(2.0**63):
            return -(2**63)
        return int(value)
    if not -(2**63) <= value <= _LONG_MAX:
        raise IllegalToken(f"the {name} claim is not a NumericDate (too large a number)")
    return value


def _times(claims: dict[str, object], options: SecuredValidatorOptions, now_ms: int) -> tuple[int, int]:
    """jose4j's NumericDateValidator (exp and iat required, clock skew in whole seconds)."""
    expiration = _numeric_date(claims, "exp")
    issued_at = _numeric_date(claims, "iat")
    not_before = _numeric_date(claims, "nbf")
    now_s = now_ms // 1000
    if expiration is None:
        raise IllegalToken("No Expiration Time (exp) claim present")
    if issued_at is None:
        raise IllegalToken("No Issued At (iat) claim present")
    if now_s - options.clock_skew_s >= expiration:
        raise IllegalToken("the token has expired")
    if expiration < issued_at:
        raise IllegalToken("the Expiration Time (exp) is before the Issued At time (iat)")
    if not_before is not None and expiration < not_before:
        raise IllegalToken("the Expiration Time (exp) is before the Not Before time (nbf)")
    if not_before is not None and now_s + options.clock_skew_s < not_before:
        raise IllegalToken("the token is not valid yet (nbf)")
    return expiration, issued_at


def _millis(seconds: int, name: str) -> int:
    """NumericDate.getValueInMillis, which throws (an ArithmeticException: Kafka closes the connection) where the
    milliseconds pass a Java long."""
    ms = seconds * 1000
    if not -(2**63) <= ms <= _LONG_MAX:
        raise ValidatorCrash(f"the {name} claim in milliseconds overflows a Java long")
    return ms


def _scopes(value: object, name: str) -> None:
    if isinstance(value, str):
        items: list[object] = [value]
    elif isinstance(value, list):
        items = value
    else:
        return  # absent, or neither a string nor a list: no scope
    seen = set()
    for item in items:
        if item is not None and not isinstance(item, str):
            raise ValidatorCrash(f"a {name} item is not a string: {item!r} (a ClassCastException in Kafka)")
        scope = _text(name, item)
        if scope in seen:
            raise IllegalToken(f"{name} value must not contain duplicates - {scope} already present")
        seen.add(scope)


def _text(name: str, value: object) -> str:
    """ClaimValidationUtils.validateString."""
    if value is None:
        raise IllegalToken(f"{name} value must be non-null")
    assert isinstance(value, str)
    if not value:
        raise IllegalToken(f"{name} value must be non-empty")
    trimmed = java_trim(value)
    if not trimmed:
        raise IllegalToken(f"{name} value must not contain only whitespace")
    return trimmed
