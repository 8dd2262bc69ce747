"""Time from `kafka-shim serve` to the first accepted connection.

    .venv/bin/python bench/startup.py [--runs 10]

Each run starts the broker on a fixed free port and connects in a tight loop until
the connect succeeds; the figure is spawn-to-accept wall time. A bare
`python -c pass` is timed in the same run as the floor the interpreter sets.
Target: under 0.3 s.
"""

from __future__ import annotations

import argparse
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def time_serve() -> float:
    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--log-level", "warning"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    try:
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return time.perf_counter() - started
            except OSError:
                if proc.poll() is not None:
                    raise SystemExit("kafka-shim exited before accepting connections") from None
                time.sleep(0.002)
    finally:
        proc.terminate()
        proc.wait()


def time_bare_python() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"python {platform.python_version()}")
    time_serve()  # warm the OS file cache and __pycache__
    serve = [time_serve() for _ in range(args.runs)]
    bare = [time_bare_python() for _ in range(args.runs)]
    print(f"kafka-shim serve -> accepting: median {statistics.median(serve) * 1000:.0f} ms, "
          f"min {min(serve) * 1000:.0f} ms, max {max(serve) * 1000:.0f} ms over {args.runs} runs")
    print(f"python -c pass (floor):        median {statistics.median(bare) * 1000:.0f} ms")
    verdict = "meets" if statistics.median(serve) < 0.3 else "MISSES"
    print(f"target < 300 ms: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
