"""``kafka-shim import SOURCE FILE... --out TRACE``: Kafka's logs (and packet captures) turned into a trace.

Sources are a table (``SOURCES``): a name, the module that reads it and a line of help. A source module exposes
``add_arguments(parser)`` for its own options, ``import_rows(args, context) -> Iterator[row dict]`` (each row a
dict of trace columns, traces/FORMAT.md; ``args.files`` the existing files, ``context.report`` to count lines, rows
and problems into, ``context.progress.advance(n_bytes, what)``, ``context.extra`` for figures of its own), and
optionally ``FILES_HELP``. This command does the rest for every source: files (plain, gzip'd,
rotated), the progress display, writing day partitions with the source in the files' metadata, and the summary.

Bad input never stops an import: every line that cannot be read is counted, the first examples (file, line,
reason) are printed on stderr, and the summary (also written as ``TRACE/_import-summary-<UTC time>.json``, a name
Spark and pyarrow skip) lists them. Exit code 0 when rows were imported (with warnings or not), 1 when nothing
could be read, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_shim.traces.importers.logfiles import Progress, Report, log, timezone
from kafka_shim.traces.importers.writer import TraceWriter

# name -> (module, help). Adding a source is one line here and a module with add_arguments / import_rows.
SOURCES: dict[str, tuple[str, str]] = {
    "request-log": ("kafka_shim.traces.importers.request_log",
                    "Kafka's request log (kafka.request.logger at DEBUG: 'Completed request:{json}' lines)"),
    "authorizer-log": ("kafka_shim.traces.importers.authorizer_log",
                       "Kafka's authorizer log (kafka.authorizer.logger: 'Principal = ... is Allowed|Denied ...')"),
    "pcap": ("kafka_shim.traces.importers.pcap_cli",
             "packet captures (pcap, pcapng): Kafka connections found by their frames on any port"),
}

SUMMARY_PREFIX = "_import-summary-"
# A source module may say what its files are with its own FILES_HELP.
FILES_HELP = "log files: plain, gzip'd or rotated (kafka-request.log.2026-11-23-17)"


@dataclass
class ImportContext:
    """What a source gets besides its arguments: the report to count into and the progress display."""

    report: Report
    progress: Progress
    zone: datetime.tzinfo
    extra: dict[str, Any] = field(default_factory=dict)  # a source's own figures for the summary

    @staticmethod
    def total_bytes(paths: list[Path]) -> int:
        return sum(p.stat().st_size for p in paths if p.is_file())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-shim import", description="Turn Kafka's logs or a packet capture into a trace (traces/FORMAT.md).")
    sub = parser.add_subparsers(dest="source", required=True, metavar="SOURCE")
    for name, (module_name, help_text) in SOURCES.items():
        module = _source_module(module_name)
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("files", nargs="+", type=Path, metavar="FILE", help=getattr(module, "FILES_HELP", FILES_HELP))
        p.add_argument("--out", required=True, type=Path, metavar="TRACE", help="the trace directory to write (day=YYYY-MM-DD/ partitions)")
        p.add_argument("--timezone", default="UTC", help="the broker's time zone, for log timestamps without one (default UTC): an IANA name or +HH:MM")
        p.add_argument("--quiet", action="store_true", help="no progress display and no bad-line examples on stderr (the summary file still has them)")
        p.set_defaults(module_name=module_name)
        module.add_arguments(p)
    return parser


def _source_module(module_name: str) -> Any:
    return importlib.import_module(module_name)


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        zone = timezone(args.timezone)
    except ValueError as exc:
        parser.error(str(exc))
    missing = [str(p) for p in args.files if not p.is_file()]
    report = Report()
    for path in missing:
        report.bad(Path(path), 0, "no such file", "no_such_file")
    files = [p for p in args.files if p.is_file()]
    progress = Progress(0 if args.quiet else ImportContext.total_bytes(files))
    if args.quiet:
        progress.advance = lambda n, what: None  # type: ignore[method-assign]
    context = ImportContext(report, progress, zone)
    args.files = files
    module = _source_module(args.module_name)
    writer = TraceWriter(args.out, args.source, lambda row, why: report.bad(
        Path(str(row.get("source"))), 0, f"a row could not be written ({why}); this is a kafka-shim bug: please report it",
        "unwritable_row"))
    try:
        for row in _rows(module, args, context):
            writer.add(row)
        writer.close()
    finally:
        progress.finish()
    log.info("import_finished", source=args.source, out=str(args.out), rows=writer.rows_written,
             bad_lines=report.bad_lines, warnings=report.warnings)
    summary = {"source": args.source, "out": str(args.out), "files_written": [str(f) for f in writer.files],
               "rows_written": writer.rows_written, **report.as_dict(), **context.extra}
    summary_path = _write_summary(args.out, summary) if writer.rows_written or args.out.is_dir() else None
    _print_summary(summary, summary_path, quiet=args.quiet)
    return 0 if writer.rows_written else 1


def _rows(module: Any, args: argparse.Namespace, context: ImportContext) -> Iterator[dict[str, Any]]:
    yield from module.import_rows(args, context)


def _write_summary(out: Path, summary: dict[str, Any]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(tz=datetime.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    path = out / f"{SUMMARY_PREFIX}{stamp}.json"
    path.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def _skipped_detail(summary: dict[str, Any]) -> str:
    forwarded = summary["counts_by_reason"].get("forwarded", 0)
    if not summary["skipped_lines"]:
        return ""
    if forwarded:
        return f" ({forwarded} forwarded requests' controller lines, the rest other messages)"
    return " (other messages)"


def _print_summary(summary: dict[str, Any], summary_path: Path | None, quiet: bool) -> None:
    err = sys.stderr
    if not quiet:
        for example in summary["bad_line_examples"]:
            print(f"kafka-shim import: {example['file']}:{example['line']}: skipped: {example['reason']}", file=err)
        for example in summary["warning_examples"]:
            print(f"kafka-shim import: {example['file']}:{example['line']}: warning: {example['reason']}", file=err)
        shown = len(summary["bad_line_examples"]) + len(summary["warning_examples"])
        if summary["bad_lines"] + summary["warnings"] > shown:
            print(f"kafka-shim import: ... {summary['bad_lines'] + summary['warnings'] - shown} more (counted in the summary)", file=err)
    where = f"; summary in {summary_path}" if summary_path else ""
    unit = "packets" if summary["source"] == "pcap" else "lines"  # the report counts a capture's packets as its lines
    line = (f"kafka-shim import {summary['source']}: {summary['rows_written']} rows from {summary['lines']} {unit} of "
            f"{summary['files']} files into {summary['out']}; {summary['bad_lines']} {unit} could not be read, "
            f"{summary['warnings']} rows kept with warnings, {summary['skipped_lines']} {unit} skipped{_skipped_detail(summary)}{where}")
    print(line, file=err)
    if not summary["rows_written"]:
        print("kafka-shim import: nothing could be imported: check that the files are the right log or capture (for the "
              "request log, kafka.request.logger must be at DEBUG; a capture must hold the Kafka port's TCP traffic, "
              "not TLS) and see the reasons above", file=err)
