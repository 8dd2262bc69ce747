"""SASL/OAUTHBEARER (RFC 7628) as Kafka 3.9's OAuthBearerSaslServer answers it, with its default token validator
(shim.security.sasl.unsecured_jws) or its secured one (shim.security.sasl.secured_jwt, KIP-768).

The client's first message is ``n,[a=<authzid>],^Aauth=Bearer <token>^A[<key>=<value>^A]*^A``. A token the validator
(shim.security.sasl.unsecured_jws) accepts completes the exchange as ``User:<principal claim>``, and the session
lasts until the token's ``exp`` (KIP-368: the client re-authenticates before then). A refused token is answered, as
RFC 7628 says, with an error challenge (``{"status":"invalid_token"}``, or ``insufficient_scope`` with the required
scope); the client acknowledges it with a lone ^A and then gets error 58 with that text. What reaches the client,
as in Kafka: the generic "invalid credentials" sentence for a first message that does not parse, Kafka's own text
for an authorization id that is not the token's principal, and no answer at all (the connection closed) where
Kafka's server throws a runtime exception (a scheme other than Bearer, a header without ``alg``). Extensions
(``key=value`` pairs) are accepted and ignored, as the default validator accepts them all.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_shim.protocol.sasl_oauthbearer import CONTROL_A, FirstMessageError, parse_first_message
from kafka_shim.shim.security.sasl.errors import (
    IllegalSaslStateError,
    InvalidCredentialsError,
    SaslAuthenticationError,
    SaslProtocolViolation,
)
from kafka_shim.shim.security.sasl.unsecured_jws import IllegalToken, UnsecuredValidatorOptions, ValidatorCrash

if TYPE_CHECKING:
    from kafka_shim.shim.security.sasl.secured_jwt import SecuredValidatorOptions

MECHANISM = "OAUTHBEARER"
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


class OAuthBearerServer:
    mechanism = MECHANISM

    def __init__(self, options: UnsecuredValidatorOptions | SecuredValidatorOptions, *, reauthentication: bool = False,
                 clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000) -> None:
        self._options = options
        self._reauthentication = reauthentication
        self._clock_ms = clock_ms
        self._complete = False
        self._principal: str | None = None
        self._error: str | None = None  # the error challenge sent, awaiting the client's ^A
        self.credential_expiry_ms: int | None = None  # the token's exp: the session ends then (KIP-368)

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def authorization_id(self) -> str:
        if self._principal is None:
            raise RuntimeError("the SASL/OAUTHBEARER exchange has not completed")
        return self._principal

    def evaluate(self, token: bytes) -> bytes:
        if self._complete:
            raise IllegalSaslStateError("COMPLETE")
        if token == CONTROL_A and self._error is not None:
            raise SaslAuthenticationError(self._error, reason="the client acknowledged the refusal of its token")
        self._error = None
        try:
            first = parse_first_message(token)
        except FirstMessageError as exc:
            raise self._invalid(str(exc)) from None
        if first.scheme.lower() != "bearer":
            # Kafka builds this message from a group its matcher does not have: IllegalArgumentException, no answer.
            raise SaslProtocolViolation(MECHANISM, f"scheme {first.scheme!r} is not Bearer",
                                        reauthentication=self._reauthentication)
        try:
            jws = self._options.validate(first.token, self._clock_ms())
        except ValidatorCrash as exc:
            raise SaslProtocolViolation(MECHANISM, f"the token crashes Kafka's validator: {exc}",
                                        reauthentication=self._reauthentication) from None
        except IllegalToken as exc:
            self._error = _error_json(exc.failure_scope)
            return self._error.encode("utf-8")
        authorization_id = first.authorization_id
        if authorization_id and authorization_id != jws.principal:
            raise SaslAuthenticationError(
                f"Authentication failed: Client requested an authorization id ({authorization_id}) that is different "
                f"from the token's principal name ({jws.principal})")
        self._principal = jws.principal
        self.credential_expiry_ms = jws.lifetime_ms
        self._complete = True
        return b""

    def _invalid(self, reason: str) -> InvalidCredentialsError:
        """A SaslException in Kafka: the client only hears that its credentials were invalid."""
        return InvalidCredentialsError(MECHANISM, reason, reauthentication=self._reauthentication)


def _error_json(failure_scope: str | None) -> str:
    """OAuthBearerSaslServer.jsonErrorResponse (its spacing included)."""
    if failure_scope is None:
        return '{"status":"invalid_token"}'
    return f'{{"status":"insufficient_scope", "scope":"{failure_scope}"}}'
