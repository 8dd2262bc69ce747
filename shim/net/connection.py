"""One client connection: frames in, responses out in request order; the only asyncio protocol.

The connection owns the transport, timers and back-pressure. What each frame means is decided by its
``RequestSession`` (shim.requests.dispatch), which returns an outcome for the connection to carry out.
Answers may be ready out of order (a pending outcome runs as a task), but Kafka clients match responses
to requests by order as much as by correlation id, so responses are released strictly in the order their
requests arrived.

The limits a client can rely on (the I/O half of this module):

* Frames are taken one at a time from what was received (``FrameSplitter.next_frame``). A size prefix above
  the limit (socket.request.max.bytes; sasl.server.max.receive.size before authentication) or a negative one
  is refused without waiting for its body, but only once every complete request before it has been taken:
  those are answered, and the connection closes after the answers are written.
* At most MAX_IN_FLIGHT requests per connection are being handled or have answers not yet handed to the
  transport; at most FRAMES_PER_TURN frames are handled per event-loop turn (then the loop is yielded with
  ``call_soon``). While a Fetch is being answered, or the client does not read (the transport paused writing), no
  frame is taken. Frames
  beyond stay unparsed bytes in the splitter and reading from the socket is paused, so a connection holds at
  most: what it read before pausing, MAX_IN_FLIGHT answers, and the transport's buffer up to its high-water
  mark plus one turn's answers.
* connections.max.idle.ms: idle means no bytes received (a partial frame counts), no waiting frame taken
  and no response bytes handed to the socket, with no request being handled. An idle connection is closed
  and whatever answers it still held are dropped, as Kafka's Selector closes an expired channel. Any other
  close sends what is ready first, but a peer that reads none of it for min(connections.max.idle.ms,
  CLOSE_LINGER_MAX_S) is cut off (abort).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from kafka_shim.authorizer.model import ANONYMOUS
from kafka_shim.protocol.errors import FrameTooLarge, ProtocolError
from kafka_shim.protocol.framing import FrameSplitter
from kafka_shim.shim.config.logging import get_logger
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

log = get_logger("kafka_shim.connection")

# Requests a connection handles at once: being handled, or answered but not yet handed to the transport.
# Frames beyond wait, unparsed, with reading paused. Kafka itself reads one request at a time per connection.
MAX_IN_FLIGHT = 64
# The request bytes a connection's unfinished requests may hold before it reads on: a request handed to a worker
# (a large Produce) keeps its frame and every later frame of the connection queued behind it, and eight producers
# pipelining megabyte requests held 150-380 MB of frames this way, memory the allocator then faulted in afresh
# (0.8 MiB of new heap per MiB produced). Beyond it the bytes wait in the socket, whose window slows the client, as
# Kafka's one request at a time per connection does.
PENDING_FRAME_BYTES = 2 * 1024 * 1024
# Frames handled per event-loop turn before yielding, so one pipelining client cannot hold the loop.
FRAMES_PER_TURN = MAX_IN_FLIGHT
# The longest a closed connection waits for a peer that reads none of its remaining answers (bounded further
# by connections.max.idle.ms): nothing waits forever on an unread socket buffer.
CLOSE_LINGER_MAX_S = 30.0


# A Fetch request's first two bytes (its API key). While a Fetch of a connection is being answered, no further request
# of it is taken: its answer can be as large as the client asks (fetch.max.bytes), and a client pipelining many would
# otherwise have them all built at once (sixty 20 MB Fetches held 1.1 GB). Kafka takes one request at a time per
# connection; clients keep one Fetch in flight per connection.
_FETCH_KEY = b"\x00\x01"


class _Slot:
    """A response position in the connection's order; ``data`` is set when it is ready."""

    __slots__ = ("data", "fetch", "size", "task")

    def __init__(self, fetch: bool = False, size: int = 0) -> None:
        self.data: bytes | None = None
        self.fetch = fetch  # a Fetch being answered: no request is taken until it is
        self.size = size  # the request's bytes, held until it is answered
        self.task: asyncio.Task | None = None


_READ_BUFFER_SIZE = 256 * 1024
_read_buffers = threading.local()  # each event loop's thread reads into its own


def _read_buffer() -> memoryview:
    view = getattr(_read_buffers, "view", None)
    if view is None:
        view = _read_buffers.view = memoryview(bytearray(_READ_BUFFER_SIZE))
    return view


