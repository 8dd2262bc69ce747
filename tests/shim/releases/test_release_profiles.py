"""``kafka.version``: a broker that presents itself as an older Kafka release — the API ranges that release's broker
advertised (from the release facts), served and listed in ApiVersions, and real clients negotiating down to them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer, KafkaProducer

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import ApiVersionsRequest
from kafka_shim.shim.client.wire import WireClient
from kafka_shim.shim.config.broker_config import BrokerConfig, ConfigError
from kafka_shim.shim.releases.profiles import KNOWN_RELEASES, UnknownRelease, api_ranges, release_line
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.consume import consume_values

ROOT = Path(__file__).resolve().parents[3]
FACTS = ROOT.parent / "shared" / "kafka-release-apis.json"


def _advertised(broker: EmbeddedBroker) -> dict[int, tuple[int, int]]:
    host, port = broker.bootstrap_servers.rsplit(":", 1)

    async def ask() -> dict[int, tuple[int, int]]:
        client = await WireClient.connect(host, int(port), client_id="release-test")
        try:
            answer = await client.request(ApiKey.API_VERSIONS, 0, ApiVersionsRequest())  # v0: every release serves it
        finally:
            await client.close()
        return {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}

    return asyncio.run(ask())


def _broker(release: str | None = None) -> EmbeddedBroker:
    props = {"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "group.initial.rebalance.delay.ms": "0",
             "offsets.topic.replication.factor": "1"}
    if release is not None:
        props["kafka.version"] = release
    return EmbeddedBroker(BrokerConfig.from_properties(props))


@pytest.mark.skipif(not FACTS.exists(), reason="the release facts (../shared/kafka-release-apis.json) are not beside the checkout")
def test_vendored_api_ranges_equal_what_the_script_generates_from_the_facts() -> None:
    script = ROOT / "scripts" / "vendor-releases"
    namespace = {"__file__": str(script), "__name__": "vendor_releases"}
    exec(compile(script.read_text(), str(script), "exec"), namespace)
    expected = namespace["render"](json.loads(FACTS.read_text()))
    assert (ROOT / "shim" / "releases" / "api_ranges.py").read_text() == expected, "run scripts/vendor-releases"


def test_release_names_and_unknown_release_message() -> None:
    assert release_line("2.8.2") == "2.8" and release_line("0.11.0.2") == "0.11" and release_line(" 3.9 ") == "3.9"
    assert api_ranges("3.9.0") is None
    assert KNOWN_RELEASES[0] == "0.11" and KNOWN_RELEASES[-1] == "3.9"
    with pytest.raises(UnknownRelease, match=r"'2\.9' is not a Kafka release.*0\.11, 1\.0.*3\.9"):
        release_line("2.9")
    with pytest.raises(ConfigError, match="not a Kafka release"):
        _broker("4.0").start()


@pytest.mark.parametrize("release", ["0.11", "1.0", "2.0", "2.3", "2.8", "3.0", "3.3"])
def test_api_versions_lists_the_release_ranges_that_kafka_shim_serves(release: str) -> None:
    with _broker() as current:
        served = _advertised(current)
    with _broker(release) as old:
        advertised = _advertised(old)
    wanted = api_ranges(release)
    expected = {key: (max(low, wanted[key][0]), min(high, wanted[key][1]))
                for key, (low, high) in served.items() if key in wanted
                and max(low, wanted[key][0]) <= min(high, wanted[key][1])}
    assert advertised == expected
    # What each release is known for: no authorized_operations before 2.3 (Metadata v8), no DescribeCluster before 2.8.
    assert (advertised[ApiKey.METADATA][1] >= 8) is (release >= "2.3")
    assert (ApiKey.DESCRIBE_CLUSTER in advertised) is (release >= "2.8")


@pytest.mark.parametrize("release", ["0.11", "1.0", "2.0", "2.8"])
def test_confluent_kafka_negotiates_down_to_the_emulated_release(release: str) -> None:
    with _broker(release) as broker:
        bootstrap = broker.bootstrap_servers
        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(5):
            producer.produce("old-" + release.replace(".", "-"), f"{i}".encode())
        assert producer.flush(30) == 0  # auto-created, as a broker of that release does by default
        assert sorted(consume_values({"bootstrap.servers": bootstrap}, "old-" + release.replace(".", "-"), 5, "g-old")) == [b"0", b"1", b"2", b"3", b"4"]


@pytest.mark.parametrize("release", ["1.0", "2.0"])
def test_kafka_python_negotiates_down_to_the_emulated_release(release: str) -> None:
    topic = "kp-" + release.replace(".", "-")
    with _broker(release) as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        producer.send(topic, b"hello").get(timeout=30)
        producer.close()
        consumer = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                                 group_id="kp", consumer_timeout_ms=30000)
        try:
            assert next(iter(consumer)).value == b"hello"
        finally:
            consumer.close()
