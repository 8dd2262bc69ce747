"""SASL/OAUTHBEARER's client first message (RFC 7628 as Kafka's OAuthBearerClientInitialResponse reads it) and
unsecured JWTs, sans-IO: shared by the broker's OAUTHBEARER server (shim.security.sasl.oauthbearer), kafka-shim's
client and test fixture, the trace replayer and the capture proxy (traces may not import shim).

    n,[a=<authzid>],^Aauth=Bearer <token>^A[<key>=<value>^A]*^A

An unsecured JWT is ``base64(header).base64(claims).`` with header ``{"alg":"none"}`` and an empty signature, as
Kafka's default login (OAuthBearerUnsecuredLoginCallbackHandler) makes one and its default validator reads it.
"""

from __future__ import annotations

import binascii
import json
import re
import time
from dataclasses import dataclass

CONTROL_A = b"\x01"

# OAuthBearerClientInitialResponse's grammar (Java regular expressions, matched whole).
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_KVPAIRS = r"(?:[A-Za-z]+=[\x21-\x7e \t\r\n]+\x01)*"
_FIRST_MESSAGE = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>{_KVPAIRS})\x01")
_AUTH = re.compile(r"(?P<scheme>[A-Za-z0-9_]+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")


class FirstMessageError(ValueError):
    """A client first message Kafka refuses (a SaslException there); the text is Kafka's description."""


@dataclass(frozen=True)
class FirstMessage:
    authorization_id: str  # "" when the client names none
    scheme: str  # "Bearer" (any case) for a token Kafka will read
    token: str
    extensions: dict[str, str]


def parse_first_message(data: bytes) -> FirstMessage:
    """The client's first message; FirstMessageError where Kafka's parser throws a SaslException."""
    text = bytes(data).decode("utf-8", "replace")
    first = _FIRST_MESSAGE.fullmatch(text)
    if first is None:
        raise FirstMessageError("Invalid OAUTHBEARER client first message")
    pairs = dict(pair.split("=", 1) for pair in first["kvpairs"].split("\x01") if pair)
    auth = pairs.pop("auth", None)
    if auth is None:
        raise FirstMessageError("Invalid OAUTHBEARER client first message: 'auth' not specified")
    bearer = _AUTH.fullmatch(auth)
    if bearer is None:
        raise FirstMessageError("Invalid OAUTHBEARER client first message: invalid 'auth' format")
    return FirstMessage(first["authzid"] or "", bearer["scheme"], bearer["token"], pairs)


def first_message(token: str, authorization_id: str = "", extensions: dict[str, str] | None = None) -> bytes:
    """A client first message carrying ``token`` (OAuthBearerClientInitialResponse.toBytes)."""
    extra = "".join(f"\x01{key}={value}" for key, value in (extensions or {}).items())
    authzid = f"a={authorization_id}" if authorization_id else ""
    return f"n,{authzid},\x01auth=Bearer {token}{extra}\x01\x01".encode()


def unsecured_token(principal: str, lifetime_s: float = 3600.0, scope: tuple[str, ...] = (), now_s: float | None = None) -> str:
    """An unsecured JWS for ``principal`` as Kafka's validator reads it: ``alg`` none, ``sub``, ``iat`` now, ``exp``
    ``lifetime_s`` later, the scope as a list if given. Encoded in Base64's basic alphabet: Kafka's validator
    decodes with Java's basic decoder, which refuses the URL-safe ``-`` and ``_``."""
    issued = time.time() if now_s is None else now_s
    claims: dict[str, object] = {"sub": principal, "iat": int(issued), "exp": int(issued + lifetime_s)}
    if scope:
        claims["scope"] = list(scope)
    parts = (json.dumps({"alg": "none"}, separators=(",", ":")), json.dumps(claims, separators=(",", ":")))
    return ".".join(binascii.b2a_base64(p.encode("utf-8"), newline=False).decode("ascii").rstrip("=") for p in parts) + "."


def token_subject(token: str, claim: str = "sub") -> str | None:
    """The principal claim of a JWT's payload, read without checking anything (the capture proxy's guess at the
    principal: Kafka's validators take ``sub`` unless configured otherwise); None if it cannot be read."""
    parts = token.split(".")
    if len(parts) < 2:
        return None
    payload = parts[1].replace("-", "+").replace("_", "/")
    try:
        claims = json.loads(binascii.a2b_base64(payload + "=" * (-len(payload) % 4)))
    except (binascii.Error, ValueError):
        return None
    value = claims.get(claim) if isinstance(claims, dict) else None
    if isinstance(value, bool) or (value is None and isinstance(claims, dict) and claim in claims):
        value = {True: "true", False: "false", None: "null"}[value]  # Jackson's text of the value, as Kafka reads it
    return value if isinstance(value, str) and value.strip() else None
