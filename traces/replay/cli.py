"""``kafka-shim replay TRACE --bootstrap-server HOST:PORT [...]``: re-send a trace's requests to a broker (kafka-shim
or Apache Kafka) and diff every answer with the recorded one. See README "Replaying a trace".

Exit codes: 0 no differences; 1 differences, or the broker could not be reached; 2 a usage error (bad arguments, an
unreadable trace, a missing or malformed credentials file).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import time
from pathlib import Path

from kafka_shim.protocol.messages import request_class, response_class
from kafka_shim.traces.format import TraceError, read_trace
from kafka_shim.traces.replay.credentials import CredentialsError, load_credentials
from kafka_shim.traces.replay.diff import IGNORED, Differ
from kafka_shim.traces.replay.plan import SASL, SKIP, ConnectionPlan, build_plans
from kafka_shim.traces.replay.remap import IdMap
from kafka_shim.traces.replay.report import summary_lines, write_report
from kafka_shim.traces.replay.runner import DIFFERENT, Replayer, RowResult, Target

PROG = "kafka-shim replay"


class UsageError(Exception):
    pass


def _address(text: str, what: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"{what} {text!r} is not HOST:PORT (e.g. localhost:9092)")
    return host.strip("[]"), int(port)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Re-send a trace's requests to a broker and diff the answers field by field.")
    p.add_argument("trace", help="a trace file or directory (kafka-shim serve --capture, capture-proxy, import)")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT", help="the broker to replay against")
    p.add_argument("--listener", action="append", default=[], metavar="NAME=HOST:PORT",
                   help="send connections recorded on listener NAME here instead, with that listener's recorded security protocol")
    p.add_argument("--security-protocol", choices=("PLAINTEXT", "SASL_PLAINTEXT"),
                   help="of --bootstrap-server (default: SASL_PLAINTEXT if any replayed connection authenticated)")
    p.add_argument("--credentials", metavar="FILE", help="principal -> mechanism, username, password (see README)")
    p.add_argument("--pace", choices=("recorded", "fast"), default="recorded",
                   help="recorded: each request at its recorded offset; fast: as soon as recorded order allows")
    p.add_argument("--out", metavar="DIR", help="write differences.jsonl, requests.jsonl and report.md here")
    p.add_argument("--ignore", action="append", default=[], metavar="FIELD", help="also ignore this field name (repeat or comma-separate)")
    p.add_argument("--compare", action="append", default=[], metavar="FIELD", help="compare a field the default table ignores")
    p.add_argument("--ignore-error-messages", action="store_true", help="compare error codes only, not error_message texts")
    p.add_argument("--strict-close", action="store_true",
                   help="a request recorded unanswered on a closing connection that the replay answers is a difference")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="for connecting and for each answer (default 30)")
    p.add_argument("--list-ignored", action="store_true", help="print the fields ignored by default and why, then exit")
    return p


def main(argv: list[str]) -> int:
    if "--list-ignored" in argv:
        for name, why in IGNORED.items():
            print(f"{name:<26} {why}")
        return 0
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # argparse printed the problem
        return 0 if exc.code == 0 else 2
    try:
        return _run(args)
    except UsageError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2


def _fields(values: list[str]) -> set[str]:
    return {f.strip() for v in values for f in v.split(",") if f.strip()}


def _run(args: argparse.Namespace) -> int:
    bootstrap = _address(args.bootstrap_server, "--bootstrap-server")
    listeners: dict[str, tuple[str, int]] = {}
    for item in args.listener:
        name, sep, address = item.partition("=")
        if not sep:
            raise UsageError(f"--listener {item!r} is not NAME=HOST:PORT")
        listeners[name] = _address(address, f"--listener {name}")
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    problems: list = []
    try:
        table = read_trace(args.trace, problems)
    except TraceError as exc:
        raise UsageError(str(exc)) from None
    for problem in problems:
        print(f"{PROG}: skipping {problem.error}", file=sys.stderr)
    plans = build_plans(table.to_pylist())
    if not plans:
        raise UsageError(f"{args.trace}: no readable request rows to replay" + (" (every file was unreadable)" if problems else ""))
    unmapped = sorted({p.listener or "?" for p in plans if p.listener not in listeners})
    if len(unmapped) > 1:
        print(f"{PROG}: connections recorded on listeners {', '.join(unmapped)} all go to --bootstrap-server; add "
              f"--listener NAME=HOST:PORT to send each listener's connections to a listener of its kind", file=sys.stderr)
    protocol = args.security_protocol or ("SASL_PLAINTEXT" if any(p.authenticates and p.listener not in listeners for p in plans) else "PLAINTEXT")

    def target_of(plan: ConnectionPlan) -> Target:
        if plan.listener in listeners:
            return Target(*listeners[plan.listener], plan.security_protocol or "PLAINTEXT")
        return Target(*bootstrap, protocol)

    credentials = {}
    needed = set()
    for plan in plans:
        sasl_target = target_of(plan).security_protocol.startswith("SASL")
        for step in plan.steps:
            if step.action == SASL and not sasl_target:
                step.action, step.reason = SKIP, "SASL not replayed: the target listener is PLAINTEXT"
        if sasl_target and plan.authenticates and plan.principal != "User:ANONYMOUS":
            needed.add(plan.principal)
    if args.credentials:
        try:
            credentials = load_credentials(args.credentials)
        except CredentialsError as exc:
            raise UsageError(str(exc)) from None
    missing = sorted(needed - set(credentials))
    if missing:
        where = f"{args.credentials} has no line for" if args.credentials else "--credentials FILE is needed for"
        raise UsageError(f"{where} {', '.join(missing)}: the trace's SASL connections authenticated as them")
    _warn_unknown_versions(plans)

    for target in {target_of(p) for p in plans}:
        try:
            socket.create_connection((target.host, target.port), timeout=min(args.timeout, 10)).close()
        except OSError as exc:
            print(f"{PROG}: cannot reach the broker at {target.host}:{target.port} ({exc.strerror or exc}); check "
                  f"--bootstrap-server / --listener and that the broker is running", file=sys.stderr)
            return 1

    ignore = (set(IGNORED) | _fields(args.ignore)) - _fields(args.compare)
    differ = Differ(IdMap(), ignore, args.ignore_error_messages)
    total = sum(len(p.steps) for p in plans)
    progress = _Progress(total)
    replayer = Replayer(plans, target_of, credentials, differ, pace=args.pace, timeout=args.timeout,
                        strict_close=args.strict_close, on_result=progress)
    started = time.monotonic()
    results = asyncio.run(replayer.run())
    progress.finish()
    header = (f"replayed {args.trace} against {args.bootstrap_server} ({len(plans)} connections, pace {args.pace}, "
              f"{time.monotonic() - started:.1f} s)")
    print("\n".join(summary_lines(results, header)))
    different = [r for r in results if r.status == DIFFERENT]
    for r in different[:10]:
        for d in r.differences[:3]:
            print(f"  differs: {r.api} v{r.api_version} {r.connection_id} #{r.correlation_id} {d.path}: "
                  f"recorded {d.recorded!r}, replayed {d.replayed!r}")
    if args.out:
        write_report(Path(args.out), results, header)
        print(f"report: {Path(args.out) / 'report.md'}, differences: {Path(args.out) / 'differences.jsonl'}")
    return 1 if different else 0


def _warn_unknown_versions(plans: list[ConnectionPlan]) -> None:
    unknown: dict[tuple[int, int], int] = {}
    for plan in plans:
        for step in plan.steps:
            key, version = step.row.get("api_key"), step.row.get("api_version")
            if key is None or step.action == SKIP:
                continue
            try:
                known = version in request_class(key).message_spec.valid_versions and \
                    version in response_class(key).message_spec.valid_versions
            except Exception:  # an API key the codec does not know at all
                known = False
            if not known:
                unknown[(key, version)] = unknown.get((key, version), 0) + 1
    for (key, version), count in sorted(unknown.items()):
        print(f"{PROG}: {count} request(s) of api key {key} v{version}, a version this kafka-shim does not know: "
              f"sent as recorded, answers compared as bytes", file=sys.stderr)


class _Progress:
    """A one-line bar on a terminal; otherwise a plain line every 5 s (logs, CI)."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.different = total, 0, 0
        self.tty = sys.stderr.isatty()
        self._last = time.monotonic()

    def __call__(self, result: RowResult) -> None:
        self.done += 1
        self.different += result.status == DIFFERENT
        now = time.monotonic()
        if self.tty:
            width = 30
            filled = width * self.done // max(self.total, 1)
            sys.stderr.write(f"\rreplay [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                             f"({self.different} different)")
            sys.stderr.flush()
        elif now - self._last >= 5:
            self._last = now
            print(f"replay: {self.done}/{self.total} requests, {self.different} different", file=sys.stderr)

    def finish(self) -> None:
        if self.tty:
            sys.stderr.write("\n")
