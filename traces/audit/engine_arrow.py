"""The audit in one process with pyarrow (``--engine arrow``): no JVM, the baseline of ``bench/audit.py``.

Audits one row group at a time, as the Spark engine's executors do (each request's rows live in one row group):
its questions, their answers (each Decider memoises what it decided, so a distinct action is decided once), the
broker's flow and the flips; then the unit's decisions and flips go to the output files and only counters, the
actions (merged across units), the broker's differences and the problems stay in memory. Memory follows the
largest row group, not the trace: a trace of 10M requests once held 24 GB before it was killed. Gives the same
tables as the Spark engine (a test compares them).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from kafka_shim.authorizer import AclBinding
from kafka_shim.traces.audit import pipeline
from kafka_shim.traces.audit.decide import AuthorizerSettings, Decider
from kafka_shim.traces.audit.releases import release_differences
from kafka_shim.traces.audit.results import (
    CSV_WRITE_OPTIONS,
    AuditResults,
    csv_schema,
    csv_view,
    parquet_options,
    problem_counts,
)
from kafka_shim.traces.audit.tables import ACTIONS, BROKER_DIFF, BROKER_QUESTION, DECISIONS, FLIPS, PROBLEMS, RELEASE_DIFF

Progress = Callable[[str, int, int], None]


class _Sink:
    """One result table written as it grows: DIR/name/part-00000.parquet and DIR/csv/name/part-00000.csv (the
    layout ``results.write_table`` writes), or kept in memory when there is no DIR. Each file is written by a
    thread of its own: pyarrow's Parquet and CSV writers release the interpreter lock, so writing a unit overlaps
    auditing the next, and the two formats overlap each other (the decisions of 10M requests are ~20M rows: one
    thread writing both formats was the audit's slowest part); at most ``AHEAD`` units wait for them, which bounds
    the memory they hold."""

    AHEAD = 2

    def __init__(self, out: Path | None, name: str, schema: pa.Schema) -> None:
        self.schema = schema
        self.parts: list[pa.Table] = []
        self.parquet = self.csv = None
        self.pending: deque[Future[None]] = deque()
        if out is not None:
            (out / name).mkdir(parents=True, exist_ok=True)
            (out / "csv" / name).mkdir(parents=True, exist_ok=True)
            self.parquet = pq.ParquetWriter(out / name / "part-00000.parquet", schema, **parquet_options(schema))
            self.csv = pacsv.CSVWriter(out / "csv" / name / "part-00000.csv", csv_schema(schema), write_options=CSV_WRITE_OPTIONS)
            self.parquet_thread = ThreadPoolExecutor(1, thread_name_prefix=f"audit-{name}-parquet")
            self.csv_thread = ThreadPoolExecutor(1, thread_name_prefix=f"audit-{name}-csv")

    def write(self, table: pa.Table) -> None:
        if self.parquet is None:
            self.parts.append(table)
        elif table.num_rows:
            while len(self.pending) >= 2 * self.AHEAD:
                self.pending.popleft().result()
            self.pending.append(self.parquet_thread.submit(self.parquet.write_table, table))
            self.pending.append(self.csv_thread.submit(self._write_csv, table))

    def _write_csv(self, table: pa.Table) -> None:
        self.csv.write_table(csv_view(table))

    def close(self) -> pa.Table:
        """What was kept in memory (empty when written to files); raises what a write raised."""
        if self.parquet is not None:
            try:
                while self.pending:
                    self.pending.popleft().result()
            finally:
                self.parquet_thread.shutdown()
                self.csv_thread.shutdown()
                self.parquet.close()
                self.csv.close()
        return pa.concat_tables(self.parts) if self.parts else self.schema.empty_table()


@dataclass
class ArrowResults(AuditResults):
    """The results of a streamed audit: with an output directory, decisions and flips are already there (their
    tables here are empty) and the summary's counts were added up as they were written."""

    counts: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {**self.counts, "actions": self.actions.num_rows, "broker_decisions": self.broker_rows,
                "broker_differences": self.broker_diff.num_rows, "broker_super_users": self.broker_super_users(),
                "release_differences": self.release_diff.num_rows if self.release_diff is not None else 0,
                "problems": problem_counts(self.problems)}


@dataclass
class UnitResult(AuditResults):
    """One row group audited, with the whole audit's tables: its decisions and flips (to be written), and what is
    merged across units."""


def audit_unit(unit: pipeline.Unit, a: Decider, b: Decider | None, compare_release: str | None = None) -> UnitResult:
    """The whole audit of one row group (each request's rows live in one): both engines run this per unit."""
    question_rows, broker_rows = pipeline.explode_unit(unit)
    exploded, broker = pa.Table.from_batches([question_rows]), pa.Table.from_batches([broker_rows])
    finished, unit_actions, diff = audit_tables(exploded, broker, a, b)
    decisions, flips = pipeline.split_finished(finished)
    release = release_differences(decisions, compare_release, a) if compare_release else None
    return UnitResult(decisions, flips, unit_actions, diff, pipeline.problems_of(exploded), broker.num_rows, release)


def run(trace: str | Path, acls_a: list[AclBinding], acls_b: list[AclBinding] | None, settings: AuthorizerSettings,
        progress: Progress | None = None, *, out: Path | None = None, compare_release: str | None = None) -> ArrowResults:
    """Audit ``trace`` unit by unit; with ``out``, decisions and flips are written there as they are made (else
    returned in memory); with ``compare_release``, the release differences are found per unit too."""
    units, file_problems = pipeline.plan_units(trace)
    step = progress or (lambda stage, done, total: None)
    a = Decider(acls_a, settings)
    b = Decider(acls_b, settings) if acls_b is not None else None
    decisions_sink, flips_sink = _Sink(out, "decisions", DECISIONS), _Sink(out, "flips", FLIPS)
    merged = Merged(file_problems)
    try:
        for n, unit in enumerate(units):
            result = audit_unit(unit, a, b, compare_release)
            decisions_sink.write(result.decisions)
            flips_sink.write(result.flips)
            merged.add(result, count(result.decisions, result.flips))
            step("audit", n + 1, len(units))
    finally:
        decisions_out, flips_out = decisions_sink.close(), flips_sink.close()
    return merged.results(decisions_out, flips_out)


class Merged:
    """What the units' results add up to: counters, actions merged, the small tables concatenated."""

    def __init__(self, file_problems: list[dict]) -> None:
        self.counts = dict.fromkeys(COUNTS, 0)
        self.actions: list[pa.Table] = []
        self.diffs: list[pa.Table] = []
        self.releases: list[pa.Table] = []
        self.problems = [pa.Table.from_pylist(file_problems, schema=PROBLEMS)]
        self.broker_rows = 0

    def add(self, result: UnitResult, counts: dict[str, int]) -> None:
        for key, value in counts.items():
            self.counts[key] += value
        self.actions.append(result.actions)
        self.diffs.append(result.broker_diff)
        self.problems.append(result.problems)
        if result.release_diff is not None:
            self.releases.append(result.release_diff)
        self.broker_rows += result.broker_rows

    def results(self, decisions: pa.Table, flips: pa.Table) -> ArrowResults:
        actions = pipeline.sort_actions(_merge_actions(self.actions)).select([f.name for f in ACTIONS]).cast(ACTIONS)
        return ArrowResults(decisions=decisions, flips=flips, actions=actions,
                            broker_diff=pa.concat_tables(self.diffs) if self.diffs else BROKER_DIFF.empty_table(),
                            problems=pa.concat_tables(self.problems), broker_rows=self.broker_rows,
                            release_diff=pa.concat_tables(self.releases) if self.releases else RELEASE_DIFF.empty_table(),
                            counts=self.counts)


COUNTS = ("requests_audited", "decisions", "asked_a", "denied_a", "unresolved", "flips", "flips_hard")


def count(decisions: pa.Table, flips: pa.Table) -> dict[str, int]:
    """The summary's counters for one unit (a request's rows are all in one unit)."""
    counts = dict.fromkeys(COUNTS, 0)
    if decisions.num_rows:
        counts["requests_audited"] = _distinct(decisions.column("request_index"))
        counts["decisions"] = decisions.num_rows
        asked, allowed = decisions.column("asked_a"), decisions.column("allowed_a")
        counts["asked_a"] = int(pc.sum(pc.fill_null(asked, False)).as_py() or 0)
        counts["denied_a"] = int(pc.sum(pc.and_(asked, pc.invert(pc.fill_null(allowed, True)))).as_py() or 0)
        counts["unresolved"] = int(pc.sum(pc.is_null(allowed)).as_py() or 0)
    if flips.num_rows:
        counts["flips"] = flips.num_rows
        counts["flips_hard"] = int(pc.sum(pc.equal(flips.column("severity"), "hard")).as_py() or 0)
    return counts


def _distinct(request_index: pa.ChunkedArray) -> int:
    """How many requests: a unit's request indexes lie in one row group's range, so a count per index there
    costs less than hashing them."""
    values = request_index.to_numpy()
    low = int(values.min())
    if int(values.max()) - low > 4 * len(values):
        return len(pc.unique(request_index))
    return int(np.count_nonzero(np.bincount(values - low)))


_ACTION_GROUP = ["principal", "host", "operation", "resource_type", "name_key", "kind"]


def _merge_actions(parts: list[pa.Table]) -> pa.Table:
    """Each unit's actions as one row per action: requests added up, the first and last times, any hard, and the
    answers (the same in every unit: one Decider answered them all)."""
    if not parts:
        return pipeline.with_name_key(ACTIONS.empty_table())
    table = pa.concat_tables(parts)
    if len(parts) == 1:
        return table
    merged = table.group_by(_ACTION_GROUP, use_threads=False).aggregate(
        [("requests", "sum"), ("first_time", "min"), ("last_time", "max"), ("hard", "any"), ("resource_name", "first"),
         *[(c, "first") for c in ANSWER_COLUMNS]])
    return merged.rename_columns([n.removesuffix("_sum").removesuffix("_min").removesuffix("_max").removesuffix("_any")
                                  .removesuffix("_first") for n in merged.column_names])


JOIN_KEYS = ["principal", "host", "operation", "resource_type", "name_key", "kind"]
ANSWER_COLUMNS = ["allowed_a", "rule_a", "acl_a", "allowed_b", "rule_b", "acl_b"]


def audit_tables(exploded: pa.Table, broker: pa.Table, a: Decider, b: Decider | None) -> tuple[pa.Table, pa.Table, pa.Table]:
    """(finished decisions with flip columns, actions with answers and counts, broker differences) of whole requests."""
    problem = exploded.column("problem")
    # most row groups have no problem row: filtering every column of them would only copy them
    asked = exploded if problem.null_count == exploded.num_rows else exploded.filter(pc.is_null(problem))
    actions = pipeline.action_rows(asked)
    broker_keys = pipeline.with_name_key(broker.select(["principal", "host", "operation", "resource_type", "resource_name", "kind"]))
    everything = pa.concat_tables([actions.select(broker_keys.column_names), broker_keys]).group_by(
        broker_keys.column_names, use_threads=False).aggregate([])
    everything = everything.select(broker_keys.column_names)
    decided = _answers(everything, a, "a")
    if b is not None:
        decided = _answers(decided, b, "b")
    else:
        for col, typ in (("allowed_b", pa.bool_()), ("rule_b", pa.string()), ("acl_b", pa.string())):
            decided = decided.append_column(col, pa.nulls(decided.num_rows, typ))
    actions_out = actions.join(decided.select(JOIN_KEYS + ANSWER_COLUMNS), JOIN_KEYS, join_type="left outer", use_threads=False)
    decisions = _with_answers(pipeline.with_name_key(asked), decided)
    finished = pipeline.finish(decisions, b is not None)
    decisions_out, _ = pipeline.split_finished(finished)
    return finished, actions_out, broker_differences(broker, decisions_out, decided)


def _action_key(table: pa.Table) -> pa.ChunkedArray:
    """JOIN_KEYS as one string per row (a null field written as a character no Kafka name holds)."""
    return pc.binary_join_element_wise(*(table.column(c) for c in JOIN_KEYS), "\x00", null_handling="replace",
                                       null_replacement="\x01")


def _with_answers(questions: pa.Table, decided: pa.Table) -> pa.Table:
    """Each question row with its action's answers, in the rows' own order (request, then question): a lookup by
    key instead of a join, which would lose the order and make the wide table be sorted again."""
    positions = pc.index_in(_action_key(questions), value_set=_action_key(decided).combine_chunks())
    for name in ANSWER_COLUMNS:
        answers = decided.column(name)
        # the B columns are all null without --what-if: nothing to look up
        whole = pa.nulls(questions.num_rows, answers.type) if answers.null_count == len(answers) else answers.take(positions)
        questions = questions.append_column(name, whole)
    return questions


def _answers(table: pa.Table, decider: Decider, suffix: str) -> pa.Table:
    answers = decider.answer_table(table)
    return (table.append_column(f"allowed_{suffix}", answers.column("allowed"))
            .append_column(f"rule_{suffix}", answers.column("rule")).append_column(f"acl_{suffix}", answers.column("acl")))


def broker_differences(broker: pa.Table, decisions: pa.Table, decided: pa.Table) -> pa.Table:
    if not broker.num_rows:  # no decisions of the broker's in this row group (traces without them: most)
        return BROKER_DIFF.empty_table()
    keys = ["principal", "host", "operation", "resource_type", "name_key", "kind"]
    b = pipeline.with_name_key(broker)
    b = b.join(decided.select([*keys, "allowed_a", "rule_a"]), keys, join_type="left outer", use_threads=False)
    b = b.rename_columns([{"allowed_a": "audit_allowed", "rule_a": "audit_rule"}.get(n, n) for n in b.column_names])
    # Only the requests the broker logged decisions for can match one (most traces have none: captures without
    # an authorizer log), so the rest are not grouped.
    logged = pc.unique(broker.column("request_index").combine_chunks())
    asked = decisions.filter(pc.and_(pc.equal(decisions.column("asked_a"), True),
                                     pc.is_in(decisions.column("request_index"), value_set=logged)))
    asked = pipeline.with_name_key(asked.select(["request_index", "kind", "operation", "resource_type", "resource_name"]))
    asked = asked.set_column(asked.column_names.index("kind"), "kind", pipeline.normalised_kind(asked.column("kind")))
    asked = asked.select(["request_index", "kind", "operation", "resource_type", "name_key"]).group_by(
        ["request_index", "kind", "operation", "resource_type", "name_key"], use_threads=False).aggregate([])
    asked = asked.append_column("matched", pa.array([True] * asked.num_rows, pa.bool_()))
    b = b.join(asked, ["request_index", "kind", "operation", "resource_type", "name_key"], join_type="left outer", use_threads=False)
    b = b.set_column(b.column_names.index("matched"), "matched", pc.fill_null(b.column("matched"), False))
    b = b.sort_by([("request_index", "ascending"), ("kind", "ascending"), ("operation", "ascending"), ("name_key", "ascending")])
    return pa.concat_tables([pipeline.broker_differences(b), _only_audit(broker, decisions, logged)])


_QUESTION_KEYS = ["request_index", "kind", "operation", "resource_type", "name_key"]


def _only_audit(broker: pa.Table, decisions: pa.Table, logged: pa.Array) -> pa.Table:
    """Questions the audit says the broker asked (``asked_a``) that a kafka-shim capture shows it did not ask: a
    capture records every question of a request, where Kafka's authorizer log (attached to request-log rows) leaves
    out what it does not log. Only requests with at least one recorded decision are compared."""
    mine = decisions.filter(pc.and_(pc.and_(pc.equal(decisions.column("asked_a"), True), pc.equal(decisions.column("source"), "capture")),
                                    pc.is_in(decisions.column("request_index"), value_set=logged)))
    if not mine.num_rows:
        return BROKER_DIFF.empty_table()
    mine = pipeline.with_name_key(mine)
    mine = mine.set_column(mine.column_names.index("kind"), "kind", pipeline.normalised_kind(mine.column("kind")))
    recorded = pipeline.with_name_key(broker).select(_QUESTION_KEYS).group_by(_QUESTION_KEYS, use_threads=False).aggregate([])
    recorded = recorded.append_column("recorded", pa.array(np.ones(recorded.num_rows, dtype=bool)))
    joined = mine.join(recorded, _QUESTION_KEYS, join_type="left outer", use_threads=False)
    only = joined.filter(pc.is_null(joined.column("recorded")))
    if not only.num_rows:
        return BROKER_DIFF.empty_table()
    only = only.group_by([f.name for f in BROKER_QUESTION] + ["name_key"], use_threads=False).aggregate(
        [("allowed_a", "first"), ("rule_a", "first")]).sort_by([(c, "ascending") for c in _QUESTION_KEYS])
    n = only.num_rows
    columns = {f.name: only.column(f.name) for f in BROKER_QUESTION}
    columns.update(difference=pa.array(["only_audit"] * n, pa.string()), broker_allowed=pa.nulls(n, pa.bool_()),
                   broker_rule=pa.nulls(n, pa.string()), audit_allowed=only.column("allowed_a_first"),
                   audit_rule=only.column("rule_a_first"))
    return pa.table([columns[f.name] for f in BROKER_DIFF], schema=BROKER_DIFF)

