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
import signal
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from capture import SHAPES, prepare, process_cpu_s, requests, stop  # noqa: E402
from loadgen import drive  # noqa: E402


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
    frames = requests()
    servers = {"without": start(False), "with": start(True)}
    rates: dict[tuple, list[float]] = {}
    cpu: dict[tuple, list[float]] = {}
    try:
        for _, address in servers.values():
            prepare(address, frames)
        for number in range(args.rounds):
            for api, frame in frames.items():
                for connections, in_flight in SHAPES:
                    for mode, (proc, address) in sorted(servers.items(), reverse=number % 2 == 1):
                        before = process_cpu_s(proc.pid)
                        done, elapsed, _ = drive(address, connections, in_flight, args.seconds, 0.0,
                                                 lambda n, frame=frame: frame * n)
                        key = (api, mode, connections, in_flight)
                        rates.setdefault(key, []).append(done / elapsed)
                        cpu.setdefault(key, []).append((process_cpu_s(proc.pid) - before) / done * 1e6)
    finally:
        for proc, _ in servers.values():
            proc.send_signal(signal.SIGINT)
            stop(proc)
    print(f"\n{'api':<9} {'conns':>5} {'in-flight':>9} {'without req/s':>14} {'with req/s':>11} {'overhead':>9} "
          f"{'CPU us/req without':>19} {'with':>6}")
    for api in frames:
        for connections, in_flight in SHAPES:
            without = statistics.median(rates[(api, "without", connections, in_flight)])
            with_ = statistics.median(rates[(api, "with", connections, in_flight)])
            print(f"{api:<9} {connections:>5} {in_flight:>9} {without:>14.0f} {with_:>11.0f} {1 - with_ / without:>8.1%} "
                  f"{statistics.median(cpu[(api, 'without', connections, in_flight)]):>19.1f} "
                  f"{statistics.median(cpu[(api, 'with', connections, in_flight)]):>6.1f}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
