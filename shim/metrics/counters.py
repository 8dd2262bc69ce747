"""The broker's counters, kept as plain dicts on the event loop and read by the Prometheus collector when scraped.

Kafka's names (its JMX MBeans, as the JMX exporter renders them) where Kafka has the metric:

- ``kafka_network_requestmetrics_requests_total{request,version}``: RequestMetrics RequestsPerSec.
- ``kafka_network_requestmetrics_errors_total{request,error}``: RequestMetrics ErrorsPerSec. kafka-shim counts the
  answer's top-level error code (Kafka counts every error code in the answer), and ``error="NONE"`` otherwise.
- ``kafka_network_requestmetrics_totaltimems{request}``: RequestMetrics TotalTimeMs, as a histogram (milliseconds).
- ``kafka_server_socket_server_metrics_incoming_byte_total`` / ``..._outgoing_byte_total`` / ``..._connection_count``
  ``{listener}``: the socket server's incoming-byte-total, outgoing-byte-total and connection-count.
- ``kafka_server_authorizer_metrics_authorization_allowed_total`` / ``..._denied_total``: authorizer-metrics
  authorization-allowed / -denied (Kafka exposes them as rates per minute; a counter gives the same with rate()).
- ``kafka_shim_connections_closed_total{reason}``: connections the broker closed instead of answering (kafka-shim's own).
"""

from __future__ import annotations

from bisect import bisect_left

# Histogram bucket bounds of TotalTimeMs, in milliseconds.
LATENCY_BUCKETS_MS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0)


class BrokerMetrics:
    """Counters updated on the broker's event loop (one thread: no locks); ``snapshot`` copies them for a scrape."""

    def __init__(self) -> None:
        self.errors: dict[tuple[int, int], int] = {}  # (api key, error code) -> count
        # The frame's first 4 bytes (api key, version) -> bucket counts (+Inf last), then the sum of the times
        self.latency: dict[bytes, list[float]] = {}
        self.io: dict[str, list[int]] = {}  # listener -> [bytes received, bytes sent]
        self.connections: dict[str, int] = {}  # listener -> open connections
        self.closed: dict[str, int] = {}  # reason -> connections closed instead of answered
        self.allowed = 0
        self.denied = 0

    def request(self, frame: bytes, elapsed_ms: float, listener: str, size_out: int) -> None:
        """One answered request: ``frame`` is the request without its size prefix (its header gives key and version).
        Two dictionary probes per request: the latency buckets also count the requests, the listener's pair holds
        both byte totals."""
        key = frame[:4]  # api key and version, as the header's first four bytes: no decoding on the loop
        buckets = self.latency.get(key)
        if buckets is None:
            buckets = self.latency[key] = [0.0] * (len(LATENCY_BUCKETS_MS) + 2)
        buckets[bisect_left(LATENCY_BUCKETS_MS, elapsed_ms)] += 1
        buckets[-1] += elapsed_ms
        io = self.io.get(listener)
        if io is None:
            io = self.io[listener] = [0, 0]
        io[0] += len(frame) + 4
        io[1] += size_out

    def answered(self, api_key: int, error: int) -> None:
        key = (api_key, error)
        self.errors[key] = self.errors.get(key, 0) + 1

    def connection_opened(self, listener: str) -> None:
        self.connections[listener] = self.connections.get(listener, 0) + 1

    def connection_closed(self, listener: str) -> None:
        self.connections[listener] = self.connections.get(listener, 0) - 1

    def closed_instead_of_answering(self, reason: str) -> None:
        self.closed[reason] = self.closed.get(reason, 0) + 1

    def authorized(self, allowed: bool) -> None:
        if allowed:
            self.allowed += 1
        else:
            self.denied += 1

    def snapshot(self) -> BrokerMetrics:
        """A copy to read from another thread (each dict copy is atomic under the interpreter lock)."""
        copy = BrokerMetrics()
        copy.errors = dict(self.errors)
        copy.io = {k: list(v) for k, v in dict(self.io).items()}
        copy.latency = {k: list(v) for k, v in dict(self.latency).items()}
        copy.connections, copy.closed = dict(self.connections), dict(self.closed)
        copy.allowed, copy.denied = self.allowed, self.denied
        return copy
