"""Two servers under the same load, alternating round by round (bench/metrics.py, bench/received.py): requests/s and
the server's CPU per request for Metadata and Produce at each shape, medians over the rounds, printed side by side."""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import signal
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


# The broker both sides run: the authorizer on, everyone allowed, so every request also makes its decisions.
AUTHORIZED_CONFIG = {"listeners": "PLAINTEXT://127.0.0.1:0",
                     "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                     "allow.everyone.if.no.acl.found": "true"}
ROOT = Path(__file__).resolve().parent.parent


async def _serve(setup: Callable[[Any], None] | None) -> None:
    """One in-process broker on AUTHORIZED_CONFIG (``setup`` applied after start), until SIGINT; prints its address."""
    from kafka_shim.shim.broker import Broker
    from kafka_shim.shim.config.broker_config import BrokerConfig

    broker = Broker(BrokerConfig.from_properties(AUTHORIZED_CONFIG))
    await broker.start()
    if setup is not None:
        setup(broker)
    print(f"PLAINTEXT://{broker.bootstrap_servers}", flush=True)
    stopped = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stopped.set)
    await stopped.wait()
    await broker.stop()


def _start(script: str, with_setup: bool) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, script, "--serve", "with" if with_setup else "without"], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip().split("://", 1)[1]


def main(doc: str, script: str, setup: Callable[[Any], None], labels: tuple[str, str]) -> int:
    """A bench's command line: ``--serve`` runs one side (the ``with`` side has ``setup(broker)`` applied), without
    it both sides are started in their own processes and compared under ``labels``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--serve", choices=("with", "without"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(setup if args.serve == "with" else None))
        return 0
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    servers = {"without": _start(script, False), "with": _start(script, True)}
    compare(servers, args.rounds, args.seconds, labels)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0
