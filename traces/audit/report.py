"""The audit's ``report.html``: one self-contained page over the Parquet results of ``kafka-shim audit --out DIR``.

Kafka has no counterpart. ``write_report(out_dir)`` reads what the audit wrote there (tables.py's schemas):
``decisions/`` (one row per request and check), ``flips/`` (with ``--what-if``), ``acl_usage/`` (usage.py) and
``least_privilege/acls.yaml`` (acl_export.py); a part that is missing is shown as empty, never an error. It writes
``out_dir/report.html``: charts of the decisions per minute (allowed/denied under A), flips by principal and by API
(hard/soft), ACLs per usage class and the ACLs that decided the most requests, and tables of flips, ACL usage and the
least-privilege set.

The page needs nothing but a browser, offline: the CSS, the numbers (one JSON document) and a small vanilla
JavaScript renderer (report_assets/report.js) are inlined; it draws inline SVG, every bar a ``rect.bar`` with
``data-series``/``data-label``/``data-value``; a Content-Security-Policy forbids any network fetch. Names from
the trace reach the page only as JSON text and DOM ``textContent``, never as markup.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter, defaultdict
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from kafka_shim.authorizer.library_logging import get_logger
from kafka_shim.traces.audit.acl_export import FOLDER
from kafka_shim.traces.audit.usage import USAGE_CLASSES

log = get_logger("kafka_shim.traces.audit.report")
REPORT_NAME = "report.html"
_PLACEHOLDER = re.compile(r"/\*([A-Z_]+)\*/|<!--([A-Z_]+)-->")
TOP_ACLS = 15  # bars in "top ACLs by requests decided"
TOP_FLIP_GROUPS = 25  # principals / APIs drawn in the flip charts (the rest are in the table)
TABLE_ROWS = 1000  # rows of each HTML table; the Parquet results hold them all


def read_results(path: Path, problems: list[str] | None = None) -> pa.Table | None:
    """The Parquet files under ``path`` (a file, or a folder as Spark and pyarrow write them) as one table; None when
    there are none. A file that cannot be read is left out, logged and named in ``problems``: the page still shows
    the rest."""
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(p for p in path.rglob("*.parquet") if not p.name.startswith((".", "_")))
    else:
        return None
    tables = []
    for f in files:
        try:
            tables.append(pq.read_table(f))
        except (OSError, pa.ArrowException) as exc:
            log.warning("report_input_unreadable", file=str(f), error=str(exc),
                        hint="re-run the audit to write this result again; the report leaves it out")
            if problems is not None:
                problems.append(f"{f.relative_to(path.parent)}: unreadable, left out ({exc})")
    return pa.concat_tables(tables, promote_options="default") if tables else None


def _col(table: pa.Table | None, name: str) -> list:
    return table.column(name).to_pylist() if table is not None and name in table.column_names else []


def timeline(decisions: pa.Table | None) -> list[dict[str, Any]]:
    """Questions per minute under A, allowed and denied (questions a shortcut made unnecessary are left out)."""
    if decisions is None or decisions.num_rows == 0 or "time" not in decisions.column_names:
        return []
    table = decisions
    if "asked_a" in table.column_names:
        table = table.filter(pc.fill_null(table.column("asked_a"), True))
    minutes = pc.floor_temporal(table.column("time"), unit="minute").to_pylist()
    counts: dict[datetime, Counter] = defaultdict(Counter)
    for minute, allowed in zip(minutes, _col(table, "allowed_a"), strict=True):
        if minute is not None and allowed is not None:
            counts[minute]["allowed" if allowed else "denied"] += 1
    return [{"label": minute.strftime("%Y-%m-%d %H:%M"), "allowed": c["allowed"], "denied": c["denied"]}
            for minute, c in sorted(counts.items())]


def flips_by(flips: pa.Table | None, column: str) -> list[dict[str, Any]]:
    """Flips per value of ``column`` (principal, request_name), hard and soft, most first."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for value, severity in zip(_col(flips, column), _col(flips, "severity"), strict=True):
        counts[value if value is not None else "(none)"][severity or "hard"] += 1
    ranked = sorted(counts.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))[:TOP_FLIP_GROUPS]
    return [{"label": label, "hard": c["hard"], "soft": c["soft"]} for label, c in ranked]


def usage_classes(usage: pa.Table | None) -> list[dict[str, Any]]:
    counts = Counter(_col(usage, "usage_class"))
    return [{"label": name, "value": counts[name]} for name in USAGE_CLASSES if counts[name]]


def top_acls(usage: pa.Table | None) -> list[dict[str, Any]]:
    pairs = [(k, v) for k, v in zip(_col(usage, "acl"), _col(usage, "decided_requests"), strict=True) if v]
    return [{"label": k, "value": v} for k, v in sorted(pairs, key=lambda kv: (-kv[1], kv[0]))[:TOP_ACLS]]


