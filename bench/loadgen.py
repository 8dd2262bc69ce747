"""The load generator the server benchmarks share: pipelined requests over plain sockets, latency per answer.

Deliberately not asyncio, so the client's own event loop does not decide what is measured.
"""

from __future__ import annotations

import selectors
import socket
import time
from collections import deque
from collections.abc import Callable


class LoadConnection:
    __slots__ = ("buf", "sent_at", "sock")

    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self.buf = bytearray()
        self.sent_at: deque[float] = deque()


def drive(address: str, connections: int, in_flight: int, seconds: float, warmup: float,
          requests: Callable[[int], bytes]) -> tuple[int, float, list[float]]:
    """Keep `in_flight` requests outstanding on each connection; (answered, seconds, latencies) after the warm-up."""
    sel = selectors.DefaultSelector()
    conns = [LoadConnection(address) for _ in range(connections)]
    now = time.perf_counter
    for c in conns:
        sel.register(c.sock, selectors.EVENT_READ, c)
        c.sock.sendall(requests(in_flight))
        c.sent_at.extend([now()] * in_flight)
    latencies: list[float] = []
    done = 0
    measure_from = now() + warmup
    stop_at = measure_from + seconds
    measuring = False
    while True:
        t = now()
        if not measuring and t >= measure_from:
            measuring, done, latencies, measure_from = True, 0, [], t
        if t >= stop_at:
            break
        for key, _ in sel.select(timeout=1.0):
            c: LoadConnection = key.data
            data = c.sock.recv(1 << 20)
            if not data:
                raise ConnectionError(f"{address} closed the connection")
            c.buf += data
            buf, pos, answered = c.buf, 0, 0
            while len(buf) - pos >= 4:
                size = int.from_bytes(buf[pos : pos + 4], "big")
                if len(buf) - pos - 4 < size:
                    break
                pos += 4 + size
                answered += 1
            if answered:
                del buf[:pos]
                t = now()
                for _ in range(answered):
                    latencies.append(t - c.sent_at.popleft())
                c.sock.sendall(requests(answered))
                c.sent_at.extend([t] * answered)
                done += answered
    elapsed = now() - measure_from
    for c in conns:
        sel.unregister(c.sock)
        c.sock.close()
    return done, elapsed, latencies


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes from a blocking socket (ConnectionError when the peer closes first)."""
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data
