"""How long one large request holds up every other client (issue 12, defect 4), against Apache Kafka 3.9.

    .venv/bin/python bench/big_request.py [--topics 1000 50000 419410] [--max-bytes 4194304] [--without-kafka]

kafka-shim runs as ``kafka-shim serve`` in its own process, Apache Kafka 3.9 through scripts/real-kafka (both with
no authorizer and no automatic topic creation). For each shape one client sends a Metadata v0 request naming
``--topics`` topics (8-character names: 419,410 of them fill 4 MiB); a second client keeps one ApiVersions
request in flight the whole time. Reported: when the big answer arrived, how many small answers came before
it, the longest the small client waited for any one answer, and kafka-shim's peak RSS. Plain sockets and a
selector, so the client's own event loop does not decide what is measured.
"""

from __future__ import annotations

import argparse
import os
import selectors
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from real_kafka import start_real_kafka  # noqa: E402

from kafka_shim.protocol.codes import ApiKey  # noqa: E402
from kafka_shim.protocol.framing import encode_request  # noqa: E402
from kafka_shim.protocol.messages import ApiVersionsRequest, MetadataRequest  # noqa: E402


def big_metadata_request(topics: int) -> bytes:
    names = [MetadataRequest.MetadataRequestTopic(name=f"t{i:07d}") for i in range(topics)]
    return encode_request(ApiKey.METADATA, 0, 1, MetadataRequest(topics=names))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):  # peak resident set size
            return int(line.split()[1])
    return 0


class _Reader:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()

    def frames(self) -> int:
        """Read what is there; the number of complete response frames consumed."""
        try:
            chunk = self.sock.recv(1 << 20)
        except BlockingIOError:
            return 0
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        self.buf += chunk
        count = 0
        while len(self.buf) >= 4:
            (size,) = struct.unpack_from(">i", self.buf)
            if len(self.buf) < 4 + size:
                break
            del self.buf[: 4 + size]
            count += 1
        return count


def measure(port: int, topics: int) -> dict[str, float]:
    big = socket.create_connection(("127.0.0.1", port))
    small = socket.create_connection(("127.0.0.1", port))
    for s in (big, small):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    probe = encode_request(ApiKey.API_VERSIONS, 0, 7, ApiVersionsRequest())
    request = big_metadata_request(topics)
    # Warm both paths (lazy codegen) so the first small answer is not a compile.
    small.sendall(probe)
    small.recv(1 << 16)
    big.setblocking(False)
    small.setblocking(False)
    sel = selectors.DefaultSelector()
    big_reader, small_reader = _Reader(big), _Reader(small)
    sel.register(big, selectors.EVENT_READ, big_reader)
    sel.register(small, selectors.EVENT_READ, small_reader)
    now = time.perf_counter
    started = now()
    small.sendall(probe)
    sent_at = now()
    longest_wait = 0.0
    small_answers = 0
    view = memoryview(request)
    big_done_at = None
    while big_done_at is None:
        if view:  # keep writing the big request as the broker takes it
            try:
                sent = big.send(view[: 1 << 20])
                view = view[sent:]
            except BlockingIOError:
                pass
        for key, _ in sel.select(timeout=0.001 if view else 1.0):
            got = key.data.frames()
            if key.data is big_reader and got:
                big_done_at = now()
            elif key.data is small_reader and got:
                longest_wait = max(longest_wait, now() - sent_at)
                small_answers += got
                small.sendall(probe)
                sent_at = now()
        if now() - started > 600:
            raise TimeoutError("no answer to the big request in 10 minutes")
    longest_wait = max(longest_wait, now() - sent_at)
    big.close()
    small.close()
    return {
        "big_answer_s": big_done_at - started,
        "small_answers_before_big": small_answers,
        "longest_small_wait_s": longest_wait,
    }


def _start_shim(max_bytes: int) -> tuple[subprocess.Popen, int]:
    port = _free_port()
    exe = Path(sys.executable).with_name("kafka-shim")
    server = subprocess.Popen(
        [str(exe), "serve", "--log-level", "warning", "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
         "--override", f"socket.request.max.bytes={max_bytes}", "--override", "auto.create.topics.enable=false"],
        cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return server, port
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise SystemExit("kafka-shim did not start") from None
            time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, nargs="+", default=[1_000, 50_000, 419_410])
    parser.add_argument("--max-bytes", type=int, default=4 * 1024 * 1024)
    parser.add_argument("--without-kafka", action="store_true", help="measure kafka-shim only")
    args = parser.parse_args()
    print("command:", " ".join(getattr(sys, "orig_argv", [sys.executable, *sys.argv])))
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    rows: list[tuple[str, int, dict[str, float]]] = []
    for topics in args.topics:
        server, port = _start_shim(args.max_bytes)  # a fresh process per shape, so peak RSS is the shape's own
        try:
            result = measure(port, topics)
            time.sleep(0.2)
            result["peak_rss_mib"] = round(_rss_kib(server.pid) / 1024, 1)
        finally:
            server.terminate()
            server.wait(timeout=10)
        rows.append(("kafka-shim", topics, result))
    if not args.without_kafka:
        kafka = start_real_kafka("authorizer.class.name=", "auto.create.topics.enable=false",
                                 f"socket.request.max.bytes={args.max_bytes}")
        try:
            port = int(kafka.plaintext.rsplit(":", 1)[1])
            measure(port, 1_000)  # warm the JVM's paths once
            rows += [("apache-kafka", topics, measure(port, topics)) for topics in args.topics]
        finally:
            kafka.stop()
    print(f"\n{'server':<13} {'topics':>8} {'big answer s':>13} {'small answers before':>21} {'longest small wait s':>21} {'peak RSS MiB':>13}")
    for server_name, topics, r in rows:
        rss = f"{r['peak_rss_mib']:.1f}" if "peak_rss_mib" in r else "-"
        print(f"{server_name:<13} {topics:>8} {r['big_answer_s']:>13.3f} {r['small_answers_before_big']:>21} "
              f"{r['longest_small_wait_s']:>21.3f} {rss:>13}")
    if not args.without_kafka:
        print()
        for topics in args.topics:
            ours = next(r for s, n, r in rows if s == "kafka-shim" and n == topics)
            theirs = next(r for s, n, r in rows if s == "apache-kafka" and n == topics)
            print(f"{topics:>8} topics: longest small wait kafka-shim / Kafka = "
                  f"{ours['longest_small_wait_s'] / max(theirs['longest_small_wait_s'], 1e-6):.2f}x; "
                  f"big answer kafka-shim / Kafka = {ours['big_answer_s'] / theirs['big_answer_s']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
