"""The SASL exchange on a SASL_PLAINTEXT or SASL_SSL connection, before any request reaches a handler.

It follows Kafka's SaslServerAuthenticator: before authentication only ApiVersions (once) and SaslHandshake
are accepted; after the handshake only SaslAuthenticate (or, after a v0 handshake, raw size-prefixed tokens);
an unsupported mechanism gets 33 with the enabled list, bad credentials 58, and both close the connection.
The gate decides; the connection does the I/O (see ``GateOwner``).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.errors import ProtocolError
from kafka_shim.protocol.framing import RequestFrame, encode_response, parse_request
from kafka_shim.protocol.messages import SaslAuthenticateResponse, SaslHandshakeResponse
from kafka_shim.shim.javacompat.java_long import java_long
from kafka_shim.shim.security.sasl.mechanism import Mechanism

HANDSHAKE_VERSIONS = range(0, 2)
AUTHENTICATE_VERSIONS = range(0, 3)


class SaslError(Exception):
    """A mechanism's refusal; ``str()`` is the message the client is sent (Kafka's wording)."""


class GateOwner(Protocol):
    """What the gate needs from its connection."""

    def send(self, data: bytes) -> None: ...

    def fail_authentication(self, reason: str, data: bytes | None) -> None: ...

    def refuse(self, reason: str, **fields: Any) -> None: ...

    def authenticated(self, principal: str, mechanism: str, session_lifetime_ms: int, token_authenticated: bool = False) -> None: ...


class Responder(Protocol):
    """The answers the gate sends but does not build: they come from the broker's API table (via dispatch),
    so the gate never imports handlers."""

    def api_versions(self, frame: RequestFrame) -> tuple[bytes, bool]:
        """The encoded ApiVersions answer and whether it succeeded (error 0). A version the broker does not serve
        gets Kafka's error-35 answer; a body that cannot be decoded raises ProtocolError."""
        ...

    def error_response(self, api_key: int, request: Any, code: int, message: str | None, version: int | None = None) -> Any | None:
        """The API's whole-request error body (Kafka's getErrorResponse) at this version, or None when it has none."""
        ...


class Phase(enum.Enum):
    HANDSHAKE_OR_VERSIONS = "handshake_or_versions"
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"
    FAILED = "failed"


