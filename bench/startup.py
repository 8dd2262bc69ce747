"""Time from `kafka-shim serve` to the first accepted connection, and to the first answered request.

    .venv/bin/python bench/startup.py [--runs 10]

Each run starts the broker on a fixed free port and connects in a tight loop until the connect succeeds: the
spawn-to-accept wall time. The same connection then sends ApiVersions v0 and waits for the answer, which every
client asks first (kafka-shim imports a handler module on the first request of its API, so this second figure
includes loading the ApiVersions handler). kafka-shim's bytecode is compiled first, as `pip install` does; the
same start with no bytecode at all (every module compiled from source at each start, which is what a checkout
run with PYTHONDONTWRITEBYTECODE=1 does) is timed too, as is a bare `python -c pass`, the floor the interpreter
sets. Target: under 0.3 s to accepting.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import platform
import resource
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# ApiVersions v0, correlation id 1, client id "bench": request header v1 and an empty body.
API_VERSIONS_V0 = struct.pack(">ihhih5s", 2 + 2 + 4 + 2 + 5, 18, 0, 1, 5, b"bench")


def compile_bytecode() -> None:
    """Compile kafka-shim's modules as `pip install` does (py_compile writes them whatever PYTHONDONTWRITEBYTECODE says)."""
    for name in ("authorizer", "protocol", "shim", "traces"):
        spec = importlib.util.find_spec(f"kafka_shim.{name}")
        for location in spec.submodule_search_locations or [] if spec is not None else []:
            compileall.compile_dir(location, quiet=1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise SystemExit("kafka-shim closed the connection instead of answering ApiVersions")
        data += chunk
    return data


def _cpu_seconds(pid: int) -> float:
    """CPU (user + sys) a live process has used so far: moved less by the machine's other load than wall time."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")  # not Linux
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def time_serve(env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(spawn -> accepted, spawn -> ApiVersions answered, CPU used by then), in seconds."""
    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--log-level", "warning"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        env=env,
    )
    try:
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                break
            except OSError:
                if proc.poll() is not None:
                    raise SystemExit("kafka-shim exited before accepting connections") from None
                time.sleep(0.002)
        accepted = time.perf_counter() - started
        with sock:
            sock.sendall(API_VERSIONS_V0)
            (size,) = struct.unpack(">i", _read_exactly(sock, 4))
            _read_exactly(sock, size)
        return accepted, time.perf_counter() - started, _cpu_seconds(proc.pid)
    finally:
        proc.terminate()
        proc.wait()


def time_bare_python() -> tuple[float, float]:
    """(wall, CPU) of `python -c pass`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:.0f} ms, min {min(values) * 1000:.0f} ms, max {max(values) * 1000:.0f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    compile_bytecode()
    time_serve()  # warm the OS file cache
    runs = [time_serve() for _ in range(args.runs)]
    with tempfile.TemporaryDirectory() as empty:
        # No bytecode to find and none written: every module is compiled from source at each start.
        source_env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": empty}
        from_source = [time_serve(source_env) for _ in range(max(3, args.runs // 3))]
    bare = [time_bare_python() for _ in range(args.runs)]
    accepted, answered, cpu = [r[0] for r in runs], [r[1] for r in runs], [r[2] for r in runs]
    print(f"kafka-shim serve -> accepting:            {_ms(accepted)} over {args.runs} runs")
    print(f"kafka-shim serve -> ApiVersions answered: {_ms(answered)}; CPU used by then: median {statistics.median(cpu) * 1000:.0f} ms")
    print(f"the same with no bytecode (from source):  {_ms([r[0] for r in from_source])} to accepting over {len(from_source)} runs")
    print(f"python -c pass (floor):                   median {statistics.median(w for w, _ in bare) * 1000:.0f} ms, "
          f"CPU {statistics.median(c for _, c in bare) * 1000:.0f} ms")
    verdict = "meets" if statistics.median(accepted) < 0.3 else "MISSES"
    print(f"target < 300 ms to accepting: {verdict} ({statistics.median(accepted) / 0.3:.2f}x of the target); "
          f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
