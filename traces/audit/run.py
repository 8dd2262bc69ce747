"""One audit from trace to ``--out DIR``: the engine's tables, the release comparison, the files, then ACL usage,
least privilege and the HTML report (``usage``, ``least_privilege``, ``report``) unless ``report`` is off."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa

from kafka_shim.authorizer import AclBinding
from kafka_shim.authorizer.library_logging import get_logger
from kafka_shim.traces.audit import results
from kafka_shim.traces.audit.decide import AuthorizerSettings
from kafka_shim.traces.audit.progress import progress_reporter

log = get_logger("kafka_shim.traces.audit")


def run_audit(trace: str | Path, acls_a: list[AclBinding], acls_b: list[AclBinding] | None, settings: AuthorizerSettings,
              out: Path, *, engine: str = "spark", master: str = "local[2]", compare_release: str | None = None,
              report: bool = True, spark: Any = None) -> dict[str, Any]:
    """Audit ``trace`` and write DIR; returns the summary (also in DIR/summary.json)."""
    if out.exists():
        from kafka_shim.traces.audit.acl_export import FOLDER
        from kafka_shim.traces.audit.report import REPORT_NAME

        # every output of an earlier audit into DIR goes, the report's too: with --no-report an old report.html would
        # otherwise stand beside results it does not describe
        for name in (*results.TABLES, "csv", results.SUMMARY, "acl_usage", FOLDER, REPORT_NAME):
            target = out / name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
    out.mkdir(parents=True, exist_ok=True)
    progress = progress_reporter()
    # decisions and flips are written unit by unit as the audit goes (by the executors on Spark); the smaller
    # tables after it
    if engine == "arrow":
        from kafka_shim.traces.audit import engine_arrow

        res = engine_arrow.run(trace, acls_a, acls_b, settings, progress, out=out, compare_release=compare_release)
    else:
        from kafka_shim.traces.audit import engine_spark

        res = engine_spark.run(trace, acls_a, acls_b, settings, out=out, master=master, progress=progress, spark=spark,
                               compare_release=compare_release)
    for name in results.TABLES:
        if name not in ("decisions", "flips"):
            results.write_table(res.table(name), out, name)
    summary = res.summary()
    summary.update({"engine": engine, "what_if": acls_b is not None, "compare_release": compare_release,
                    "acls_a": len(acls_a), "acls_b": None if acls_b is None else len(acls_b)})
    if report:
        _report(res.actions, acls_a, settings, out, summary)
    results.write_summary(summary, out)
    log.info("audit_done", out=str(out), **{k: v for k, v in summary.items() if not isinstance(v, dict)})
    return summary


def _report(actions: pa.Table, acls: list[AclBinding], settings: AuthorizerSettings, out: Path, summary: dict) -> None:
    """ACL usage, least privilege and report.html (imported here: an audit run with --no-report never loads them)."""
    from kafka_shim.traces.audit import acl_export, report, usage
    from kafka_shim.traces.audit import least_privilege as least

    table = usage.acl_usage(actions, acls, super_users=settings.super_users,
                            allow_everyone_if_no_acl=settings.allow_everyone_if_no_acl_found)
    results.write_table(table, out, "acl_usage")
    bindings = least.least_privilege(actions, acls, super_users=settings.super_users)
    acl_export.write_least_privilege(bindings, out)
    summary["report"] = str(report.write_report(out))
