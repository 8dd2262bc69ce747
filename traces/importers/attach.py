"""Authorizer-log decisions attached to the request-log requests they were made for.

Neither Kafka log names the other's line: the request log has the connection, the principal and when the request
was taken and answered; the authorizer log has the principal, the client's host, the request name and when the
question was asked (during the request's handling). A decision belongs to a request when the principal, the host
and the API key are equal and its time lies in the request's span ``[time, time + response_time]``, widened by
``SLACK_US`` on both sides because both logs write milliseconds.

Ambiguity: when the spans of several requests of the same principal, host and API contain the decision (pipelined
or concurrent clients of one principal on one host), the one whose body names the resource is taken when exactly
one does (a Metadata request listing the topic); otherwise it cannot be told which one asked, so it is attached to
none and kept as its own ``authorization`` row; ``Matching.ambiguous`` counts them. Decisions that match no request
(the request log was off, or rotated differently) are kept as ``authorization`` rows too. A request with no
matching decision keeps ``decisions`` null: the authorizer log holds only what Kafka chose to log (denials at
INFO, some grants at DEBUG), so "none found" is not "none asked".
"""

from __future__ import annotations

import bisect
import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

SLACK_US = 1_000


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
        spans[(r["principal"], r.get("client_host"), r["api_key"])].append((start - SLACK_US, end + SLACK_US, i))
    for key in spans:
        spans[key].sort()
    starts = {key: [s for s, _e, _i in value] for key, value in spans.items()}
    result = Matching()
    found: dict[int, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
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
        hits = [i for s, e, i in candidates[:upto] if s <= t <= e]
        if len(hits) > 1:
            hits = _naming_the_resource(hits, requests, a["decisions"][0]) or hits
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


def _naming_the_resource(hits: list[int], requests: list[dict[str, Any]], decision: dict[str, Any]) -> list[int]:
    """Of several candidate requests, those whose body names the decision's resource (as a JSON string)."""
    name = decision.get("resource_name")
    if not name:
        return []
    needle = json.dumps(name)
    return [i for i in hits if needle in (requests[i].get("request_json") or "")]
