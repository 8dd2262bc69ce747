"""One broker per data directory, as Kafka's LogManager locks ``<log.dir>/.lock``: a second broker (another process,
or another one in this process) is refused with Kafka's message, and a broker that stopped lets the next one in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafka_shim.shim.config.broker_config import BrokerConfig, ConfigError
from kafka_shim.shim.testing.embedded import EmbeddedBroker

ROOT = Path(__file__).resolve().parents[3]


def _config(data: Path) -> BrokerConfig:
    return BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data)})


def test_a_second_broker_on_the_same_directory_is_refused(tmp_path: Path) -> None:
    with EmbeddedBroker(_config(tmp_path)) as first:
        first.call(lambda: first.broker.services.partitions.create_topic("kept", 1, {}))
        with pytest.raises(ConfigError, match=r"Failed to acquire lock on file \.lock in .*another process or thread"):
            with EmbeddedBroker(_config(tmp_path)):
                pass
        done = subprocess.run([sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", "--override",
                               "listeners=PLAINTEXT://127.0.0.1:0", "--data-dir", str(tmp_path)],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode != 0 and "Failed to acquire lock on file .lock" in done.stderr, done
    with EmbeddedBroker(_config(tmp_path)) as second:  # the first released it when it stopped
        assert second.call(lambda: second.broker.services.partitions.get("kept", 0)) is not None
