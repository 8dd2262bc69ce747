"""Connecting to a Kafka broker as a client: TLS, version negotiation, SASL PLAIN and SCRAM, then requests.

Used by ``kafka-shim acls`` to reach any Kafka broker with the security read from its ``--command-config``
(client.config). The order on the wire is the Java client's: TLS handshake (SSL, SASL_SSL), ApiVersions,
SaslHandshake v1, SaslAuthenticate. SCRAM's steps are client.scram's.
"""

from __future__ import annotations

import asyncio
import os
import ssl
from dataclasses import dataclass

from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.errors import DecodeError
from kafka_shim.protocol.framing import decode_response
from kafka_shim.protocol.messages import ApiVersionsRequest, ApiVersionsResponse, SaslAuthenticateRequest, SaslHandshakeRequest
from kafka_shim.protocol.sasl_oauthbearer import CONTROL_A, first_message, unsecured_token
from kafka_shim.shim.client.config import OAUTHBEARER, ClientSecurity
from kafka_shim.shim.client.errors import BrokerError, ClientError, kafka_error_text
from kafka_shim.shim.client.scram import ScramClient
from kafka_shim.shim.client.wire import ConnectionClosed, WireClient
from kafka_shim.shim.config.logging import get_logger

log = get_logger("kafka_shim.client_auth")

CLIENT_SOFTWARE_NAME = "kafka-shim-acls"
CLIENT_SOFTWARE_VERSION = "0.1.0"
_OUR_API_VERSIONS_MAX = 3  # the highest ApiVersions version this client sends (Kafka 3.9's clients send 3 too)

# -- connecting -----------------------------------------------------------------------------------------------------


@dataclass
class Session:
    """An open, authenticated connection and the API versions the broker supports."""

    client: WireClient
    api_versions: dict[int, tuple[int, int]]
    address: str

    def version(self, api_key: int, ours: tuple[int, int], api_name: str) -> int:
        """The highest version both sides support; ClientError when there is none."""
        theirs = self.api_versions.get(api_key)
        if theirs is None:
            raise ClientError(f"the broker at {self.address} does not support {api_name} (API key {api_key})")
        low, high = max(ours[0], theirs[0]), min(ours[1], theirs[1])
        if low > high:
            raise ClientError(f"the broker at {self.address} supports {api_name} versions {theirs[0]}-{theirs[1]}; "
                              f"kafka-shim acls speaks {ours[0]}-{ours[1]}")
        return high

    async def close(self) -> None:
        await self.client.close()


async def connect(bootstrap_servers: str, security: ClientSecurity, *, timeout: float = 30.0,
                  connect_timeout: float = 10.0) -> Session:
    """Connect to the first reachable bootstrap server, negotiate versions and authenticate."""
    failures = []
    for address in _split_servers(bootstrap_servers):
        host, port = address
        shown = f"{host}:{port}"
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, ssl=security.ssl_context,
                                        server_hostname=host if security.ssl_context else None),
                connect_timeout)
        except ssl.SSLError as exc:
            raise ClientError(f"TLS handshake with {shown} failed: {exc.reason or exc}; check the ssl.truststore.* "
                              f"(and for mutual TLS ssl.keystore.*) keys of --command-config") from None
        except (OSError, TimeoutError) as exc:
            reason = "timed out" if isinstance(exc, TimeoutError) else os.strerror(exc.errno) if exc.errno else str(exc)
            failures.append(f"{shown} ({reason})")
            log.debug("connect_failed", address=shown, reason=reason)
            continue
        client = WireClient(reader, writer, client_id=CLIENT_SOFTWARE_NAME)
        try:
            versions = await _api_versions(client, timeout, shown)
            session = Session(client, versions, shown)
            if security.uses_sasl:
                await _authenticate(session, security, timeout)
            return session
        except BaseException:
            await client.close()
            raise
    raise ClientError(f"cannot connect to the broker at {', '.join(failures)}; check --bootstrap-server and that the "
                      f"broker is running")


def _split_servers(text: str) -> list[tuple[str, int]]:
    servers = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
            raise ClientError(f"--bootstrap-server entry {item!r} is not HOST:PORT (e.g. 127.0.0.1:9092)")
        servers.append((host.strip("[]"), int(port)))
    if not servers:
        raise ClientError("--bootstrap-server is empty; give HOST:PORT (e.g. 127.0.0.1:9092)")
    return servers


async def _api_versions(client: WireClient, timeout: float, shown: str) -> dict[int, tuple[int, int]]:
    """Kafka's ApiVersions exchange: the highest version first; a broker that does not know it answers v0 with 35."""
    version = _OUR_API_VERSIONS_MAX
    for _ in range(2):
        request = ApiVersionsRequest(client_software_name=CLIENT_SOFTWARE_NAME, client_software_version=CLIENT_SOFTWARE_VERSION)
        await _send(client, ApiKey.API_VERSIONS, version, request, shown, "ApiVersions")
        payload = await _read(client, timeout, shown, "ApiVersions")
        response = _decode_api_versions(payload, version, shown)
        if response.error_code == ErrorCode.UNSUPPORTED_VERSION and version > 0:
            # The broker answered in v0 listing the ApiVersions versions it knows: retry with its highest.
            known = {k.api_key: k.max_version for k in response.api_keys}
            version = min(known.get(ApiKey.API_VERSIONS, 0), version - 1)
            continue
        if response.error_code != ErrorCode.NONE:
            raise BrokerError(response.error_code, None)
        return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    raise ClientError(f"the broker at {shown} refused every ApiVersions version kafka-shim acls tried")


