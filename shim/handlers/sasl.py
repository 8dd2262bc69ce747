"""SaslHandshake (17), v0-1, and SaslAuthenticate (36), v0-2, once a connection is past authentication.

Behaviour. On an authenticated SASL connection, and on any PLAINTEXT or SSL connection, Kafka's request handler
answers both with ErrorCode.ILLEGAL_SASL_STATE; the exchange itself happens before requests reach handlers
(security/sasl/gate.py). Both register Kafka's whole-request error form, which the gate uses when one of them
arrives out of turn during an exchange.

Version notes. SaslHandshake v0 carries the SASL tokens raw, without SaslAuthenticate framing (the gate's
concern); the SaslAuthenticate response gains session_lifetime_ms at v1 (KIP-368), v2 is the flexible encoding.
"""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import SaslAuthenticateResponse, SaslHandshakeResponse
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.requests.context import RequestContext

AFTER_AUTHENTICATION = "SaslAuthenticate request received after successful authentication"


def sasl_handshake_error_response(request: messages.SaslHandshakeRequest, code: int, message: str | None) -> SaslHandshakeResponse:
    """Kafka's SaslHandshakeRequest.getErrorResponse: the code and no mechanisms (the message is not carried)."""
    return SaslHandshakeResponse(error_code=code, mechanisms=[])


def sasl_authenticate_error_response(request: messages.SaslAuthenticateRequest, code: int,
                                     message: str | None) -> SaslAuthenticateResponse:
    """Kafka's SaslAuthenticateRequest.getErrorResponse: the code and message, no token."""
    return SaslAuthenticateResponse(error_code=code, error_message=message, auth_bytes=b"")


@handles(ApiKey.SASL_HANDSHAKE, 0, 1, error_response=sasl_handshake_error_response)
def sasl_handshake(ctx: RequestContext, request: messages.SaslHandshakeRequest) -> SaslHandshakeResponse:
    return sasl_handshake_error_response(request, ErrorCode.ILLEGAL_SASL_STATE, None)


@handles(ApiKey.SASL_AUTHENTICATE, 0, 2, error_response=sasl_authenticate_error_response)
def sasl_authenticate(ctx: RequestContext, request: messages.SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    return sasl_authenticate_error_response(request, ErrorCode.ILLEGAL_SASL_STATE, AFTER_AUTHENTICATION)
