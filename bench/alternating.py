"""Two servers under the same load, alternating round by round (bench/metrics.py, bench/received.py): requests/s and
the server's CPU per request for Metadata and Produce at each shape, medians over the rounds, printed side by side."""

from __future__ import annotations

import signal
import statistics
import subprocess
import sys

from capture import SHAPES, prepare, process_cpu_s, requests, stop
from loadgen import drive


def compare(servers: dict[str, tuple[subprocess.Popen, str]], rounds: int, seconds: float, labels: tuple[str, str]) -> None:
    """``servers``: {"without": (process, address), "with": ...}; ``labels``: the two columns' names. The servers are
    stopped at the end."""
    frames = requests()
    rates: dict[tuple, list[float]] = {}
    cpu: dict[tuple, list[float]] = {}
    try:
        for _, address in servers.values():
            prepare(address, frames)
        for number in range(rounds):
            print(f"round {number + 1}/{rounds}", file=sys.stderr, flush=True)
            for api, frame in frames.items():
                for connections, in_flight in SHAPES:
                    for mode, (proc, address) in sorted(servers.items(), reverse=number % 2 == 1):
                        before = process_cpu_s(proc.pid)
                        done, elapsed, _ = drive(address, connections, in_flight, seconds, 0.0, lambda n, frame=frame: frame * n)
                        key = (api, mode, connections, in_flight)
                        rates.setdefault(key, []).append(done / elapsed)
                        cpu.setdefault(key, []).append((process_cpu_s(proc.pid) - before) / done * 1e6)
    finally:
        for proc, _ in servers.values():
            proc.send_signal(signal.SIGINT)
            stop(proc)
    plain, other = labels
    print(f"\n{'api':<9} {'conns':>5} {'in-flight':>9} {plain + ' req/s':>16} {other + ' req/s':>16} {'overhead':>9} "
          f"{'CPU us/req ' + plain:>20} {other:>10}")
    for api in frames:
        for connections, in_flight in SHAPES:
            without = statistics.median(rates[(api, "without", connections, in_flight)])
            with_ = statistics.median(rates[(api, "with", connections, in_flight)])
            print(f"{api:<9} {connections:>5} {in_flight:>9} {without:>16.0f} {with_:>16.0f} {1 - with_ / without:>8.1%} "
                  f"{statistics.median(cpu[(api, 'without', connections, in_flight)]):>20.1f} "
                  f"{statistics.median(cpu[(api, 'with', connections, in_flight)]):>10.1f}")
