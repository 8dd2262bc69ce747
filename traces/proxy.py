"""``kafka-shim capture-proxy``: record what Kafka clients send to a real cluster, in the trace format.

No Kafka counterpart (the nearest are Kafka's request log and a packet capture). The proxy listens for Kafka
clients, opens one connection to the upstream broker (kafka-shim or Apache Kafka, any version) per client
connection and forwards every frame both ways unchanged, except the broker addresses in Metadata (all versions),
FindCoordinator (all versions, v4+ batched coordinators) and DescribeCluster answers, which name the proxy so the
client's later connections come through it too (traces.proxy_rewrite). Every request becomes one trace row
(``source`` = ``proxy``), written by the same sink as ``serve --capture`` (traces.capture.CaptureSink):

- ``request``: the frame as the client sent it; ``response``: the frame as the upstream sent it, before any
  rewrite; ``response_rewritten`` says the client got a re-encoded one. Responses are paired with their request
  by correlation id, per connection (Kafka answers in order; a response that does not match the oldest
  outstanding request is logged and closes the connection); the response's API version is the request's.
- Produce with acks=0: ``no_response`` at once (Kafka answers nothing). A connection that ends with requests
  outstanding: ``closed`` for each.
- SASL (``SASL_PLAINTEXT``): not terminated; the handshake and tokens pass through. The username is read from
  PLAIN's authcid and SCRAM's client-first ``n=`` (traces.proxy_sasl) and becomes the principal ``User:<name>``
  of the rows after the exchange succeeded (rows before it, the SASL ones included, are ``User:ANONYMOUS``, as
  kafka-shim's own capture records them). SaslAuthenticate and AlterUserScramCredentials rows keep no request
  bytes, nor do the bare tokens after a v0 SaslHandshake (which have no header at all): passwords and SCRAM
  proofs are never written. A failed SaslAuthenticate is ``authentication_failed``.
- ``decisions`` is null: the proxy does not see the broker's authorization.

Brokers: by default every node an answer advertises is mapped to the proxy's own address, which serves a
single-broker cluster (kafka-shim, or a single-node Kafka) whatever address it advertises. In front of a
multi-broker cluster, ``listener_per_broker`` (``--listener-per-broker``) gives each advertised node its own proxy
port, opened the first time an answer names it and forwarding to the address the cluster advertised for it (the
node advertising ``--upstream``'s own address keeps the main port); without it, a client's requests for other
brokers' partitions would reach the bootstrap broker and meet NOT_LEADER answers.

Bad input: a frame size below 0 or above ``max_frame_bytes`` (Kafka's ``socket.request.max.bytes`` default), a
header that does not parse, an upstream that cannot be reached or closes: logged (``proxy_*`` events), that
connection closed, every other connection goes on.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import socket
import struct
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from kafka_shim.authorizer.library_logging import get_logger
from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.framing import decode_response, parse_request
from kafka_shim.traces.proxy_rewrite import REWRITTEN_APIS, advertised_nodes, rewrite_addresses
from kafka_shim.traces.proxy_sasl import OAUTHBEARER, exchange_rounds, username

log = get_logger("kafka_shim.capture_proxy")

PLAINTEXT = "PLAINTEXT"
SASL_PLAINTEXT = "SASL_PLAINTEXT"
SECURITY_PROTOCOLS = (PLAINTEXT, SASL_PLAINTEXT)
ANONYMOUS = "User:ANONYMOUS"
MAX_FRAME_BYTES = 104_857_600  # Kafka's socket.request.max.bytes default
CONNECT_TIMEOUT_S = 30.0

# Outcomes, as traces/FORMAT.md names them (the same values as shim.tap's).
ANSWERED = "response"
SILENT = "no_response"
CLOSED = "closed"
AUTHENTICATION_FAILED = "authentication_failed"

# Requests whose bytes hold credentials: recorded with key, version and correlation id only.
_SECRET_APIS = frozenset({ApiKey.SASL_AUTHENTICATE, ApiKey.ALTER_USER_SCRAM_CREDENTIALS})
_SIZE = struct.Struct(">i")
_INT16 = struct.Struct(">h")


class ProxiedRequest(NamedTuple):
    """One request row: the trace's columns in its own order (traces.capture_rows.ROW_FIELDS, read by name), then
    the proxy's own ``response_rewritten``; tests/traces/test_capture_proxy.py checks they stay the same."""

    time_us: int
    connection_id: str
    client_host: str
    client_port: int
    listener: str
    security_protocol: str
    principal: str | None
    client_id: str | None
    client_software_name: str | None
    client_software_version: str | None
    api_key: int | None
    api_version: int | None
    correlation_id: int | None
    request: bytes | None
    response: bytes | None
    outcome: str
    response_time_us: int
    decisions: None  # the proxy does not see the broker's decisions
    response_rewritten: bool | None


