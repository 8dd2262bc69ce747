"""Signed JSON Web Tokens as Kafka 3.9's secured OAUTHBEARER validator (KIP-768) checks them.

A broker configured with ``...oauthbearer.sasl.server.callback.handler.class=
org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler`` validates each token with
ValidatorAccessTokenValidator: a signed JWS whose key is in the JWKS at ``sasl.oauthbearer.jwks.endpoint.url``
(shim.security.sasl.jwks_source), whose ``exp`` and ``iat`` are present, ``exp`` not past (allowing
``sasl.oauthbearer.clock.skew.seconds``), ``nbf`` if present reached, ``aud`` and ``iss`` as expected when those are
configured; then Kafka's own checks of the subject (``sasl.oauthbearer.sub.claim.name``: a non-blank string, the
principal, trimmed) and the scope (``sasl.oauthbearer.scope.claim.name``: a string is one scope, a list must hold no
blank or repeated item). Whatever the reason, a refused token is told only ``invalid_token``.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from kafka_shim.shim.security.sasl.jwks import Jwk, SignatureError, known_algorithm, select, verify
from kafka_shim.shim.security.sasl.unsecured_jws import IllegalToken, ValidatorCrash

_JAVA_BLANKS = "".join(map(chr, range(33)))
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")
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
    if "crit" in header:
        raise IllegalToken("the JWS header names critical extensions jose4j does not process")
    claims = _json_object(payload_part, "payload")
    signature = _base64url(signature_part, "signature")
    kid = header.get("kid") if isinstance(header.get("kid"), str) else None
    candidates = select(options.keys(), alg, kid)
    if not candidates:
        options.missing_key(kid)
        raise IllegalToken(f"no key in the JWKS fits a token signed with {alg} (kid {kid!r})")
    signing_input = f"{header_part}.{payload_part}".encode("ascii")
    try:
        verify(candidates[0], alg, signing_input, signature)
    except SignatureError as exc:
        raise IllegalToken(str(exc)) from None
    expiration, issued_at = _times(claims, options, now_ms)
    _audience_and_issuer(claims, options)
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
    empty ones)."""
    token = token.strip(_JAVA_BLANKS)
    if not token:
        raise IllegalToken("Empty JWT provided")
    splits = token.split(".")
    while splits and splits[-1] == "":
        splits.pop()
    if len(splits) != 3:
        raise IllegalToken(f"expected three sections, {len(splits)} provided")
    if any(not part.strip(_JAVA_BLANKS) for part in splits):
        raise IllegalToken("a section is missing")
    if any(part != part.strip(_JAVA_BLANKS) for part in splits):
        raise IllegalToken("a section holds white space")  # jose4j reads the token untrimmed inside
    return splits[0], splits[1], splits[2]


def _base64url(part: str, what: str) -> bytes:
    """jose4j's Base64Url decoding: the URL-safe alphabet, '=' padding allowed."""
    part = part.rstrip("=")
    if not _BASE64URL.fullmatch(part) or len(part) % 4 == 1:
        raise IllegalToken(f"the {what} is not base64url")
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise IllegalToken(f"the {what} is not base64url") from None


def _json_object(part: str, what: str) -> dict[str, object]:
    data = _base64url(part, what)
    try:
        value = json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except ValueError:
        raise IllegalToken(f"the {what} is not a JSON object") from None
    if not isinstance(value, dict):
        raise IllegalToken(f"the {what} is not a JSON object")
    return value


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate member {key!r}")
        result[key] = value
    return result


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _numeric_date(claims: dict[str, object], name: str) -> int | None:
    """A NumericDate claim as jose4j reads it: the number's Java ``longValue`` (a fraction dropped, a double
    saturating, a bigger integer keeping its low 64 bits); IllegalToken for a value that is not a number."""
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
    return _wrapped(value)


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
    if not_before is not None and now_s + options.clock_skew_s < not_before:
        raise IllegalToken("the token is not valid yet (nbf)")
    return expiration, issued_at


def _wrapped(value: int) -> int:
    value &= 2**64 - 1
    return value - 2**64 if value > _LONG_MAX else value


def _millis(seconds: int, name: str) -> int:
    """NumericDate.getValueInMillis, which throws (an ArithmeticException: Kafka closes the connection) where the
    milliseconds pass a Java long."""
    ms = seconds * 1000
    if not -(2**63) <= ms <= _LONG_MAX:
        raise ValidatorCrash(f"the {name} claim in milliseconds overflows a Java long")
    return ms


def _audience_and_issuer(claims: dict[str, object], options: SecuredValidatorOptions) -> None:
    if options.audiences:
        audience = claims.get("aud")
        if audience is None:
            raise IllegalToken("No Audience (aud) claim present")
        values = [audience] if isinstance(audience, str) else audience
        if not isinstance(values, list) or not all(isinstance(item, str) for item in values):
            raise IllegalToken("the aud claim is not a string or an array of strings")
        if not options.audiences.intersection(values):
            raise IllegalToken("Audience (aud) claim does not contain an acceptable identifier")
    if options.issuer is not None:
        issuer = claims.get("iss")
        if issuer is None:
            raise IllegalToken("No Issuer (iss) claim present")
        if issuer != options.issuer:
            raise IllegalToken("Issuer (iss) claim value is not the expected one")


def _subject(claims: dict[str, object], name: str) -> str:
    value = claims.get(name)
    if value is not None and not isinstance(value, str):
        raise IllegalToken(f"Could not extract the '{name}' claim from the access token")
    return _text(name, value)


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
    trimmed = value.strip(_JAVA_BLANKS)
    if not trimmed:
        raise IllegalToken(f"{name} value must not contain only whitespace")
    return trimmed
