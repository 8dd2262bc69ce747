"""The audit's steps as functions on pyarrow tables, shared by both engines (``engine_arrow`` runs them in one
process; ``engine_spark`` runs the per-batch ones inside executors with ``mapInArrow`` and the joins in Spark).

1. ``plan_units``: the trace's Parquet files split into row groups (damaged files go to the problems);
   ``request_index`` = (file number << 32) + the row's number in its file, the same in both engines.
2. ``explode_unit`` / ``broker_unit``: questions per request (``questions.py``) and the broker's own answers.
3. actions: the distinct (principal, host, operation, resource_type, resource_name, kind), decided once each
   under A and B (``decide.Decider``).
4. ``finish``: per request, which questions the broker asks under A and B (``decide.flow``), and the flips.
5. ``broker_differences``: the broker's answers against the audit's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_shim.traces.audit import decide, questions
from kafka_shim.traces.audit.tables import (
    ACTION_KEY,
    ACTIONS,
    BROKER_DIFF,
    DECISIONS,
    FLIPS,
    KIND_AUTHORIZE,
    KIND_AUTHORIZED_OPERATIONS,
    KIND_SHORTCUT,
    PROBLEMS,
    SEVERITY_HARD,
    SEVERITY_SOFT,
)
from kafka_shim.traces.format import TraceError, check_version, trace_files

NULL_NAME = "\x00<none>"  # join key stand-in for a null resource name (joins never match nulls)
ROW_BITS = 32


@dataclass(frozen=True, slots=True)
class Unit:
    """One row group of one trace file: the unit of work of both engines."""

    path: str
    file_no: int
    row_group: int
    first_row: int


UNIT_SCHEMA = pa.schema([pa.field("path", pa.string()), pa.field("file_no", pa.int64()),
                         pa.field("row_group", pa.int32()), pa.field("first_row", pa.int64())])


def plan_units(trace: str | Path) -> tuple[list[Unit], list[dict]]:
    """Row groups of every readable file, and one problem row per file that cannot be read (truncated, not Parquet,
    a newer schema), so an audit over a damaged trace says what it skipped."""
    units: list[Unit] = []
    problems: list[dict] = []
    for file_no, path in enumerate(trace_files(trace)):
        try:
            meta = pq.ParquetFile(path).metadata
            check_version(path, meta.metadata)
        except (TraceError, OSError, pa.ArrowException) as exc:
            detail = str(exc) if isinstance(exc, TraceError) else f"{path}: not a readable Parquet file ({exc})"
            problems.append({"request_index": None, "time": None, "api_key": None, "api_version": None,
                             "problem": "unreadable_file", "detail": detail})
            continue
        first = 0
        for rg in range(meta.num_row_groups):
            units.append(Unit(str(path), file_no, rg, first))
            first += meta.row_group(rg).num_rows
    return units, problems


def read_unit(unit: Unit, columns: tuple[str, ...]) -> pa.RecordBatch:
    pf = pq.ParquetFile(unit.path)
    wanted = [c for c in columns if c in pf.schema_arrow.names]
    table = pf.read_row_group(unit.row_group, columns=wanted)
    index = pa.array(range((unit.file_no << ROW_BITS) + unit.first_row, (unit.file_no << ROW_BITS) + unit.first_row + table.num_rows),
                     pa.int64())
    table = table.append_column("request_index", index)
    batches = table.combine_chunks().to_batches()
    return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=table.schema)


def explode_unit(unit: Unit) -> pa.RecordBatch:
    return questions.explode(read_unit(unit, questions.TRACE_COLUMNS))


_BROKER_COLUMNS = ("kind", "time", "principal", "client_host", "api_key", "correlation_id", "decisions")


def broker_unit(unit: Unit) -> pa.RecordBatch:
    return questions.broker_rows(read_unit(unit, _BROKER_COLUMNS))


def with_name_key(table: pa.Table) -> pa.Table:
    return table.append_column("name_key", pc.fill_null(table.column("resource_name"), NULL_NAME))


def problems_of(question_table: pa.Table) -> pa.Table:
    rows = question_table.filter(pc.is_valid(question_table.column("problem")))
    return rows.select([f.name for f in PROBLEMS]).cast(PROBLEMS)


def action_rows(question_table: pa.Table) -> pa.Table:
    """The distinct actions with their request counts and times (no answers yet)."""
    keyed = question_table.select([*ACTION_KEY, "time", "hard"])
    keyed = with_name_key(keyed)
    grouped = keyed.group_by(["principal", "host", "operation", "resource_type", "name_key", "kind"]).aggregate(
        [("time", "count"), ("time", "min"), ("time", "max"), ("hard", "any")])
    grouped = grouped.rename_columns(_renames(grouped.column_names))
    names = pc.if_else(pc.equal(grouped.column("name_key"), NULL_NAME), pa.scalar(None, pa.string()), grouped.column("name_key"))
    return grouped.append_column("resource_name", names)


def _renames(names: list[str]) -> list[str]:
    mapping = {"time_count": "requests", "time_min": "first_time", "time_max": "last_time", "hard_any": "hard"}
    return [mapping.get(n, n) for n in names]


def sort_actions(actions: pa.Table) -> pa.Table:
    return actions.sort_by([(c, "ascending") for c in ("principal", "host", "resource_type", "name_key", "operation", "kind")])


def finish(decisions: pa.Table, what_if: bool) -> pa.Table:
    """Decisions (sorted by request_index, seq, with allowed_/rule_/acl_ a and b) with asked_a/asked_b and the flip
    columns (direction, severity, effect: null where nothing flips)."""
    states_a = decide.request_states(decisions, "a")
    states_b = decide.request_states(decisions, "b") if what_if else [None] * decisions.num_rows
    allowed_a, allowed_b = decisions.column("allowed_a").to_pylist(), decisions.column("allowed_b").to_pylist()
    kinds, hard = decisions.column("kind").to_pylist(), decisions.column("hard").to_pylist()
    modes, names = decisions.column("mode").to_pylist(), decisions.column("request_name").to_pylist()
    ops, rtypes, rnames = (decisions.column(c).to_pylist() for c in ("operation", "resource_type", "resource_name"))
    codes, errors = decisions.column("error_code").to_pylist(), decisions.column("error").to_pylist()
    direction: list[str | None] = []
    severity: list[str | None] = []
    effect: list[str | None] = []
    for i in range(decisions.num_rows):
        a = decide.effective(states_a[i], allowed_a[i])
        b = decide.effective(states_b[i], allowed_b[i]) if what_if else None
        if not what_if or kinds[i] == KIND_SHORTCUT or a is None or b is None or a == b:
            direction.append(None)
            severity.append(None)
            effect.append(None)
            continue
        direction.append("allow_to_deny" if a else "deny_to_allow")
        severity.append(SEVERITY_HARD if hard[i] else SEVERITY_SOFT)
        effect.append(effect_text(names[i], modes[i], kinds[i], ops[i], rtypes[i], rnames[i], codes[i], errors[i], allowed=b))
    out = decisions.append_column("asked_a_", pa.array([s == decide.ASKED for s in states_a], pa.bool_()))
    out = out.append_column("asked_b_", pa.array([None if s is None else s == decide.ASKED for s in states_b], pa.bool_()))
    out = out.append_column("direction", pa.array(direction, pa.string()))
    out = out.append_column("severity", pa.array(severity, pa.string()))
    return out.append_column("effect", pa.array(effect, pa.string()))


def effect_text(request: str, mode: str, kind: str, op: str, rtype: str, name: str | None, code: int | None,
                error: str | None, allowed: bool) -> str:
    """What the client sees under B for one flipped question."""
    what = f"{rtype} {name}" if name is not None else f"any {rtype}"
    if kind == KIND_AUTHORIZED_OPERATIONS:
        return f"{request}: the {op} bit of {what}'s authorized operations is {'set' if allowed else 'cleared'}"
    if allowed:
        return f"{request}: {op} on {what} is now allowed"
    if mode in ("authorize-or-throw", "filter-with-error"):
        scope = "the whole request fails" if mode == "authorize-or-throw" else f"{what} fails"
        return f"{request}: {error} ({code}) — {scope}"
    if mode == "silent-filter":
        return f"{request}: {what} is left out of the answer (no error)"
    return f"{request}: {what}'s authorized operations become 0 (no {op} on it)"


def split_finished(finished: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(decisions, flips) from ``finish``'s output."""
    renamed = finished.drop_columns(["asked_a", "asked_b"]) if "asked_a" in finished.column_names else finished
    renamed = renamed.rename_columns([{"asked_a_": "asked_a", "asked_b_": "asked_b"}.get(n, n) for n in renamed.column_names])
    decisions = renamed.select([f.name for f in DECISIONS]).cast(DECISIONS)
    flips = renamed.filter(pc.is_valid(renamed.column("direction"))).select([f.name for f in FLIPS]).cast(FLIPS)
    return decisions, flips


