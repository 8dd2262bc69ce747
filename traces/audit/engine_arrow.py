"""The audit in one process with pyarrow (``--engine arrow``): no JVM, the baseline of ``bench/audit.py``.

Runs ``pipeline``'s steps in order over every row group; gives the same tables as the Spark engine (a test
compares them).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from kafka_shim.authorizer import AclBinding
from kafka_shim.traces.audit import pipeline, questions
from kafka_shim.traces.audit.decide import AuthorizerSettings, decide_all
from kafka_shim.traces.audit.results import AuditResults
from kafka_shim.traces.audit.tables import ACTIONS, PROBLEMS

Progress = Callable[[str, int, int], None]


def _concat(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table()


def run(trace: str | Path, acls_a: list[AclBinding], acls_b: list[AclBinding] | None, settings: AuthorizerSettings,
        progress: Progress | None = None) -> AuditResults:
    units, file_problems = pipeline.plan_units(trace)
    step = progress or (lambda stage, done, total: None)
    batches, broker_batches = [], []
    for n, unit in enumerate(units):
        batches.append(pipeline.explode_unit(unit))
        broker_batches.append(pipeline.broker_unit(unit))
        step("decode", n + 1, len(units))
    exploded = _concat(batches, questions.QUESTIONS)
    broker = _concat(broker_batches, questions.BROKER)
    problems = pa.concat_tables([pa.Table.from_pylist(file_problems, schema=PROBLEMS), pipeline.problems_of(exploded)])
    asked = exploded.filter(pc.is_null(exploded.column("problem")))

    actions = pipeline.action_rows(asked)
    broker_keys = pipeline.with_name_key(broker.select(["principal", "host", "operation", "resource_type", "resource_name", "kind"]))
    everything = pa.concat_tables([actions.select(broker_keys.column_names), broker_keys]).group_by(
        broker_keys.column_names).aggregate([])
    everything = everything.select(broker_keys.column_names)
    step("decide", 0, 1)
    answers_a = decide_all(acls_a, settings, everything)
    decided = everything.append_column("allowed_a", answers_a.column("allowed")).append_column(
        "rule_a", answers_a.column("rule")).append_column("acl_a", answers_a.column("acl"))
    if acls_b is not None:
        answers_b = decide_all(acls_b, settings, everything)
        decided = decided.append_column("allowed_b", answers_b.column("allowed")).append_column(
            "rule_b", answers_b.column("rule")).append_column("acl_b", answers_b.column("acl"))
    else:
        for col, typ in (("allowed_b", pa.bool_()), ("rule_b", pa.string()), ("acl_b", pa.string())):
            decided = decided.append_column(col, pa.nulls(decided.num_rows, typ))
    step("decide", 1, 1)
    join_keys = ["principal", "host", "operation", "resource_type", "name_key", "kind"]
    answer_cols = ["allowed_a", "rule_a", "acl_a", "allowed_b", "rule_b", "acl_b"]
    actions_out = actions.join(decided.select(join_keys + answer_cols), join_keys, join_type="left outer")
    actions_out = pipeline.sort_actions(actions_out).select([f.name for f in ACTIONS]).cast(ACTIONS)

    decisions = pipeline.with_name_key(asked).join(decided.select(join_keys + answer_cols), join_keys, join_type="left outer")
    decisions = decisions.sort_by([("request_index", "ascending"), ("seq", "ascending")])
    finished = pipeline.finish(decisions, acls_b is not None)
    decisions_out, flips = pipeline.split_finished(finished)

    broker_diff = broker_differences(broker, decisions_out, decided)
    step("write", 1, 1)
    return AuditResults(decisions=decisions_out, flips=flips, actions=actions_out, broker_diff=broker_diff,
                        problems=problems, broker_rows=broker.num_rows)


def broker_differences(broker: pa.Table, decisions: pa.Table, decided: pa.Table) -> pa.Table:
    keys = ["principal", "host", "operation", "resource_type", "name_key", "kind"]
    b = pipeline.with_name_key(broker)
    b = b.join(decided.select([*keys, "allowed_a", "rule_a"]), keys, join_type="left outer")
    b = b.rename_columns([{"allowed_a": "audit_allowed", "rule_a": "audit_rule"}.get(n, n) for n in b.column_names])
    asked = decisions.filter(pc.equal(decisions.column("asked_a"), True))
    asked = pipeline.with_name_key(asked.select(["request_index", "kind", "operation", "resource_type", "resource_name"]))
    asked = asked.set_column(asked.column_names.index("kind"), "kind", pipeline.normalised_kind(asked.column("kind")))
    asked = asked.select(["request_index", "kind", "operation", "resource_type", "name_key"]).group_by(
        ["request_index", "kind", "operation", "resource_type", "name_key"]).aggregate([])
    asked = asked.append_column("matched", pa.array([True] * asked.num_rows, pa.bool_()))
    b = b.join(asked, ["request_index", "kind", "operation", "resource_type", "name_key"], join_type="left outer")
    b = b.set_column(b.column_names.index("matched"), "matched", pc.fill_null(b.column("matched"), False))
    b = b.sort_by([("request_index", "ascending"), ("kind", "ascending"), ("operation", "ascending"), ("name_key", "ascending")])
    return pipeline.broker_differences(b)

