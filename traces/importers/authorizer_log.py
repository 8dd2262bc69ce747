"""Kafka's authorizer log (``kafka.authorizer.logger``) as trace rows of kind ``authorization``.

Kafka counterpart: the audit line of the KRaft StandardAuthorizer (org.apache.kafka.metadata.authorizer.
StandardAuthorizerData.logAuditMessage, Kafka 3.x and 4.x):

    Principal = User:alice is Denied operation = READ from host = 127.0.0.1 on resource = Topic:LITERAL:payments
    for request = Fetch with resourceRefCount = 1 based on rule DefaultDeny

and of the ZooKeeper-era AclAuthorizer (kafka.security.authorizer.AclAuthorizer, 2.4-3.9, removed in 4.0), which
writes ``Operation`` with a capital O, the operation in PascalCase (``IdempotentWrite``) and no rule:

    Principal = User:alice is Allowed Operation = Read from host = 127.0.0.1 on resource = Topic:LITERAL:payments
    for request = Fetch with resourceRefCount = 1

(the older SimpleAclAuthorizer line ends after the resource: no request name and no count; it reads too). Kafka
writes denials at INFO, grants it was asked to log at DEBUG, the rest (authorized operations, filtering) at TRACE.

Each line is one row: ``time``, ``principal``, ``client_host``, ``api_key`` (from the request name; null for a name
kafka-shim does not know or a line without one) and a one-element ``decisions`` list (kind ``authorize``).
The line's pattern type and request name, which the decision struct has no field for, are in ``request_json``
(``{"pattern_type": "LITERAL", "request": "Fetch"}``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

from kafka_shim.protocol.schema import api_index, snake_case
from kafka_shim.traces.importers.logfiles import Line, Report, TimestampError, parse_timestamp, read_lines

SOURCE = "authorizer-log"
AUTHORIZATION = "authorization"  # the row kind

_LINE = re.compile(
    r"Principal = (?P<principal>.*?) is (?P<result>Allowed|Denied) (?P<op_word>[Oo])peration = (?P<operation>\w+)"
    r" from host = (?P<host>\S*) on resource = (?P<rtype>[A-Za-z]+):(?P<pattern>[A-Z_]+):(?P<name>.*?)"
    r"(?: for request = (?P<request>\w+) with resourceRefCount = (?P<refs>-?\d+))?"
    r"(?: based on rule (?P<rule>.*?))?"
    r"(?: \((?P<logger>[\w.$]+)\))?\s*$")
_MARKER = "Principal = "


class LineError(ValueError):
    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options of its own."""


def import_rows(args: argparse.Namespace, context: Any) -> Iterator[dict[str, Any]]:
    """The ``kafka-shim import authorizer-log`` source (traces/importers/cli.py)."""
    yield from rows(read_lines(args.files, context.report, context.progress), context.report, context.zone)


def rows(lines: Iterator[Line], report: Report, zone: datetime.tzinfo) -> Iterator[dict[str, Any]]:
    """A row per authorizer audit line; other lines are skipped (counted), unreadable ones reported."""
    for line in lines:
        at = line.text.find(_MARKER)
        if at < 0:
            if line.text.strip():
                report.skipped_lines += 1
            continue
        try:
            row = parse_line(line.text, at, zone)
        except LineError as exc:
            report.bad(line.path, line.number, str(exc), exc.kind)
            continue
        if row["api_key"] is None and row["request_json"] and json.loads(row["request_json"]).get("request"):
            report.warn(line.path, line.number, f"request {json.loads(row['request_json'])['request']!r} is not an "
                        "API kafka-shim knows: row kept without api_key", "unknown_request_name")
        report.rows += 1
        yield row


def parse_line(text: str, at: int, zone: datetime.tzinfo) -> dict[str, Any]:
    try:
        time_us = parse_timestamp(text[:at], zone)
    except TimestampError as exc:
        raise LineError(str(exc), "no_timestamp") from None
    m = _LINE.match(text, at)
    if m is None:
        raise LineError("not an authorizer audit line (Principal = ... is Allowed|Denied operation = ... from host = "
                        "... on resource = Type:PATTERN:name ...)", "not_an_audit_line")
    legacy = m["op_word"] == "O"
    request = m["request"]
    decision = {
        "kind": "authorize",
        "operation": snake_case(m["operation"]).upper() if legacy else m["operation"],
        "resource_type": snake_case(m["rtype"]).upper(),
        "resource_name": m["name"],
        "allowed": m["result"] == "Allowed",
        "rule": m["rule"],
        "resource_ref_count": _ref_count(m["refs"]),
        "authorized_operations": None,
    }
    return {
        "kind": AUTHORIZATION,
        "time": time_us,
        "source": SOURCE,
        "client_host": m["host"] or None,
        "principal": m["principal"],
        "api_key": api_key_of(request) if request else None,
        "request_json": json.dumps({"pattern_type": m["pattern"], "request": request}, sort_keys=True),
        "decisions": [decision],
    }


def _ref_count(text: str | None) -> int | None:
    if text is None:
        return None
    count = int(text)
    if not -(2**31) <= count < 2**31:
        raise LineError(f"resourceRefCount {text} is out of range", "bad_ref_count")
    return count


@cache
def _api_keys_by_name() -> dict[str, int]:
    return {request[: -len("Request")]: key for key, (request, _response) in api_index().items()}


def api_key_of(request_name: str) -> int | None:
    """Kafka's API key for the request name its authorizer log writes (ApiKeys.name: ``Fetch``, ``CreateAcls``)."""
    return _api_keys_by_name().get(request_name)