def normalised_kind(kind: pa.ChunkedArray) -> pa.ChunkedArray:
    """The broker records a shortcut as the plain authorize it is."""
    return pc.if_else(pc.equal(kind, KIND_SHORTCUT), KIND_AUTHORIZE, kind)


def broker_differences(broker: pa.Table) -> pa.Table:
    """BROKER_DIFF rows from broker rows carrying ``audit_allowed``/``audit_rule`` (the audit's answer to the same
    question under A) and ``matched`` (the audit asks that question for that request)."""
    allowed, audit_allowed, matched = (broker.column(c).to_pylist() for c in ("allowed", "audit_allowed", "matched"))
    difference = []
    for b, a, m in zip(allowed, audit_allowed, matched, strict=True):
        if not m:
            difference.append("only_broker")
        elif b != a:
            difference.append("decision")
        else:
            difference.append(None)
    out = broker.append_column("difference", pa.array(difference, pa.string()))
    out = out.filter(pc.is_valid(out.column("difference")))
    out = out.rename_columns([{"allowed": "broker_allowed", "rule": "broker_rule"}.get(n, n) for n in out.column_names])
    return out.select([f.name for f in BROKER_DIFF]).cast(BROKER_DIFF)


def empty_actions() -> pa.Table:
    return ACTIONS.empty_table()
