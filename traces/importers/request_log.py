"""Kafka's request log (``kafka.request.logger`` at DEBUG) as trace rows of source ``request-log``.

Kafka counterpart: kafka.network.RequestChannel logs every completed request as ``Completed request:{json}``,
the JSON built by kafka.network.RequestConvertToJson.requestDescMetrics (Kafka 2.8+, KIP-673; the same keys in
3.9 and 4.x):

- ``isForwarded``; ``requestHeader`` {``requestApiKey``, ``requestApiVersion``, ``correlationId``, ``clientId``,
  ``requestApiKeyName`` (the ApiKeys enum name), ``requestApiVersionDeprecated`` (only when true)};
- ``request`` and ``response``: the bodies in the generated XxxJsonConverter form (read back by
  ``kafka_json``), records replaced by ``<name>SizeInBytes``; ``response`` is ``""`` when nothing was sent
  (Produce with acks=0);
- ``connection`` (``localIp:port-remoteIp:port-processor-index``), ``totalTimeMs`` (a double, from receiving the
  request to the response being sent) and the other timings, ``securityProtocol``, ``principal`` (``User:alice``),
  ``listener``, ``clientInformation`` {``softwareName``, ``softwareVersion``} (``unknown`` before ApiVersions v3+).

The line is written when the response has been sent, so a row's ``time`` is the log timestamp minus
``totalTimeMs`` (when the broker took the request, as the trace defines it). AlterConfigs and
IncrementalAlterConfigs: Kafka's log hides only the values it deems possibly secret (``[hidden]``: password-type
and unknown configs); the import replaces every config value with ``REDACTED``, as the trace format promises.
"""

from __future__ import annotations

import argparse
import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafka_shim.protocol.messages import request_class, response_class
from kafka_shim.protocol.schema import api_index
from kafka_shim.traces.format import CONFIG_ALTERING_APIS, REDACTED, REQUEST, to_json_text
from kafka_shim.traces.importers.kafka_json import KafkaJsonError, plain, read_message
from kafka_shim.traces.importers.logfiles import Line, Report, TimestampError, parse_timestamp, read_lines

SOURCE = "request-log"
# Requests whose bodies hold credentials (a SASL token of a re-authentication, salted SCRAM passwords): the trace
# keeps their header fields only, as kafka-shim's own capture does.
CREDENTIAL_APIS = frozenset({36, 51})  # SaslAuthenticate, AlterUserScramCredentials
MARKER = "Completed request:"
_DECODER = json.JSONDecoder()


