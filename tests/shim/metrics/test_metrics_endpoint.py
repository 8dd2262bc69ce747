"""The Prometheus endpoint after real client traffic: what a scrape shows is what the clients caused."""

from __future__ import annotations

import socket
import struct
import time
import urllib.request

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient
from prometheus_client.parser import text_string_to_metric_families

from kafka_shim.shim.testing.handle import KafkaShim
from kafka_shim.shim.testing.options import ShimOptions


def _scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _deliver(config: dict, topic: str) -> KafkaError | None:
    reports: list = []
    producer = Producer(config | {"message.timeout.ms": 20000})
    producer.produce(topic, b"v", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(30)
    return reports[0]


def test_a_scrape_counts_requests_errors_decisions_bytes_and_connections() -> None:
    options = ShimOptions.from_marker({"listener": "SASL_PLAINTEXT", "mechanism": "PLAIN", "authorizer": True,
                                       "config": {"kafka.shim.metrics.port": "0"}})
    with KafkaShim(options) as shim:
        port = shim.embedded.broker.metrics_port
        before = _scrape(port)
        assert before[("kafka_server_authorizer_metrics_authorization_denied_total", ())] == 0
        shim.create_topic("orders")
        denied = _deliver(shim.confluent_config("alice"), "orders")
        assert denied is not None and denied.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        assert _deliver(shim.confluent_config("admin"), "orders") is None
        AdminClient(shim.confluent_config("admin")).list_topics(timeout=30)
        host, kafka_port = shim.bootstrap_servers.rsplit(":", 1)
        with socket.create_connection((host, int(kafka_port))) as raw:  # a frame Kafka closes the connection for
            raw.sendall(struct.pack(">i", 4) + b"\xff\xff\x00\x00")
            raw.settimeout(30)
            assert raw.recv(1) == b""
        metrics = _scrape(port)

    def value(name: str, **labels: str) -> float:
        return metrics.get((name, tuple(sorted(labels.items()))), 0.0)

    produce = sum(v for (n, labels), v in metrics.items()
                  if n == "kafka_network_requestmetrics_requests_total" and ("request", "Produce") in labels)
    assert produce >= 1  # admin's (alice's record fails on the Metadata answer, before any Produce)
    assert value("kafka_network_requestmetrics_totaltimems_count", request="Produce") == produce
    assert value("kafka_network_requestmetrics_totaltimems_sum", request="Produce") > 0
    assert sum(v for (n, labels), v in metrics.items()
               if n == "kafka_network_requestmetrics_requests_total" and ("request", "Metadata") in labels) >= 1
    assert value("kafka_server_authorizer_metrics_authorization_denied_total") >= 1  # alice on the topic
    assert value("kafka_server_authorizer_metrics_authorization_allowed_total") >= 1
    assert value("kafka_server_socket_server_metrics_incoming_byte_total", listener="SASL_PLAINTEXT") > 0
    assert value("kafka_server_socket_server_metrics_outgoing_byte_total", listener="SASL_PLAINTEXT") > 0
    assert value("kafka_shim_connections_closed_total", reason="request_rejected") >= 1
    # The SASL exchanges of the three clients are not requests here, their last SaslAuthenticate included.
    assert not [labels for (n, labels), v in metrics.items() if n.startswith("kafka_network_requestmetrics")
                and any(label[1].startswith("Sasl") for label in labels) and v]
    # Metadata answers carry no top-level error code: counted as NONE.
    assert value("kafka_network_requestmetrics_errors_total", request="Metadata", error="NONE") >= 1


def test_open_connections_are_a_gauge_per_listener() -> None:
    with KafkaShim(ShimOptions.from_marker({"config": {"kafka.shim.metrics.port": "0"}})) as shim:
        port = shim.embedded.broker.metrics_port
        host, kafka_port = shim.bootstrap_servers.rsplit(":", 1)
        sockets = [socket.create_connection((host, int(kafka_port))) for _ in range(3)]
        deadline = time.monotonic() + 30
        count = 0.0
        while count != 3 and time.monotonic() < deadline:  # the broker accepts them on its own loop
            count = _scrape(port).get(("kafka_server_socket_server_metrics_connection_count", (("listener", "PLAINTEXT"),)), 0)
        assert count == 3
        for s in sockets:
            s.close()
        while count != 0 and time.monotonic() < deadline + 30:
            count = _scrape(port).get(("kafka_server_socket_server_metrics_connection_count", (("listener", "PLAINTEXT"),)), 0)
        assert count == 0
