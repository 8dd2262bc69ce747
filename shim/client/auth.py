"""The client side of a Kafka connection's security: TLS, SASL PLAIN and SCRAM, from a Kafka client properties file.

Used by ``kafka-shim acls`` (``--command-config``) to reach any Kafka broker. The order on the wire is the Java
client's: TLS handshake (SSL, SASL_SSL), ApiVersions, SaslHandshake v1, SaslAuthenticate. Kafka's keys are read:
``security.protocol``, ``sasl.mechanism`` (Kafka's default is GSSAPI, which is not supported here),
``sasl.jaas.config`` (``username=`` and ``password=`` of PlainLoginModule or ScramLoginModule) and the ``ssl.*``
keys of :func:`shim.tls.client_ssl_context`.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os
import secrets
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

import structlog
from kafka_shim.protocol.errors import DecodeError
from kafka_shim.protocol.framing import decode_response
from kafka_shim.protocol.messages import ApiVersionsRequest, ApiVersionsResponse, SaslAuthenticateRequest, SaslHandshakeRequest
from kafka_shim.shim.client.wire import ConnectionClosed, WireClient
from kafka_shim.shim.config.broker_config import ConfigError

log = structlog.get_logger("kafka_shim.client_auth")

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = ("PLAIN", *SCRAM_HASHES)
LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
SCRAM_MIN_ITERATIONS = 4096  # Kafka's ScramMechanism.minIterations, checked by its client too

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
CLIENT_SOFTWARE_NAME = "kafka-shim-acls"
CLIENT_SOFTWARE_VERSION = "0.1.0"
_OUR_API_VERSIONS_MAX = 3  # the highest ApiVersions version this client sends (Kafka 3.9's clients send 3 too)

# Kafka's exception class and default message for the error codes a client of the ACL APIs may see.
KAFKA_ERRORS: dict[int, tuple[str, str]] = {
    -1: ("UnknownServerException", "The server experienced an unexpected error when processing the request."),
    7: ("TimeoutException", "The request timed out."),
    31: ("ClusterAuthorizationException", "Cluster authorization failed."),
    33: ("UnsupportedSaslMechanismException", "The broker does not support the requested SASL mechanism."),
    34: ("IllegalSaslStateException", "Request is not valid given the current SASL state."),
    35: ("UnsupportedVersionException", "The version of API is not supported."),
    41: ("NotControllerException", "This is not the correct controller for this cluster."),
    42: ("InvalidRequestException", "This most likely occurs because of a request being malformed by the client library or "
                                    "the message was sent to an incompatible broker. See the broker logs for more details."),
    54: ("SecurityDisabledException", "Security features are disabled."),
    55: ("OperationNotAttemptedException", "The broker did not attempt to execute this operation. This may happen for batched "
                                           "RPCs where some operations in the batch failed, causing the broker to respond "
                                           "without trying the rest."),
    58: ("SaslAuthenticationException", "SASL Authentication failed."),
}


def kafka_error_text(code: int, message: str | None) -> str:
    """How Kafka's Java client shows an error code: ``org.apache.kafka.common.errors.<Class>: <message>``."""
    name, default = KAFKA_ERRORS.get(code, (None, None))
    if name is None:
        return f"error code {code}" + (f": {message}" if message else "")
    return f"org.apache.kafka.common.errors.{name}: {message if message is not None else default}"


class ClientError(Exception):
    """A failure a person must read: the message says what went wrong and, where it can, what to do."""


