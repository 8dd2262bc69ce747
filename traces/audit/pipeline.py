"""The audit's steps as functions on pyarrow tables, shared by both engines (``engine_arrow`` runs them in one
process; ``engine_spark`` runs the per-batch ones inside executors with ``mapInArrow`` and the joins in Spark).

1. ``plan_units``: the trace's Parquet files split into row groups (damaged files go to the problems);
   ``request_index`` = (file number << 32) + the row's number in its file, the same in both engines.
2. ``explode_unit``: questions per request (``questions.py``) and the broker's own answers.
3. actions: the distinct (principal, host, operation, resource_type, resource_name, kind), decided once each
   under A and B (``decide.Decider``).
4. ``finish``: per request, which questions the broker asks under A and B (``decide.flow``), and the flips.
5. ``broker_differences``: the broker's answers against the audit's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_shim.authorizer.api_checks import DECLARATIONS
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
    table = pf.read_row_group(unit.row_group, columns=wanted, use_threads=False)
    start = (unit.file_no << ROW_BITS) + unit.first_row
    index = pa.array(np.arange(start, start + table.num_rows, dtype=np.int64))
    table = table.append_column("request_index", index)
    batches = table.combine_chunks().to_batches()
    return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=table.schema)


def explode_unit(unit: Unit) -> tuple[pa.RecordBatch, pa.RecordBatch]:
    """(question rows, the broker's own answers) of one row group, read once: the broker's columns are among the
    questions' (reading the row group a second time for them cost a tenth of the audit)."""
    rows = read_unit(unit, questions.TRACE_COLUMNS)
    return questions.explode(rows, answers=lambda: read_unit(unit, ("response", "response_json"))), questions.broker_rows(rows)


def with_name_key(table: pa.Table) -> pa.Table:
    return table.append_column("name_key", pc.fill_null(table.column("resource_name"), NULL_NAME))


def problems_of(question_table: pa.Table) -> pa.Table:
    rows = question_table.filter(pc.is_valid(question_table.column("problem")))
    return rows.select([f.name for f in PROBLEMS]).cast(PROBLEMS)


def action_rows(question_table: pa.Table) -> pa.Table:
    """The distinct actions with their request counts and times (no answers yet)."""
    keyed = question_table.select([*ACTION_KEY, "time", "hard"])
    keyed = with_name_key(keyed)
    grouped = keyed.group_by(["principal", "host", "operation", "resource_type", "name_key", "kind"], use_threads=False).aggregate(
        [("time", "count"), ("time", "min"), ("time", "max"), ("hard", "any")])
    grouped = grouped.rename_columns(_renames(grouped.column_names))
    names = pc.if_else(pc.equal(grouped.column("name_key"), NULL_NAME), pa.scalar(None, pa.string()), grouped.column("name_key"))
    return grouped.append_column("resource_name", names)


def _renames(names: list[str]) -> list[str]:
    mapping = {"time_count": "requests", "time_min": "first_time", "time_max": "last_time", "hard_any": "hard"}
    return [mapping.get(n, n) for n in names]


def sort_actions(actions: pa.Table) -> pa.Table:
    return actions.sort_by([(c, "ascending") for c in ("principal", "host", "resource_type", "name_key", "operation", "kind")])


def _effective(states: pa.Array, allowed: pa.ChunkedArray) -> pa.Array:
    """decide.effective for whole columns: asked is the answer, covered granted, gated a 0 bit, ended nothing."""
    null = pa.scalar(None, pa.bool_())
    return pc.if_else(pc.equal(states, decide.ASKED), allowed,
                      pc.if_else(pc.equal(states, decide.COVERED), True, pc.if_else(pc.equal(states, decide.GATED), False, null)))


def finish(decisions: pa.Table, what_if: bool) -> pa.Table:
    """Decisions (whole requests, with allowed_/rule_/acl_ a and b) with asked_a/asked_b and the flip columns
    (direction, severity, effect: null where nothing flips)."""
    n = decisions.num_rows
    states_a = decide.request_states(decisions, "a")
    out = decisions.append_column("asked_a_", pc.equal(states_a, decide.ASKED))
    if not what_if:
        out = out.append_column("asked_b_", pa.nulls(n, pa.bool_()))
        for name in ("direction", "severity", "effect"):
            out = out.append_column(name, pa.nulls(n, pa.string()))
        return out
    states_b = decide.request_states(decisions, "b")
    a, b = _effective(states_a, decisions.column("allowed_a")), _effective(states_b, decisions.column("allowed_b"))
    flipped = pc.fill_null(pc.and_(pc.invert(pc.equal(decisions.column("kind"), KIND_SHORTCUT)), pc.not_equal(a, b)), False)
    rows = np.nonzero(flipped.to_numpy(zero_copy_only=False))[0]
    direction, severity, effect = _flip_columns(decisions, b, rows)
    out = out.append_column("asked_b_", pc.equal(states_b, decide.ASKED))
    out = out.append_column("direction", direction)
    out = out.append_column("severity", severity)
    return out.append_column("effect", effect)


_EFFECT_INPUTS = ("request_name", "mode", "kind", "operation", "resource_type", "resource_name", "error_code", "error",
                  "api_key", "check")


def _flip_columns(decisions: pa.Table, allowed_b: pa.Array, rows: np.ndarray) -> tuple[pa.Array, pa.Array, pa.Array]:
    """direction, severity and effect for the flipped ``rows`` (null elsewhere). A what-if that takes a grant away
    flips many rows of the same few kinds, so each distinct effect is written once."""
    n = decisions.num_rows
    picked_rows = pa.array(rows, pa.int64())
    now_allowed = pc.fill_null(allowed_b.take(picked_rows), False)
    hard = pc.fill_null(decisions.column("hard").take(picked_rows), False)
    direction = pc.if_else(now_allowed, "deny_to_allow", "allow_to_deny")
    severity = pc.if_else(hard, SEVERITY_HARD, SEVERITY_SOFT)
    inputs = [decisions.column(c).take(picked_rows).to_pylist() for c in _EFFECT_INPUTS]
    texts: dict[tuple, str] = {}
    effects = []
    for key in zip(*inputs, now_allowed.to_pylist(), strict=True):
        text = texts.get(key)
        if text is None:
            text = texts[key] = effect_text(*key[:-1], allowed=key[-1])
        effects.append(text)
    # Every row's position among the flipped ones, null where nothing flips: one take puts each value in place.
    position = np.full(n, -1, dtype=np.int64)
    position[rows] = np.arange(len(rows), dtype=np.int64)
    placed = pa.array(position, mask=position < 0)
    return (direction.take(placed), severity.take(placed), pa.array(effects, pa.string()).take(placed))


def effect_text(request: str, mode: str, kind: str, op: str, rtype: str, name: str | None, code: int | None,
                error: str | None, api_key: int | None, check: str | None, allowed: bool) -> str:
    """What the client sees under B for one flipped question (a GATE check's denial: as its declaration notes it)."""
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
    note = _gate_note(api_key, check)
    if note:
        return f"{request}: {what}: {note}"
    return f"{request}: {what}'s authorized operations become 0 (no {op} on it)"


def _gate_note(api_key: int | None, check: str | None) -> str:
    declaration = DECLARATIONS.get(api_key) if api_key is not None else None
    found = [c.note for c in declaration.checks if c.key == check] if declaration is not None else []
    return found[0] if found else ""


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