class KafkaConnection(asyncio.BufferedProtocol):
    def __init__(self, dispatcher: Dispatcher, listener: Listener, security: ListenerSecurity | None = None,
                 connections: set[KafkaConnection] | None = None) -> None:
        self.dispatcher = dispatcher
        self.config = dispatcher.services.config
        self.connections = connections if connections is not None else set()  # the broker's open connections
        self.metrics = None  # the broker's counters (shim.metrics), when kafka.shim.metrics.port is set
        self.listener = listener
        self.security = security
        self.session: RequestSession | None = None
        self.auth_failed = False
        self.splitter = FrameSplitter(self.config.socket_request_max_bytes, fill_in_place=True)
        self._into_frame = False  # the last get_buffer handed out the frame under way, not the shared buffer
        self.transport: asyncio.Transport | None = None
        self._quota_slot: tuple[Any, str, str] | None = None  # (ConnectionQuotas, listener, ip) while counted
        self._held = False  # the acceptor's connection-rate wait or max.connections: nothing is read yet
        self.pending: deque[_Slot] = deque()
        self._fetches_pending = 0  # Fetches being answered (see _FETCH_KEY)
        self._pending_bytes = 0  # request bytes held by unfinished requests (see PENDING_FRAME_BYTES)
        self.out: list[bytes] = []
        self.closing = False
        self.reading_paused = False
        self.writing_paused = False
        self.client_host = "?"
        self.client_port = 0
        self.last_active = time.monotonic()
        self.idle_timer: asyncio.TimerHandle | None = None
        self.log = log
        self._pump_handle: asyncio.Handle | None = None  # the next turn of the frame loop, when one is due
        self._input_refused = False  # a refused size prefix was reached: answer what came before it, then close
        self._bytes_written = 0  # response bytes given to the transport
        self._sent_seen = 0  # the most response bytes seen handed to the socket (idle and linger checks)
        self._linger_timer: asyncio.TimerHandle | None = None
        self.debug = False

    # -- asyncio callbacks -----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername") or ("?", 0)
        self.client_host = java_host_address(str(peer[0]))
        self.client_port = int(peer[1]) if len(peer) > 1 else 0
        self.log = log.bind(client=f"{self.client_host}:{self.client_port}", listener=self.listener.name)
        self.debug = self.log.is_enabled_for(logging.DEBUG)
        if not self._admitted(transport):
            return
        self.connections.add(self)
        self.metrics = self.dispatcher.services.metrics  # kept: a broker reset swaps the services' counters
        if self.metrics is not None:
            self.metrics.connection_opened(self.listener.name)
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
        local_address = None
        if self.dispatcher.tap is not None:  # the broker's end, for the connection id a capture records
            local = transport.get_extra_info("sockname") or ("", 0)
            local_address = (java_host_address(str(local[0])), int(local[1]) if len(local) > 1 else 0)
        self.session = self.dispatcher.session(self.listener, security, self.client_host, self.client_port, principal, self.log,
                                               local_address)
        limit = self.config.sasl_server_max_receive_size
        if self.session.authenticating and limit != -1:  # Kafka's NetworkReceive.UNLIMITED
            self.splitter.max_size = min(self.splitter.max_size, limit)
        if self.debug:
            self.log.debug("connection_opened", principal=self.session.principal)
        self._arm_idle_timer()

    def _admitted(self, transport: asyncio.BaseTransport) -> bool:
        """ConnectionQuotas at accept time (shim.quotas.connection_quotas): rejected or throttled connections are
        closed unread; a held one reads nothing until the acceptor would have taken it."""
        quotas = self.dispatcher.services.connection_quotas
        if quotas is None:
            return True
        verdict = quotas.admit(self.listener.name, self.client_host)
        if verdict.action == "reject":
            self.log.info("connection_rejected", reason=verdict.reason, hint="max.connections.per.ip and its overrides")
            self.closing = True
            transport.abort()
            return False
        if verdict.action == "close_after":
            self.log.debug("connection_throttled", reason=verdict.reason, close_after_ms=verdict.wait_ms)
            self.closing = True
            transport.pause_reading()
            asyncio.get_running_loop().call_later(verdict.wait_ms / 1000, transport.abort)
            return False
        self._quota_slot = (quotas, self.listener.name, self.client_host)
        if verdict.wait_ms or not quotas.slot_available(self.listener.name):
            self._held = True
            transport.pause_reading()
            self.reading_paused = True
            asyncio.get_running_loop().call_later(verdict.wait_ms / 1000, self._release_hold, quotas)
        return True

    def _release_hold(self, quotas) -> None:
        """The acceptor's wait is over; take the connection once a connection slot is free (max.connections)."""
        if self.closing:
            return
        if not quotas.slot_available(self.listener.name):
            quotas.wait_for_slot(self.listener.name, lambda: self._release_hold(quotas))
            return
        self._held = False
        self._update_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        slot, self._quota_slot = self._quota_slot, None
        if slot is not None:
            slot[0].released(slot[1], slot[2])
        if self in self.connections and self.metrics is not None:
            self.metrics.connection_closed(self.listener.name)
        self.connections.discard(self)
        for slot in self.pending:
            if slot.task is not None:
                slot.task.cancel()
        self.pending.clear()
        for timer in (self.idle_timer, self._pump_handle, self._linger_timer):
            if timer is not None:
                timer.cancel()
        if self.debug:
            self.log.debug("connection_closed", error=str(exc) if exc else None)

    def pause_writing(self) -> None:
        # The client is not reading its responses: stop taking new requests from it.
        self.writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self.writing_paused = False
        self._update_reading()

    # The event loop reads into memory the connection hands it (BufferedProtocol): the rest of a large frame under
    # way, so that its bytes land in the frame itself, else a read buffer shared by the thread's connections, copied
    # out at once (as the loop would copy its own buffer into the bytes it passes to data_received).
    def get_buffer(self, sizehint: int) -> memoryview:
        frame = self.splitter.frame_buffer()
        self._into_frame = frame is not None
        return frame if frame is not None else _read_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        if self.closing:
            return
        if self._into_frame:
            self.last_active = time.monotonic()
            self.splitter.frame_filled(nbytes)
            if self._pump_handle is None:
                self._pump()
        else:
            self.data_received(_read_buffer()[:nbytes])

    def data_received(self, data: bytes | memoryview) -> None:
        if self.closing:
            return
        self.last_active = time.monotonic()  # any bytes are activity, a partial frame too
        self.splitter.receive(data)
        if self._pump_handle is None:  # else a turn of the frame loop is already due and will take them
            self._pump()

    # -- the frame loop ------------------------------------------------------------------
    def _pump(self) -> None:
        """Handle received frames while the connection may take more, at most FRAMES_PER_TURN this turn."""
        self._pump_handle = None
        handled = 0
        while self._may_take_request():
            if handled == FRAMES_PER_TURN:
                self._pump_handle = asyncio.get_running_loop().call_soon(self._pump)
                break
            try:
                payload = self.splitter.next_frame()
            except ProtocolError as exc:  # FrameTooLarge, or a negative size
                self._refuse_input(exc)
                break
            if payload is None:
                break
            handled += 1
            self._handle_frame(payload)
        if handled:
            # Taking a frame that waited unparsed is the read Kafka does when it unmutes a channel: activity.
            self.last_active = time.monotonic()
        self._flush()
        self._update_reading()

    def _may_take_request(self) -> bool:
        return not self._fetches_pending and self._may_read_on()

    def _may_read_on(self) -> bool:
        """Whether a frame could be taken but for a Fetch being answered. That Fetch holds the frames back, not the
        reading: a client that closes meanwhile is noticed (its waiting Fetch dropped), and at most one more frame is
        read before reading pauses. Unfinished requests holding PENDING_FRAME_BYTES pause the reading itself."""
        return not (self.closing or self._held or self._input_refused or self.auth_failed or self.writing_paused
                    or len(self.pending) + len(self.out) >= MAX_IN_FLIGHT or self._pending_bytes >= PENDING_FRAME_BYTES)

    def _refuse_input(self, exc: ProtocolError) -> None:
        """A refused size prefix: every request before it was taken; close once they are answered. Before a SASL
        authentication completes, Kafka's SaslServerAuthenticator fails the authentication instead (its
        SaslAuthenticationException): the connection closes, unanswered, after the failed-authentication delay."""
        if self.session is not None and self.session.authenticating:
            limit = f" (sasl.server.max.receive.size {exc.limit})" if isinstance(exc, FrameTooLarge) else ""
            self._fail_authentication(FailAuthentication(
                f"Failing SASL authentication due to invalid receive size: {getattr(exc, 'size', str(exc))}{limit}", None))
            return
        if isinstance(exc, FrameTooLarge):
            self.log.warning("frame_rejected", reason=str(exc), size=exc.size, limit=exc.limit)
        else:
            self.log.warning("frame_rejected", reason=str(exc))
        self._input_refused = True

    # -- requests ------------------------------------------------------------------------
    def _handle_frame(self, payload: bytes) -> None:
        if self.session is None:
            return  # refused before the session began (a TLS certificate no rule maps)
        outcome = self.session.receive(payload)
        if outcome is not None:
            self._carry_out(outcome, payload[:2] == _FETCH_KEY, len(payload))

    def _carry_out(self, outcome: Outcome, fetch: bool = False, size: int = 0) -> None:
        kind = type(outcome)
        if kind is Respond:
            if outcome.failure is not None:
                outcome.failure.log_to(self.log)
            self._respond_now(outcome.data)
        elif kind is Pending:
            slot = _Slot(fetch, size)
            self.pending.append(slot)
            self._fetches_pending += fetch
            self._pending_bytes += size
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
        finally:
            self._fetches_pending -= slot.fetch
            self._pending_bytes -= slot.size
        if type(outcome) is Close:
            outcome.log_to(self.log)
            self.close()
            return
        if outcome.failure is not None:
            outcome.failure.log_to(self.log)
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
            self._write(self.out[0] if len(self.out) == 1 else b"".join(self.out))
        self.out.clear()

    def _write(self, data: bytes) -> None:
        self._bytes_written += len(data)
        self.transport.write(data)

    def _unsent(self) -> int:
        """Response bytes the transport still holds; 0 once it can no longer say (an SSL transport whose
        connection is already gone has dropped its protocol and raises instead)."""
        try:
            return self.transport.get_write_buffer_size() if self.transport is not None else 0
        except AttributeError:
            return 0

    def _wrote_since_last_look(self) -> bool:
        """True if response bytes reached the socket since the last call (the transport's buffer shrank).

        Under TLS the buffer counts encrypted records and the plaintext not yet encrypted, so the measure is
        approximate; only an increase over the most ever seen counts, never the dip when plaintext is encrypted.
        """
        if self.transport is None:
            return False
        sent = self._bytes_written - self._unsent()
        if sent > self._sent_seen:
            self._sent_seen = sent
            return True
        return False

    def _update_reading(self) -> None:
        """Decide what comes next after anything changed (a frame handled, an answer written, the client's
        reading): close once a refused input's requests are answered, resume the frame loop when there is room
        and a frame waits, and read from the socket only when no complete frame waits."""
        if self.transport is None or self.closing:
            return
        if self._input_refused and not self.pending:
            self.close()
            return
        may_take = self._may_take_request()
        frame_waits = self.splitter.frame_ready
        if may_take and frame_waits and self._pump_handle is None:
            self._pump_handle = asyncio.get_running_loop().call_soon(self._pump)
        should_pause = self._input_refused or frame_waits or not self._may_read_on()
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
        """Kafka's rule (Selector refreshes a channel on every ready read or write): idle means nothing received
        and nothing written for connections.max.idle.ms. A request still being handled keeps it open."""
        self.idle_timer = None
        if self.closing or self.transport is None:
            return
        now = time.monotonic()
        if self._wrote_since_last_look():
            self.last_active = now
        idle_s = self.config.connections_max_idle_ms / 1000
        quiet = now - self.last_active
        if quiet >= idle_s and not self.pending:
            self.log.info("connection_idle_closed", idle_ms=int(quiet * 1000),
                          unsent_bytes=self._unsent() + sum(map(len, self.out)))
            self._close_idle()
            return
        delay = max(idle_s - quiet, 0.05)
        if self._unsent():
            # Writes are only seen here, by the buffer shrinking: look often enough that a connection closes
            # at most a quarter of the idle time late.
            delay = min(delay, max(idle_s / 4, 0.05))
        self.idle_timer = asyncio.get_running_loop().call_later(delay, self._check_idle)

    def _close_idle(self) -> None:
        """Kafka closes an expired channel without sending what is still queued. The peer read nothing for a
        whole idle period, so waiting for it would only hold the socket and the answers: drop them."""
        self.close()
        if self.transport is not None and self._unsent():
            self.transport.abort()

    def close(self) -> None:
        """Send what is ready, then close; a peer that reads none of it for a while is cut off (``_linger``)."""
        if self.closing:
            return
        self.closing = True
        if self._pump_handle is not None:
            self._pump_handle.cancel()
            self._pump_handle = None
        if self.transport is not None:
            if self.out:
                self._write(b"".join(self.out))
                self.out.clear()
            self.transport.close()
            if self._unsent():
                self._wrote_since_last_look()
                self._linger()

    def _linger(self) -> None:
        """Wait for the peer to read what a closed connection still holds; abort once it reads nothing for the
        grace period (the transport would otherwise wait forever, holding the socket and the answers)."""
        idle_ms = self.config.connections_max_idle_ms
        grace = min(idle_ms / 1000, CLOSE_LINGER_MAX_S) if idle_ms > 0 else CLOSE_LINGER_MAX_S
        self._linger_timer = asyncio.get_running_loop().call_later(grace, self._linger_check, grace)

    def _linger_check(self, grace: float) -> None:
        self._linger_timer = None
        if self.transport is None or not self._unsent():
            return  # sent everything: the transport closes the socket itself
        if self._wrote_since_last_look():
            self._linger()
            return
        self.log.info("connection_aborted", reason="the client read none of its remaining responses after the close",
                      grace_ms=int(grace * 1000), unsent_bytes=self._unsent())
        self.transport.abort()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
