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

from protocol.errors import FrameTooLarge, ProtocolError
from protocol.framing import API_VERSIONS_KEY, FrameSplitter, api_name, encode_response, parse_request
from shim.addresses import java_host_address
from shim.context import RequestContext
from shim.handlers import CloseConnection, api_versions

if TYPE_CHECKING:
    from shim.broker import Broker
    from shim.config import Listener

log = structlog.get_logger("kafka_shim.connection")

# Stop reading from a client with this many requests still unanswered; Kafka itself
# reads one request at a time per connection.
MAX_IN_FLIGHT = 64


class _Slot:
    """A response position in the connection's order; ``data`` is set when it is ready."""

    __slots__ = ("data", "task")

    def __init__(self) -> None:
        self.data: bytes | None = None
        self.task: asyncio.Task | None = None


class KafkaConnection(asyncio.Protocol):
    def __init__(self, broker: Broker, listener: Listener) -> None:
        self.broker = broker
        self.listener = listener
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
        if self.debug:
            self.log.debug("connection_opened")
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
            if api_key == API_VERSIONS_KEY:
                self._respond_now(encode_response(API_VERSIONS_KEY, 0, frame.correlation_id, api_versions.unsupported_version_response()))
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
        ctx = RequestContext(self.broker, self.listener, frame.header, version, self.client_host, self.client_port)
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
        should_pause = self.writing_paused or len(self.pending) >= MAX_IN_FLIGHT
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
