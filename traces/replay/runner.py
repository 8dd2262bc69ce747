"""Runs a replay plan against a broker: one connection per recorded connection, requests in recorded order, and
every answer compared with the recorded one as soon as it arrives (so the ids it teaches are re-mapped into the
requests that follow).

Ordering. Within a connection, a request waits for the answers that had arrived when it was recorded (pipelining
as recorded, ``plan.py``). Across connections, a request also waits for every request of any connection whose
recorded answer came strictly before it was sent: the causal order the trace shows (a consumer's Fetch after the
producer's acknowledged Produce, a Produce after the InitProducerId answered on another connection) holds in the
replay at any pace. ``--pace recorded`` additionally sends each request no earlier than its recorded offset from the
trace's start (connections open at their first request's offset) and no sooner after the last answer it waited for
than it was recorded after it (a client's think time after a CreateTopics answer stays, so a broker that answered it
late, as Kafka does under load, gets the same time to spread the new topic to its metadata); ``--pace fast`` sends as
soon as that order allows.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.framing import api_name, decode_response, encode_request, parse_request
from kafka_shim.traces.replay.connection import CLOSED, ReplayConnection
from kafka_shim.traces.replay.credentials import Credential
from kafka_shim.traces.replay.diff import Differ, Difference
from kafka_shim.traces.replay.plan import SASL, SKIP, ConnectionPlan, Step
from kafka_shim.traces.replay.sasl import SaslFailed, authenticate

IDENTICAL, DIFFERENT, SKIPPED = "identical", "different", "skipped"
UNANSWERED_CLOSE = ("recorded unanswered (the connection closed while it waited: the client went away or the broker "
                    "closed it), answered in the replay before that moment: not compared (--strict-close compares it)")


@dataclass(slots=True)
class RowResult:
    connection_id: str
    correlation_id: int | None
    api_key: int | None
    api_version: int | None
    status: str
    reason: str = ""
    differences: list[Difference] = field(default_factory=list)
    sequence: tuple[int, int] = (0, 0)  # (recorded send offset, position in the trace): the report's order

    @property
    def api(self) -> str:
        return api_name(self.api_key) if self.api_key is not None else "(unreadable)"


@dataclass(frozen=True, slots=True)
class Target:
    host: str
    port: int
    security_protocol: str


class Replayer:
    def __init__(self, plans: list[ConnectionPlan], target_of: Callable[[ConnectionPlan], Target],
                 credentials: dict[str, Credential], differ: Differ, *, pace: str = "recorded", timeout: float = 30.0,
                 strict_close: bool = False,
                 on_result: Callable[[RowResult], None] | None = None) -> None:
        self.plans, self.target_of, self.credentials, self.differ = plans, target_of, credentials, differ
        self.pace, self.timeout, self.strict_close = pace, timeout, strict_close
        self.on_result = on_result or (lambda _r: None)
        self.results: list[RowResult] = []
        # Every step's "settled" event (answered, compared, or known never to be), and the global answer order.
        self._settled: dict[int, asyncio.Event] = {}
        self._answer_order: list[tuple[int, int]] = []  # (recorded answer time, id(step))
        self._done = 0
        self._arrived: list[float] = []  # when each answer of _answer_order settled in this replay (monotonic)
        self._progress: asyncio.Condition | None = None
        self._position: dict[int, int] = {}

    async def run(self) -> list[RowResult]:
        self._progress = asyncio.Condition()
        for plan in self.plans:
            for step in plan.steps:
                self._position[id(step)] = len(self._position)
                self._settled[id(step)] = asyncio.Event()
                end = _answer_end(step)
                if end is not None:
                    self._answer_order.append((end, id(step)))
        self._answer_order.sort()
        self._ends = [end for end, _ in self._answer_order]
        start = time.monotonic()
        watcher = asyncio.create_task(self._watch_answers())
        try:
            await asyncio.gather(*(self._replay_connection(plan, start) for plan in self.plans))
        finally:
            watcher.cancel()
        self.results.sort(key=lambda r: r.sequence)
        return self.results

    async def _watch_answers(self) -> None:
        assert self._progress is not None
        for _end, key in self._answer_order:
            await self._settled[key].wait()
            self._arrived.append(time.monotonic())
            async with self._progress:
                self._done += 1
                self._progress.notify_all()

    async def _causally_ready(self, step: Step) -> None:
        """Wait for every request (any connection) whose recorded answer came before this one was sent."""
        assert self._progress is not None
        needed = bisect.bisect_left(self._ends, step.offset_us)  # answers strictly before
        async with self._progress:
            await self._progress.wait_for(lambda: self._done >= needed)
        if self.pace == "recorded" and needed:
            think = (step.offset_us - self._ends[needed - 1]) / 1e6
            delay = self._arrived[needed - 1] + think - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)

    def _record(self, step: Step, status: str, reason: str = "", differences: list[Difference] | None = None) -> None:
        row = step.row
        result = RowResult(row["connection_id"], row.get("correlation_id"), row.get("api_key"), row.get("api_version"),
                           status, reason, differences or [], (step.offset_us, self._position[id(step)]))
        self.results.append(result)
        self._settled[id(step)].set()
        self.on_result(result)

    async def _replay_connection(self, plan: ConnectionPlan, start: float) -> None:
        conn: ReplayConnection | None = None
        pending: list[asyncio.Task[None] | None] = []
        broken = ""
        try:
            for index, step in enumerate(plan.steps):
                if self.pace == "recorded":
                    delay = start + step.offset_us / 1e6 - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
                for task in pending[:step.wait_for]:
                    if task is not None:
                        await task
                await self._causally_ready(step)
                if step.action == SKIP:
                    if not self._settled[id(step)].is_set():
                        self._record(step, SKIPPED, step.reason)
                    pending.append(None)
                    continue
                if broken:
                    self._record(step, DIFFERENT, broken, [Difference("outcome", step.row.get("outcome"), f"not sent: {broken}")])
                    pending.append(None)
                    continue
                if conn is None:
                    target = self.target_of(plan)
                    try:
                        conn = await ReplayConnection.open(target.host, target.port, self.timeout)
                    except (TimeoutError, OSError) as exc:
                        broken = f"cannot connect to {target.host}:{target.port} ({exc})"
                        self._record(step, DIFFERENT, broken, [Difference("outcome", step.row.get("outcome"), f"not sent: {broken}")])
                        pending.append(None)
                        continue
                if step.action == SASL:
                    for task in pending:
                        if task is not None:
                            await task
                    broken = await self._authenticate(conn, plan, index)
                    pending.append(None)
                    continue
                pending.append(self._send(conn, step))
            for task in pending:
                if task is not None:
                    await task
        finally:
            for step in plan.steps:  # never leave another connection waiting on a step that will not run
                if not self._settled[id(step)].is_set():
                    self._record(step, SKIPPED, "not replayed (the replay stopped)")
            if conn is not None:
                await conn.close()

    async def _authenticate(self, conn: ReplayConnection, plan: ConnectionPlan, index: int) -> str:
        """The replayer's own SASL exchange in place of the recorded handshake and the SaslAuthenticate rows after it;
        returns why the connection cannot go on, or ''."""
        handshake = plan.steps[index]
        auth_rows = []
        for later in plan.steps[index + 1:]:
            if later.row.get("api_key") != ApiKey.SASL_AUTHENTICATE:
                break
            auth_rows.append(later)
        ids = [handshake.row["correlation_id"]] + [s.row["correlation_id"] for s in auth_rows]
        auth_version = auth_rows[0].row["api_version"] if auth_rows else 0
        credential = self.credentials.get(plan.principal)
        problem = ""
        if credential is None:
            problem = f"no credentials for {plan.principal} (add a line for it to --credentials)"
        else:
            try:
                await authenticate(conn, credential, handshake.row.get("api_version") or 0, auth_version, ids,
                                   handshake.row.get("client_id"), self.timeout)
            except (TimeoutError, SaslFailed) as exc:
                problem = f"authentication as {plan.principal} failed: {exc or 'no answer within the timeout'}"
        recorded_ok = plan.principal != "User:ANONYMOUS"
        for step in [handshake, *auth_rows]:
            if problem and recorded_ok:
                self._record(step, DIFFERENT, problem, [Difference("authentication", f"authenticated as {plan.principal}", problem)])
            else:
                self._record(step, SKIPPED, "SASL exchange done by the replayer (tokens are not recorded)")
        return problem if recorded_ok else ""

    def _send(self, conn: ReplayConnection, step: Step) -> asyncio.Task[None] | None:
        row = step.row
        frame = self._frame(row)
        if not step.expects_answer:
            conn.send(frame, None)
            self._record(step, IDENTICAL, "no answer expected (acks=0), none compared")
            return None
        future = conn.send(frame, row["correlation_id"])
        assert future is not None
        return asyncio.get_running_loop().create_task(self._compare_when_answered(conn, step, future))

    def _frame(self, row: dict[str, Any]) -> bytes:
        """The recorded frame with its size prefix; re-encoded only when an id in it is re-mapped."""
        raw: bytes = row["request"]
        try:
            frame = parse_request(raw)
            body = frame.decode_body()
        except Exception:  # any recorded bytes: an undecodable request is sent exactly as recorded
            return len(raw).to_bytes(4, "big") + raw
        if not self.differ.ids.rewrite(body):
            return len(raw).to_bytes(4, "big") + raw
        return encode_request(frame.api_key, frame.api_version, frame.correlation_id, body, client_id=frame.header.client_id)

    async def _compare_when_answered(self, conn: ReplayConnection, step: Step, future: asyncio.Future[bytes | str]) -> None:
        row = step.row
        recorded_us = row.get("response_time_us") or 0
        if row.get("outcome") == "closed":
            # Recorded "closed": the broker closed instead of answering, or the client went away while waiting (a
            # consumer closing during a long poll). The replayer does what the client did: it gives up at the recorded
            # moment. An answer before it differs; none by then (or the broker closing) matches.
            try:
                payload = await asyncio.wait_for(future, recorded_us / 1e6)
            except TimeoutError:  # the connection is closed after its last step (earlier answers may still come)
                self._record(step, IDENTICAL, "unanswered at the recorded moment of the close in both")
                return
            if payload == CLOSED:
                self._record(step, IDENTICAL, "closed in both")
            elif self.strict_close:
                self._record(step, DIFFERENT, "outcome", [Difference("outcome", "closed", "response")])
            else:
                # A trace cannot tell a client that went away from a broker that closed, and a faster answer in the
                # replay is timing, not a decision: noted, not a difference, unless --strict-close.
                self._record(step, SKIPPED, UNANSWERED_CLOSE)
            return
        # A long poll or a rebalance may legitimately take long: never less than twice what the recorded answer took.
        timeout = max(self.timeout, 2 * recorded_us / 1e6)
        try:
            payload = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            self._record(step, DIFFERENT, "no answer", [Difference("outcome", row.get("outcome"), f"no answer within {timeout:g} s")])
            await conn.close()
            return
        if payload == CLOSED:
            self._record(step, DIFFERENT, "outcome", [Difference("outcome", "response", "closed")])
            return
        assert isinstance(payload, bytes)
        try:
            differences = self._compare(row, payload)
        except Exception as exc:  # a bug or an answer shape the diff cannot walk: reported, never a crashed replay
            differences = [Difference("response", "recorded answer", f"could not be compared: {exc!r}")]
        self._record(step, DIFFERENT if differences else IDENTICAL, "", differences)

    def _compare(self, row: dict[str, Any], payload: bytes) -> list[Difference]:
        recorded_bytes = row.get("response")
        if recorded_bytes is None:
            return [Difference("response", None, f"{len(payload)} bytes (the trace has no answer bytes to compare)")]
        try:
            _, recorded = decode_response(row["api_key"], row["api_version"], recorded_bytes)
            _, replayed = decode_response(row["api_key"], row["api_version"], payload)
        except Exception as exc:  # a version or bytes kafka-shim's codec does not read: compare raw bytes
            if bytes(recorded_bytes) == payload:
                return []
            return [Difference("response", f"{len(recorded_bytes)} bytes", f"{len(payload)} bytes (undecodable: {exc})")]
        return self.differ.compare(recorded, replayed)


def _answer_end(step: Step) -> int | None:
    rt = step.row.get("response_time_us")
    if rt is None or step.row.get("outcome") not in ("response", "authentication_failed"):
        return None
    return step.offset_us + rt
