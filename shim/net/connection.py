"""One client connection: frames in, handlers, responses out in request order.

Handlers may finish out of order (an awaitable result runs as a task), but Kafka
clients match responses to requests by order as much as by correlation id, so
responses are released strictly in the order their requests arrived.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any

import structlog
from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.errors import FrameTooLarge, ProtocolError
from kafka_shim.protocol.framing import FrameSplitter, api_name, encode_response, parse_request
from kafka_shim.shim.handlers import CloseConnection, api_versions
from kafka_shim.shim.net.addresses import java_host_address
from kafka_shim.shim.requests.context import ANONYMOUS, RequestContext
from kafka_shim.shim.security.sasl.gate import Phase, SaslGate

if TYPE_CHECKING:
    from kafka_shim.shim.broker import Broker
    from kafka_shim.shim.config.broker_config import Listener
    from kafka_shim.shim.security.listener_security import ListenerSecurity

log = structlog.get_logger("kafka_shim.connection")

# Stop reading from a client with this many requests still unanswered; Kafka itself
# reads one request at a time per connection.
MAX_IN_FLIGHT = 64
# Kafka's sasl.server.max.receive.size default: the largest frame accepted before authentication completes.
SASL_MAX_RECEIVE_SIZE = 524288


class _Slot:
    """A response position in the connection's order; ``data`` is set when it is ready."""

    __slots__ = ("data", "task")

    def __init__(self) -> None:
        self.data: bytes | None = None
        self.task: asyncio.Task | None = None


