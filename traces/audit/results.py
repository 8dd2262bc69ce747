"""An audit's result tables and how they are written to ``--out DIR`` (the layout ``traces/AUDIT.md`` documents)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

# The tables, in the order they are written; each goes to DIR/<name>/ (Parquet) and DIR/csv/<name>/ (CSV).
TABLES = ("decisions", "flips", "actions", "broker_diff", "release_diff", "problems")
SUMMARY = "summary.json"


@dataclass
class AuditResults:
    decisions: pa.Table
    flips: pa.Table
    actions: pa.Table
    broker_diff: pa.Table
    problems: pa.Table
    broker_rows: int
    release_diff: pa.Table | None = None

    def table(self, name: str) -> pa.Table:
        return getattr(self, name)

    def summary(self) -> dict[str, Any]:
        d = self.decisions
        flips = self.flips
        return {
            "requests_audited": len(pc.unique(d.column("request_index"))) if d.num_rows else 0,
            "decisions": d.num_rows,
            "actions": self.actions.num_rows,
            "asked_a": int(pc.sum(pc.fill_null(d.column("asked_a"), False)).as_py() or 0),
            "denied_a": int(pc.sum(pc.and_(d.column("asked_a"), pc.invert(pc.fill_null(d.column("allowed_a"), True)))).as_py() or 0),
            "unresolved": int(pc.sum(pc.is_null(d.column("allowed_a"))).as_py() or 0),
            "flips": flips.num_rows,
            "flips_hard": int(pc.sum(pc.equal(flips.column("severity"), "hard")).as_py() or 0) if flips.num_rows else 0,
            "broker_decisions": self.broker_rows,
            "broker_differences": self.broker_diff.num_rows,
            "broker_super_users": self.broker_super_users(),
            "release_differences": self.release_diff.num_rows if self.release_diff is not None else 0,
            "problems": problem_counts(self.problems),
        }


    def broker_super_users(self) -> list[str]:
        """Principals the broker decided as super users where the audit differs: most likely --super-users left out."""
        rows = self.broker_diff.select(["principal", "broker_rule"]).to_pylist()
        return sorted({r["principal"] for r in rows if r["broker_rule"] == "SuperUser" and r["principal"] is not None})


def problem_counts(problems: pa.Table) -> dict[str, int]:
    if problems.num_rows == 0:
        return {}
    counted = problems.group_by("problem").aggregate([("problem", "count")])
    return dict(zip(counted.column("problem").to_pylist(), counted.column("problem_count").to_pylist(), strict=True))


# Rows the CSV writer formats at a time (bench/csv_batches.py). Small batches pay per-batch work (its default,
# 1,024, costs 1.1-1.2x the CPU of 8,192); past ~8k rows a decisions batch's text (~3.5 MB) outgrows the CPU's cache
# while the writer puts its rows together, and 65,536 rows cost 1.4-1.55x the CPU of 8,192.
CSV_WRITE_OPTIONS = pacsv.WriteOptions(batch_size=8_192)


def _utc_text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """UTC timestamps as the CSV writer would print them (``2026-11-18 11:06:40.000000Z``): Arrow formats a zoned
    timestamp through the time-zone database, ~9x slower than the naive UTC value plus the ``Z``."""
    naive = pc.cast(column.cast(pa.timestamp(column.type.unit)), pa.string())
    return pc.binary_join_element_wise(naive, pa.scalar("Z"), "")


def _zoned(field: pa.Field) -> bool:
    return pa.types.is_timestamp(field.type) and field.type.tz in ("UTC", "+00:00")


def csv_schema(schema: pa.Schema) -> pa.Schema:
    """The schema of ``csv_view``'s tables."""
    return pa.schema([pa.field(f.name, pa.string(), f.nullable) if _zoned(f) else f for f in schema])


def csv_view(table: pa.Table) -> pa.Table:
    """``table`` with its UTC timestamps as text, for the CSV writer."""
    for i, f in enumerate(table.schema):
        if _zoned(f):
            table = table.set_column(i, pa.field(f.name, pa.string(), f.nullable), _utc_text(table.column(i)))
    return table


# Columns that hold a new value on almost every row: Parquet would build a dictionary of them only to drop it once
# it outgrows a page (a seventh of the time spent writing the decisions went there).
_ROW_UNIQUE = frozenset({"request_index", "time", "correlation_id"})


def parquet_options(schema: pa.Schema) -> dict[str, Any]:
    """Options of the Parquet writer for a result table: dictionary encoding where values repeat, and min/max
    statistics only on columns that are not text.

    Rows are in request order, so a row group's text columns (principals, names, rules) span nearly every value and
    their min/max prune nothing; comparing them row by row was a fifth of the time spent writing the decisions.
    Times and indexes rise with the rows and keep theirs.
    """
    if any(pa.types.is_nested(f.type) for f in schema):
        return {}
    return {"use_dictionary": [f.name for f in schema if f.name not in _ROW_UNIQUE],
            "write_statistics": [f.name for f in schema if not (pa.types.is_string(f.type) or pa.types.is_large_string(f.type))]}


def write_parquet(table: pa.Table, path: Path) -> None:
    pq.write_table(table, path, **parquet_options(table.schema))


def write_csv(table: pa.Table, path: Path) -> None:
    pacsv.write_csv(csv_view(table), path, CSV_WRITE_OPTIONS)


def write_table(table: pa.Table, out_dir: Path, name: str) -> None:
    """DIR/name/part-00000.parquet and DIR/csv/name/part-00000.csv (Spark writes several parts in the same places)."""
    parquet_dir, csv_dir = out_dir / name, out_dir / "csv" / name
    parquet_dir.mkdir(parents=True, exist_ok=True)
    csv_dir.mkdir(parents=True, exist_ok=True)
    write_parquet(table, parquet_dir / "part-00000.parquet")
    write_csv(table, csv_dir / "part-00000.csv")


def write_summary(summary: dict[str, Any], out_dir: Path) -> Path:
    path = out_dir / SUMMARY
    path.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def read_table(out_dir: str | Path, name: str) -> pa.Table:
    """A result table back from DIR (either engine's parts)."""
    return pq.read_table(Path(out_dir) / name)
