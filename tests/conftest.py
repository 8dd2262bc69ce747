"""Shared fixtures: a kafka-shim broker on an ephemeral loopback port."""

from __future__ import annotations

import pytest
import structlog

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


@pytest.fixture(autouse=True)
def _structlog_left_as_found():
    """A test that configures structlog (to read what kafka-shim logs) and restores the config it saw must not leave
    structlog configured when it was not: the defaults would then print every later test's debug lines, which no
    application of kafka-shim's would see (used as a library it prints nothing until the application configures)."""
    was_configured = structlog.is_configured()
    yield
    if not was_configured and structlog.is_configured():
        structlog.reset_defaults()
