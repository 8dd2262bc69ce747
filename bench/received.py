"""What recording the received requests costs (the pytest fixture's ``kafka_shim.received``, always on there):
Metadata and Produce requests/s of a broker that records against one that does not, the same run, alternating.

    .venv/bin/python bench/received.py [--seconds 3] [--rounds 5]

The same load and requests as bench/metrics.py and bench/capture.py (the authorizer on); each broker runs in its
own process, the recording one with ``FaultSet.record(True)`` as the fixture sets it.
"""

from __future__ import annotations

import argparse
import asyncio
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

_CONFIG = {"listeners": "PLAINTEXT://127.0.0.1:0",
           "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
           "allow.everyone.if.no.acl.found": "true"}


async def _serve(record: bool) -> None:
    from kafka_shim.shim.broker import Broker
    from kafka_shim.shim.config.broker_config import BrokerConfig

    broker = Broker(BrokerConfig.from_properties(_CONFIG))
    await broker.start()
    broker.services.faults.record(record)
    print(f"PLAINTEXT://{broker.bootstrap_servers}", flush=True)
    stopped = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stopped.set)
    await stopped.wait()
    await broker.stop()


def start(record: bool) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve", "record" if record else "plain"], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip().split("://", 1)[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--serve", choices=("record", "plain"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(args.serve == "record"))
        return 0
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
            print(f"round {number + 1}/{args.rounds}", file=sys.stderr, flush=True)
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
    print(f"\n{'api':<9} {'conns':>5} {'in-flight':>9} {'plain req/s':>12} {'recording':>10} {'overhead':>9} "
          f"{'CPU us/req plain':>17} {'recording':>10}")
    for api in frames:
        for connections, in_flight in SHAPES:
            plain = statistics.median(rates[(api, "without", connections, in_flight)])
            recording = statistics.median(rates[(api, "with", connections, in_flight)])
            print(f"{api:<9} {connections:>5} {in_flight:>9} {plain:>12.0f} {recording:>10.0f} {1 - recording / plain:>8.1%} "
                  f"{statistics.median(cpu[(api, 'without', connections, in_flight)]):>17.1f} "
                  f"{statistics.median(cpu[(api, 'with', connections, in_flight)]):>10.1f}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
