"""``kafka-shim import pcap FILE... --out TRACE``: packet captures of Kafka traffic into a trace.

The pcap source of the importers' command table (traces/importers/cli.py, which writes the day partitions and the
summary): ``add_arguments`` and ``import_rows``. The files are read as one capture, in the order given (a capture
split by ``tcpdump -C``: all its files, in order). What could not be read (not a capture, a cut file, a gap, TLS, a
stream that is not Kafka) goes into the command's report, each with its first examples; an unknown API version is
a warning (the row is kept with its bytes). The command's summary also has the pcap importer's own counts
(``pcap``: packets, connections, requests, problems by kind).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafka_shim.traces.importers.pcap import PCAP, pcap_rows
from kafka_shim.traces.importers.report import ImportReport

FILES_HELP = "capture files (pcap or pcapng, e.g. from tcpdump -w), in capture order"
# Problems after which the row is kept, only with less in it: the command's warnings, not its skipped input.
_WARNINGS = frozenset({"unknown_api_version", "undecodable_request_body", "undecodable_response_body"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check-bodies", action="store_true",
                        help="decode every request and response body and report those that do not decode (slower; "
                             "readers of the trace decode them anyway)")


def import_rows(args: argparse.Namespace, context: Any) -> Iterator[dict[str, Any]]:
    """The rows of the captures, and what could not be read into the command's report."""
    report = ImportReport(PCAP)
    rows = pcap_rows(args.files, report, getattr(args, "check_bodies", False))
    into_command_report(report, context.report, len(args.files))
    context.extra[PCAP] = report.as_dict()
    yield from rows


def into_command_report(report: ImportReport, target: Any, files: int) -> None:
    """The command table's report counts files, lines and bad lines: a capture's lines are its packets, and each
    problem is a bad "line" (a warning when the row was kept) with the packet or connection as its place."""
    target.files += files
    target.lines += report.read.get("packets", 0)
    target.rows += report.read.get("rows", 0)
    for kind, n in report.problems.items():
        note = target.warn if kind in _WARNINGS else target.bad
        examples = report.examples.get(kind, [])
        for example in examples:
            where, _, detail = example.partition(": ")
            note(Path(where), 0, detail, kind)
        unshown = n - len(examples)
        if kind in _WARNINGS:
            target.warnings += unshown
        else:
            target.bad_lines += unshown
        target.counts_by_reason[kind] = target.counts_by_reason.get(kind, 0) + unshown
