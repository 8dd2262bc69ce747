"""``kafka-shim audit TRACE --acls A [--what-if B] --out DIR``: decide every request of a trace under ACL sets.

Each request's checks come from ``authorizer.api_checks`` (Kafka 3.9's), decided by ``kafka_shim.authorizer`` as
Kafka 3.9's StandardAuthorizer decides them; ``--what-if B`` lists what changes for the clients under B; where the
trace carries the broker's own decisions, every difference is listed; ``--compare-release R`` lists the requests an
older release's rules decide differently. Results go to DIR (layout: ``traces/AUDIT.md``). ``--engine spark``
(default) runs on Apache Spark (``--master``, default ``local[2]``), ``--engine arrow`` in this process.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from kafka_shim.authorizer.library_logging import get_logger
from kafka_shim.traces.audit.acl_sets import AclSetError, load_acl_set
from kafka_shim.traces.audit.decide import AuthorizerSettings
from kafka_shim.traces.audit.releases import RELEASES

log = get_logger("kafka_shim.traces.audit")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kafka-shim audit", description=__doc__.split("\n\n")[0])
    p.add_argument("trace", help="a trace file or directory (kafka-shim serve --capture, capture-proxy, kafka-shim import)")
    p.add_argument("--acls", required=True, metavar="A",
                   help="the ACL set to decide under: an --acls file (YAML/JSON), kafka-acls.sh --list output, or broker:HOST:PORT")
    p.add_argument("--what-if", metavar="B", help="a second ACL set (same forms): list what would change for the clients")
    p.add_argument("--command-config", metavar="FILE", help="client properties for broker:HOST:PORT (as kafka-acls.sh)")
    p.add_argument("--out", required=True, metavar="DIR", help="where the results go (see traces/AUDIT.md)")
    p.add_argument("--master", default="local[2]", help="Spark master URL (local[N], spark://HOST:PORT); default local[2]")
    p.add_argument("--engine", choices=("spark", "arrow"), default="spark",
                   help="spark (default) or arrow: the same results in this process without a JVM")
    p.add_argument("--super-users", nargs="*", default=[], metavar="PRINCIPAL",
                   help="Kafka's super.users (User:admin ...; ';'-separated lists accepted)")
    p.add_argument("--allow-everyone-if-no-acl-found", action="store_true",
                   help="Kafka's allow.everyone.if.no.acl.found=true")
    p.add_argument("--compare-release", metavar="R", choices=sorted(RELEASES),
                   help=f"also list requests an older release decides differently ({', '.join(sorted(RELEASES))})")
    p.add_argument("--no-report", action="store_true", help="skip ACL usage, least privilege and the HTML report")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    supers = tuple(u.strip() for item in args.super_users for u in item.split(";") if u.strip())
    settings = AuthorizerSettings(supers, args.allow_everyone_if_no_acl_found)
    if not Path(args.trace).exists():
        print(f"kafka-shim audit: {args.trace}: no such trace file or directory", file=sys.stderr)
        return 2
    spark = None
    if args.engine == "spark":
        from kafka_shim.traces.audit.spark_session import SparkStart

        spark = SparkStart(args.master, record_archive=True)  # the JVM starts while the ACL sets are read
    try:
        acls_a = load_acl_set(args.acls, args.command_config)
        acls_b = load_acl_set(args.what_if, args.command_config) if args.what_if else None
    except AclSetError as exc:
        print(f"kafka-shim audit: {exc}", file=sys.stderr)
        return 2
    from kafka_shim.traces.audit.run import run_audit

    started = time.monotonic()
    summary = run_audit(args.trace, acls_a, acls_b, settings, Path(args.out), engine=args.engine, master=args.master,
                        compare_release=args.compare_release, report=not args.no_report, spark=spark)
    summary["seconds"] = round(time.monotonic() - started, 3)
    print(format_summary(summary, Path(args.out)))
    return 0


def format_summary(s: dict, out: Path) -> str:
    lines = [f"audited {s['requests_audited']} requests ({s['decisions']} decisions, {s.get('asked_a', 0)} of them asked "
             f"under A; {s['actions']} distinct actions) in {s.get('seconds', 0):.1f} s; results in {out}",
             f"  denied under A: {s['denied_a']}; unresolved (resource names unknown to the trace): {s['unresolved']}"]
    if s.get("what_if"):
        lines.append(f"  what-if: {s['flips']} flips ({s['flips_hard']} hard: an error a client sees)")
    lines.append(f"  broker's own decisions: {s['broker_decisions']}, differing from the audit: {s['broker_differences']}")
    if s.get("broker_super_users"):
        users = ";".join(s["broker_super_users"])
        lines.append(f"  the broker decided some of these as super.users ({users}): audit again with --super-users '{users}'")
    if s.get("compare_release"):
        lines.append(f"  decided differently by Kafka {s['compare_release']}'s rules: {s['release_differences']}")
    if s["problems"]:
        lines.append("  NOT audited: " + ", ".join(f"{k}: {v}" for k, v in sorted(s["problems"].items()))
                     + f" (see {out / 'problems'})")
    return "\n".join(lines)
