"""broker_diff both ways, for a kafka-shim capture (which records every question a request asked): a question only
the broker asked is ``only_broker``, one only the audit asks is ``only_audit``, and a different answer ``decision``.
Sources whose decisions are partial (Kafka's authorizer log leaves out what it does not log) get no ``only_audit``."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafka_shim.traces.audit.engine_arrow import broker_differences
from kafka_shim.traces.audit.questions import BROKER
from kafka_shim.traces.audit.tables import DECISIONS

QUESTION = {"time": 1_795_000_000_000_000, "principal": "User:alice", "host": "10.0.0.1", "request_name": "Metadata",
            "correlation_id": 4, "kind": "authorize", "resource_type": "TOPIC"}


def _broker(*rows: tuple[str, str, bool]) -> pa.Table:
    return pa.Table.from_pylist([{**QUESTION, "request_index": 7, "operation": op, "resource_name": name, "allowed": allowed,
                                  "rule": "MatchingAcl" if allowed else "DefaultDeny"} for op, name, allowed in rows], schema=BROKER)


def _decisions(source: str, *rows: tuple[str, str, bool, bool]) -> pa.Table:
    return pa.Table.from_pylist([{**QUESTION, "request_index": 7, "source": source, "seq": seq, "operation": op,
                                  "resource_name": name, "asked_a": asked, "allowed_a": allowed,
                                  "rule_a": "MatchingAcl" if allowed else "DefaultDeny"}
                                 for seq, (op, name, asked, allowed) in enumerate(rows)], schema=DECISIONS)


def _decided(decisions: pa.Table) -> pa.Table:
    keys = decisions.select(["principal", "host", "operation", "resource_type", "resource_name", "kind", "allowed_a", "rule_a"])
    return keys.append_column("name_key", keys.column("resource_name"))


@pytest.mark.parametrize("source, only_audit", [("capture", True), ("request-log", False)])
def test_each_way_a_question_can_differ(source: str, only_audit: bool) -> None:
    broker = _broker(("DESCRIBE", "orders", True), ("DESCRIBE", "payments", True), ("READ", "orders", True))
    decisions = _decisions(source, ("DESCRIBE", "orders", True, True), ("DESCRIBE", "payments", True, False),
                           ("CREATE", "orders", True, False), ("CREATE", "payments", False, False))
    diff = broker_differences(broker, decisions, _decided(decisions)).to_pylist()
    found = {(d["difference"], d["operation"], d["resource_name"], d["broker_allowed"], d["audit_allowed"]) for d in diff}
    expected = {("decision", "DESCRIBE", "payments", True, False), ("only_broker", "READ", "orders", True, None)}
    if only_audit:  # CREATE payments was not asked (asked_a false): not a difference
        expected.add(("only_audit", "CREATE", "orders", None, False))
    assert found == expected
