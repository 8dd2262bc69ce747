"""Authorizer-log decisions attached to the request-log requests they were made for.

Neither Kafka log names the other's line: the request log has the connection, the principal and when the request
was taken and answered; the authorizer log has the principal, the client's host, the request name and when the
question was asked (during the request's handling). A decision belongs to a request when the principal, the host
and the API key are equal and its time lies in the request's span ``[time, time + response_time]``, widened by
``SLACK_US`` on both sides because both logs write milliseconds.

The span is only near: Kafka writes a request's log line after its answer is sent, and by then the connection's next
request may already be asking its questions (seen on a real 3.9: a Metadata request's DESCRIBE on the cluster logged
in the millisecond its predecessor on the same connection was logged, before its own computed start). So the
candidates are the requests whose span, widened by ``NEAR_US``, holds the decision, and of those only the ones that
could have asked it (Kafka's own checks for the request body, ``authorizer.api_checks``, ask that operation on that
resource type and name) are kept. Of several, the ones whose ``SLACK_US`` span holds it, then the one whose body
names the resource (a Metadata request listing the topic), are taken when exactly one is left.

Ambiguity: when that still leaves several requests (pipelined or concurrent clients of one principal on one host
asking the same thing), it cannot be told which one asked, so the decision is attached to none and kept as its own
``authorization`` row; ``Matching.ambiguous`` counts them. Decisions that match no request (the request log was off,
or rotated differently) are kept as ``authorization`` rows too. A request with no matching decision keeps
``decisions`` null: the authorizer log holds only what Kafka chose to log (denials at INFO, some grants at DEBUG), so
"none found" is not "none asked".
"""

from __future__ import annotations

import bisect
import json
from collections import defaultdict
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from kafka_shim.authorizer.api_checks import requirements

SLACK_US = 1_000
NEAR_US = 10_000


@dataclass
class Matching:
    attached: int = 0
    ambiguous: int = 0
    unmatched: int = 0
    leftover: list[dict[str, Any]] = field(default_factory=list)  # authorization rows kept as their own rows


def attach(requests: list[dict[str, Any]], authorizations: list[dict[str, Any]]) -> Matching:
    """Move each authorization row's decision into the one request it matches (``decisions``, in time order)."""
    spans: dict[tuple, list[tuple[int, int, int]]] = defaultdict(list)  # key -> [(start, end, request index)]
    for i, r in enumerate(requests):
        if r.get("api_key") is None or r.get("principal") is None:
            continue
        start = r["time"]
        end = start + (r.get("response_time_us") or 0)
        spans[(r["principal"], r.get("client_host"), r["api_key"])].append((start - NEAR_US, end + NEAR_US, i))
    for key in spans:
        spans[key].sort()
    starts = {key: [s for s, _e, _i in value] for key, value in spans.items()}
    result = Matching()
    found: dict[int, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    asked = _Asked(requests)
    for a in authorizations:
        key = (a.get("principal"), a.get("client_host"), a.get("api_key"))
        candidates = spans.get(key)
        if not candidates or a.get("api_key") is None:
            result.unmatched += 1
            result.leftover.append(a)
            continue
        t = a["time"]
        # Spans that started by t; of those, the ones still open at t.
        upto = bisect.bisect_right(starts[key], t)
        near = [i for s, e, i in candidates[:upto] if s <= t <= e]
        hits = _best_candidates(near, t, requests, a["decisions"][0], asked)
        if len(hits) == 1:
            found[hits[0]].append((t, a["decisions"][0]))
            result.attached += 1
        else:
            if hits:
                result.ambiguous += 1
            else:
                result.unmatched += 1
            result.leftover.append(a)
    for i, decisions in found.items():
        decisions.sort(key=lambda pair: pair[0])
        requests[i]["decisions"] = [d for _t, d in decisions]
    return result


def _best_candidates(near: list[int], t: int, requests: list[dict[str, Any]], decision: dict[str, Any],
                     asked: _Asked) -> list[int]:
    """Of the requests near the decision's time: those that could have asked it, then those whose own span holds
    it, then those naming its resource, narrowing only while something is left. When none could have asked it (a
    question the declared checks do not model), the time alone decides, as closely as the logs allow."""
    hits = [i for i in near if asked.could_ask(i, decision)] or [i for i in near if _in_span(requests[i], t)]
    if len(hits) > 1:
        hits = [i for i in hits if _in_span(requests[i], t)] or hits
    if len(hits) > 1:
        hits = _naming_the_resource(hits, requests, decision) or hits
    return hits


def _in_span(request: dict[str, Any], t: int) -> bool:
    start = request["time"]
    return start - SLACK_US <= t <= start + (request.get("response_time_us") or 0) + SLACK_US


class _Asked:
    """What each request's body makes Kafka ask, per (operation, resource type): the names (None: any name), or
    None when the body is not in the trace or its checks cannot be read (then nothing rules the request out)."""

    def __init__(self, requests: list[dict[str, Any]]) -> None:
        self.requests = requests
        self.memo: dict[int, dict[tuple[str, str], set[str | None]] | None] = {}

    def could_ask(self, index: int, decision: dict[str, Any]) -> bool:
        if index not in self.memo:
            self.memo[index] = self._questions(self.requests[index])
        questions = self.memo[index]
        if questions is None:
            return True
        names = questions.get((decision.get("operation"), decision.get("resource_type")))
        return names is not None and (None in names or decision.get("resource_name") in names)

    @staticmethod
    def _questions(request: dict[str, Any]) -> dict[tuple[str, str], set[str | None]] | None:
        # Read here rather than through the audit's questions.py, which needs the audit extra (numpy); importing a
        # log needs only the traces extra.
        text, version = request.get("request_json"), request.get("api_version")
        if text is None or version is None:
            return None
        try:
            body = json.loads(text, object_hook=lambda d: SimpleNamespace(**d))
            asked = requirements(request["api_key"], version, body)
        except Exception:  # an undeclared API or a body the checks cannot read
            return None
        out: dict[tuple[str, str], set[str | None]] = defaultdict(set)
        for r in asked:
            out[(r.operation.name, r.resource_type.name)].add(None if r.any_resource else r.name)
        return out


def _naming_the_resource(hits: list[int], requests: list[dict[str, Any]], decision: dict[str, Any]) -> list[int]:
    """Of several candidate requests, those whose body names the decision's resource (as a JSON string)."""
    name = decision.get("resource_name")
    if not name:
        return []
    needle = json.dumps(name)
    return [i for i in hits if needle in (requests[i].get("request_json") or "")]
