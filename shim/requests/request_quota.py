"""The request quota (``request_percentage``, Kafka's ClientRequestQuotaManager) as the dispatcher applies it: the
time the broker spends handling a request, charged to the client's (user, client id) quota entity; over the quota
the answer carries ``throttle_time_ms`` (at most one quota window, 1 s) and the connection is muted that long.

What is timed is the handler's own work on the event loop: the synchronous call, and for handlers that await, each
step the loop runs them (a long-polling Fetch or a Produce waiting for acks is not charged for the wait, as Kafka
charges request-handler thread time only). Exempt as in Kafka (sendResponseExemptThrottle): WriteTxnMarkers, and a
follower's Fetch. Nothing is timed unless some client quota is configured.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Generator
from typing import Any

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.shim.requests.context import RequestContext
from kafka_shim.shim.requests.work import EncodeOffLoop

_EXEMPT = frozenset({ApiKey.WRITE_TXN_MARKERS})
_perf_counter_ns = time.perf_counter_ns


def timed(ctx: RequestContext) -> bool:
    """Whether this request is charged to a request quota (and so timed)."""
    meters = ctx.services.quota_meters
    return meters is not None and meters.quotas.has_any and ctx.api_key not in _EXEMPT


def time_so_far(ctx: RequestContext) -> int:
    """Nanoseconds of handler work up to now (for a handler that decides its answer on the throttle, as Fetch)."""
    return ctx.handler_ns + (_perf_counter_ns() - ctx.step_started_ns if ctx.step_started_ns else 0)


def charge(ctx: RequestContext, answer: Any, nanos: int) -> None:
    """Record the request's time once; over the quota, stamp the answer's throttle time and set the mute."""
    if ctx.request_quota_charged:
        return
    ctx.request_quota_charged = True
    meters = ctx.services.quota_meters
    assert meters is not None
    throttle = meters.record_request_time(ctx.principal, ctx.header.client_id, nanos)
    if throttle > ctx.throttle_ms:
        # Produce answers the larger of its byte-rate and request throttles (KafkaApis.handleProduceRequest).
        ctx.throttle_ms = throttle
        body = answer.body if type(answer) is EncodeOffLoop else answer
        if hasattr(body, "throttle_time_ms"):
            body.throttle_time_ms = throttle


class TimedAwaitable:
    """An awaitable whose steps on the loop are added up in ``ctx.handler_ns`` (the waits between them are not)."""

    def __init__(self, awaitable: Awaitable[Any], ctx: RequestContext) -> None:
        self.awaitable = awaitable
        self.ctx = ctx

    def __await__(self) -> Generator[Any, Any, Any]:
        inner = self.awaitable.__await__()
        ctx = self.ctx
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            ctx.step_started_ns = _perf_counter_ns()
            try:
                yielded = inner.throw(thrown) if thrown is not None else inner.send(sent)
            except StopIteration as done:
                ctx.handler_ns += _perf_counter_ns() - ctx.step_started_ns
                ctx.step_started_ns = 0
                return done.value
            except BaseException:
                ctx.handler_ns += _perf_counter_ns() - ctx.step_started_ns
                ctx.step_started_ns = 0
                raise
            ctx.handler_ns += _perf_counter_ns() - ctx.step_started_ns
            ctx.step_started_ns = 0
            try:
                sent, thrown = (yield yielded), None
            except BaseException as exc:  # thrown into the awaiting task (a cancellation): pass it on
                sent, thrown = None, exc
