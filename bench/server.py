"""Metadata requests/s and latency over loopback: kafka-shim against librdkafka's mock broker.

    .venv/bin/python bench/server.py [--seconds 3] [--quick] [--json out.json]

Both servers run in their own processes; one load generator (this process, raw
sockets and pre-encoded Metadata v12 requests with no topics) drives each in turn
with the same four shapes: 1 or 8 connections, 1 or 16 requests in flight per
connection. Latency is measured per request, from the send to the response.
The mock is started through confluent-kafka (``test.mock.num.brokers``) and kept
alive by a child process that polls; Apache Kafka 3.9 (scripts/real-kafka, no
authorizer, small heap) joins the same run unless --without-kafka is given. On a 2-core machine the load generator
shares the CPU with the server under test, so absolute figures are lower bounds;
the ratio between the two servers is the number that matters.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from loadgen import drive, percentile, recv_exact  # noqa: E402
from real_kafka import start_real_kafka  # noqa: E402

from kafka_shim.protocol.framing import decode_response, encode_request  # noqa: E402
from kafka_shim.protocol.messages import MetadataRequest  # noqa: E402

MOCK_CHILD = """
import sys, time
from confluent_kafka import Producer
p = Producer({"test.mock.num.brokers": 1, "bootstrap.servers": ""})
md = p.list_topics(timeout=10)
b = next(iter(md.brokers.values()))
print(f"{b.host}:{b.port}", flush=True)
while True:
    p.poll(0.5)
"""


@dataclass
class Result:
    server: str
    connections: int
    in_flight: int
    requests: int
    seconds: float
    per_second: float
    p50_ms: float
    p99_ms: float


def start_shim(event_loop: str) -> tuple[subprocess.Popen, str]:
    args = [sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--log-level", "warning",
            "--event-loop", event_loop]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    return proc, line.split("://", 1)[1]


def start_mock() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-c", MOCK_CHILD], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return proc, proc.stdout.readline().strip()


def check_answers(address: str, request: bytes) -> None:
    """Both servers must really answer the request we time, with a broker list."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(request)
        size = int.from_bytes(recv_exact(sock, 4), "big")
        _, body = decode_response(3, 12, recv_exact(sock, size))
    if not body.brokers:
        raise SystemExit(f"{address} answered Metadata without brokers")



def run(server: str, address: str, shapes: list[tuple[int, int]], seconds: float, request: bytes) -> list[Result]:
    check_answers(address, request)
    results = []
    for connections, in_flight in shapes:
        done, elapsed, lat = drive(address, connections, in_flight, seconds, min(0.5, seconds / 3), lambda n: request * n)
        results.append(Result(server, connections, in_flight, done, round(elapsed, 3), done / elapsed,
                              percentile(lat, 0.50), percentile(lat, 0.99)))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="measured time per shape")
    parser.add_argument("--quick", action="store_true", help="1 s per shape (a smoke run)")
    parser.add_argument("--event-loop", choices=["auto", "asyncio", "uvloop"], default="auto", help="kafka-shim's event loop")
    parser.add_argument("--without-kafka", action="store_true", help="leave out the real Apache Kafka broker")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    seconds = 1.0 if args.quick else args.seconds
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, {seconds:g} s per shape, kafka-shim loop: {args.event_loop}")
    request = encode_request(3, 12, 1, MetadataRequest(topics=[]), client_id="bench")
    shapes = [(1, 1), (1, 16), (8, 1), (8, 16)]
    results: list[Result] = []
    for name, starter in (("kafka-shim", lambda: start_shim(args.event_loop)), ("librdkafka-mock", start_mock)):
        proc, address = starter()
        try:
            results += run(name, address, shapes, seconds, request)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    if not args.without_kafka:
        # With no authorizer: what kafka-shim serves in this bench.
        kafka = start_real_kafka("authorizer.class.name=")
        try:
            results += run("apache-kafka", kafka.plaintext, shapes, seconds, request)
        finally:
            kafka.stop()
    print()
    print(f"{'server':<16} {'conns':>5} {'in-flight':>9} {'req/s':>10} {'p50 ms':>8} {'p99 ms':>8}")
    for r in results:
        print(f"{r.server:<16} {r.connections:>5} {r.in_flight:>9} {r.per_second:>10.0f} {r.p50_ms:>8.3f} {r.p99_ms:>8.3f}")
    print()
    ratios = []
    for connections, in_flight in shapes:
        ours = next(r for r in results if r.server == "kafka-shim" and (r.connections, r.in_flight) == (connections, in_flight))
        mock = next(r for r in results if r.server == "librdkafka-mock" and (r.connections, r.in_flight) == (connections, in_flight))
        ratio = ours.per_second / mock.per_second
        ratios.append(ratio)
        verdict = "meets" if ratio >= 1.0 else "MISSES"
        print(f"{connections} conn x {in_flight:>2} in flight: kafka-shim / mock = {ratio:.2f}x ({verdict} the 1.0x target)")
    print(f"geometric mean ratio: {statistics.geometric_mean(ratios):.2f}x")
    if not args.without_kafka:
        kafka_ratios = []
        for connections, in_flight in shapes:
            ours = next(r for r in results if r.server == "kafka-shim" and (r.connections, r.in_flight) == (connections, in_flight))
            real = next(r for r in results if r.server == "apache-kafka" and (r.connections, r.in_flight) == (connections, in_flight))
            kafka_ratios.append(ours.per_second / real.per_second)
            print(f"{connections} conn x {in_flight:>2} in flight: kafka-shim / Apache Kafka = {kafka_ratios[-1]:.2f}x")
        print(f"geometric mean ratio vs Apache Kafka: {statistics.geometric_mean(kafka_ratios):.2f}x")
    if args.json:
        args.json.write_text(json.dumps({"results": [asdict(r) for r in results], "ratios": ratios}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
