"""kafkajs 2.2.4 (Node.js) describes and alters topic and broker configs on kafka-shim (DescribeConfigs, legacy
AlterConfigs), and the topic's log obeys the change.

Node.js and kafkajs come from scripts/ensure-node and `npm ci` in tests/kafkajs (scripts/test runs both).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker

pytestmark = pytest.mark.clients

KAFKAJS_DIR = Path(__file__).resolve().parents[2] / "tests" / "kafkajs"


def run_kafkajs(bootstrap: str, steps: list[dict]) -> list[dict]:
    node = shutil.which("node")
    if node is None or not (KAFKAJS_DIR / "node_modules" / "kafkajs").is_dir():
        pytest.fail("kafkajs is not installed: run scripts/test (or scripts/ensure-node && npm ci --prefix tests/kafkajs)",
                    pytrace=False)
    proc = subprocess.run([node, str(KAFKAJS_DIR / "configs.js")], input=json.dumps({"brokers": [bootstrap], "steps": steps}),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)["results"]
    assert len(results) == len(steps)
    return results


def test_kafkajs_describes_and_alters_configs() -> None:
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "log.retention.hours": "48"})
    with EmbeddedBroker(config) as broker:
        broker.call(broker.broker.services.partitions.create_topic, "orders", 1, {"segment.ms": "3600000"})
        topic = {"type": "TOPIC", "name": "orders"}
        altered, described, this_broker, missing = run_kafkajs(broker.bootstrap_servers, [
            {"call": "alterConfigs", "args": {"validateOnly": False, "resources": [
                {**topic, "configEntries": [{"name": "retention.ms", "value": "90000"}]}]}},
            {"call": "describeConfigs", "args": {"includeSynonyms": True, "resources": [{**topic, "configNames": ["retention.ms", "segment.ms"]}]}},
            {"call": "describeConfigs", "args": {"includeSynonyms": False, "resources": [
                {"type": "BROKER", "name": "1", "configNames": ["log.retention.hours", "num.io.threads"]}]}},
            {"call": "describeConfigs", "args": {"includeSynonyms": False, "resources": [{"type": "TOPIC", "name": "absent"}]}},
        ])
        segment_ms = broker.call(lambda: broker.broker.services.partitions.get("orders", 0).log.config.segment_ms)
    assert altered["ok"], altered
    assert described["ok"], described
    entries = {e["configName"]: e for e in described["value"]["resources"][0]["configEntries"]}
    assert entries["retention.ms"]["configValue"] == "90000" and entries["retention.ms"]["configSource"] == 1
    assert [s["configSource"] for s in entries["retention.ms"]["configSynonyms"]] == [1]  # hours is not the primary synonym
    assert entries["segment.ms"]["configValue"] == str(7 * 24 * 3600 * 1000)  # legacy alter dropped the override
    assert segment_ms == 7 * 24 * 3600 * 1000
    brokers = {e["configName"]: e for e in this_broker["value"]["resources"][0]["configEntries"]}
    assert (brokers["log.retention.hours"]["configValue"], brokers["log.retention.hours"]["configSource"]) == ("48", 4)
    assert (brokers["num.io.threads"]["configValue"], brokers["num.io.threads"]["readOnly"]) == ("8", False)
    assert not missing["ok"] and missing["error"]["type"] == "UNKNOWN_TOPIC_OR_PARTITION"