def _rows(table: pa.Table | None, columns: list[str], sort: str | None = None) -> dict[str, Any]:
    if table is None or table.num_rows == 0:
        return {"columns": columns, "rows": []}
    if sort and sort in table.column_names:
        table = table.sort_by([(sort, "descending")])
    table = table.slice(0, TABLE_ROWS)
    present = [c for c in columns if c in table.column_names]
    data = [[_plain(v) for v in table.column(c).to_pylist()] for c in present]
    return {"columns": present, "rows": [list(r) for r in zip(*data, strict=True)]}


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    return value


def _least_privilege_rows(folder: Path) -> dict[str, Any]:
    columns = ["resource_type", "resource_name", "pattern_type", "principal", "host", "operations", "permission"]
    path = folder / "acls.yaml"
    if not path.is_file():
        return {"columns": columns, "rows": []}
    entries = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("acls") or []
    return {"columns": columns, "rows": [[e.get("resource_type"), e.get("resource_name", "kafka-cluster"),
                                          e.get("pattern_type"), e.get("principal"), e.get("host"),
                                          ", ".join(e.get("operations", [])), e.get("permission")] for e in entries]}


def report_data(out_dir: Path) -> dict[str, Any]:
    """The numbers the page shows, as one JSON-able document (what report.js draws)."""
    problems: list[str] = []
    decisions = read_results(out_dir / "decisions", problems)
    flips = read_results(out_dir / "flips", problems)
    usage = read_results(out_dir / "acl_usage", problems)
    lines = timeline(decisions)
    severities = Counter(_col(flips, "severity"))
    return {
        "cards": {
            "questions asked under A": sum(r["allowed"] + r["denied"] for r in lines),
            "denied under A": sum(r["denied"] for r in lines),
            "hard flips": severities["hard"], "soft flips": severities["soft"],
            "ACLs in A": usage.num_rows if usage is not None else 0,
            "ACLs never used": sum(1 for used in _col(usage, "used") if not used),
        },
        "what_if": flips is not None,
        "problems": problems,
        "charts": {
            "timeline": {"type": "columns", "series": ["allowed", "denied"], "rows": lines},
            "flips_by_principal": {"type": "bars", "series": ["hard", "soft"], "rows": flips_by(flips, "principal")},
            "flips_by_api": {"type": "bars", "series": ["hard", "soft"], "rows": flips_by(flips, "request_name")},
            "usage_classes": {"type": "bars", "series": ["value"], "rows": usage_classes(usage)},
            "top_acls": {"type": "bars", "series": ["value"], "rows": top_acls(usage)},
        },
        "tables": {
            "flips": _rows(flips, ["time", "principal", "host", "request_name", "operation", "resource_type",
                                   "resource_name", "direction", "severity", "effect"]),
            "usage": _rows(usage, ["acl", "usage_class", "decided_requests", "allowed_requests", "sole_requests"],
                           sort="decided_requests"),
            "least_privilege": _least_privilege_rows(out_dir / FOLDER),
        },
    }


def _asset(name: str) -> str:
    return resources.files("kafka_shim.traces.audit").joinpath("report_assets", name).read_text(encoding="utf-8")


def _script_safe(text: str) -> str:
    # inside <script>, only "</" can end the element early; JSON allows "<\/" for it
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def write_report(out_dir: str | Path) -> Path:
    """Write ``out_dir/report.html`` from the results in ``out_dir``; its path."""
    out = Path(out_dir)
    data = report_data(out)
    cards = "".join(f'<div class="card"><b>{value}</b>{html.escape(label)}</div>'
                    for label, value in data["cards"].items())
    flips_note = ("Requests whose outcome differs between ACL set A and the --what-if set B: hard (an error the "
                  "client sees) and soft (less in an answer, another authorized-operations bit)."
                  if data["what_if"] else "Run the audit with --what-if B to see what a change of ACLs breaks.")
    lp_rows = len(data["tables"]["least_privilege"]["rows"])
    lp_note = (f"{lp_rows} entries of the smallest ACL set that allows what A allowed and nothing it denied "
               "(least_privilege/: kafka-acls.sh commands, --acls YAML, Strimzi KafkaUser, Terraform kafka_acl).")
    problems = "".join(f'<p class="problem">{html.escape(p)}</p>' for p in data["problems"])
    parts = {"CSS": _asset("report.css"), "SUBTITLE": html.escape(f"Results in {out.resolve()}"), "CARDS": cards,
             "PROBLEMS": problems,
             "FLIPS_NOTE": html.escape(flips_note), "LP_NOTE": html.escape(lp_note),
             "DATA": _script_safe(json.dumps(data, ensure_ascii=False)), "JS": _script_safe(_asset("report.js"))}
    # one pass over the template, so nothing from the trace is ever read as a placeholder
    page = _PLACEHOLDER.sub(lambda m: parts[m.group(1) or m.group(2)], _asset("report.html"))
    path = out / REPORT_NAME
    path.write_text(page, encoding="utf-8")
    return path