class LineError(ValueError):
    """A line that is not a readable request-log line; ``kind`` is its reason's short name for the summary."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--authorizer-log", action="append", default=[], type=Path, metavar="FILE",
                        help="also read this authorizer log and attach its decisions to the requests they were made "
                             "for (repeatable; see traces/FORMAT.md for how lines are matched)")
    parser.add_argument("--keep-forwarded", action="store_true",
                        help="keep the controller's lines of requests a broker forwarded to it (isForwarded=true); "
                             "by default they are skipped, since the broker's own line of the request is imported")


def import_rows(args: argparse.Namespace, context: Any) -> Iterator[dict[str, Any]]:
    """The ``kafka-shim import request-log`` source (traces/importers/cli.py)."""
    lines = read_lines(args.files, context.report, context.progress)
    requests = rows(lines, context.report, context.zone, keep_forwarded=args.keep_forwarded)
    if not args.authorizer_log:
        yield from requests
        return
    from kafka_shim.traces.importers import authorizer_log
    from kafka_shim.traces.importers.attach import attach

    request_rows = list(requests)
    auth_files = [p for p in args.authorizer_log if p.is_file()]
    for missing in (p for p in args.authorizer_log if not p.is_file()):
        context.report.bad(missing, 0, "no such file", "no_such_file")
    auth_rows = list(authorizer_log.rows(read_lines(auth_files, context.report, context.progress), context.report,
                                         context.zone))
    matching = attach(request_rows, auth_rows)
    context.extra["authorizer_lines_attached"] = matching.attached
    context.extra["authorizer_lines_ambiguous"] = matching.ambiguous
    context.extra["authorizer_lines_unmatched"] = matching.unmatched
    yield from request_rows
    yield from matching.leftover


def rows(lines: Iterator[Line], report: Report, zone: datetime.tzinfo, keep_forwarded: bool = False
         ) -> Iterator[dict[str, Any]]:
    """A row per ``Completed request`` line; other lines are skipped (counted), unreadable ones reported."""
    for line in lines:
        at = line.text.find(MARKER)
        if at < 0:
            if line.text.strip():
                report.skipped_lines += 1
            continue
        try:
            row, warnings = parse_line(line.text, at, zone)
        except LineError as exc:
            report.bad(line.path, line.number, str(exc), exc.kind)
            continue
        if row.pop("_forwarded") and not keep_forwarded:
            report.skipped_lines += 1
            report.counts_by_reason["forwarded"] = report.counts_by_reason.get("forwarded", 0) + 1
            continue
        for kind, message in warnings:
            report.warn(line.path, line.number, message, kind)
        report.rows += 1
        yield row


def parse_line(text: str, at: int, zone: datetime.tzinfo) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """One line as a trace row, with (kind, message) warnings for the parts that could not be read."""
    try:
        time_us = parse_timestamp(text[:at], zone)
    except TimestampError as exc:
        raise LineError(str(exc), "no_timestamp") from None
    if not text[at + len(MARKER):].lstrip().startswith("{"):
        # Kafka before 2.8 (KIP-673) wrote "Completed request:RequestHeader(...) -- {...}" as text, not JSON.
        raise LineError(f"no JSON after {MARKER!r}: only Kafka 2.8+'s JSON request log is read", "not_json")
    try:
        doc, _end = _DECODER.raw_decode(text, at + len(MARKER))
    except json.JSONDecodeError as exc:
        # A whole line ends with the JSON's "}" or the logger's "(kafka.request.logger)": else it was cut off (the
        # broker was writing the last line, or a shipper truncated it).
        truncated = not text.rstrip().endswith(("}", ")"))
        raise LineError(f"{'truncated ' if truncated else ''}JSON after {MARKER!r}: {exc.msg} at column {exc.pos + 1}",
                        "truncated_json" if truncated else "bad_json") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("requestHeader"), dict):
        raise LineError("the JSON has no requestHeader object", "no_request_header")
    header = doc["requestHeader"]
    api_key, api_version = _int(header.get("requestApiKey"), 16), _int(header.get("requestApiVersion"), 16)
    if api_key is None or api_version is None:
        raise LineError("requestHeader has no requestApiKey / requestApiVersion", "no_request_header")
    warnings: list[tuple[str, str]] = []
    total_ms = doc.get("totalTimeMs")
    # A day at most: anything else is not a time this broker measured (and must not overflow the int64 column).
    response_time_us = round(total_ms * 1000) if isinstance(total_ms, int | float) and 0 <= total_ms <= 86_400_000 else None
    connection = doc.get("connection") if isinstance(doc.get("connection"), str) else None
    client_host, client_port = client_address(connection)
    info = doc.get("clientInformation") if isinstance(doc.get("clientInformation"), dict) else {}
    row: dict[str, Any] = {
        "kind": REQUEST,
        "time": time_us - (response_time_us or 0),
        "source": SOURCE,
        "connection_id": connection,
        "client_host": client_host,
        "client_port": client_port,
        "listener": _str(doc.get("listener")),
        "security_protocol": _str(doc.get("securityProtocol")),
        "principal": _str(doc.get("principal")),
        "client_id": _str(header.get("clientId")),
        "client_software_name": _known(info.get("softwareName")),
        "client_software_version": _known(info.get("softwareVersion")),
        "api_key": api_key,
        "api_version": api_version,
        "correlation_id": _int(header.get("correlationId"), 32),
        "request": None,
        "request_json": None,
        "response": None,
        "response_json": None,
        "outcome": "no_response" if doc.get("response") == "" else "response",
        "response_time_us": response_time_us,
        "decisions": None,
        "_forwarded": doc.get("isForwarded") is True,
    }
    if api_key not in api_index():
        warnings.append(("unknown_api_key", f"API key {api_key} is not one kafka-shim knows: row kept with the header "
                                            "fields only"))
        return row, warnings
    for part, cls_of in (("request", request_class), ("response", response_class)):
        body = doc.get(part)
        if body == "" or body is None or (part == "request" and api_key in CREDENTIAL_APIS):
            continue
        cls = cls_of(api_key)
        try:
            message = read_message(cls, body, api_version)
        except KafkaJsonError as exc:
            kind = "unknown_api_version" if api_version not in cls.message_spec.valid_versions else "body_mismatch"
            warnings.append((kind, f"{part} body not read ({exc}): row kept without {part}_json"))
            continue
        body_data = plain(message)
        if part == "request" and api_key in CONFIG_ALTERING_APIS:
            _redact_configs(body_data)
        row[f"{part}_json"] = to_json_text(body_data)
    return row, warnings


def _redact_configs(body: dict[str, Any]) -> None:
    # Kafka's log hides only the values it thinks may be secrets ("[hidden]"); a trace promises none at all.
    for resource in body.get("resources") or ():
        for config in resource.get("configs") or ():
            if config.get("value") is not None:
                config["value"] = REDACTED


def client_address(connection: str | None) -> tuple[str | None, int | None]:
    """The client's host and port from Kafka's connection id ``localIp:port-remoteIp:port-processor-index``."""
    if not connection:
        return None, None
    parts = connection.split("-")
    if len(parts) < 2:
        return None, None
    host, _, port = parts[1].rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        return None, None
    return (host or None), int(port)


def _int(value: Any, bits: int) -> int | None:
    """A signed integer of the header's width, or None (a value out of range would not fit the trace's column)."""
    limit = 1 << (bits - 1)
    return value if isinstance(value, int) and not isinstance(value, bool) and -limit <= value < limit else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _known(value: Any) -> str | None:
    # Kafka's ClientInformation says "unknown" until the connection sent ApiVersions v3+: null in the trace.
    return value if isinstance(value, str) and value != "unknown" else None
