"""Shared fixtures: a kafka-shim broker on an ephemeral loopback port."""

from __future__ import annotations

import pytest

from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker


@pytest.fixture
def broker_config() -> BrokerConfig:
    return BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "7"})


@pytest.fixture
def broker(broker_config: BrokerConfig):
    """A broker running on its own thread, so blocking clients can talk to it."""
    with EmbeddedBroker(broker_config) as running:
        yield running
