"""How a SASL mechanism refuses a client, in the two ways Kafka's SaslServerAuthenticator tells them apart.

Kafka sends the client the text of a ``SaslAuthenticationException`` as it is, but replaces the text of any
other ``SaslException`` with a generic sentence, because it could reveal whether a user exists. Every refusal
here is a ``SaslAuthenticationError`` whose ``str()`` is exactly what Kafka sends; ``reason`` is for the
broker's own log and never holds a password, a proof or a key.
"""

from __future__ import annotations


class SaslAuthenticationError(Exception):
    """A refused authentication; ``str()`` is the SaslAuthenticate error_message Kafka would send (code 58)."""

    # Kafka answers nothing and closes the connection for a few malformed exchanges (a runtime exception in
    # its SASL server rather than a SaslException); the connection should do the same when this is set.
    close_without_response: bool = False

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message


class InvalidCredentialsError(SaslAuthenticationError):
    """Kafka's SaslException path: the client only learns that its credentials were invalid."""

    def __init__(self, mechanism: str, reason: str, *, reauthentication: bool = False) -> None:
        stage = "re-authentication" if reauthentication else "authentication"
        super().__init__(f"Authentication failed during {stage} due to invalid credentials with SASL mechanism {mechanism}",
                         reason=reason)


class SaslProtocolViolation(InvalidCredentialsError):
    """An exchange Kafka abandons without an answer (e.g. a SCRAM proof of the wrong length)."""

    close_without_response = True


class IllegalSaslStateError(SaslAuthenticationError):
    """A token after the exchange completed or failed (Kafka's IllegalSaslStateException: no answer, closed)."""

    close_without_response = True

    def __init__(self, state: str) -> None:
        super().__init__(f"Unexpected challenge in Sasl server state {state}")
