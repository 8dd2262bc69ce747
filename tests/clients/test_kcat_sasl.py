"""kcat (Debian's package, librdkafka 2.0) logging in over SASL_PLAINTEXT with each mechanism. librdkafka 2.0 sends
its own SCRAM nonce twice in the client-final message; Kafka 3.9 lets it in, and so must kafka-shim."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.sasl_setup import USERS, listener_address, sasl_properties

pytestmark = pytest.mark.clients
TIMEOUT = 60


@pytest.fixture(scope="module")
def sasl_address() -> str:
    with EmbeddedBroker(BrokerConfig.from_properties(sasl_properties())) as broker:
        host, port = listener_address(broker.broker, "SASL_PLAINTEXT")
        yield f"{host}:{port}"


def kcat_metadata(address: str, mechanism: str, user: str, password: str) -> subprocess.CompletedProcess:
    kcat = shutil.which("kcat")
    assert kcat is not None, "kcat is missing: scripts/ensure-kcat installs it"
    return subprocess.run([kcat, "-b", address, "-L", "-m", "30", "-X", "security.protocol=SASL_PLAINTEXT",
                           "-X", f"sasl.mechanism={mechanism}", "-X", f"sasl.username={user}", "-X", f"sasl.password={password}"],
                          capture_output=True, text=True, timeout=TIMEOUT)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kcat_logs_in(sasl_address: str, mechanism: str) -> None:
    done = kcat_metadata(sasl_address, mechanism, "alice", USERS["alice"])
    assert done.returncode == 0, done.stderr
    assert "1 brokers:" in done.stdout
