"""The Prometheus endpoint: a collector over ``BrokerMetrics`` on prometheus-client's HTTP server.

A registry of its own (not prometheus-client's global one), so an application that embeds kafka-shim keeps its own
metrics apart; the server runs in prometheus-client's thread and reads a snapshot of the counters per scrape.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.protocol.framing import api_name
from kafka_shim.shim.metrics.counters import LATENCY_BUCKETS_MS, BrokerMetrics


class _Collector:
    def __init__(self, metrics: BrokerMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

        m = self.metrics.snapshot()
        requests = CounterMetricFamily("kafka_network_requestmetrics_requests", "Requests answered (Kafka's RequestsPerSec)",
                                       labels=["request", "version"])
        for head, counts in sorted(m.latency.items()):
            key, version = struct.unpack(">hh", head)
            requests.add_metric([api_name(key), str(version)], sum(counts[:-1]))
        yield requests
        errors = CounterMetricFamily("kafka_network_requestmetrics_errors",
                                     "Answers by top-level error code (Kafka's ErrorsPerSec)", labels=["request", "error"])
        for (key, code), count in sorted(m.errors.items()):
            errors.add_metric([api_name(key), _error_name(code)], count)
        yield errors
        latency = HistogramMetricFamily("kafka_network_requestmetrics_totaltimems",
                                        "Time from receiving a request to its answer, ms (Kafka's TotalTimeMs)",
                                        labels=["request"])
        per_api: dict[int, list[float]] = {}
        for head, counts in m.latency.items():  # per (key, version) on the loop; Kafka's TotalTimeMs is per request type
            merged = per_api.setdefault(struct.unpack(">hh", head)[0], [0.0] * len(counts))
            for i, c in enumerate(counts):
                merged[i] += c
        for key, counts in sorted(per_api.items()):
            cumulative, buckets = 0.0, []
            for bound, count in zip((*map(str, LATENCY_BUCKETS_MS), "+Inf"), counts[:-1], strict=True):
                cumulative += count
                buckets.append((bound, cumulative))
            latency.add_metric([api_name(key)], buckets, counts[-1])
        yield latency
        for index, name, text in ((0, "incoming_byte", "Request bytes received"), (1, "outgoing_byte", "Answer bytes sent")):
            family = CounterMetricFamily(f"kafka_server_socket_server_metrics_{name}", text, labels=["listener"])
            for listener, pair in sorted(m.io.items()):
                family.add_metric([listener], pair[index])
            yield family
        connections = GaugeMetricFamily("kafka_server_socket_server_metrics_connection_count", "Open connections",
                                        labels=["listener"])
        for listener, value in sorted(m.connections.items()):
            connections.add_metric([listener], value)
        yield connections
        yield CounterMetricFamily("kafka_server_authorizer_metrics_authorization_allowed", "Authorizations allowed",
                                  value=m.allowed)
        yield CounterMetricFamily("kafka_server_authorizer_metrics_authorization_denied", "Authorizations denied",
                                  value=m.denied)
        closed = CounterMetricFamily("kafka_shim_connections_closed", "Connections closed instead of answering",
                                     labels=["reason"])
        for reason, count in sorted(m.closed.items()):
            closed.add_metric([reason], count)
        yield closed


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def start_exporter(metrics: BrokerMetrics, host: str, port: int) -> tuple[Any, int]:
    """Serve /metrics on ``host:port`` (0: a free port); returns (server, bound port). ``server.shutdown()`` stops it."""
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(metrics))
    server, _thread = start_http_server(port, addr=host, registry=registry)
    return server, server.server_address[1]


__all__ = ["start_exporter"]