class SaslGate:
    """One connection's SASL state. ``feed(payload)`` takes each frame until ``phase`` is COMPLETE."""

    def __init__(
        self,
        owner: GateOwner,
        responder: Responder,
        mechanisms: list[str],
        new_mechanism: Callable[[str, bool], Mechanism],
        reauth_ms: int = 0,
        is_authentication_error: Callable[[BaseException], bool] = lambda exc: isinstance(exc, SaslError),
        reauth_ms_by_mechanism: Mapping[str, int] | None = None,
    ) -> None:
        self.owner = owner
        self.responder = responder
        self.mechanisms = list(mechanisms)
        self.new_mechanism = new_mechanism
        # connections.max.reauth.ms: the listener's, and a mechanism's own (listener.name.<l>.<mechanism>.*) first
        self.reauth_ms = reauth_ms
        self.reauth_ms_by_mechanism = dict(reauth_ms_by_mechanism or {})
        self.is_authentication_error = is_authentication_error
        self.phase = Phase.HANDSHAKE_OR_VERSIONS
        self.raw_tokens = False  # a v0 handshake: tokens travel bare, without SaslAuthenticate
        self.mechanism_name: str | None = None
        self.server: Mechanism | None = None
        self.supports_reauthentication = False  # the client sent SaslAuthenticate v1+ (KIP-368)
        self.session_expires_at: float | None = None  # time.monotonic()
        self.principal: str | None = None
        self.reauthenticating = False
        self.last_reauth_start = 0.0

    # -- re-authentication (KIP-368) -------------------------------------------------------
    def session_expired(self, now: float | None = None) -> bool:
        return self.session_expires_at is not None and (now or time.monotonic()) >= self.session_expires_at

    def begin_reauthentication(self, payload: bytes) -> bool:
        """A SaslHandshake on an authenticated connection: start over, if this session may re-authenticate."""
        if self.session_expires_at is None or self.raw_tokens:
            return False
        now = time.monotonic()
        if self.last_reauth_start and now - self.last_reauth_start < 1.0:
            return False  # Kafka allows one re-authentication a second; later ones get the normal answer (34)
        self.last_reauth_start = now
        self.reauthenticating = True
        self.phase = Phase.HANDSHAKE
        self.feed(payload)
        return True

    # -- frames ------------------------------------------------------------------------------
    def feed(self, payload: bytes) -> None:
        if self.phase in (Phase.HANDSHAKE_OR_VERSIONS, Phase.HANDSHAKE):
            self._handshake_frame(payload)
        elif self.phase is Phase.AUTHENTICATE:
            if self.raw_tokens:
                self._raw_token(payload)
            else:
                self._authenticate_frame(payload)

    def _handshake_frame(self, payload: bytes) -> None:
        try:
            frame = parse_request(payload)
        except ProtocolError as exc:
            self._refuse("not a Kafka request during the SASL handshake; is the client using the right security.protocol?",
                         error=str(exc))
            return
        key, version = frame.api_key, frame.api_version
        if key not in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE):
            self._refuse(f"Unexpected Kafka request of type {ApiKey(key).name} during SASL handshake.", api_key=key)
            return
        if key == ApiKey.API_VERSIONS:
            self._api_versions(frame)
            return
        if version not in HANDSHAKE_VERSIONS:
            self._refuse(f"SaslHandshake version {version} is not supported", api_key=key, api_version=version)
            return
        request = self._body(frame, "SaslHandshake")
        if request is None:
            return
        mechanism = request.mechanism
        if self.reauthenticating and mechanism not in self.mechanisms:
            # Kafka checks the enabled mechanisms first; while re-authenticating it then closes without the 33.
            self._fail(f"Unsupported SASL mechanism {mechanism} (re-authentication)", None)
            return
        if self.reauthenticating and mechanism != self.mechanism_name:
            # Kafka answers the handshake, then closes at the first token without an answer (REAUTH_BAD_MECHANISM).
            self._respond(frame, SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=self.mechanisms))
            self.phase = Phase.AUTHENTICATE
            self.raw_tokens = version == 0
            self.server = _Refusing(
                f"SASL mechanism '{mechanism}' requested by client is not supported for re-authentication "
                f"of mechanism '{self.mechanism_name}'"
            )
            return
        if mechanism not in self.mechanisms:
            data = encode_response(key, version, frame.correlation_id,
                                   SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=self.mechanisms))
            self._fail(f"Unsupported SASL mechanism {mechanism}", data)
            return
        self._respond(frame, SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=self.mechanisms))
        self.raw_tokens = version == 0
        self.mechanism_name = mechanism
        self.server = self.new_mechanism(mechanism, self.reauthenticating)
        self.phase = Phase.AUTHENTICATE

    def _api_versions(self, frame: Any) -> None:
        if self.phase is not Phase.HANDSHAKE_OR_VERSIONS:
            self._refuse("Unexpected ApiVersions request received during SASL authentication state " + self.phase.name,
                         api_key=ApiKey.API_VERSIONS)
            return
        try:
            data, succeeded = self.responder.api_versions(frame)
        except ProtocolError as exc:
            self._refuse(f"malformed ApiVersions: {exc}", api_key=frame.api_key)
            return
        self.owner.send(data)
        # After an unsupported version or an invalid request the client may retry, so the state stays as it is.
        if succeeded:
            self.phase = Phase.HANDSHAKE

    def _authenticate_frame(self, payload: bytes) -> None:
        try:
            frame = parse_request(payload)
        except ProtocolError as exc:
            self._refuse(f"not a Kafka request during SASL authentication: {exc}")
            return
        key, version = frame.api_key, frame.api_version
        if key != ApiKey.SASL_AUTHENTICATE:
            request = self._body(frame, "request during SASL authentication")
            if request is None:
                return
            message = f"Unexpected Kafka request of type {ApiKey(key).name} during SASL authentication."
            body = self.responder.error_response(key, request, ErrorCode.ILLEGAL_SASL_STATE, message, version)
            data = encode_response(key, version, frame.correlation_id, body) if body is not None else None
            self._fail(message, data)
            return
        if version not in AUTHENTICATE_VERSIONS:
            self._refuse(f"Version {version} is not supported for apiKey SASL_AUTHENTICATE", api_key=key, api_version=version)
            return
        request = self._body(frame, "SaslAuthenticate")
        if request is None:
            return
        if version > 0:
            self.supports_reauthentication = True
        try:
            token = self.server.evaluate(bytes(request.auth_bytes))
        except Exception as exc:  # any mechanism failure is an authentication failure, never a crash
            message = self._failure_message(exc)
            if getattr(exc, "close_without_response", False):
                # Kafka drops the connection without an answer for some malformed exchanges.
                self._fail(message, None)
                return
            body = SaslAuthenticateResponse(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=message, auth_bytes=b"")
            self._fail(message, encode_response(key, version, frame.correlation_id, body))
            return
        lifetime, expires_at = self._session() if self.server.complete else (0, None)
        body = SaslAuthenticateResponse(error_code=ErrorCode.NONE, auth_bytes=token or b"", session_lifetime_ms=lifetime)
        if self.server.complete and not self._principal_unchanged():
            message = self._principal_changed_message()
            body = SaslAuthenticateResponse(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=message, auth_bytes=b"")
            self._fail(message, encode_response(key, version, frame.correlation_id, body))
            return
        self._respond(frame, body)
        if self.server.complete:
            self._complete(lifetime, expires_at)

    def _body(self, frame: Any, what: str) -> Any | None:
        """The decoded request, or None after refusing it: Kafka closes on a body it cannot parse."""
        try:
            return frame.decode_body()
        except ProtocolError as exc:
            self._refuse(f"malformed {what}: {exc}", api_key=frame.api_key)
            return None

    def _raw_token(self, payload: bytes) -> None:
        try:
            token = self.server.evaluate(payload)
        except Exception as exc:
            # Without SaslAuthenticate framing there is no way to tell the client why: Kafka just closes.
            self._fail(self._failure_message(exc), None)
            return
        self.owner.send(len(token or b"").to_bytes(4, "big") + (token or b""))
        if self.server.complete:
            self._complete(*self._session())

    # -- outcomes ---------------------------------------------------------------------------
    def _failure_message(self, exc: BaseException) -> str:
        if self.is_authentication_error(exc):
            return str(exc)
        # Kafka keeps the mechanism's own words from the client: they might reveal whether the user exists.
        stage = "re-authentication" if self.reauthenticating else "authentication"
        return f"Authentication failed during {stage} due to invalid credentials with SASL mechanism {self.mechanism_name}"

    def _session(self) -> tuple[int, float | None]:
        """Kafka's calcCompletionTimesAndReturnSessionLifetimeMs: the session lifetime the answer carries, and when
        the session expires (time.monotonic(); None: never). A session has a lifetime when the mechanism's
        connections.max.reauth.ms is set or its credential expires (a delegation token, an OAUTHBEARER token's
        ``exp``): the smaller of the two, 0 when the credential has already expired (the next request then closes)."""
        reauth = self.reauth_ms_by_mechanism.get(self.mechanism_name or "", self.reauth_ms)
        expiry_ms = getattr(self.server, "credential_expiry_ms", None)
        if expiry_ms is None and reauth <= 0:
            return 0, None
        # Kafka subtracts in Java's wrapping long arithmetic: a token whose expiry wrapped negative (an expire period
        # near Long.MAX_VALUE) leaves a huge positive remainder, not a negative one.
        left = None if expiry_ms is None else java_long(expiry_ms - int(time.time() * 1000))
        if left is None:
            lifetime = max(0, reauth)
        elif reauth <= 0:
            lifetime = max(0, left)
        else:
            lifetime = max(0, min(left, reauth))
        # Kafka adds 1000 * 1000 * lifetime to System.nanoTime() in Java's wrapping long arithmetic: a lifetime of
        # more than ~292 years wraps, and such a session may end at once.
        nanos = (lifetime * 1_000_000 + 2**63) % 2**64 - 2**63
        return lifetime, time.monotonic() + nanos / 1e9

    def _principal_unchanged(self) -> bool:
        return not self.reauthenticating or self.principal == "User:" + self.server.authorization_id

    def _principal_changed_message(self) -> str:
        old = self.principal.split(":", 1)
        return f"Cannot change principals during re-authentication from {old[0]}.{old[1]}: User.{self.server.authorization_id}"

    def _complete(self, lifetime_ms: int, expires_at: float | None) -> None:
        self.phase = Phase.COMPLETE
        self.principal = "User:" + self.server.authorization_id
        self.session_expires_at = expires_at
        self.reauthenticating = False
        self.owner.authenticated(self.principal, self.mechanism_name or "", lifetime_ms,
                                 bool(getattr(self.server, "token_authenticated", False)))

    def _respond(self, frame: Any, body: Any) -> None:
        self.owner.send(encode_response(frame.api_key, frame.api_version, frame.correlation_id, body))

    def _fail(self, reason: str, data: bytes | None) -> None:
        self.phase = Phase.FAILED
        self.owner.fail_authentication(reason, data)

    def _refuse(self, reason: str, **fields: Any) -> None:
        self.phase = Phase.FAILED
        self.owner.refuse(reason, **fields)


class _Refusing:
    """Stands in for a mechanism when re-authentication asked for a different one: the first token closes the
    connection unanswered (Kafka throws in its REAUTH_BAD_MECHANISM state before building a response)."""

    complete = False
    authorization_id = ""

    def __init__(self, message: str) -> None:
        self.message = message

    def evaluate(self, token: bytes) -> bytes:
        raise _Unanswered(self.message)


class _Unanswered(SaslError):
    close_without_response = True
