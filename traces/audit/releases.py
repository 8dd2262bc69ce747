"""Requests an older Kafka release's authorization rules decide differently from Kafka 3.9's (``--compare-release R``).

The rule changes (facts: ``shared/kafka-release-rules.md`` §2 and the switch matrix, from Kafka's KafkaApis at
each release), each compared on the audit's decisions under ACL set A:

* KIP-163 (1.0): OffsetFetch needed READ on the group before, DESCRIBE from 1.0 (denial 30).
* KAFKA-5547 (1.0): Produce, Fetch, OffsetCommit, DeleteTopics, DeleteRecords, AddPartitionsToTxn and TxnOffsetCommit
  asked DESCRIBE on each topic before its operation (3, as if it did not exist). The decision differs only where a
  DENY on DESCRIBE meets an allowed operation (READ, WRITE and DELETE imply DESCRIBE); the error code of a refused
  topic (3 for 29) is not a decision and is not listed.
* KIP-277 (2.0): CreateTopics needed CREATE on the cluster before (else 31 for every topic); from 2.0 CREATE on the
  topic is enough (29 per topic).
* KIP-231 (2.1): ListGroups without DESCRIBE on the cluster failed whole with 31 before; from 2.1 the groups are
  filtered by DESCRIBE on each, silently.
* KAFKA-7394 (2.1): OffsetForLeaderEpoch needed CLUSTER_ACTION on the cluster before; from 2.1 DESCRIBE on the
  topic is enough.
* KIP-679 (2.8): an idempotent InitProducerId needed IDEMPOTENT_WRITE on the cluster before (31); from 2.8 WRITE
  on any topic is enough. (The pre-2.8 Produce-time IDEMPOTENT_WRITE check of idempotent batches is not compared:
  it needs the record batches' producer fields.)
* ZooKeeper mode (before 3.3 as kafka-shim presents releases): DeleteTopics asked DELETE on each topic, which alone
  decided (DESCRIBE only chose between 29 and 3), and DELETE on the cluster granted nothing; KRaft's controller deletes
  any topic for DELETE on the cluster, else needs DESCRIBE and DELETE on it. (0.11 asked DESCRIBE first: KAFKA-5547.)

``authorizer/api_checks/releases.py`` holds the broker's switches for emulated releases and the release each change
came in; the audit compares decisions, so the comparisons live here as functions over a request's decisions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from kafka_shim.authorizer.api_checks.releases import (
    KAFKA_5547,
    KAFKA_7394,
    KIP_163,
    KIP_231,
    KIP_277,
    KIP_679,
    KRAFT_PRESENTED,
    since,
)
from kafka_shim.traces.audit.decide import Decider
from kafka_shim.traces.audit.tables import KIND_AUTHORIZE, KIND_BY_RESOURCE_TYPE, KIND_SHORTCUT, RELEASE_DIFF

RELEASES = ("0.11", "1.0", "1.1", "2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7", "2.8", "3.0", "3.1", "3.2",
            "3.3", "3.4", "3.5", "3.6", "3.7", "3.8")


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


@dataclass(frozen=True)
class RuleChange:
    name: str
    since: str  # the first release with 3.9's rule
    api_keys: tuple[int, ...]
    compare: Callable[[list[dict], Decider], list[tuple[bool, bool, str, str]]]  # (allowed_39, allowed_old, q39, q_old)


def _offset_fetch(rows: list[dict], decider: Decider) -> list[tuple[bool, bool, str, str]]:
    out = []
    for r in rows:
        if r["resource_type"] == "GROUP" and r["operation"] == "DESCRIBE" and r["asked_a"]:
            old, _, _ = decider.decide(r["principal"], r["host"], "READ", "GROUP", r["resource_name"], "authorize")
            out.append((r["allowed_a"], old, f"DESCRIBE on GROUP {r['resource_name']}", f"READ on GROUP {r['resource_name']}"))
    return out


def _cluster_only(check: str, op: str) -> Callable[[list[dict], Decider], list[tuple[bool, bool, str, str]]]:
    """3.9: the cluster shortcut or the per-name question; before: the cluster action alone."""

    def compare(rows: list[dict], decider: Decider) -> list[tuple[bool, bool, str, str]]:
        shortcut = next((r for r in rows if r["check"] == check and r["kind"] == KIND_SHORTCUT), None)
        if shortcut is None or shortcut["allowed_a"]:
            return []
        out = []
        for r in rows:
            if r["check"] == check and r["kind"] != KIND_SHORTCUT and r["asked_a"] and r["allowed_a"] is not None:
                out.append((r["allowed_a"], False, f"{op} on CLUSTER or {r['operation']} on {r['resource_type']} {r['resource_name']}",
                            f"{op} on CLUSTER"))
        return out

    return compare


def _list_groups(rows: list[dict], decider: Decider) -> list[tuple[bool, bool, str, str]]:
    shortcut = next((r for r in rows if r["kind"] == KIND_SHORTCUT), None)
    if shortcut is None or shortcut["allowed_a"]:
        return []
    return [(True, False, "DESCRIBE on CLUSTER, else groups filtered by DESCRIBE on each (no error)",
             "DESCRIBE on CLUSTER, else CLUSTER_AUTHORIZATION_FAILED (31)")]


def _init_producer_id(rows: list[dict], decider: Decider) -> list[tuple[bool, bool, str, str]]:
    shortcut = next((r for r in rows if r["check"] == "idempotent" and r["kind"] == KIND_SHORTCUT), None)
    any_topic = next((r for r in rows if r["kind"] == KIND_BY_RESOURCE_TYPE), None)
    if shortcut is None or shortcut["allowed_a"] or any_topic is None or not any_topic["allowed_a"]:
        return []
    return [(True, False, "IDEMPOTENT_WRITE on CLUSTER or WRITE on any TOPIC", "IDEMPOTENT_WRITE on CLUSTER")]


def _describe_first(rows: list[dict], decider: Decider) -> list[tuple[bool, bool, str, str]]:
    """Before 1.0: DESCRIBE on the topic, then its operation. Only an allowed operation can change (a DENY on DESCRIBE
    refuses it there); a refused one stays refused (3 instead of 29). DeleteTopics is ``_delete_topics``'s."""
    out = []
    for r in rows:
        if (r["resource_type"] == "TOPIC" and r["operation"] in _DESCRIBE_IMPLIERS and r["kind"] == KIND_AUTHORIZE
                and r["asked_a"] and r["allowed_a"]):
            old, _, _ = decider.decide(r["principal"], r["host"], "DESCRIBE", "TOPIC", r["resource_name"], "authorize")
            out.append((True, old, f"{r['operation']} on TOPIC {r['resource_name']}",
                        f"DESCRIBE on TOPIC {r['resource_name']} (else 3), then {r['operation']}"))
    return out


