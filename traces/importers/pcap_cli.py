"""``kafka-shim import pcap FILE... --out TRACE``: packet captures of Kafka traffic into a trace.

Two ways in: ``main(argv)`` is the command on its own (what ``kafka-shim import pcap`` runs until the importers'
common command table lists it), and ``add_arguments`` / ``import_rows`` are the source interface of that table
(traces/importers/cli.py: ``"pcap": ("kafka_shim.traces.importers.pcap_cli", ...)``). The files are read as one
capture, in the order given. What could not be read (not a capture, a cut file, a gap, TLS, a stream that is not
Kafka, an unknown API version) is counted with its first examples and printed at the end; the import goes on.
Exit code 0 when rows were written, 1 when nothing could be imported, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafka_shim.traces.importers.output import rows_table, write_trace
from kafka_shim.traces.importers.pcap import PCAP, pcap_rows
from kafka_shim.traces.importers.report import ImportReport

HELP = "packet captures (pcap, pcapng; tcpdump -w): Kafka connections found by their frames on any port"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check-bodies", action="store_true",
                        help="decode every request and response body and report those that do not (slower)")


def import_rows(args: argparse.Namespace, context: Any) -> Iterator[dict[str, Any]]:
    """The source interface of the importers' command table: rows, and what could not be read into its report."""
    report = ImportReport(PCAP)
    rows = pcap_rows(args.files, report, getattr(args, "check_bodies", False))
    _into_table_report(report, context.report)
    yield from rows


def _into_table_report(report: ImportReport, target: Any) -> None:
    # the command table's report counts bad input per file and line; a capture's "line" is its packet or stream
    for kind, n in report.problems.items():
        examples = report.examples.get(kind, [])
        for example in examples:
            where, _, detail = example.partition(": ")
            target.bad(Path(where), 0, detail, kind)
        target.bad_lines += n - len(examples)
        target.counts_by_reason[kind] = target.counts_by_reason.get(kind, 0) + n - len(examples)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-shim import pcap", description=f"Import {HELP} into a trace (traces/FORMAT.md).")
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="capture files, in capture order")
    parser.add_argument("--out", required=True, type=Path, metavar="TRACE", help="the trace directory to write (day=YYYY-MM-DD/ partitions)")
    parser.add_argument("--quiet", action="store_true", help="only the summary line, no problem examples")
    add_arguments(parser)
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    report = ImportReport(PCAP)
    table = rows_table(pcap_rows(args.files, report, args.check_bodies))
    files = write_trace(table, args.out, PCAP)
    lines = report.summary().splitlines()
    for line in lines if not args.quiet else lines[:1]:
        print(f"kafka-shim import {line}", file=sys.stderr)
    print(f"kafka-shim import pcap: {table.num_rows} rows into {len(files)} file(s) under {args.out}", file=sys.stderr)
    if not table.num_rows:
        print("kafka-shim import pcap: nothing could be imported: check that the files are captures of unencrypted "
              "Kafka traffic that include the connections' first packets (see the problems above)", file=sys.stderr)
        return 1
    return 0
