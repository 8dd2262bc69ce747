"""The request pipeline, without I/O: a request frame in, an outcome out.

    parse_request → SASL gate (SASL listeners) → API table (key, version) → decode → handler → encode

``RequestSession.receive(payload)`` takes one frame (size prefix removed) and returns what the connection must do:

- ``Respond(data)``: queue these response bytes, in request order;
- ``Pending(outcome)``: an awaitable that yields ``Respond`` or ``Close`` later; its answer keeps its place in order;
- ``Close``: log ``event`` with ``fields`` and close the connection (Kafka closes on what it cannot parse or serve);
- ``FailAuthentication``: authentication failed: answer with ``data`` (if any) after the failed-authentication
  delay, then close; read nothing more meanwhile;
- ``Authenticated``: queue ``data``, then the connection belongs to ``principal``;
- ``None``: nothing to do (a frame after a failed authentication).

Kafka handles one request per connection at a time. Requests whose work is not done when ``receive`` returns
(an awaiting handler, a large frame) are therefore chained: a later request on the same connection reaches its
handler only after the earlier one has been answered, so a pipelined DescribeAcls still sees a CreateAcls sent
before it.

With a ``RequestTap`` attached (``Dispatcher.tap``, shim.tap), every frame is handed to it once its outcome is known:
the raw request and answer, timing, the connection's fields and the authorization decisions the request made
(collected by shim.requests.authz on ``RequestContext.decisions``). Without one, ``receive`` checks one attribute.

Large requests (above ``Dispatcher.off_loop_bytes``) are decoded and their answers encoded in the worker thread
(shim.requests.work), so one request at ``socket.request.max.bytes`` does not hold the event loop while every other
client waits. The handler itself runs on the loop (it reads and changes broker state); a handler that loops over a
request-sized collection returns an awaitable for large inputs and works in slices (``work.run_sliced``).
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import marshal
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_shim.authorizer.acl_walk import UnparseableAclPrincipal
from kafka_shim.authorizer.model import ANONYMOUS
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.errors import ProtocolError
from kafka_shim.protocol.framing import RequestFrame, api_name, encode_response, parse_request
from kafka_shim.shim.faults.rules import FaultRule
from kafka_shim.shim.metrics.counters import BrokerMetrics
from kafka_shim.shim.requests import request_quota
from kafka_shim.shim.requests.context import NO_RESPONSE, CloseConnection, RequestContext
from kafka_shim.shim.requests.work import EncodeOffLoop, off_loop
from kafka_shim.shim.security.sasl.gate import Phase, SaslGate
from kafka_shim.shim.tap import ANSWERED, AUTHENTICATION_FAILED, CLOSED, SILENT, RequestTap

if TYPE_CHECKING:
    from kafka_shim.shim.config.broker_config import Listener
    from kafka_shim.shim.requests.api_table import ApiHandler
    from kafka_shim.shim.requests.services import Services
    from kafka_shim.shim.security.listener_security import ListenerSecurity

def _carries_secrets(payload: bytes, authenticating: bool) -> bool:
    """SaslAuthenticate requests carry the client's credentials (a PLAIN password, a SCRAM proof), the raw SASL
    tokens of a v0 handshake too, and AlterUserScramCredentials salted passwords: a trace never keeps them. While
    authenticating, only ApiVersions and SaslHandshake frames are kept."""
    api_key = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else -1
    if api_key in _CREDENTIAL_APIS:
        return True
    return authenticating and api_key not in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE)


_CREDENTIAL_APIS = frozenset({ApiKey.SASL_AUTHENTICATE, ApiKey.ALTER_USER_SCRAM_CREDENTIALS})
# The same, as the frame's first two bytes: the tap's per-request test without decoding the key.
_CREDENTIAL_API_PREFIXES = frozenset(int(key).to_bytes(2, "big") for key in _CREDENTIAL_APIS)
_API_VERSIONS_PREFIX = int(ApiKey.API_VERSIONS).to_bytes(2, "big")
_perf_counter_ns = time.perf_counter_ns
_time_ns = time.time_ns
_marshal_dumps = marshal.dumps

# Frames larger than this are decoded, and their answers encoded, off the event loop. Below it the thread hop
# costs more than the work (a 64 KiB Metadata request decodes in a few milliseconds).
OFF_LOOP_BYTES = 64 * 1024
# A Produce frame's bulk is its record bytes, which decode as one slice per partition, and its answer is small:
# up to a full default-sized producer request it is decoded on the loop (the worst case, 1 MiB of one-record
# partitions, decodes in ~20 ms, less than the handler then spends on those partitions), saving three thread hops
# per request, which cost more than the decoding.
PRODUCE_OFF_LOOP_BYTES = 1024 * 1024 + 64 * 1024


# -- outcomes --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Respond:
    data: bytes
    # A request whose handling failed and was answered with its error form: the connection logs this.
    failure: Close | None = None


@dataclass(frozen=True, slots=True)
class Pending:
    outcome: Awaitable[Respond | Close]


@dataclass(frozen=True, slots=True)
class Close:
    event: str
    fields: dict[str, Any] = field(default_factory=dict)
    level: str = "warning"  # the log level of ``event``: warning, info, or error (with ``error``'s traceback)
    error: BaseException | None = None

    def log_to(self, logger: Any) -> None:
        if self.error is not None:
            logger.error(self.event, exc_info=self.error, **self.fields)
        else:
            getattr(logger, self.level)(self.event, **self.fields)


@dataclass(frozen=True, slots=True)
class FailAuthentication:
    reason: str
    data: bytes | None


@dataclass(frozen=True, slots=True)
class Authenticated:
    data: bytes
    principal: str
    mechanism: str
    session_lifetime_ms: int


Outcome = Respond | Pending | Close | FailAuthentication | Authenticated


def rejected(reason: str, **fields: Any) -> Close:
    return Close("request_rejected", {"reason": reason, **fields})


# -- the pipeline ------------------------------------------------------------------------------------
class Dispatcher:
    """One per broker: the services handlers use, and the size above which a request is worked off the loop."""

    def __init__(self, services: Services, off_loop_bytes: int = OFF_LOOP_BYTES) -> None:
        self.services = services
        self.off_loop_bytes = off_loop_bytes
        # Set before connections are accepted (the broker's capture); sessions read it once, when they start.
        self.tap: RequestTap | None = None
        self._connection_index = itertools.count()

    def session(self, listener: Listener, security: ListenerSecurity | None, client_host: str, client_port: int,
                principal: str = ANONYMOUS, log: Any = None, local_address: tuple[str, int] | None = None) -> RequestSession:
        """The pipeline for one new connection (``principal``: from its TLS certificate, if any; ``local_address``:
        the broker's end of it, for the connection id a tap records)."""
        session = RequestSession(self, listener, security, client_host, client_port, principal, log)
        if self.tap is not None:
            local_host, local_port = local_address or ("", 0)
            session.tap = self.tap
            session.connection_id = f"{local_host}:{local_port}-{client_host}:{client_port}-{next(self._connection_index)}"
        return session


class RequestSession:
    """One connection's requests: its principal, its SASL gate, and the order in which its requests are handled.

    It is the gate's owner (it turns the gate's calls into outcomes) and its responder (ApiVersions answers and
    whole-request error forms come from the API table)."""

    def __init__(self, dispatcher: Dispatcher, listener: Listener, security: ListenerSecurity | None, client_host: str,
                 client_port: int, principal: str = ANONYMOUS, log: Any = None) -> None:
        self.dispatcher = dispatcher
        self.services = dispatcher.services
        self.listener = listener
        self.client_host = client_host
        self.client_port = client_port
        self.principal = principal
        self.token_authenticated = False  # the principal logged in with a delegation token (KIP-48)
        self.log = log
        self.gate: SaslGate | None = None
        if security is not None and security.sasl_mechanisms:
            self.principal = ANONYMOUS
            self.gate = SaslGate(self, self, security.sasl_mechanisms, security.new_mechanism, security.reauth_ms,
                                 security.is_authentication_error, security.reauth_ms_by_mechanism)
        self._gate_outcome: Outcome | None = None
        self.tap: RequestTap | None = None
        self.connection_id = ""
        # ApiVersions v3+ names the client software (KIP-511); a tap records it with every later request.
        self.client_software: tuple[str | None, str | None] = (None, None)
        # The tap's fields of this connection (shim.tap.TappedSession, marshalled), made once (and again if the client
        # names its software): each record refers to the same bytes.
        self._tap_session: bytes | None = None
        # Done when the last request still in the works has been answered; later requests wait for it.
        self._turn: asyncio.Future[None] | None = None
        self._mute_after_turn_s = 0.0  # set by a throttle fault: how long the next turn waits after this one

    @property
    def authenticating(self) -> bool:
        """Still in the SASL exchange (Kafka accepts smaller frames until it completes)."""
        return self.gate is not None and self.gate.phase is not Phase.COMPLETE

    def receive(self, payload: bytes) -> Outcome | None:
        metrics = self.services.metrics
        if metrics is not None:
            return self._measured(payload, metrics)
        if self.tap is None:
            return self._receive(payload, None)
        return self._tapped(payload)

    # -- metrics ---------------------------------------------------------------------------------------
    def _measured(self, payload: bytes, metrics: BrokerMetrics) -> Outcome | None:
        """``receive`` counted for the Prometheus endpoint (shim.metrics): key, version, time, bytes, closes. The
        SASL exchange is not counted, its last SaslAuthenticate included (asked before the frame completes it)."""
        started = _perf_counter_ns()
        gate = self.gate
        authenticating = gate is not None and gate.phase is not Phase.COMPLETE
        outcome = self._receive(payload, None) if self.tap is None else self._tapped(payload)
        if type(outcome) is Pending:
            return Pending(self._measured_when_done(payload, metrics, started, outcome.outcome, authenticating))
        self._count(payload, metrics, started, outcome, authenticating)
        return outcome

    async def _measured_when_done(self, payload: bytes, metrics: BrokerMetrics, started: int,
                                  awaitable: Awaitable[Respond | Close], authenticating: bool) -> Respond | Close:
        outcome = await awaitable
        self._count(payload, metrics, started, outcome, authenticating)
        return outcome

    def _count(self, payload: bytes, metrics: BrokerMetrics, started: int, outcome: Outcome | None,
               authenticating: bool) -> None:
        if type(outcome) is Close:
            metrics.closed_instead_of_answering(outcome.event)  # type: ignore[union-attr]
            return
        if len(payload) < 8 or authenticating:
            return  # the SASL exchange (raw tokens are not requests)
        data = outcome.data if type(outcome) is Respond else b""  # type: ignore[union-attr]
        metrics.request(payload, (_perf_counter_ns() - started) / 1e6, self.listener.name, len(data))

    def _receive(self, payload: bytes, decisions: list[object] | None) -> Outcome | None:
        gate = self.gate
        if gate is not None:
            if gate.phase is not Phase.COMPLETE:
                gate.feed(payload)
                return self._take_gate_outcome()
            if gate.session_expires_at is not None:
                outcome = self._session_frame(gate, payload)
                if outcome is not None:
                    return outcome
        if self._turn is not None:
            return self._after_turn(payload, decisions)
        outcome = self._request(payload, decisions)
        if type(outcome) is Pending:
            return self._take_turn(outcome.outcome)
        return outcome

    # -- one request ---------------------------------------------------------------------------------
    def _request(self, payload: bytes, decisions: list[object] | None = None) -> Outcome:
        try:
            frame = parse_request(payload)
        except ProtocolError as exc:
            # Kafka closes the connection when it cannot parse a request header.
            return rejected(str(exc), api_key=exc.api_key, api_version=exc.version)
        api_key, version = frame.api_key, frame.api_version
        table = self.services.api_table
        handler = table.handler(api_key, version)
        if handler is None:
            if api_key == ApiKey.API_VERSIONS:
                return Respond(table.unsupported_api_versions_frame(frame.correlation_id))
            return rejected(f"api key {api_key} ({api_name(api_key)}) version {version} is not enabled on this broker",
                            api_key=api_key, api_version=version, correlation_id=frame.correlation_id)
        off_loop_bytes = self.dispatcher.off_loop_bytes
        if len(payload) > off_loop_bytes and (api_key != ApiKey.PRODUCE or len(payload) > max(off_loop_bytes, PRODUCE_OFF_LOOP_BYTES)):
            return Pending(self._large(frame, handler, decisions))
        try:
            body = frame.decode_body()
        except ProtocolError as exc:
            return _undecodable(frame, exc)
        ctx = self._context(frame, decisions)
        faults = self.services.faults
        if faults is not None and faults.armed:
            rule = faults.take(api_key, version, body, ctx.principal, ctx)
            if rule is not None:
                return self._fault(ctx, body, handler, rule)
        return self._handle(ctx, body, handler)

    def _handle(self, ctx: RequestContext, body: Any, handler: ApiHandler) -> Outcome:
        quota = request_quota.timed(ctx)
        if quota:
            ctx.step_started_ns = _perf_counter_ns()
        try:
            result = handler.handle(ctx, body)
        except CloseConnection as exc:
            return _refused(ctx, exc)
        except UnparseableAclPrincipal as exc:
            return self._unexpected(ctx, body, exc)
        except Exception as exc:
            return _failed(ctx, exc, body)
        if quota:
            ctx.handler_ns += _perf_counter_ns() - ctx.step_started_ns
            ctx.step_started_ns = 0
        if handler.is_async or inspect.isawaitable(result):
            if quota:
                result = request_quota.TimedAwaitable(result, ctx)
            return Pending(self._finish(ctx, body, result, quota))
        if quota:
            request_quota.charge(ctx, result, ctx.handler_ns)
        outcome = _encode(ctx, result, body)
        if ctx.throttle_ms:
            self._throttle_connection(ctx.throttle_ms)
        return outcome

    def _throttle_connection(self, throttle_ms: int) -> None:
        """A client over its quota: its next request waits ``throttle_ms`` after this answer (Kafka mutes the
        channel, KIP-219). Inside a turn the turn's end is held back; otherwise a turn is opened that ends then."""
        if self._turn is not None:
            self._mute_after_turn_s = max(self._mute_after_turn_s, throttle_ms / 1000)
            return
        muted = self._new_turn()
        asyncio.get_running_loop().call_later(throttle_ms / 1000, self._end_turn, muted)

    def _fault(self, ctx: RequestContext, body: Any, handler: ApiHandler, rule: FaultRule) -> Outcome:
        """What an injected fault makes of this request (shim.faults): Kafka's whole-request error answer with the
        rule's code, a closed connection, or the normal answer after a delay."""
        if self.log is not None:
            self.log.info("fault_injected", api=api_name(ctx.api_key), api_version=ctx.api_version,
                          correlation_id=ctx.correlation_id, principal=ctx.principal, fault=rule.describe())
        if rule.action == "delay":
            return Pending(self._delayed(ctx, body, handler, rule.delay_ms / 1000))
        if rule.action == "throttle":
            return Pending(self._throttled(ctx, body, handler, rule.throttle_ms))
        if rule.action == "error":
            answer = self.services.api_table.error_response(ctx.api_key, body, rule.error_code, None, ctx.api_version)
            if answer is not None:
                return _encode(ctx, answer, body)
        return Close("fault_injected_close", {"api": api_name(ctx.api_key), "api_version": ctx.api_version,
                                              "correlation_id": ctx.correlation_id, "fault": rule.rule_id}, level="info")

    async def _delayed(self, ctx: RequestContext, body: Any, handler: ApiHandler, seconds: float) -> Respond | Close:
        # Kafka handles a request it has read even when the client leaves while it waits (only the answer is
        # dropped): a produce retried on a new connection meanwhile is written twice, as a slow broker writes it.
        work = asyncio.ensure_future(self._after_delay(ctx, body, handler, seconds))
        _DELAYED.add(work)
        work.add_done_callback(_delayed_done)
        return await asyncio.shield(work)

    async def _after_delay(self, ctx: RequestContext, body: Any, handler: ApiHandler, seconds: float) -> Respond | Close:
        await asyncio.sleep(seconds)
        outcome = self._handle(ctx, body, handler)
        if type(outcome) is Pending:
            return await outcome.outcome
        return outcome  # type: ignore[return-value]

    async def _throttled(self, ctx: RequestContext, body: Any, handler: ApiHandler, throttle_ms: int) -> Respond | Close:
        """The normal answer with ``throttle_time_ms`` set; then the connection's next request waits that long, as
        Kafka mutes a throttled client's channel after answering (KIP-219)."""
        outcome = self._handle(ctx, body, _Throttling(handler, throttle_ms))
        if type(outcome) is Pending:
            outcome = await outcome.outcome
        self._mute_after_turn_s = throttle_ms / 1000
        return outcome  # type: ignore[return-value]

    async def _finish(self, ctx: RequestContext, request: Any, awaitable: Awaitable[Any], quota: bool = False) -> Respond | Close:
        try:
            body = await awaitable
        except CloseConnection as exc:
            return _refused(ctx, exc)
        except UnparseableAclPrincipal as exc:
            return self._unexpected(ctx, request, exc)
        except Exception as exc:
            return _failed(ctx, exc, request)
        if quota:
            request_quota.charge(ctx, body, ctx.handler_ns)
        if ctx.throttle_ms:
            self._throttle_connection(ctx.throttle_ms)
        if type(body) is EncodeOffLoop:
            return await _encode_off_loop(ctx, [body.body], request)
        return _encode(ctx, body, request)

    async def _large(self, frame: RequestFrame, handler: ApiHandler, decisions: list[object] | None = None) -> Respond | Close:
        """A request above the off-loop size: decoded and encoded in the worker thread, handled on the loop."""
        try:
            body = await off_loop(frame.decode_body)
        except ProtocolError as exc:
            return _undecodable(frame, exc)
        ctx = self._context(frame, decisions)
        faults = self.services.faults
        if faults is not None and faults.armed:
            rule = faults.take(ctx.api_key, ctx.api_version, body, ctx.principal, ctx)
            if rule is not None:
                outcome = self._fault(ctx, body, handler, rule)
                return await outcome.outcome if type(outcome) is Pending else outcome  # type: ignore[return-value]
        # Freeing hundreds of thousands of objects takes as long as making them: the last references to the
        # decoded request and to the answer are dropped in the worker thread too.
        request = [body]
        del body
        try:
            try:
                result = handler.handle(ctx, request[0])
                if handler.is_async or inspect.isawaitable(result):
                    result = await result
            except CloseConnection as exc:
                return _refused(ctx, exc)
            except UnparseableAclPrincipal as exc:
                return self._unexpected(ctx, request[0], exc)
            except Exception as exc:
                return _failed(ctx, exc, request[0])
            if ctx.throttle_ms:
                self._throttle_connection(ctx.throttle_ms)
            answer = [result.body if type(result) is EncodeOffLoop else result]
            del result
            try:
                return Respond(await off_loop(_encode_and_drop, ctx.api_key, ctx.api_version, ctx.correlation_id, answer))
            except Exception as exc:  # a body the handler filled wrongly
                return _failed(ctx, exc, request[0])
        finally:
            off_loop(request.clear)

    def _unexpected(self, ctx: RequestContext, request: Any, exc: UnparseableAclPrincipal) -> Respond | Close:
        """What Kafka's handleError does with an exception from the authorizer: the API's whole-request error answer
        with UNKNOWN_SERVER_ERROR, or a closed connection where the API has none (its getErrorResponse is null)."""
        if self.log is not None:
            self.log.error("request_failed_on_unparseable_acl", api=api_name(ctx.api_key), api_version=ctx.api_version,
                           correlation_id=ctx.correlation_id, principal=ctx.principal, error=str(exc),
                           acl=str(exc.binding), hint="delete this ACL (its principal needs Type:name, e.g. User:alice)")
        answer = self.services.api_table.error_response(ctx.api_key, request, ErrorCode.UNKNOWN_SERVER_ERROR, None, ctx.api_version)
        if answer is None:
            return rejected(str(exc), api=api_name(ctx.api_key), api_version=ctx.api_version, correlation_id=ctx.correlation_id)
        return _encode(ctx, answer, request)

    def _context(self, frame: RequestFrame, decisions: list[object] | None = None) -> RequestContext:
        if self.log is not None and self.log.is_enabled_for(10):  # logging.DEBUG
            self.log.debug("request", api=api_name(frame.api_key), api_version=frame.api_version,
                           correlation_id=frame.correlation_id, client_id=frame.header.client_id)
        return RequestContext(self.services, self.listener, frame.header, frame.api_version, self.client_host,
                              self.client_port, self.principal, decisions, len(frame.payload),
                              token_authenticated=self.token_authenticated)

    # -- one request at a time -------------------------------------------------------------------------
    def _take_turn(self, work: Awaitable[Respond | Close]) -> Pending:
        done = self._new_turn()

        async def run() -> Respond | Close:
            try:
                return await work
            finally:
                self._end_turn(done)

        return Pending(run())

    def _after_turn(self, payload: bytes, decisions: list[object] | None = None) -> Pending:
        previous = self._turn
        done = self._new_turn()

        async def run() -> Respond | Close:
            try:
                await previous
                outcome = self._request(payload, decisions)
                if type(outcome) is Pending:
                    outcome = await outcome.outcome
                return outcome  # type: ignore[return-value]  # a request outside the gate: Respond or Close
            finally:
                self._end_turn(done)

        return Pending(run())

    def _new_turn(self) -> asyncio.Future[None]:
        self._turn = asyncio.get_running_loop().create_future()
        return self._turn

    def _end_turn(self, done: asyncio.Future[None]) -> None:
        mute_s = self._mute_after_turn_s
        if mute_s:
            # A throttled answer was just sent: the next request of this connection waits out the throttle time.
            self._mute_after_turn_s = 0.0
            asyncio.get_running_loop().call_later(mute_s, self._end_turn, done)
            return
        if self._turn is done:
            self._turn = None
        if not done.done():
            done.set_result(None)

    # -- the tap ---------------------------------------------------------------------------------------
    def _tapped(self, payload: bytes) -> Outcome | None:
        """``receive`` with the frame and its outcome handed to the tap (a pending one when it completes)."""
        started = _perf_counter_ns()
        time_us = _time_ns() // 1000
        principal = self.principal  # the one the request is handled as (a SASL exchange changes it afterwards)
        decisions: list[tuple] = []
        gate = self.gate
        authenticating = gate is not None and gate.phase is not Phase.COMPLETE  # before the frame: it may complete it
        outcome = self._receive(payload, decisions)
        if type(outcome) is Pending:
            return Pending(self._tap_when_done(payload, time_us, started, principal, decisions, outcome.outcome, authenticating))
        self._tap_outcome(payload, time_us, started, principal, decisions, outcome, authenticating)
        return outcome

    async def _tap_when_done(self, payload: bytes, time_us: int, started: int, principal: str, decisions: list[tuple],
                             awaitable: Awaitable[Respond | Close], authenticating: bool) -> Respond | Close:
        try:
            outcome = await awaitable
        except BaseException:  # cancelled (the connection went away) or a bug: recorded as closed
            self._tap_outcome(payload, time_us, started, principal, decisions, Close("connection_lost"), authenticating)
            raise
        self._tap_outcome(payload, time_us, started, principal, decisions, outcome, authenticating)
        return outcome

    def _tap_outcome(self, payload: bytes, time_us: int, started: int, principal: str, decisions: list[tuple],
                     outcome: Outcome | None, authenticating: bool = False) -> None:
        """Hand the request to the tap (shim.tap.TappedRequest). A frame that holds credentials is recorded without
        its bytes: SaslAuthenticate and AlterUserScramCredentials keep their header's fixed start (key, version and
        correlation id); a raw SASL token of a v0 handshake, nothing. Reading the header and cutting the answer's size
        prefix are left to the capture's writer process: the loop only gathers references."""
        response_time_us = (_perf_counter_ns() - started) // 1000
        kind = type(outcome)
        answer: bytes | None = None
        if kind is Respond or kind is Authenticated:
            answer = outcome.data  # type: ignore[union-attr]
            how = ANSWERED if answer else SILENT
        elif kind is FailAuthentication:
            answer = outcome.data  # type: ignore[union-attr]
            how = AUTHENTICATION_FAILED
        elif outcome is None:  # a frame the pipeline ignores (after a failed authentication)
            how = SILENT
        else:
            how = CLOSED
        frame: bytes | None = payload
        header: bytes | None = None
        key = payload[:2]
        if key in _CREDENTIAL_API_PREFIXES:
            frame, header = None, (payload[:8] if len(payload) >= 8 else None)
        elif authenticating and _carries_secrets(payload, True):
            frame = None
        elif key == _API_VERSIONS_PREFIX and int.from_bytes(payload[2:4], "big", signed=True) >= 3:
            self._note_client_software(payload)
        session = self._tap_session
        if session is None:
            listener = self.listener
            session = self._tap_session = _marshal_dumps((self.connection_id, self.client_host, self.client_port, listener.name,
                                                          listener.security_protocol, *self.client_software), 2)
        # A plain tuple in TappedRequest's field order: the cheapest record to build, and marshalled by the capture
        # as it is (a NamedTuple instance would have to be copied to a plain tuple first).
        record = (time_us, session, principal, frame, header, answer, how, response_time_us, decisions)
        try:
            self.tap.record(record)  # type: ignore[union-attr]
        except Exception as exc:  # a failing sink must not fail the request it records
            if self.log is not None:
                self.log.error("request_tap_failed", error=str(exc))

    def _note_client_software(self, payload: bytes) -> None:
        try:
            body = parse_request(payload).decode_body()
        except ProtocolError:
            return  # the pipeline answers or closes; the software stays what it was
        self.client_software = (body.client_software_name, body.client_software_version)
        self._tap_session = None  # the tap's session fields change with it

    # -- SASL ------------------------------------------------------------------------------------------
    def _session_frame(self, gate: SaslGate, payload: bytes) -> Outcome | None:
        """KIP-368: a SaslHandshake may start re-authentication; any other request after expiry closes."""
        if len(payload) >= 2 and int.from_bytes(payload[:2], "big") == ApiKey.SASL_HANDSHAKE and gate.begin_reauthentication(payload):
            return self._take_gate_outcome()
        if gate.session_expired():
            return Close("session_expired_closed", {
                "reason": "the SASL session expired (connections.max.reauth.ms) and the client did not re-authenticate"
            }, level="info")
        return None

    def _take_gate_outcome(self) -> Outcome | None:
        outcome, self._gate_outcome = self._gate_outcome, None
        return outcome

    # GateOwner: the gate's decisions, kept as this frame's outcome.
    def send(self, data: bytes) -> None:
        previous = self._gate_outcome
        self._gate_outcome = Respond(previous.data + data if isinstance(previous, Respond) else data)

    def fail_authentication(self, reason: str, data: bytes | None) -> None:
        self._gate_outcome = FailAuthentication(reason, data)

    def refuse(self, reason: str, **fields: Any) -> None:
        self._gate_outcome = rejected(reason, **fields)

    def authenticated(self, principal: str, mechanism: str, session_lifetime_ms: int, token_authenticated: bool = False) -> None:
        self.principal = principal
        self.token_authenticated = token_authenticated
        sent = self._gate_outcome
        self._gate_outcome = Authenticated(sent.data if isinstance(sent, Respond) else b"", principal, mechanism, session_lifetime_ms)

    # Responder: what the gate answers from the API table.
    def api_versions(self, frame: RequestFrame) -> tuple[bytes, bool]:
        table = self.services.api_table
        handler = table.handler(ApiKey.API_VERSIONS, frame.api_version)
        if handler is None:
            return table.unsupported_api_versions_frame(frame.correlation_id), False
        request = frame.decode_body()
        response = handler.handle(self._context(frame), request)
        data = encode_response(frame.api_key, frame.api_version, frame.correlation_id, response)
        return data, response.error_code == ErrorCode.NONE

    def error_response(self, api_key: int, request: Any, code: int, message: str | None, version: int | None = None) -> Any | None:
        return self.services.api_table.error_response(api_key, request, code, message, version)


# -- outcomes of one request -------------------------------------------------------------------------
def _encode(ctx: RequestContext, body: Any, request: Any) -> Respond | Close:
    if body is NO_RESPONSE:
        return Respond(b"")
    metrics = ctx.services.metrics
    if metrics is not None:  # the answer's top-level error code, for kafka_network_requestmetrics_errors
        metrics.answered(ctx.api_key, getattr(body, "error_code", 0) or 0)
    try:
        return Respond(encode_response(ctx.api_key, ctx.api_version, ctx.correlation_id, body))
    except Exception as exc:  # a body the handler filled wrongly
        return _failed(ctx, exc, request)


_DELAYED: set[asyncio.Future[Any]] = set()  # delayed requests still being handled, whatever their connection


def _delayed_done(work: asyncio.Future[Any]) -> None:
    _DELAYED.discard(work)
    if not work.cancelled():
        work.exception()  # retrieved: an answer nobody awaits any more is simply dropped


async def _encode_off_loop(ctx: RequestContext, holder: list[Any], request: Any) -> Respond | Close:
    try:
        return Respond(await off_loop(_encode_and_drop, ctx.api_key, ctx.api_version, ctx.correlation_id, holder))
    except Exception as exc:  # a body the handler filled wrongly
        return _failed(ctx, exc, request)


def _encode_and_drop(api_key: int, version: int, correlation_id: int, holder: list[Any]) -> bytes:
    """Encode the one body in ``holder``, then drop it here (in the worker thread) rather than on the loop."""
    try:
        if holder[0] is NO_RESPONSE:
            return b""
        return encode_response(api_key, version, correlation_id, holder[0])
    finally:
        holder.clear()


def _undecodable(frame: RequestFrame, exc: ProtocolError) -> Close:
    return rejected(str(exc), api_key=frame.api_key, api_version=frame.api_version, field=exc.field)


def _refused(ctx: RequestContext, exc: CloseConnection) -> Close:
    return rejected(str(exc), api=api_name(ctx.api_key), api_version=ctx.api_version, correlation_id=ctx.correlation_id)


def _failed(ctx: RequestContext, exc: BaseException, request: Any) -> Respond | Close:
    """Kafka's handleError: an unexpected exception while handling a request or serializing its answer (a bug in
    kafka-shim, or an answer Kafka cannot serialize either) gets the API's whole-request error answer with
    UNKNOWN_SERVER_ERROR; where the API has none (Produce with acks=0) the connection is closed. The traceback is
    logged either way, and the broker goes on."""
    fields = {"api": api_name(ctx.api_key), "api_version": ctx.api_version, "correlation_id": ctx.correlation_id}
    try:
        answer = ctx.services.api_table.error_response(ctx.api_key, request, ErrorCode.UNKNOWN_SERVER_ERROR, None,
                                                       ctx.api_version)
        data = None if answer is None else encode_response(ctx.api_key, ctx.api_version, ctx.correlation_id, answer)
    except Exception:  # the request itself is what the error form cannot take
        data = None
    if data is None:
        return Close("handler_failed", {**fields, "answered": "connection closed"}, level="error", error=exc)
    if ctx.services.metrics is not None:
        ctx.services.metrics.answered(ctx.api_key, ErrorCode.UNKNOWN_SERVER_ERROR)
    return Respond(data, Close("handler_failed", {**fields, "answered": "UNKNOWN_SERVER_ERROR"}, level="error", error=exc))


class _Throttling:
    """A handler whose answers carry ``throttle_time_ms`` (the throttle fault)."""

    def __init__(self, handler: ApiHandler, throttle_ms: int) -> None:
        self.handler = handler
        self.is_async = handler.is_async
        self.throttle_ms = throttle_ms

    def handle(self, ctx: RequestContext, body: Any) -> Any:
        result = self.handler.handle(ctx, body)
        if self.is_async or inspect.isawaitable(result):
            return self._later(result)
        return self._stamped(result)

    async def _later(self, awaitable: Awaitable[Any]) -> Any:
        return self._stamped(await awaitable)

    def _stamped(self, result: Any) -> Any:
        answer = result.body if type(result) is EncodeOffLoop else result
        if hasattr(answer, "throttle_time_ms"):
            answer.throttle_time_ms = self.throttle_ms
        return result
