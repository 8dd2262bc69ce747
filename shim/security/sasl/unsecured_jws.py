"""Unsecured JSON Web Tokens as a Kafka 3.9 broker validates them for SASL/OAUTHBEARER by default.

Kafka's broker, unless told otherwise (``...oauthbearer.sasl.server.callback.handler.class``), validates OAUTHBEARER
tokens with OAuthBearerUnsecuredValidatorCallbackHandler: an unsigned JWS (``alg`` "none", an empty signature part)
whose claims name the principal (``sub``), an expiry (``exp``, required), maybe an issue time (``iat``) and a scope.
Its options come from the listener's OAuthBearerLoginModule JAAS entry (``unsecuredValidatorPrincipalClaimName``,
``...ScopeClaimName``, ``...RequiredScope``, ``...AllowableClockSkewMs``). This is for tests and development, as in
Kafka: anybody can write such a token.

The quirks kept, because a client sees them: the parts are read with Java's basic Base64 decoder (``+`` and ``/``,
padding optional), not the URL-safe one; a claim that is not a number or a list is its JSON text (``"sub": true``
names the principal ``true``); a string scope is one scope element, spaces and all; a token whose header has no
``alg`` is not refused but crashes Kafka's validator (a NullPointerException), which closes the connection without
an answer. What the client learns of a refused token is only its status: ``invalid_token``, or
``insufficient_scope`` with the required scope.
"""

from __future__ import annotations

import binascii
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from kafka_shim.shim.config.broker_config import ConfigError
from kafka_shim.shim.javacompat.strings import java_trim

PRINCIPAL_CLAIM_OPTION = "unsecuredValidatorPrincipalClaimName"
SCOPE_CLAIM_OPTION = "unsecuredValidatorScopeClaimName"
REQUIRED_SCOPE_OPTION = "unsecuredValidatorRequiredScope"
CLOCK_SKEW_OPTION = "unsecuredValidatorAllowableClockSkewMs"

# Java's String.trim and Kafka's Utils.isBlank: every character up to U+0020 is white space.
_BASE64 = re.compile(r"[A-Za-z0-9+/]*")
# RFC 6749's scope-token characters (OAuthBearerScopeUtils.isValidScopeItem).
_SCOPE_ITEM = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
_LONG_MAX = 2**63 - 1


class IllegalToken(Exception):  # Kafka's OAuthBearerIllegalTokenException
    """A token the validator refuses; ``failure_scope`` is set when only its scope fell short."""

    def __init__(self, description: str, failure_scope: str | None = None) -> None:
        super().__init__(description)
        self.failure_scope = failure_scope


class ValidatorCrash(Exception):
    """A token that makes Kafka's validator throw a runtime exception: Kafka closes the connection unanswered."""


@dataclass(frozen=True)
class UnsecuredValidatorOptions:
    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    clock_skew_ms: int = 0

    @classmethod
    def from_jaas(cls, options: Mapping[str, str], key: str) -> UnsecuredValidatorOptions:
        """The validator's options from the listener's OAuthBearerLoginModule entry; ConfigError naming the option.
        (Kafka reads them at each validation and fails every login on a bad one; kafka-shim refuses to start.)"""
        principal = java_trim(options.get(PRINCIPAL_CLAIM_OPTION) or "") or "sub"
        scope = java_trim(options.get(SCOPE_CLAIM_OPTION) or "") or "scope"
        required: list[str] = []
        for item in java_trim(options.get(REQUIRED_SCOPE_OPTION) or "").split(" "):
            if item and not _SCOPE_ITEM.fullmatch(item):
                raise ConfigError(f"{key}: {REQUIRED_SCOPE_OPTION} has an invalid scope value {item!r} (scope values are "
                                  "printable ASCII without spaces, quotes or backslashes)")
            if item:
                required.append(item)
        skew_text = java_trim(options.get(CLOCK_SKEW_OPTION) or "")
        try:
            skew = int(skew_text) if skew_text else 0
        except ValueError:
            raise ConfigError(f"{key}: {CLOCK_SKEW_OPTION}={skew_text!r} is not a whole number of milliseconds") from None
        if not 0 <= skew < 2**31:
            raise ConfigError(f"{key}: {CLOCK_SKEW_OPTION}={skew_text} must be between 0 and 2147483647 milliseconds")
        return cls(principal, scope, tuple(required), skew)

    def validate(self, token: str, now_ms: int) -> UnsecuredJws:
        return validate(token, self, now_ms)


@dataclass(frozen=True)
class UnsecuredJws:
    """A validated token: its principal name, expiry (ms since the epoch) and scope."""

    principal: str
    lifetime_ms: int
    start_time_ms: int | None
    scope: frozenset[str]


def validate(token: str, options: UnsecuredValidatorOptions, now_ms: int) -> UnsecuredJws:
    """OAuthBearerUnsecuredValidatorCallbackHandler's checks, in its order. IllegalToken for a refused token,
    ValidatorCrash where Kafka's validator throws instead."""
    jws = _parse(token, options)
    issued_at, expires = jws.issued_at, jws.expiration
    if issued_at is not None and 1000 * issued_at > now_ms + options.clock_skew_ms:
        raise IllegalToken(f"The Issued At value ({issued_at:f} seconds) was after the indicated time ({now_ms} ms) plus "
                           f"allowable clock skew ({options.clock_skew_ms} ms)")
    if now_ms - options.clock_skew_ms >= 1000 * expires:
        raise IllegalToken(f"The indicated time ({now_ms} ms) minus allowable clock skew ({options.clock_skew_ms} ms) was "
                           f"on or after the Expiration Time value ({expires:f} seconds)")
    if issued_at is not None and expires <= issued_at:
        raise IllegalToken(f"The Expiration Time time ({expires:f} seconds) was not after the Issued At time "
                           f"({issued_at:f} seconds)")
    for element in options.required_scope:
        if element not in jws.scope:
            required = "[" + ", ".join(options.required_scope) + "]"  # Java's List.toString
            raise IllegalToken(f"The provided scope was missing a required scope ({element})", failure_scope=required)
    return UnsecuredJws(jws.principal, _seconds_to_ms(expires), None if issued_at is None else _seconds_to_ms(issued_at),
                        jws.scope)