class BrokerError(ClientError):
    """The broker answered with a Kafka error code."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(kafka_error_text(code, message))
        self.code = code
        self.broker_message = message


@dataclass(frozen=True)
class ClientSecurity:
    security_protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")


def client_security(props: Mapping[str, str], source: str = "--command-config") -> ClientSecurity:
    """Read Kafka's client security keys; ConfigError naming the key and what to write instead."""
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise ConfigError(f"{source}: security.protocol={protocol} is not one of {', '.join(SECURITY_PROTOCOLS)}")
    context = None
    if protocol in ("SSL", "SASL_SSL"):
        from kafka_shim.shim.security.tls.context import client_ssl_context

        context = client_ssl_context(props)
    if not protocol.startswith("SASL_"):
        return ClientSecurity(protocol, ssl_context=context)
    mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()
    if mechanism not in MECHANISMS:
        raise ConfigError(f"{source}: sasl.mechanism={mechanism} is not supported by kafka-shim's client; "
                          f"use one of {', '.join(MECHANISMS)}")
    username, password = _jaas_credentials(props, mechanism, source)
    return ClientSecurity(protocol, mechanism, username, password, context)


def _jaas_credentials(props: Mapping[str, str], mechanism: str, source: str) -> tuple[str, str]:
    from kafka_shim.shim.security.sasl.jaas import parse_jaas_config

    module = LOGIN_MODULES[mechanism]
    example = f'sasl.jaas.config={module} required username="alice" password="alice-secret";'
    value = props.get("sasl.jaas.config", "").strip()
    if not value:
        raise ConfigError(f"{source}: sasl.mechanism={mechanism} needs the user's credentials; add {example}")
    entries = parse_jaas_config(value)
    entry = entries[0]
    if entry.login_module != module:
        raise ConfigError(f"{source}: sasl.jaas.config uses {entry.login_module}, but sasl.mechanism={mechanism} "
                          f"needs {module}; write {example}")
    username, password = entry.options.get("username"), entry.options.get("password")
    if username is None or password is None:
        raise ConfigError(f"{source}: sasl.jaas.config has no username= or password=; write {example}")
    return username, password


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
        await _send(client, API_VERSIONS, version, request, shown, "ApiVersions")
        payload = await _read(client, timeout, shown, "ApiVersions")
        response = _decode_api_versions(payload, version, shown)
        if response.error_code == 35 and version > 0:
            # The broker answered in v0 listing the ApiVersions versions it knows: retry with its highest.
            known = {k.api_key: k.max_version for k in response.api_keys}
            version = min(known.get(API_VERSIONS, 0), version - 1)
            continue
        if response.error_code != 0:
            raise BrokerError(response.error_code, None)
        return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    raise ClientError(f"the broker at {shown} refused every ApiVersions version kafka-shim acls tried")


def _decode_api_versions(payload: bytes, version: int, shown: str) -> ApiVersionsResponse:
    try:
        return decode_response(API_VERSIONS, version, payload)[1]
    except DecodeError:
        if version == 0:
            raise ClientError(f"the broker at {shown} sent an ApiVersions answer that is not Kafka's format") from None
        # An unsupported version gets a v0 body (KIP-511), which the flexible decoder cannot read.
        return decode_response(API_VERSIONS, 0, payload)[1]


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
    if session.api_versions.get(SASL_HANDSHAKE, (0, 0))[1] < 1 or SASL_AUTHENTICATE not in session.api_versions:
        raise ClientError(f"the broker at {session.address} does not offer SaslHandshake v1 and SaslAuthenticate; "
                          f"kafka-shim acls needs them for {security.security_protocol}")
    hs = await request(session, SASL_HANDSHAKE, 1, SaslHandshakeRequest(mechanism=mechanism), timeout, "SaslHandshake")
    if hs.error_code == 33:
        offered = ", ".join(hs.mechanisms) or "none"
        raise ClientError(f"{kafka_error_text(33, None)} The listener at {session.address} does not enable {mechanism}; "
                          f"it offers: {offered}. Set sasl.mechanism (and sasl.jaas.config) in --command-config to one of them")
    if hs.error_code != 0:
        raise BrokerError(hs.error_code, None)
    auth_version = session.version(SASL_AUTHENTICATE, (0, 2), "SaslAuthenticate")
    if mechanism == "PLAIN":
        # RFC 4616: an empty authorization id, then the user and the password.
        token = b"\x00" + security.username.encode() + b"\x00" + security.password.encode()
        await _sasl_step(session, auth_version, token, timeout)
    else:
        scram = ScramClient(mechanism, security.username or "", security.password or "")
        server_first = await _sasl_step(session, auth_version, scram.first_message(), timeout)
        server_final = await _sasl_step(session, auth_version, scram.final_message(server_first), timeout)
        scram.verify_server_final(server_final)
    log.debug("authenticated", address=session.address, mechanism=mechanism, user=security.username)


