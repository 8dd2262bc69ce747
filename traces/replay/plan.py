"""From a trace's rows to a replay plan: one ``ConnectionPlan`` per recorded ``connection_id``, its steps in recorded
order, each knowing when it was sent (relative to the trace's first request) and which earlier answers had
arrived by then, so the replay pipelines exactly as the client did.

Kafka answers a connection's requests in order, so "the answers that had arrived" is a prefix: step i waits for the
answers of steps ``[0, wait_for)``, where ``wait_for`` is one past the last earlier step whose recorded answer time
(``time + response_time_us``) is not after step i's ``time``. Steps that get no answer (Produce acks=0) are never
waited for.

What is not re-sent as recorded, and why:

- SaslHandshake / SaslAuthenticate: the tokens are not in the trace (they carry passwords or proofs). At the
  connection's SaslHandshake the replayer runs its own exchange with the principal's credentials (``sasl.py``),
  using the recorded versions and correlation ids; these rows are reported as skipped, not diffed.
- Rows without request bytes (AlterConfigs / IncrementalAlterConfigs, whose values the capture redacted to
  ``REDACTED``; AlterUserScramCredentials; rows imported from Kafka's request log, which only has JSON): re-encoding
  ``request_json`` would send ``REDACTED`` as a config value or a made-up credential, changing the broker's state
  wrongly, so these are skipped and counted.
- ``dropped`` rows and rows whose header was unreadable (no api key).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kafka_shim.protocol.codes import ApiKey

SEND = "send"  # re-send the recorded frame (ids re-mapped)
SASL = "sasl"  # run the replayer's own SASL exchange here
SKIP = "skip"  # not sent; the reason says why

ANONYMOUS = "User:ANONYMOUS"


@dataclass(slots=True)
class Step:
    row: dict[str, Any]
    action: str
    offset_us: int  # recorded send time, relative to the trace's first request
    wait_for: int = 0  # the answers of steps [0, wait_for) had arrived when this one was sent
    reason: str = ""  # for SKIP

    @property
    def expects_answer(self) -> bool:
        return self.action == SEND and self.row.get("outcome") != "no_response"


@dataclass(slots=True)
class ConnectionPlan:
    connection_id: str
    listener: str | None
    security_protocol: str | None
    principal: str  # who the connection's requests ran as (after SASL), ANONYMOUS if never authenticated
    steps: list[Step] = field(default_factory=list)

    @property
    def start_us(self) -> int:
        return self.steps[0].offset_us if self.steps else 0

    @property
    def authenticates(self) -> bool:
        return any(s.action == SASL for s in self.steps)


def _time_us(row: dict[str, Any]) -> int:
    t = row["time"]
    return int(t.timestamp() * 1_000_000) if hasattr(t, "timestamp") else int(t)


def _action(row: dict[str, Any]) -> tuple[str, str]:
    api_key = row.get("api_key")
    if api_key is None:
        return SKIP, "no readable request header (a v0 SASL token or a broken frame)"
    if api_key == ApiKey.SASL_HANDSHAKE:
        return SASL, "the replayer authenticates with the credentials file instead"
    if api_key == ApiKey.SASL_AUTHENTICATE:
        return SKIP, "SASL tokens are not recorded; the replayer's own exchange replaced this"
    if row.get("request") is None:
        why = "config values were redacted" if row.get("request_json") else "the trace has no request bytes"
        return SKIP, f"not re-sent: {why}"
    return SEND, ""


def build_plans(rows: Iterable[dict[str, Any]]) -> list[ConnectionPlan]:
    """The request rows grouped by connection, in recorded order, with send offsets and pipelining depths."""
    requests = [r for r in rows if r.get("kind") == "request" and r.get("connection_id")]
    if not requests:
        return []
    origin = min(_time_us(r) for r in requests)
    by_connection: dict[str, list[dict[str, Any]]] = {}
    for row in requests:
        by_connection.setdefault(row["connection_id"], []).append(row)
    plans = []
    for connection_id, conn_rows in by_connection.items():
        conn_rows.sort(key=_time_us)  # stable: rows of equal time keep the trace's order
        principal = next((r["principal"] for r in reversed(conn_rows) if r.get("principal") not in (None, ANONYMOUS)), ANONYMOUS)
        plan = ConnectionPlan(connection_id, conn_rows[0].get("listener"), conn_rows[0].get("security_protocol"), principal)
        answered_at: list[int | None] = []  # recorded answer time of each step, None when it got none
        for row in conn_rows:
            action, reason = _action(row)
            sent = _time_us(row)
            wait_for = 0
            for j, done in enumerate(answered_at):
                if done is not None and done <= sent:
                    wait_for = j + 1
            step = Step(row, action, sent - origin, wait_for, reason)
            plan.steps.append(step)
            rt = row.get("response_time_us")
            answered_at.append(sent + rt if rt is not None and row.get("outcome") in ("response", "authentication_failed") else None)
        plans.append(plan)
    plans.sort(key=lambda p: p.start_us)
    return plans
