"""Comparing two audit output directories table by table (row order aside: Spark writes parts in any order)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from kafka_shim.traces.audit.results import read_table
from kafka_shim.traces.audit.tables import ACTIONS, BROKER_DIFF, DECISIONS, FLIPS, PROBLEMS, RELEASE_DIFF

SCHEMAS = {"decisions": DECISIONS, "flips": FLIPS, "actions": ACTIONS, "broker_diff": BROKER_DIFF, "problems": PROBLEMS,
           "release_diff": RELEASE_DIFF}


def canonical(out: Path, name: str) -> pa.Table:
    table = read_table(out, name).cast(SCHEMAS[name])
    return table.sort_by([(c, "ascending") for c in table.column_names if not pa.types.is_boolean(table.schema.field(c).type)])


def differences(a: Path, b: Path) -> list[str]:
    found = []
    for name in SCHEMAS:
        ta, tb = canonical(a, name), canonical(b, name)
        if not ta.equals(tb):
            found.append(f"{name}: {ta.num_rows} rows vs {tb.num_rows}")
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (a, b))
    for key in ("requests_audited", "decisions", "actions", "denied_a", "unresolved", "flips", "flips_hard",
                "broker_decisions", "broker_differences", "release_differences", "problems"):
        if sa[key] != sb[key]:
            found.append(f"summary {key}: {sa[key]} vs {sb[key]}")
    return found
