"""What writing the authorizer log to its own file costs (kafka.shim.authorizer.log.file): microseconds per denied
decision, with no logging configured (kafka-shim as a library prints nothing) against the file at INFO, which writes
and flushes one kafka-authorizer.log line per denial. Grants at INFO are not written, so they cost nothing extra.

    .venv/bin/python bench/authorizer_log.py [--decisions 200000]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from kafka_shim.authorizer import AclOperation, Authorizer, ResourceType
from kafka_shim.authorizer.audit import AuditLog
from kafka_shim.authorizer.audit_file import AuditFile


def per_decision_us(authorizer: Authorizer, count: int) -> float:
    names = [f"topic-{i % 1000}" for i in range(count)]
    began = time.perf_counter()
    for name in names:
        authorizer.authorize("User:alice", "10.0.0.1", AclOperation.WRITE, ResourceType.TOPIC, name, request="Produce")
    return (time.perf_counter() - began) / count * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=200_000)
    args = parser.parse_args()
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        silent = Authorizer(super_users=[], allow_everyone_if_no_acl_found=False)
        sink = AuditFile(Path(tmp) / "kafka-authorizer.log")
        to_file = Authorizer(super_users=[], allow_everyone_if_no_acl_found=False, audit=AuditLog(sink))
        results = {"no logging": [], "file at INFO": []}
        for _ in range(3):  # alternate, take the best of three
            results["no logging"].append(per_decision_us(silent, args.decisions))
            results["file at INFO"].append(per_decision_us(to_file, args.decisions))
        sink.close()
        size = (Path(tmp) / "kafka-authorizer.log").stat().st_size
    base = min(results["no logging"])
    for label, values in results.items():
        print(f"{label:<14} {min(values):6.2f} us per denied decision ({min(values) / base:.2f}x)")
    print(f"{size / (3 * args.decisions):.0f} bytes of log per denial")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
