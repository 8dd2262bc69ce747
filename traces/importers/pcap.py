"""Packet captures (pcap, pcapng) of Kafka traffic imported into the trace format (source ``pcap``).

``import_pcap(paths, report)`` reads each file's TCP segments (importers.pcap_packets: Ethernet, Linux cooked
SLL/SLL2, loopback, raw IP; IPv4 and IPv6), puts each connection's two directions together in sequence order
(importers.pcap_streams: out-of-order, retransmitted and overlapping segments; gaps stop a direction), finds the
Kafka connections by their frames on any port and pairs requests with responses (importers.pcap_kafka). Files are
read as one capture in the order given (a capture split by ``tcpdump -C`` into several files: pass them in order).

A row per request: raw request and response frames without their size prefix (as kafka-shim's capture keeps them),
``time`` when the request's last byte was captured, ``response_time_us`` to the response's last byte, Kafka's
connection id form with the broker's address first and a per-broker-address index in order of the connections'
first packets. A capture knows no listener and no authorization decisions: those columns are null. What could
not be read is in the ImportReport, never raised.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from kafka_shim.traces.format import SCHEMA
from kafka_shim.traces.importers.pcap_kafka import PCAP, KafkaConnections
from kafka_shim.traces.importers.pcap_packets import Segment, read_segments
from kafka_shim.traces.importers.pcap_streams import connections
from kafka_shim.traces.importers.report import ImportReport

__all__ = ["PCAP", "import_pcap", "pcap_rows"]


def import_pcap(paths: Iterable[str | Path], report: ImportReport | None = None, check_bodies: bool = False) -> pa.Table:
    """The Kafka requests in packet capture files as a trace table (source ``pcap``); problems go to ``report``.

    ``check_bodies``: decode every request and response body and report those that do not decode (a trace's
    readers decode them anyway; this makes the import about twice as slow)."""
    return rows_table(pcap_rows(paths, report, check_bodies))


def pcap_rows(paths: Iterable[str | Path], report: ImportReport | None = None, check_bodies: bool = False
              ) -> list[dict[str, Any]]:
    """The same as row dicts of trace columns (``time`` in µs since the epoch), in connection order."""
    report = report if report is not None else ImportReport(PCAP)
    kafka = KafkaConnections(report, check_bodies)
    rows: list[dict[str, Any]] = []
    for connection in connections(_all_segments(paths, report)):
        try:
            rows.extend(kafka.rows(connection))
        except Exception as exc:  # a bug here must cost one connection, not the import: reported with its cause
            report.problem("importer_error", f"{connection.a[0]}:{connection.a[1]} <-> {connection.b[0]}:{connection.b[1]}",
                           f"{type(exc).__name__}: {exc}; this connection is left out (please report it)")
    report.count("rows", len(rows))
    return rows


def _all_segments(paths: Iterable[str | Path], report: ImportReport) -> Iterator[Segment]:
    for path in paths:
        try:
            yield from read_segments(path, report)
        except OSError as exc:
            report.problem("unreadable_file", str(path), f"{exc.strerror or exc}; skipped")


def rows_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Row dicts (``time`` in µs since the epoch, UTC) as a table in the trace schema, sorted by time."""
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    return table.sort_by([("time", "ascending")]) if table.num_rows else table
