"""What the request quota costs when it is on: Metadata and Produce requests/s of a broker where every client is
under a ``request_percentage`` quota it never exceeds (each request timed, step by step for Produce, and metered)
against one without quotas, the same run, alternating round by round.

    .venv/bin/python bench/request_quota.py [--seconds 3] [--rounds 5]

The same load and requests as bench/received.py and bench/metrics.py (the authorizer on); each broker runs in its
own process.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from alternating import compare  # noqa: E402

_CONFIG = {"listeners": "PLAINTEXT://127.0.0.1:0",
           "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
           "allow.everyone.if.no.acl.found": "true"}


async def _serve(quota: bool) -> None:
    from kafka_shim.shim.broker import Broker
    from kafka_shim.shim.config.broker_config import BrokerConfig
    from kafka_shim.shim.quotas.client_quotas import Alteration

    broker = Broker(BrokerConfig.from_properties(_CONFIG))
    await broker.start()
    if quota:  # every user (the default user entity), far above what the load uses: timed and metered, never throttled
        broker.services.client_quotas.alter([Alteration((("user", None),), [("request_percentage", 100_000.0)])],
                                            validate_only=False)
    print(f"PLAINTEXT://{broker.bootstrap_servers}", flush=True)
    stopped = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stopped.set)
    await stopped.wait()
    await broker.stop()


def start(quota: bool) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve", "quota" if quota else "plain"], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip().split("://", 1)[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--serve", choices=("quota", "plain"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(args.serve == "quota"))
        return 0
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    servers = {"without": start(False), "with": start(True)}
    compare(servers, args.rounds, args.seconds, ("no quota", "request quota"))
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
