"""The replayer's own SASL exchange (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER) over SaslHandshake v1 and
SaslAuthenticate frames, as Kafka's Java client does it (KIP-152), at the point of the recorded SaslHandshake.

The SCRAM arithmetic is ``kafka_shim.protocol.sasl_scram``, the broker's own (traces may not import shim). A recorded
v0 handshake (raw tokens, no SaslAuthenticate frames) is replayed as v1 with SaslAuthenticate v0: the broker
authenticates the same principal either way.
"""

from __future__ import annotations

import base64
import secrets

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.framing import decode_response, encode_request
from kafka_shim.protocol.messages import SaslAuthenticateRequest, SaslHandshakeRequest
from kafka_shim.protocol.sasl_oauthbearer import CONTROL_A, first_message, unsecured_token
from kafka_shim.protocol.sasl_scram import MECHANISMS as SCRAM
from kafka_shim.protocol.sasl_scram import auth_message
from kafka_shim.traces.replay.connection import CLOSED, ReplayConnection
from kafka_shim.traces.replay.credentials import Credential


class SaslFailed(Exception):
    """The broker refused the exchange (or closed); the message says at which step and with what."""


class _Ids:
    """The recorded correlation ids to reuse, then fresh ones past them."""

    def __init__(self, recorded: list[int]) -> None:
        self._ids = list(recorded)
        self._next = (max(recorded) + 1) if recorded else 1_000_000

    def take(self) -> int:
        if self._ids:
            return self._ids.pop(0)
        self._next += 1
        return self._next - 1


async def authenticate(conn: ReplayConnection, credential: Credential, handshake_version: int, authenticate_version: int,
                       correlation_ids: list[int], client_id: str | None, timeout: float) -> None:
    """Run the exchange; SaslFailed unless the broker authenticated ``credential``."""
    ids = _Ids(correlation_ids)
    version = max(handshake_version, 1)
    answer = await _call(conn, ApiKey.SASL_HANDSHAKE, version, ids.take(),
                         SaslHandshakeRequest(mechanism=credential.mechanism), client_id, timeout)
    if answer.error_code:
        raise SaslFailed(f"SaslHandshake: error {answer.error_code}; the broker offers {answer.mechanisms}")

    async def token(data: bytes) -> bytes:
        reply = await _call(conn, ApiKey.SASL_AUTHENTICATE, authenticate_version, ids.take(),
                            SaslAuthenticateRequest(auth_bytes=data), client_id, timeout)
        if reply.error_code:
            raise SaslFailed(f"SaslAuthenticate as {credential.username} ({credential.mechanism}): error "
                             f"{reply.error_code} {reply.error_message or ''}".rstrip())
        return reply.auth_bytes

    if credential.mechanism == "PLAIN":
        await token(b"\x00" + credential.username.encode() + b"\x00" + credential.password.encode())
        return
    if credential.mechanism == "OAUTHBEARER":
        challenge = await token(first_message(credential.password or unsecured_token(credential.username)))
        if challenge:  # RFC 7628: the token was refused; acknowledging the challenge ends the exchange
            await token(CONTROL_A)
            raise SaslFailed(f"OAUTHBEARER as {credential.username}: the broker refused the token: "
                             f"{challenge.decode('utf-8', 'replace')}")
        return
    scram = SCRAM[credential.mechanism]
    nonce = secrets.token_urlsafe(24)
    name = credential.username.replace("=", "=3D").replace(",", "=2C")
    first_bare = f"n={name},r={nonce}"
    server_first = (await token(("n,," + first_bare).encode())).decode("utf-8", "replace")
    attrs = dict(part.split("=", 1) for part in server_first.split(",") if "=" in part)
    if "e" in attrs or not attrs.get("r", "").startswith(nonce):
        raise SaslFailed(f"{credential.mechanism}: unexpected server-first message {server_first!r}")
    salted = scram.salted_password(credential.password, base64.b64decode(attrs["s"]), int(attrs["i"]))
    without_proof = f"c=biws,r={attrs['r']}"
    message = auth_message(first_bare, server_first, without_proof)
    proof = base64.b64encode(scram.client_proof(salted, message)).decode()
    server_final = (await token(f"{without_proof},p={proof}".encode())).decode("utf-8", "replace")
    expected = base64.b64encode(scram.server_signature(scram.server_key(salted), message)).decode()
    if server_final != f"v={expected}":
        raise SaslFailed(f"{credential.mechanism}: the broker's final message does not prove it knows the credential")


async def _call(conn: ReplayConnection, api_key: int, version: int, correlation_id: int, body, client_id: str | None,
                timeout: float):
    payload = await conn.request(encode_request(api_key, version, correlation_id, body, client_id=client_id), correlation_id, timeout)
    if payload == CLOSED:
        raise SaslFailed(f"the broker closed the connection during the SASL exchange (api key {api_key})")
    return decode_response(api_key, version, payload)[1]
