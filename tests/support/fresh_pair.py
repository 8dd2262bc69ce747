"""A fresh Apache Kafka 3.9 and a fresh kafka-shim side by side, for differential tests that need brokers with no
history (no internal topics yet, tables sized by what they held)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.peers import _address, start_real_kafka, stop_real_kafka
from tests.support.wire import Wire


@contextmanager
def fresh_pair(directory: Path, shim_properties: dict[str, str]) -> Iterator[list[Wire]]:
    """Connections to both: Kafka's as its SASL super user, kafka-shim's to a PLAINTEXT listener of a broker made
    from ``shim_properties`` (no authorizer unless they name one), so that only the brokers' own answers differ."""
    kafka = start_real_kafka(directory)
    try:
        config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", **shim_properties})
        with EmbeddedBroker(config) as shim:
            admin = Wire(kafka.sasl)
            admin.sasl_plain("admin", "admin-secret")
            wires = [admin, Wire(_address("PLAINTEXT://" + shim.bootstrap_servers))]
            try:
                yield wires
            finally:
                for wire in wires:
                    wire.close()
    finally:
        stop_real_kafka(kafka)
