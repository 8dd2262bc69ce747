"""SASL/PLAIN (RFC 4616: ``[authzid] NUL authcid NUL passwd``) as Kafka 3.9's PlainSaslServer answers it.

Kafka's wording reaches the client for every refusal here (they are SaslAuthenticationExceptions in Kafka):
a token that does not split into exactly three parts, an empty user name or password, a wrong password or an
unknown user (one message for both, so it does not reveal which), and an authorization id other than the user.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from kafka_shim.shim.security.sasl.errors import IllegalSaslStateError, SaslAuthenticationError

MECHANISM = "PLAIN"


class PlainServer:
    mechanism = MECHANISM

    def __init__(self, password_of: Callable[[str], str | None]) -> None:
        self._password_of = password_of
        self._complete = False
        self._failed = False
        self._authorization_id: str | None = None

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def authorization_id(self) -> str:
        if self._authorization_id is None:
            raise RuntimeError("the SASL/PLAIN exchange has not completed")
        return self._authorization_id

    def evaluate(self, token: bytes) -> bytes:
        if self._complete or self._failed:
            raise IllegalSaslStateError("COMPLETE" if self._complete else "FAILED")
        try:
            user = self._check(token)
        except SaslAuthenticationError:
            self._failed = True
            raise
        self._authorization_id = user
        self._complete = True
        return b""

    def _check(self, token: bytes) -> str:
        # Java decodes with replacement characters; NUL never occurs inside a multi-byte sequence, so splitting
        # after decoding finds the same parts.
        text = bytes(token).decode("utf-8", "replace")
        parts = _split(text)
        if len(parts) != 3:
            raise SaslAuthenticationError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authorization_id, user, password = parts
        if not user:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._password_of(user)
        if expected is None or not hmac.compare_digest(password.encode("utf-8"), expected.encode("utf-8", "surrogatepass")):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password",
                                          reason=f"wrong password or unknown user {user!r}")
        if authorization_id and authorization_id != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username",
                reason=f"user {user!r} asked to act as {authorization_id!r}")
        return user


def _split(text: str) -> list[str]:
    """Kafka's extractTokens: at most four NUL-separated parts are counted (so 'got 4' is the most it says)."""
    parts: list[str] = []
    start = 0
    for _ in range(4):
        end = text.find("\x00", start)
        if end < 0:
            parts.append(text[start:])
            break
        parts.append(text[start:end])
        start = end + 1
    return parts