_DESCRIBE_IMPLIERS = frozenset({"READ", "WRITE", "DELETE"})


def _delete_topics(describe_first: bool) -> Callable[[list[dict], Decider], list[tuple[bool, bool, str, str]]]:
    """3.9 (KRaft's controller): DELETE on the cluster deletes every named topic, else DESCRIBE and DELETE on each.
    ZooKeeper mode (1.0-3.2 as presented): DELETE on each topic alone decides (DESCRIBE only picks the error). 0.11
    (``describe_first``, KAFKA-5547): DESCRIBE on the topic first (else 3), then DELETE."""

    def compare(rows: list[dict], decider: Decider) -> list[tuple[bool, bool, str, str]]:
        shortcut = next((r for r in rows if r["check"] == "delete" and r["kind"] == KIND_SHORTCUT), None)
        cluster = shortcut is not None and bool(shortcut["allowed_a"])
        names = dict.fromkeys(r["resource_name"] for r in rows if r["check"] in ("describe", "delete")
                              and r["kind"] != KIND_SHORTCUT and r["resource_name"] is not None)
        out = []
        for name in names:
            principal, host = rows[0]["principal"], rows[0]["host"]
            describe, _, _ = decider.decide(principal, host, "DESCRIBE", "TOPIC", name, "authorize")
            delete, _, _ = decider.decide(principal, host, "DELETE", "TOPIC", name, "authorize")
            q39 = f"DELETE on CLUSTER (covers TOPIC {name})" if cluster else f"DESCRIBE and DELETE on TOPIC {name}"
            q_old = f"DESCRIBE on TOPIC {name} (else 3), then DELETE on it" if describe_first else f"DELETE on TOPIC {name}"
            out.append((cluster or (describe and delete), delete and (describe or not describe_first), q39, q_old))
        return out

    return compare