class KafkaConnection(asyncio.Protocol):
    def __init__(self, broker: Broker, listener: Listener, security: ListenerSecurity | None = None) -> None:
        self.broker = broker
        self.listener = listener
        self.security = security
        self.principal = ANONYMOUS
        self.gate: SaslGate | None = None
        self.auth_failed = False
        self.splitter = FrameSplitter(broker.config.socket_request_max_bytes)
        self.transport: asyncio.Transport | None = None
        self.pending: deque[_Slot] = deque()
        self.out: list[bytes] = []
        self.closing = False
        self.reading_paused = False
        self.writing_paused = False
        self.client_host = "?"
        self.client_port = 0
        self.last_active = time.monotonic()
        self.idle_timer: asyncio.TimerHandle | None = None
        self.log = log
        self.debug = False

    # -- asyncio callbacks -----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername") or ("?", 0)
        self.client_host = java_host_address(str(peer[0]))
        self.client_port = int(peer[1]) if len(peer) > 1 else 0
        self.log = log.bind(client=f"{self.client_host}:{self.client_port}", listener=self.listener.name)
        self.debug = self.log.is_enabled_for(logging.DEBUG)
        self.broker.connections.add(self)
        security = self.security
        if security is not None:
            if security.ssl_context is not None:
                # After the TLS handshake: the client certificate (if any) names the principal, as in Kafka.
                try:
                    self.principal = security.tls_principal(transport.get_extra_info("ssl_object"))
                except Exception as exc:  # a certificate no mapping rule accepts fails authentication
                    self.log.info("authentication_failed", reason=str(exc), mechanism="SSL")
                    self.close()
                    return
            if security.sasl_mechanisms:
                self.principal = ANONYMOUS
                self.gate = SaslGate(self, security.sasl_mechanisms, security.new_mechanism, security.reauth_ms,
                                     security.is_authentication_error)
                self.splitter.max_size = min(self.splitter.max_size, SASL_MAX_RECEIVE_SIZE)
        if self.debug:
            self.log.debug("connection_opened", principal=self.principal)
        self._arm_idle_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self.broker.connections.discard(self)
        for slot in self.pending:
            if slot.task is not None:
                slot.task.cancel()
        self.pending.clear()
        if self.idle_timer is not None:
            self.idle_timer.cancel()
        if self.debug:
            self.log.debug("connection_closed", error=str(exc) if exc else None)

    def pause_writing(self) -> None:
        # The client is not reading its responses: stop taking new requests from it.
        self.writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self.writing_paused = False
        self._update_reading()

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        self.last_active = time.monotonic()
        try:
            frames = self.splitter.feed(data)
        except FrameTooLarge as exc:
            self.log.warning("frame_rejected", reason=str(exc), size=exc.size, limit=exc.limit)
            self.close()
            return
        except ProtocolError as exc:
            self.log.warning("frame_rejected", reason=str(exc))
            self.close()
            return
        for payload in frames:
            self._handle_frame(payload)
            if self.closing:
                break
        self._flush()
        self._update_reading()

    # -- requests ------------------------------------------------------------------------
    def _handle_frame(self, payload: bytes) -> None:
        gate = self.gate
        if gate is not None:
            if gate.phase is not Phase.COMPLETE:
                if not self.auth_failed:
                    gate.feed(payload)
                return
            if gate.session_expires_at is not None and self._session_frame(gate, payload):
                return
        try:
            frame = parse_request(payload)
        except ProtocolError as exc:
            # Kafka closes the connection when it cannot parse a request header.
            self.log.warning("request_rejected", reason=str(exc), api_key=exc.api_key, api_version=exc.version)
            self.close()
            return
        api_key, version = frame.api_key, frame.api_version
        handler = self.broker.handlers.get(api_key)
        if handler is None or not handler.serves(version):
            if api_key == ApiKey.API_VERSIONS:
                self._respond_now(encode_response(ApiKey.API_VERSIONS, 0, frame.correlation_id, api_versions.unsupported_version_response()))
                return
            self.log.warning(
                "request_rejected",
                reason=f"api key {api_key} ({api_name(api_key)}) version {version} is not enabled on this broker",
                api_key=api_key,
                api_version=version,
                correlation_id=frame.correlation_id,
            )
            self.close()
            return
        try:
            body = frame.decode_body()
        except ProtocolError as exc:
            self.log.warning("request_rejected", reason=str(exc), api_key=api_key, api_version=version, field=exc.field)
            self.close()
            return
        if self.debug:
            self.log.debug("request", api=api_name(api_key), api_version=version, correlation_id=frame.correlation_id,
                           client_id=frame.header.client_id)
        ctx = RequestContext(self.broker.services, self.listener, frame.header, version, self.client_host, self.client_port, self.principal)
        try:
            result = handler.handle(ctx, body)
        except CloseConnection as exc:
            self._refused(ctx, exc)
            return
        except Exception:
            self._handler_failed(ctx)
            return
        if handler.is_async:
            slot = _Slot()
            self.pending.append(slot)
            slot.task = asyncio.ensure_future(self._finish(ctx, slot, result))
        else:
            self._respond(ctx, result)

    def _respond(self, ctx: RequestContext, body: Any) -> None:
        try:
            data = encode_response(ctx.api_key, ctx.api_version, ctx.correlation_id, body)
        except ProtocolError:
            self._handler_failed(ctx)
            return
        self._respond_now(data)

    def _respond_now(self, data: bytes) -> None:
        if self.pending:
            slot = _Slot()
            slot.data = data
            self.pending.append(slot)
        else:
            self.out.append(data)

    async def _finish(self, ctx: RequestContext, slot: _Slot, awaitable: Any) -> None:
        try:
            body = await awaitable
            slot.data = encode_response(ctx.api_key, ctx.api_version, ctx.correlation_id, body)
        except asyncio.CancelledError:
            raise
        except CloseConnection as exc:
            self._refused(ctx, exc)
            return
        except Exception:
            self._handler_failed(ctx)
            return
        while self.pending and self.pending[0].data is not None:
            self.out.append(self.pending.popleft().data)
        self._flush()
        self._update_reading()

    def _refused(self, ctx: RequestContext, exc: CloseConnection) -> None:
        self.log.warning("request_rejected", reason=str(exc), api=api_name(ctx.api_key), api_version=ctx.api_version,
                         correlation_id=ctx.correlation_id)
        self.close()

    def _handler_failed(self, ctx: RequestContext) -> None:
        # A bug in a handler must not take the broker down; the client is disconnected
        # (as Kafka does when it cannot build a response) and the traceback logged.
        self.log.exception("handler_failed", api=api_name(ctx.api_key), api_version=ctx.api_version, correlation_id=ctx.correlation_id)
        self.close()

    # -- authentication (called by the SASL gate) ---------------------------------------------
    def send(self, data: bytes) -> None:
        self._respond_now(data)

    def authenticated(self, principal: str, mechanism: str, session_lifetime_ms: int) -> None:
        self.principal = principal
        self.splitter.max_size = self.broker.config.socket_request_max_bytes
        self.log = self.log.bind(principal=principal)
        self.log.info("authenticated", mechanism=mechanism, session_lifetime_ms=session_lifetime_ms)

    def fail_authentication(self, reason: str, data: bytes | None) -> None:
        """Kafka waits connection.failed.authentication.delay.ms before it answers a failed authentication and
        closes, to slow down password guessing; nothing more is read meanwhile."""
        self.auth_failed = True
        self.log.info("authentication_failed", reason=reason)
        self._flush()
        if self.transport is not None:
            self.transport.pause_reading()
            self.reading_paused = True
        delay = self.broker.config.failed_authentication_delay_ms / 1000

        def finish() -> None:
            if data is not None:
                self._respond_now(data)
            self.close()

        if delay > 0:
            asyncio.get_running_loop().call_later(delay, finish)
        else:
            finish()

    def refuse(self, reason: str, **fields: Any) -> None:
        self.log.warning("request_rejected", reason=reason, **fields)
        self.close()

    def _session_frame(self, gate: SaslGate, payload: bytes) -> bool:
        """KIP-368: a SaslHandshake may start re-authentication; any other request after expiry closes."""
        if len(payload) >= 2 and int.from_bytes(payload[:2], "big") == ApiKey.SASL_HANDSHAKE and gate.begin_reauthentication(payload):
            return True
        if gate.session_expired():
            self.log.info("session_expired_closed", reason="the SASL session expired (connections.max.reauth.ms) and the client did not re-authenticate")
            self.close()
            return True
        return False

    # -- output and lifecycle ------------------------------------------------------------
    def _flush(self) -> None:
        if self.out and self.transport is not None and not self.closing:
            if len(self.out) == 1:
                self.transport.write(self.out[0])
            else:
                self.transport.write(b"".join(self.out))
        self.out.clear()

    def _update_reading(self) -> None:
        if self.transport is None or self.closing:
            return
        should_pause = self.writing_paused or self.auth_failed or len(self.pending) >= MAX_IN_FLIGHT
        if should_pause and not self.reading_paused:
            self.transport.pause_reading()
            self.reading_paused = True
        elif not should_pause and self.reading_paused:
            self.transport.resume_reading()
            self.reading_paused = False

    def _arm_idle_timer(self) -> None:
        idle_ms = self.broker.config.connections_max_idle_ms
        if idle_ms < 0:
            return
        loop = asyncio.get_running_loop()
        self.idle_timer = loop.call_later(idle_ms / 1000, self._check_idle)

    def _check_idle(self) -> None:
        idle_s = self.broker.config.connections_max_idle_ms / 1000
        quiet = time.monotonic() - self.last_active
        if self.closing:
            return
        if quiet >= idle_s and not self.pending:
            self.log.info("connection_idle_closed", idle_ms=int(quiet * 1000))
            self.close()
            return
        loop = asyncio.get_running_loop()
        self.idle_timer = loop.call_later(max(idle_s - quiet, 0.05), self._check_idle)

    def close(self) -> None:
        """Send what is ready, then close."""
        if self.closing:
            return
        self.closing = True
        if self.transport is not None:
            if self.out:
                self.transport.write(b"".join(self.out))
                self.out.clear()
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