async def _sasl_step(session: Session, version: int, token: bytes, timeout: float) -> bytes:
    response = await request(session, SASL_AUTHENTICATE, version, SaslAuthenticateRequest(auth_bytes=token), timeout,
                             "SaslAuthenticate")
    if response.error_code != 0:
        raise BrokerError(response.error_code, response.error_message)
    return response.auth_bytes


# -- SCRAM (RFC 5802, RFC 7677), sans-IO ----------------------------------------------------------------------------


class ScramError(ClientError):
    pass


class ScramClient:
    """One SCRAM exchange as Kafka's ScramSaslClient does it: no channel binding, no SASLprep, 4096+ iterations."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None) -> None:
        if mechanism not in SCRAM_HASHES:
            raise ValueError(f"not a SCRAM mechanism: {mechanism}")
        self.mechanism = mechanism
        self._hash = SCRAM_HASHES[mechanism]
        self._password = password.encode()
        # Printable, without ',' (RFC 5802 c-nonce): url-safe base64 qualifies.
        self.nonce = nonce or secrets.token_urlsafe(24)
        self._client_first_bare = f"n={_scram_name(username)},r={self.nonce}"
        self._server_signature: bytes | None = None

    def first_message(self) -> bytes:
        return ("n,," + self._client_first_bare).encode()

    def final_message(self, server_first: bytes) -> bytes:
        text = server_first.decode("utf-8", "replace")
        attrs = _scram_attributes(text)
        if "e" in attrs:
            raise ScramError(f"{self.mechanism}: the broker refused the first message: {attrs['e']}")
        nonce, salt_b64, iterations = attrs.get("r"), attrs.get("s"), attrs.get("i")
        if not nonce or salt_b64 is None or iterations is None:
            raise ScramError(f"{self.mechanism}: the broker's first message is not r=...,s=...,i=...")
        if not nonce.startswith(self.nonce) or len(nonce) == len(self.nonce):
            raise ScramError(f"{self.mechanism}: the broker's nonce does not extend ours; refusing to continue")
        try:
            salt = base64.b64decode(salt_b64, validate=True)
            rounds = int(iterations)
        except ValueError:
            raise ScramError(f"{self.mechanism}: the broker's salt or iteration count is malformed") from None
        if rounds < SCRAM_MIN_ITERATIONS:
            raise ScramError(f"{self.mechanism}: requested iterations {rounds} is less than the minimum {SCRAM_MIN_ITERATIONS}")
        salted = hashlib.pbkdf2_hmac(self._hash, self._password, salt, rounds)
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify_server_final(self, server_final: bytes) -> None:
        """The broker must prove it knows the credential too (RFC 5802 §3); constant-time comparison."""
        if self._server_signature is None:
            raise ScramError(f"{self.mechanism}: the final message came before the first one was answered")
        attrs = _scram_attributes(server_final.decode("utf-8", "replace"))
        if "e" in attrs:
            raise ScramError(f"{self.mechanism}: the broker refused the proof: {attrs['e']}")
        try:
            signature = base64.b64decode(attrs.get("v", ""), validate=True)
        except ValueError:
            signature = b""
        if not hmac.compare_digest(signature, self._server_signature):
            raise ScramError(f"{self.mechanism}: the broker's signature is wrong; it does not hold this user's credential. "
                             f"Not trusting this connection")

    def _hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self._hash).digest()


def _scram_name(username: str) -> str:
    return username.replace("=", "=3D").replace(",", "=2C")


def _scram_attributes(text: str) -> dict[str, str]:
    attrs = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep and len(key) == 1 and key not in attrs:
            attrs[key] = value
    return attrs
