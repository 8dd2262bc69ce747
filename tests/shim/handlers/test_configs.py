"""The config APIs' own choices where Kafka's answer cannot be copied, over TCP: documentation links, BROKER_LOGGER
levels, and the start-up warning that no longer lists Kafka's own broker keys."""

from __future__ import annotations

import structlog

from kafka_shim.protocol.messages import DescribeConfigsRequest, IncrementalAlterConfigsRequest
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.wire import Wire

D, IA = DescribeConfigsRequest, IncrementalAlterConfigsRequest


def _address(broker: EmbeddedBroker) -> tuple[str, int]:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return host, int(port)


def test_documentation_is_a_link_and_an_unknown_subscription_is_empty() -> None:
    with EmbeddedBroker(BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0"})) as broker:
        broker.call(broker.broker.services.partitions.create_topic, "orders", 1, {})
        request = D(resources=[D.DescribeConfigsResource(resource_type=2, resource_name="orders", configuration_keys=["segment.ms"]),
                               D.DescribeConfigsResource(resource_type=16, resource_name="sub", configuration_keys=None)],
                    include_synonyms=False, include_documentation=True)
        with Wire(_address(broker)) as wire:
            topic, metrics = wire.request(32, 4, request).body.results
        assert [(e.name, e.value, e.config_type, e.documentation) for e in topic.configs] == [
            ("segment.ms", "604800000", 5, "https://kafka.apache.org/39/documentation.html#topicconfigs_segment.ms")]
        assert (metrics.error_code, metrics.configs) == (0, [])


def test_broker_logger_levels_are_recorded_and_described() -> None:
    with EmbeddedBroker(BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "3"})) as broker:
        change = IA(resources=[IA.AlterConfigsResource(resource_type=8, resource_name="3", configs=[
            IA.AlterableConfig(name="root", config_operation=0, value="DEBUG")])], validate_only=False)
        describe = D(resources=[D.DescribeConfigsResource(resource_type=8, resource_name="3", configuration_keys=None)])
        with Wire(_address(broker)) as wire:
            (answer,) = wire.request(44, 1, change).body.responses
            assert (answer.error_code, answer.error_message) == (0, None)
            (result,) = wire.request(32, 4, describe).body.results
        described = {e.name: (e.value, e.config_source) for e in result.configs}
        # The root's level, and that of a logger which follows it (no configured ancestor); "kafka" keeps its own.
        assert [described[n] for n in ("root", "com.yammer.metrics.reporting.JmxReporter", "kafka")] == [
            ("DEBUG", 6), ("DEBUG", 6), ("INFO", 6)]


def test_kafkas_broker_keys_are_not_reported_unknown_at_start() -> None:
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "num.io.threads": "8",
                                           "listener.name.plaintext.ssl.keystore.location": "/k", "made.up.key": "1"})
    with structlog.testing.capture_logs() as logs, EmbeddedBroker(config):
        pass
    (warning,) = [entry for entry in logs if entry["event"] == "unknown_config_keys"]
    assert warning["keys"] == ["made.up.key"]


def test_an_unknown_logger_operation_before_and_from_3_7() -> None:
    """Before 3.7 ConfigAdminManager refused an operation id it did not know by name (42); from 3.7 the Java
    RuntimeLoggerManager's switch on OpType.forId's null throws (-1 without a message). The 3.9 side is compared with a
    real broker in tests/differential/test_admin_probe_findings.py."""
    change = IA(resources=[IA.AlterConfigsResource(resource_type=8, resource_name="1", configs=[
        IA.AlterableConfig(name="root", config_operation=4, value="DEBUG")])], validate_only=False)
    answers = {}
    for release in ("3.6", "3.7"):
        config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "kafka.version": release})
        with EmbeddedBroker(config) as broker, Wire(_address(broker)) as wire:
            (answer,) = wire.request(44, 1, change).body.responses
            answers[release] = (answer.error_code, answer.error_message)
    assert answers == {"3.6": (42, "Unknown operation type 4 is not allowed for the BROKER_LOGGER resource"), "3.7": (-1, None)}