# The releases come from the broker's own table of rule changes (authorizer/api_checks/releases.py).
_KAFKA_5547 = "KAFKA-5547 (1.0): a topic's operation is asked first (before: DESCRIBE on the topic first, else 3)"
_KRAFT_DELETE = ("KRaft (3.3 as presented): DELETE on CLUSTER deletes any topic, else DESCRIBE and DELETE on it (before, ZooKeeper "
                 "mode: DELETE on the topic alone)")

CHANGES = (
    RuleChange("KIP-163 (1.0): OffsetFetch asks DESCRIBE on the group, not READ", since(KIP_163), (9,), _offset_fetch),
    RuleChange(_KAFKA_5547, since(KAFKA_5547), (0, 1, 8, 21, 24, 28), _describe_first),
    RuleChange(f"{_KAFKA_5547}; {_KRAFT_DELETE}", since(KAFKA_5547), (20,), _delete_topics(describe_first=True)),
    RuleChange("KIP-277 (2.0): CREATE on the topic suffices for CreateTopics (before: CREATE on CLUSTER, else 31)", since(KIP_277),
               (19,), _cluster_only("create", "CREATE")),
    RuleChange("KIP-231 (2.1): ListGroups without DESCRIBE on CLUSTER filters silently (before: 31)", since(KIP_231), (16,),
               _list_groups),
    RuleChange("KAFKA-7394 (2.1): OffsetForLeaderEpoch allows DESCRIBE on the topic (before: CLUSTER_ACTION only)",
               since(KAFKA_7394), (23,), _cluster_only("topics", "CLUSTER_ACTION")),
    RuleChange("KIP-679 (2.8): an idempotent InitProducerId needs WRITE on any topic or IDEMPOTENT_WRITE (before: IDEMPOTENT_WRITE)",
               since(KIP_679), (22,), _init_producer_id),
    RuleChange(_KRAFT_DELETE, since(KRAFT_PRESENTED), (20,), _delete_topics(describe_first=False)),
)

API_KEYS = frozenset(k for c in CHANGES for k in c.api_keys)


def changes_by_api(release: str) -> dict[int, RuleChange]:
    """The rule change between ``release`` and 3.9 for each API it touches: the oldest applicable one, which for
    DeleteTopics before 1.0 covers both of its changes (CHANGES lists each API's changes oldest first)."""
    out: dict[int, RuleChange] = {}
    for c in CHANGES:
        if _release_key(release) < _release_key(c.since):
            for key in c.api_keys:
                out.setdefault(key, c)
    return out


def release_differences(decisions: pa.Table, release: str, decider: Decider) -> pa.Table:
    """RELEASE_DIFF rows: for each request of an API whose rules changed after ``release``, the questions whose
    answer (under A) differs between 3.9's rule and the old one."""
    changes = changes_by_api(release)
    if not changes or decisions.num_rows == 0:
        return RELEASE_DIFF.empty_table()
    subset = decisions.filter(pc.is_in(decisions.column("api_key"), pa.array(list(changes), pa.int16())))
    subset = subset.sort_by([("request_index", "ascending"), ("seq", "ascending")])
    out: list[dict] = []
    rows = subset.to_pylist()
    start = 0
    while start < len(rows):
        end = start
        while end < len(rows) and rows[end]["request_index"] == rows[start]["request_index"]:
            end += 1
        request = rows[start:end]
        change = changes[request[0]["api_key"]]
        for allowed_39, allowed_old, q39, q_old in change.compare(request, decider):
            if allowed_39 == allowed_old:
                continue
            first = request[0]
            out.append({"request_index": first["request_index"], "time": first["time"], "principal": first["principal"],
                        "host": first["host"], "request_name": first["request_name"], "api_version": first["api_version"],
                        "correlation_id": first["correlation_id"], "release": release, "rule_change": change.name,
                        "allowed_39": allowed_39, "allowed_old": allowed_old, "question_39": q39, "question_old": q_old})
        start = end
    return pa.Table.from_pylist(out, schema=RELEASE_DIFF)
