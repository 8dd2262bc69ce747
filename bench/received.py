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
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from alternating import compare  # noqa: E402

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
    servers = {"without": start(False), "with": start(True)}
    compare(servers, args.rounds, args.seconds, ("plain", "recording"))
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
