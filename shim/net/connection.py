"""One client connection: frames in, responses out in request order; the only asyncio protocol.

The connection owns the transport, timers and back-pressure. What each frame means is decided by its
``RequestSession`` (shim.requests.dispatch), which returns an outcome for the connection to carry out.
Answers may be ready out of order (a pending outcome runs as a task), but Kafka clients match responses
to requests by order as much as by correlation id, so responses are released strictly in the order their
requests arrived.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any

import structlog
from kafka_shim.authorizer.model import ANONYMOUS
from kafka_shim.protocol.errors import FrameTooLarge, ProtocolError
from kafka_shim.protocol.framing import FrameSplitter
from kafka_shim.shim.net.addresses import java_host_address
from kafka_shim.shim.requests.dispatch import (
    Authenticated,
    Close,
    Dispatcher,
    FailAuthentication,
    Outcome,
    Pending,
    RequestSession,
    Respond,
)

if TYPE_CHECKING:
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
    def __init__(self, dispatcher: Dispatcher, listener: Listener, security: ListenerSecurity | None = None,
                 connections: set[KafkaConnection] | None = None) -> None:
        self.dispatcher = dispatcher
        self.config = dispatcher.services.config
        self.connections = connections if connections is not None else set()  # the broker's open connections
        self.listener = listener
        self.security = security
        self.session: RequestSession | None = None
        self.auth_failed = False
        self.splitter = FrameSplitter(self.config.socket_request_max_bytes)
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
        self.connections.add(self)
        security = self.security
        principal = ANONYMOUS
        if security is not None and security.ssl_context is not None:
            # After the TLS handshake: the client certificate (if any) names the principal, as in Kafka.
            try:
                principal = security.tls_principal(transport.get_extra_info("ssl_object"))
            except Exception as exc:  # a certificate no mapping rule accepts fails authentication
                self.log.info("authentication_failed", reason=str(exc), mechanism="SSL")
                self.close()
                return
        self.session = self.dispatcher.session(self.listener, security, self.client_host, self.client_port, principal, self.log)
        if self.session.authenticating:
            self.splitter.max_size = min(self.splitter.max_size, SASL_MAX_RECEIVE_SIZE)
        if self.debug:
            self.log.debug("connection_opened", principal=self.session.principal)
        self._arm_idle_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self.connections.discard(self)
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
        if self.session is None:
            return  # refused before the session began (a TLS certificate no rule maps)
        outcome = self.session.receive(payload)
        if outcome is not None:
            self._carry_out(outcome)

    def _carry_out(self, outcome: Outcome) -> None:
        kind = type(outcome)
        if kind is Respond:
            self._respond_now(outcome.data)
        elif kind is Pending:
            slot = _Slot()
            self.pending.append(slot)
            slot.task = asyncio.ensure_future(self._finish(slot, outcome.outcome))
        elif kind is Close:
            outcome.log_to(self.log)
            self.close()
        elif kind is Authenticated:
            self._respond_now(outcome.data)
            self._authenticated(outcome)
        elif kind is FailAuthentication:
            self._fail_authentication(outcome)

    def _respond_now(self, data: bytes) -> None:
        if self.pending:
            slot = _Slot()
            slot.data = data
            self.pending.append(slot)
        else:
            self.out.append(data)

    async def _finish(self, slot: _Slot, awaitable: Any) -> None:
        try:
            outcome = await awaitable
        except asyncio.CancelledError:
            raise
        except Exception:  # dispatch turns handler failures into Close; anything else is a bug here
            self.log.exception("request_failed")
            self.close()
            return
        if type(outcome) is Close:
            outcome.log_to(self.log)
            self.close()
            return
        slot.data = outcome.data
        while self.pending and self.pending[0].data is not None:
            self.out.append(self.pending.popleft().data)
        self._flush()
        self._update_reading()

    # -- authentication outcomes -------------------------------------------------------------
    def _authenticated(self, outcome: Authenticated) -> None:
        self.splitter.max_size = self.config.socket_request_max_bytes
        self.log = self.log.bind(principal=outcome.principal)
        if self.session is not None:
            self.session.log = self.log
        self.log.info("authenticated", mechanism=outcome.mechanism, session_lifetime_ms=outcome.session_lifetime_ms)

    def _fail_authentication(self, outcome: FailAuthentication) -> None:
        """Kafka waits connection.failed.authentication.delay.ms before it answers a failed authentication and
        closes, to slow down password guessing; nothing more is read meanwhile."""
        self.auth_failed = True
        self.log.info("authentication_failed", reason=outcome.reason)
        self._flush()
        if self.transport is not None:
            self.transport.pause_reading()
            self.reading_paused = True
        delay = self.config.failed_authentication_delay_ms / 1000
        data = outcome.data

        def finish() -> None:
            if data is not None:
                self._respond_now(data)
            self.close()

        if delay > 0:
            asyncio.get_running_loop().call_later(delay, finish)
        else:
            finish()

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
        idle_ms = self.config.connections_max_idle_ms
        if idle_ms < 0:
            return
        loop = asyncio.get_running_loop()
        self.idle_timer = loop.call_later(idle_ms / 1000, self._check_idle)

    def _check_idle(self) -> None:
        idle_s = self.config.connections_max_idle_ms / 1000
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
