"""SaslHandshake (17) and SaslAuthenticate (36) once a connection is past authentication.

On an authenticated SASL connection, and on any PLAINTEXT or SSL connection, Kafka's request handler answers
both with ErrorCode.ILLEGAL_SASL_STATE; the exchange itself happens before requests reach handlers (shim/sasl_gate.py).
"""

from __future__ import annotations

from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import SaslAuthenticateResponse, SaslHandshakeResponse
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.requests.context import RequestContext

AFTER_AUTHENTICATION = "SaslAuthenticate request received after successful authentication"


@handles(ApiKey.SASL_HANDSHAKE, 0, 1)
def sasl_handshake(ctx: RequestContext, request: object) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])


@handles(ApiKey.SASL_AUTHENTICATE, 0, 2)
def sasl_authenticate(ctx: RequestContext, request: object) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=AFTER_AUTHENTICATION, auth_bytes=b"")
