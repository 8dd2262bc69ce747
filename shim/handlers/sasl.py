"""SaslHandshake (17) and SaslAuthenticate (36) once a connection is past authentication.

On an authenticated SASL connection, and on any PLAINTEXT or SSL connection, Kafka's request handler answers
both with ILLEGAL_SASL_STATE; the exchange itself happens before requests reach handlers (shim/sasl_gate.py).
"""

from __future__ import annotations

from protocol.messages import SaslAuthenticateResponse, SaslHandshakeResponse
from shim.context import RequestContext
from shim.errors import ILLEGAL_SASL_STATE
from shim.handlers import handles

SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
AFTER_AUTHENTICATION = "SaslAuthenticate request received after successful authentication"


@handles(SASL_HANDSHAKE_KEY, 0, 1)
def sasl_handshake(ctx: RequestContext, request: object) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=ILLEGAL_SASL_STATE, mechanisms=[])


@handles(SASL_AUTHENTICATE_KEY, 0, 2)
def sasl_authenticate(ctx: RequestContext, request: object) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(error_code=ILLEGAL_SASL_STATE, error_message=AFTER_AUTHENTICATION, auth_bytes=b"")
