"""The replay's report: a summary for stdout, and in ``--out DIR``:

- ``differences.jsonl``: one JSON object per difference: ``connection_id``, ``correlation_id``, ``api`` (name),
  ``api_key``, ``api_version``, ``path`` (``topics[0].partitions[0].error_code``; ``outcome`` when one side answered
  and the other closed; ``authentication`` when the replayer could not authenticate), ``recorded``, ``replayed``;
- ``requests.jsonl``: one object per recorded request: the same keys without the field, plus ``status``
  (identical / different / skipped) and ``reason``;
- ``report.md``: the summary by API and the differences, grouped by API and path, readable.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from kafka_shim.traces.replay.runner import DIFFERENT, IDENTICAL, SKIPPED, RowResult


def summary_lines(results: list[RowResult], header: str) -> list[str]:
    counts = Counter(r.status for r in results)
    lines = [f"{header}: {len(results)} requests, {counts[IDENTICAL]} identical, {counts[DIFFERENT]} different, "
             f"{counts[SKIPPED]} skipped"]
    by_api: dict[str, Counter[str]] = {}
    for r in results:
        by_api.setdefault(r.api, Counter())[r.status] += 1
    width = max([len("API")] + [len(a) for a in by_api])
    lines.append(f"  {'API':<{width}}  {'requests':>8}  {'identical':>9}  {'different':>9}  {'skipped':>7}")
    for api in sorted(by_api):
        c = by_api[api]
        lines.append(f"  {api:<{width}}  {sum(c.values()):>8}  {c[IDENTICAL]:>9}  {c[DIFFERENT]:>9}  {c[SKIPPED]:>7}")
    return lines


def _base(r: RowResult) -> dict:
    return {"connection_id": r.connection_id, "correlation_id": r.correlation_id, "api": r.api, "api_key": r.api_key,
            "api_version": r.api_version}


def _json(value: object) -> str:
    return json.dumps(value, default=str, sort_keys=False)


def write_report(out: Path, results: list[RowResult], header: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "differences.jsonl").open("w", encoding="utf-8") as f:
        for r in results:
            for d in r.differences:
                f.write(_json({**_base(r), "path": d.path, "recorded": d.recorded, "replayed": d.replayed}) + "\n")
    with (out / "requests.jsonl").open("w", encoding="utf-8") as f:
        for r in results:
            f.write(_json({**_base(r), "status": r.status, "reason": r.reason}) + "\n")
    md = ["# kafka-shim replay", "", "```", *summary_lines(results, header), "```", ""]
    different = [r for r in results if r.status == DIFFERENT]
    if not different:
        md.append("No differences.")
    else:
        md += ["## Differences", "", "| API | connection | correlation id | field | recorded | replayed |",
               "| --- | --- | --- | --- | --- | --- |"]
        for r in different:
            for d in r.differences:
                md.append(f"| {r.api} v{r.api_version} | `{r.connection_id}` | {r.correlation_id} | `{d.path}` | "
                          f"{_cell(d.recorded)} | {_cell(d.replayed)} |")
    skipped = Counter(r.reason for r in results if r.status == SKIPPED)
    if skipped:
        md += ["", "## Not compared", "", *[f"- {n} requests: {reason}" for reason, n in skipped.most_common()]]
    (out / "report.md").write_text("\n".join(md) + "\n", encoding="utf-8")


def _cell(value: object) -> str:
    text = value if isinstance(value, str) else _json(value)
    return text.replace("|", "\\|").replace("\n", " ")[:200]