class RequestSink(Protocol):
    """Where rows go (traces.capture.CaptureSink); ``record`` runs on the event loop and must return at once."""

    def record(self, request: Any) -> None: ...

    def close(self) -> None: ...


@dataclass(slots=True)
class _Outstanding:
    """A forwarded request waiting for its response."""

    time_us: int
    started_ns: int
    principal: str | None
    client_id: str | None
    api_key: int | None
    api_version: int | None
    correlation_id: int | None
    request: bytes | None
    token: bool = False  # a bare SASL token after a v0 handshake: answered by a bare token, no correlation id
    mechanism: str | None = None  # SaslHandshake: the mechanism asked for


@dataclass(slots=True)
class _Session:
    """What the proxy follows of one client connection."""

    connection_id: str
    client_host: str
    client_port: int
    principal: str | None
    software: tuple[str | None, str | None] = (None, None)
    outstanding: deque[_Outstanding] = field(default_factory=deque)
    mechanism: str | None = None
    sasl_user: str | None = None
    sasl_rounds: int = 0  # client tokens answered successfully so far
    bare_tokens: bool = False  # after a v0 SaslHandshake: the next frames are bare tokens


class ProxyError(Exception):
    """A connection the proxy closes: the message says why (logged, never raised to the server)."""


class CaptureProxy:
    """Listens for Kafka clients and forwards each connection to ``upstream``, recording every request in ``sink``."""

    def __init__(self, upstream: tuple[str, int], sink: RequestSink | None, *, listen: tuple[str, int] = ("127.0.0.1", 0),
                 security_protocol: str = PLAINTEXT, advertised_host: str | None = None,
                 max_frame_bytes: int = MAX_FRAME_BYTES, connect_timeout_s: float = CONNECT_TIMEOUT_S,
                 listener_per_broker: bool = False) -> None:
        if security_protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"security protocol {security_protocol!r}: the proxy speaks {' or '.join(SECURITY_PROTOCOLS)}")
        self.upstream = upstream
        self.sink = sink
        self.listen = listen
        self.security_protocol = security_protocol
        self.advertised_host = advertised_host
        self.max_frame_bytes = max_frame_bytes
        self.connect_timeout_s = connect_timeout_s
        self.listener_per_broker = listener_per_broker
        # listener_per_broker: node id -> the proxy address that forwards to it, and the extra servers opened.
        self.routes: dict[int, tuple[str, int]] = {}
        self._node_servers: list[asyncio.Server] = []
        self._routing = asyncio.Lock()
        self.address: tuple[str, int] | None = None  # what answers advertise: set by start
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._index = itertools.count()

    async def start(self) -> tuple[str, int]:
        """Listen; returns the bound (host, port), which answers advertise."""
        self._server = await asyncio.start_server(functools.partial(self._accept, self.upstream), self.listen[0], self.listen[1])
        host, port = self._server.sockets[0].getsockname()[:2]
        if self.advertised_host:
            host = self.advertised_host
        elif host in ("0.0.0.0", "::"):
            host = socket.getfqdn()  # a wildcard is no address a client can connect to
        self.address = (host, port)
        log.info("proxy_listening", listen=f"{host}:{port}", upstream=f"{self.upstream[0]}:{self.upstream[1]}",
                 security_protocol=self.security_protocol)
        return self.address

    async def stop(self) -> None:
        """Stop listening, close every connection (their outstanding requests recorded as closed), close the sink."""
        servers = [s for s in (self._server, *self._node_servers) if s is not None]
        for server in servers:
            server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        for server in servers:
            await server.wait_closed()
        self._server = None
        self._node_servers.clear()
        if self.sink is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.sink.close)

    # -- one client connection ----------------------------------------------------------------------
    async def _accept(self, upstream: tuple[str, int], client_reader: asyncio.StreamReader,
                      client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._serve(upstream, client_reader, client_writer)
        except asyncio.CancelledError:
            pass
        finally:
            self._connections.discard(task)

    async def _serve(self, upstream: tuple[str, int], client_reader: asyncio.StreamReader,
                     client_writer: asyncio.StreamWriter) -> None:
        peer = client_writer.get_extra_info("peername") or ("", 0)
        local = client_writer.get_extra_info("sockname") or ("", 0)
        client_host, client_port = _java_host(peer[0]), peer[1]
        connection_id = f"{_java_host(local[0])}:{local[1]}-{client_host}:{client_port}-{next(self._index)}"
        session = _Session(connection_id, client_host, client_port, ANONYMOUS)
        bound = log.bind(connection_id=connection_id)
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(*upstream), self.connect_timeout_s)
        except (OSError, TimeoutError) as exc:
            bound.warning("proxy_upstream_unreachable", upstream=f"{upstream[0]}:{upstream[1]}", error=str(exc) or type(exc).__name__,
                          action="client connection closed; check --upstream and that the broker is running")
            client_writer.close()
            return
        bound.debug("proxy_connection_opened")
        to_upstream = asyncio.create_task(self._client_to_upstream(session, client_reader, upstream_writer))
        to_client = asyncio.create_task(self._upstream_to_client(session, upstream_reader, client_writer))
        reason = "closed"
        try:
            done, _ = await asyncio.wait({to_upstream, to_client}, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                error = task.exception()
                if isinstance(error, ProxyError):
                    reason = str(error)
                    bound.warning("proxy_connection_closed", reason=reason)
                elif isinstance(error, (OSError, asyncio.IncompleteReadError)):
                    reason = f"connection lost ({type(error).__name__})"
                    bound.debug("proxy_connection_lost", error=str(error))
                elif error is not None:
                    reason = f"proxy error: {error!r}"
                    bound.error("proxy_connection_failed", error=repr(error))
        finally:
            for task in (to_upstream, to_client):
                task.cancel()
            await asyncio.gather(to_upstream, to_client, return_exceptions=True)
            for writer in (client_writer, upstream_writer):
                writer.close()
            while session.outstanding:
                self._record(session, session.outstanding.popleft(), None, CLOSED, None)
            bound.debug("proxy_connection_ended", reason=reason)

    async def _client_to_upstream(self, session: _Session, reader: asyncio.StreamReader, upstream: asyncio.StreamWriter) -> None:
        while True:
            frame = await self._read_frame(reader, "client")
            if frame is None:
                return  # the client closed
            request = self._take_request(session, frame)
            if request is not None:
                session.outstanding.append(request)
            upstream.write(_SIZE.pack(len(frame)) + frame)
            await upstream.drain()

    async def _upstream_to_client(self, session: _Session, reader: asyncio.StreamReader, client: asyncio.StreamWriter) -> None:
        while True:
            frame = await self._read_frame(reader, "upstream")
            if frame is None:
                if session.outstanding:
                    raise ProxyError(f"the upstream closed the connection with {len(session.outstanding)} request(s) unanswered")
                return
            if not session.outstanding:
                raise ProxyError("the upstream sent a response to no outstanding request")
            request = session.outstanding.popleft()
            sent = await self._answer(session, request, frame)
            client.write(_SIZE.pack(len(sent)) + sent)
            await client.drain()

    async def _read_frame(self, reader: asyncio.StreamReader, side: str) -> bytes | None:
        try:
            prefix = await reader.readexactly(4)
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                raise ProxyError(f"the {side} closed in the middle of a frame size") from None
            return None
        size = _SIZE.unpack(prefix)[0]
        if size < 0 or size > self.max_frame_bytes:
            raise ProxyError(f"the {side} sent a frame size of {size} bytes (allowed: 0 to {self.max_frame_bytes}); "
                             "not a Kafka client or broker speaking " + self.security_protocol)
        try:
            return await reader.readexactly(size)
        except asyncio.IncompleteReadError:
            raise ProxyError(f"the {side} closed in the middle of a {size}-byte frame") from None

    # -- following the protocol -----------------------------------------------------------------
    def _take_request(self, session: _Session, frame: bytes) -> _Outstanding | None:
        """The outstanding entry for a client frame (None when no answer will come: it is recorded at once)."""
        now_us, started = time.time_ns() // 1000, time.perf_counter_ns()
        if session.bare_tokens:
            if session.sasl_rounds == 0:
                session.sasl_user = username(session.mechanism, frame)
            return _Outstanding(now_us, started, session.principal, None, None, None, None, None, token=True)
        try:
            header = parse_request(frame)
            api_key, api_version, correlation_id = header.api_key, header.api_version, header.correlation_id
            client_id = header.header.client_id
        except Exception as exc:  # any bytes: the proxy cannot pair what it cannot read
            self._record(session, _Outstanding(now_us, started, session.principal, None, None, None, None, frame), None, CLOSED, None)
            raise ProxyError(f"the client sent a request whose header does not parse ({exc}); Kafka closes such a connection") from None
        entry = _Outstanding(now_us, started, session.principal, client_id, api_key, api_version, correlation_id,
                             None if api_key in _SECRET_APIS else frame)
        try:
            if api_key == ApiKey.API_VERSIONS and api_version >= 3:
                body = header.decode_body()
                session.software = (body.client_software_name, body.client_software_version)
            elif api_key == ApiKey.SASL_HANDSHAKE:
                entry.mechanism = header.decode_body().mechanism
                session.sasl_rounds = 0  # a new exchange (KIP-368 re-authentication too): its first token names the user
            elif api_key == ApiKey.SASL_AUTHENTICATE and session.sasl_rounds == 0:
                session.sasl_user = username(session.mechanism, header.decode_body().auth_bytes)
            elif api_key == ApiKey.PRODUCE and _produce_acks(frame, header.body_offset, api_version) == 0:
                self._record(session, entry, None, SILENT, None)
                return None
        except Exception as exc:  # a body the codec cannot read: forwarded all the same, the upstream judges it
            log.debug("proxy_body_unreadable", connection_id=session.connection_id, api_key=api_key, error=str(exc))
        return entry

    async def _answer(self, session: _Session, request: _Outstanding, frame: bytes) -> bytes:
        """Follow a response (SASL progress, pairing), record the row, and return the frame for the client."""
        if request.token:
            # A bare OAUTHBEARER answer with bytes is RFC 7628's error challenge: the exchange is not done.
            self._sasl_progress(session, not (session.mechanism == OAUTHBEARER and frame))
            self._record(session, request, frame, ANSWERED, None)
            return frame
        correlation_id = _SIZE.unpack_from(frame)[0] if len(frame) >= 4 else None
        if correlation_id != request.correlation_id:
            self._record(session, request, frame, CLOSED, None)
            raise ProxyError(f"the upstream answered correlation id {correlation_id} where {request.correlation_id} "
                             f"({request.api_key}) was the oldest outstanding request")
        outcome = ANSWERED
        sent = frame
        rewritten: bool | None = None
        api_key = request.api_key
        if api_key in REWRITTEN_APIS:
            try:
                if self.listener_per_broker:
                    await self._route_nodes(advertised_nodes(api_key, request.api_version, frame))  # type: ignore[arg-type]
                new = rewrite_addresses(api_key, request.api_version, frame, self._address_for)  # type: ignore[arg-type]
            except Exception as exc:
                log.warning("proxy_rewrite_failed", connection_id=session.connection_id, api_key=api_key,
                            api_version=request.api_version, error=str(exc),
                            consequence="the answer is passed on unchanged: the client may connect to the broker directly")
                new = None
            rewritten = new is not None
            if new is not None:
                sent = new
        elif api_key == ApiKey.SASL_HANDSHAKE:
            if _error_code(api_key, request.api_version, frame) == 0:
                session.mechanism = request.mechanism
                session.bare_tokens = request.api_version == 0
                if session.bare_tokens and exchange_rounds(request.mechanism) is None:
                    raise ProxyError(f"SaslHandshake v0 with {request.mechanism}: the proxy cannot follow its bare tokens")
        elif api_key == ApiKey.SASL_AUTHENTICATE:
            ok = _error_code(api_key, request.api_version, frame) == 0
            self._sasl_progress(session, ok and not (session.mechanism == OAUTHBEARER
                                                     and _auth_bytes(request.api_version, frame)))
            if not ok:
                outcome = AUTHENTICATION_FAILED
        self._record(session, request, frame, outcome, rewritten)
        return sent

    def _sasl_progress(self, session: _Session, ok: bool) -> None:
        if not ok:
            return
        session.sasl_rounds += 1
        if session.sasl_rounds == exchange_rounds(session.mechanism):
            session.principal = f"User:{session.sasl_user}" if session.sasl_user is not None else None
            session.bare_tokens = False
            log.debug("proxy_authenticated", connection_id=session.connection_id, principal=session.principal,
                      mechanism=session.mechanism)
        elif exchange_rounds(session.mechanism) is None:
            session.principal = None  # a mechanism whose username the proxy cannot read

    def _address_for(self, node_id: int) -> tuple[str, int] | None:
        if self.listener_per_broker:
            return self.routes.get(node_id)
        return self.address  # one upstream broker: every node is reached through this proxy

    async def _route_nodes(self, nodes: list[tuple[int, str, int]]) -> None:
        """Open a proxy port for each node not routed yet (listener_per_broker)."""
        async with self._routing:
            for node_id, host, port in nodes:
                if node_id in self.routes:
                    continue
                if (host, port) == tuple(self.upstream):
                    self.routes[node_id] = self.address  # type: ignore[assignment]
                    continue
                server = await asyncio.start_server(functools.partial(self._accept, (host, port)), self.listen[0], 0)
                self._node_servers.append(server)
                assert self.address is not None
                self.routes[node_id] = (self.address[0], server.sockets[0].getsockname()[1])
                log.info("proxy_node_listening", node_id=node_id, listen=f"{self.address[0]}:{self.routes[node_id][1]}",
                         upstream=f"{host}:{port}")

    def _record(self, session: _Session, request: _Outstanding, response: bytes | None, outcome: str,
                rewritten: bool | None) -> None:
        if self.sink is None:
            return
        software_name, software_version = session.software
        row = ProxiedRequest(
            request.time_us, session.connection_id, session.client_host, session.client_port, self.security_protocol,
            self.security_protocol, request.principal, request.client_id, software_name, software_version,
            request.api_key, request.api_version, request.correlation_id, request.request, response, outcome,
            (time.perf_counter_ns() - request.started_ns) // 1000, None, rewritten)
        try:
            self.sink.record(row)
        except Exception as exc:  # a failing sink must not break the client's connection
            log.error("proxy_record_failed", connection_id=session.connection_id, error=str(exc))


def _auth_bytes(api_version: int | None, frame: bytes) -> bytes:
    """A SaslAuthenticate response's token (OAUTHBEARER: non-empty only for an error challenge)."""
    try:
        return bytes(decode_response(ApiKey.SASL_AUTHENTICATE, api_version or 0, frame)[1].auth_bytes or b"")
    except Exception:  # any bytes: unreadable is no completion
        return b"?"


def _error_code(api_key: int, api_version: int | None, frame: bytes) -> int | None:
    """A SaslHandshake / SaslAuthenticate response's error code (None if it does not decode)."""
    try:
        return decode_response(api_key, api_version or 0, frame)[1].error_code
    except Exception:  # any bytes: an unreadable answer is no success
        return None


def _produce_acks(frame: bytes, offset: int, version: int) -> int | None:
    """A Produce request's acks without decoding its records: v3+ start with the transactional id."""
    if version >= 3:
        if version >= 9:  # compact nullable string: unsigned varint length + 1
            length, shift = 0, 0
            while True:
                byte = frame[offset]
                offset += 1
                length |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    break
            offset += max(length - 1, 0)
        else:
            length = _INT16.unpack_from(frame, offset)[0]
            offset += 2 + max(length, 0)
    return _INT16.unpack_from(frame, offset)[0] if len(frame) >= offset + 2 else None


def _java_host(host: str) -> str:
    """A client address as a Java broker renders it (eight IPv6 groups, no compression; IPv4-mapped as IPv4)."""
    import ipaddress

    try:
        addr = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return str(addr.ipv4_mapped)
        return ":".join(format(int(g, 16), "x") for g in addr.exploded.split(":"))
    return str(addr)