def _decode_api_versions(payload: bytes, version: int, shown: str) -> ApiVersionsResponse:
    try:
        return decode_response(ApiKey.API_VERSIONS, version, payload)[1]
    except DecodeError:
        if version == 0:
            raise ClientError(f"the broker at {shown} sent an ApiVersions answer that is not Kafka's format") from None
        # An unsupported version gets a v0 body (KIP-511), which the flexible decoder cannot read.
        return decode_response(ApiKey.API_VERSIONS, 0, payload)[1]


async def _send(client: WireClient, api_key: int, version: int, body, shown: str, what: str) -> int:
    try:
        return await client.send(api_key, version, body)
    except ssl.SSLError as exc:
        raise _tls_refused(shown, exc) from None
    except (ConnectionError, OSError) as exc:
        hint = ""
        if client.writer.get_extra_info("ssl_object") is not None:
            hint = ("; on a TLS listener that requires client certificates (ssl.client.auth=required), "
                    "set ssl.keystore.* in --command-config")
        raise ClientError(f"the broker at {shown} closed the connection when sent {what} ({exc}){hint}") from None


async def _read(client: WireClient, timeout: float, shown: str, what: str) -> bytes:
    try:
        return await client.read_frame(timeout)
    except TimeoutError:
        raise ClientError(f"the broker at {shown} did not answer {what} within {timeout:g} s") from None
    except ssl.SSLError as exc:
        raise _tls_refused(shown, exc) from None
    except (ConnectionClosed, ConnectionError, OSError):
        raise ClientError(f"the broker at {shown} closed the connection instead of answering {what}; check that "
                          f"security.protocol in --command-config matches this listener (and, on a TLS listener that "
                          f"requires client certificates, set ssl.keystore.*)") from None


def _tls_refused(shown: str, exc: ssl.SSLError) -> ClientError:
    # With TLS 1.3 a refused client certificate shows only after the handshake, on the first read or write.
    return ClientError(f"the broker at {shown} ended the TLS session: {exc.reason or exc}; if the listener requires "
                       f"client certificates (ssl.client.auth=required), set ssl.keystore.* in --command-config")


async def request(session: Session, api_key: int, version: int, body, timeout: float, what: str):
    """Send one request on the session and return the decoded response body (ClientError if none comes)."""
    cid = await _send(session.client, api_key, version, body, session.address, what)
    payload = await _read(session.client, timeout, session.address, what)
    got, response = decode_response(api_key, version, payload)
    if got != cid:
        raise ClientError(f"the broker at {session.address} answered {what} with correlation id {got}, expected {cid}")
    return response


async def _authenticate(session: Session, security: ClientSecurity, timeout: float) -> None:
    mechanism = security.mechanism or ""
    if session.api_versions.get(ApiKey.SASL_HANDSHAKE, (0, 0))[1] < 1 or ApiKey.SASL_AUTHENTICATE not in session.api_versions:
        raise ClientError(f"the broker at {session.address} does not offer SaslHandshake v1 and SaslAuthenticate; "
                          f"kafka-shim acls needs them for {security.security_protocol}")
    hs = await request(session, ApiKey.SASL_HANDSHAKE, 1, SaslHandshakeRequest(mechanism=mechanism), timeout, "SaslHandshake")
    if hs.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
        offered = ", ".join(hs.mechanisms) or "none"
        raise ClientError(f"{kafka_error_text(ErrorCode.UNSUPPORTED_SASL_MECHANISM, None)} The listener at {session.address} does not enable {mechanism}; "
                          f"it offers: {offered}. Set sasl.mechanism (and sasl.jaas.config) in --command-config to one of them")
    if hs.error_code != ErrorCode.NONE:
        raise BrokerError(hs.error_code, None)
    auth_version = session.version(ApiKey.SASL_AUTHENTICATE, (0, 2), "SaslAuthenticate")
    if mechanism == "PLAIN":
        # RFC 4616: an empty authorization id, then the user and the password.
        token = b"\x00" + security.username.encode() + b"\x00" + security.password.encode()
        await _sasl_step(session, auth_version, token, timeout)
    elif mechanism == OAUTHBEARER:
        jws = unsecured_token(security.username or "", security.token_lifetime_s, security.token_scope)
        challenge = await _sasl_step(session, auth_version, first_message(jws), timeout)
        if challenge:  # RFC 7628: an error challenge, acknowledged with ^A; the broker then fails the exchange
            await _sasl_step(session, auth_version, CONTROL_A, timeout)
            raise ClientError(f"the broker at {session.address} refused the OAUTHBEARER token: {challenge.decode(errors='replace')}")
    else:
        scram = ScramClient(mechanism, security.username or "", security.password or "")
        server_first = await _sasl_step(session, auth_version, scram.first_message(), timeout)
        server_final = await _sasl_step(session, auth_version, scram.final_message(server_first), timeout)
        scram.verify_server_final(server_final)
    log.debug("authenticated", address=session.address, mechanism=mechanism, user=security.username)


async def _sasl_step(session: Session, version: int, token: bytes, timeout: float) -> bytes:
    response = await request(session, ApiKey.SASL_AUTHENTICATE, version, SaslAuthenticateRequest(auth_bytes=token), timeout,
                             "SaslAuthenticate")
    if response.error_code != ErrorCode.NONE:
        raise BrokerError(response.error_code, response.error_message)
    return response.auth_bytes
