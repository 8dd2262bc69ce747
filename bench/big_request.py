"""How long one request at the size limit holds up every other client (issue 12, defect 4).

    .venv/bin/python bench/big_request.py [--topics 419410] [--max-bytes 4194304]

kafka-shim runs as ``kafka-shim serve`` in its own process. One client sends a Metadata v0 request naming
``--topics`` topics (8-character names: 419,410 of them fill 4 MiB); a second client keeps one ApiVersions
request in flight the whole time. Reported: when the big answer arrived, how many small answers came before
it, the longest the small client waited for any one answer, and the server's peak RSS. Plain blocking sockets
and a selector, so the client's own event loop does not decide what is measured.
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

from kafka_shim.protocol.framing import encode_request  # noqa: E402
from kafka_shim.protocol.messages import ApiVersionsRequest, MetadataRequest  # noqa: E402


def big_metadata_request(topics: int) -> bytes:
    names = [MetadataRequest.MetadataRequestTopic(name=f"t{i:07d}") for i in range(topics)]
    return encode_request(3, 0, 1, MetadataRequest(topics=names))


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
    probe = encode_request(18, 0, 7, ApiVersionsRequest())
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=419_410)
    parser.add_argument("--max-bytes", type=int, default=4 * 1024 * 1024)
    args = parser.parse_args()
    port = _free_port()
    exe = Path(sys.executable).with_name("kafka-shim")
    server = subprocess.Popen(
        [str(exe), "serve", "--log-level", "warning", "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
         "--override", f"socket.request.max.bytes={args.max_bytes}"],
        cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        rss_before = _rss_kib(server.pid)
        result = measure(port, args.topics)
        time.sleep(0.2)
        result["server_peak_rss_mib_before"] = round(rss_before / 1024, 1)
        result["server_peak_rss_mib_after"] = round(_rss_kib(server.pid) / 1024, 1)
    finally:
        server.terminate()
        server.wait(timeout=10)
    for key, value in result.items():
        print(f"{key:28} {value:.3f}" if isinstance(value, float) else f"{key:28} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
