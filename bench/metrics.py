"""What the Prometheus counters cost: Metadata and Produce requests/s of kafka-shim with and without
``--metrics-port``, the same run, alternating (issue 16: metrics must not slow the request path noticeably).

    .venv/bin/python bench/metrics.py [--seconds 3] [--rounds 5]

The same servers, load and requests as bench/capture.py (the authorizer on, so every request also counts its
decisions); the medians over the rounds are compared, and the server's CPU per request is printed too.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from alternating import compare  # noqa: E402


def start(metrics: bool) -> tuple[subprocess.Popen, str]:
    args = [sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", "--log-level", "warning",
            "--override", "listeners=PLAINTEXT://127.0.0.1:0",
            "--override", "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "--override", "allow.everyone.if.no.acl.found=true"]
    if metrics:
        args += ["--metrics-port", "0"]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip().split("://", 1)[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    servers = {"without": start(False), "with": start(True)}
    compare(servers, args.rounds, args.seconds, ("without", "with metrics"))
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