@dataclass(frozen=True)
class _Parsed:
    principal: str
    expiration: float
    issued_at: float | None
    scope: frozenset[str]


def _parse(token: str, options: UnsecuredValidatorOptions) -> _Parsed:
    """OAuthBearerUnsecuredJws's constructor."""
    if ".." in token:
        raise IllegalToken("Malformed compact serialization contains '..'")
    splits = token.split(".")
    while splits and splits[-1] == "":  # Java's String.split drops trailing empty strings...
        splits.pop()
    if token.endswith("."):  # ...and Kafka puts back the empty signature
        splits.append("")
    if len(splits) != 3:
        raise IllegalToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
    header, claims = _to_map(splits[0]), _to_map(splits[1])
    if "alg" not in header:
        raise ValidatorCrash("JWS header must have an Algorithm value")
    if header["alg"] != "none":
        raise IllegalToken("Unsecured JWS must have 'none' for an algorithm")
    if splits[2]:
        raise IllegalToken("Unsecured JWS must not contain a digital signature")
    scope = _scope(claims, options.scope_claim)
    expiration = _claim(claims, "exp", float)
    if expiration is None:
        raise IllegalToken("No expiration time in JWT")
    principal = _claim(claims, options.principal_claim, str)
    if principal is None or not java_trim(principal):
        raise IllegalToken(f"No principal name in JWT claim: {options.principal_claim}")
    issued_at = _claim(claims, "iat", float)
    return _Parsed(principal, expiration, issued_at, scope)


def _to_map(part: str) -> dict[str, object]:
    """A header or claims part: Java's basic Base64 decoder, then Jackson's readTree (anything but an object reads
    as no claims; trailing text after the JSON value is not read)."""
    data = _java_base64(part)
    try:
        text = data.decode("utf-8").lstrip(" \t\r\n")
        if not text:
            return {}  # no content: Jackson reads a missing node, which has no fields
        value, _ = json.JSONDecoder(parse_constant=_no_constant).raw_decode(text)
    except ValueError:  # UnicodeDecodeError included
        raise IllegalToken("malformed JSON") from None
    if not isinstance(value, dict):
        return {}
    return {key: _converted(item) for key, item in value.items()}


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _converted(value: object) -> object:
    """OAuthBearerUnsecuredJws.convert: arrays become lists of their elements' text, numbers stay numbers,
    anything else is its text as Jackson's asText gives it."""
    if isinstance(value, list):
        return [_as_text(item) for item in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return _as_text(value)


def _as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _java_double_text(value)
    return ""  # objects and arrays have no text of their own


def _java_double_text(value: float) -> str:
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    text = repr(value)
    if "e" in text:  # Java writes 1.0E20 where Python writes 1e+20
        mantissa, exponent = text.split("e")
        return f"{mantissa if '.' in mantissa else mantissa + '.0'}E{int(exponent)}"
    return text


def _claim(claims: Mapping[str, object], name: str, kind: type) -> object | None:
    """A claim of the given kind (float: any number), IllegalToken for another type, None when absent."""
    value = claims.get(name)
    if value is None:
        return None
    if kind is float and isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # BigInteger.doubleValue
            return math.inf if value > 0 else -math.inf
    if kind is str and isinstance(value, str):
        return value
    wanted = "Number" if kind is float else "String"
    raise IllegalToken(f"The '{name}' claim was not of type {wanted}: {_java_class(value)}")


def _scope(claims: Mapping[str, object], name: str) -> frozenset[str]:
    value = claims.get(name)
    if isinstance(value, str):
        trimmed = java_trim(value)
        return frozenset((trimmed,)) if trimmed else frozenset()
    if value is None:
        return frozenset()
    if not isinstance(value, list):
        raise IllegalToken(f"The '{name}' claim was not of type List: {_java_class(value)}")
    return frozenset(java_trim(item) for item in value if java_trim(item))


def _java_class(value: object) -> str:
    if isinstance(value, list):
        return "ArrayList"
    if isinstance(value, float):
        return "Double"
    if isinstance(value, int):
        return "Integer" if -(2**31) <= value < 2**31 else "Long" if -(2**63) <= value < 2**63 else "BigInteger"
    return "String"


def _java_base64(part: str) -> bytes:
    """java.util.Base64.getDecoder().decode: the basic alphabet, padding optional but exact when present."""
    data = part.rstrip("=")
    padding = len(part) - len(data)
    if not _BASE64.fullmatch(data) or len(data) % 4 == 1:
        raise IllegalToken("malformed Base64 URL encoded value")
    if padding and (padding > 2 or (len(data) + padding) % 4 != 0):
        raise IllegalToken("malformed Base64 URL encoded value")
    try:
        return binascii.a2b_base64(data + "=" * (-len(data) % 4))
    except binascii.Error:
        raise IllegalToken("malformed Base64 URL encoded value") from None


def _seconds_to_ms(seconds: float) -> int:
    """Java's Math.round(seconds * 1000): halves up, saturating at the long range."""
    ms = seconds * 1000
    if math.isnan(ms):
        return 0
    if ms >= _LONG_MAX:
        return _LONG_MAX
    if ms <= -(2**63):
        return -(2**63)
    return math.floor(ms + 0.5)



