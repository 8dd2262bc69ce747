"""The plain parts behind the config APIs: incremental operations, dynamic broker configs, their checks and their
file, the Scala HashMap order of describe answers, topic name messages and broker loggers."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.cluster.configs.alter_ops import AlterError, ConfigOp, OpType, apply_broker_ops, apply_topic_ops, java_split
from kafka_shim.shim.cluster.configs.broker_configs import BROKER_CONFIGS, is_kafka_broker_key, override_properties, synonyms_of
from kafka_shim.shim.cluster.configs.broker_describe import describe_broker_configs
from kafka_shim.shim.cluster.configs.definition import ConfigSource
from kafka_shim.shim.cluster.configs.dynamic_broker import (
    BROKER_CONFIGS_FILE,
    BrokerConfigError,
    DynamicBrokerConfigs,
    validate_dynamic_broker_configs,
    validate_reconfiguration,
)
from kafka_shim.shim.cluster.configs.loggers import BrokerLoggers
from kafka_shim.shim.cluster.configs.scala_order import scala_hashmap_order, scala_table_size
from kafka_shim.shim.cluster.topics import invalid_topic_name
from kafka_shim.shim.config.properties import load_properties

S, D, APPEND, SUBTRACT = OpType.SET, OpType.DELETE, OpType.APPEND, OpType.SUBTRACT


def test_java_split_drops_trailing_empties_but_keeps_a_lone_empty_string() -> None:
    assert java_split("a,b,,") == ["a", "b"]
    assert java_split(",a") == ["", "a"]
    assert java_split("") == [""]
    assert java_split(",,") == []


def test_topic_list_operations_follow_the_controller() -> None:
    start = {"retention.ms": "5"}
    assert apply_topic_ops(start, [ConfigOp("cleanup.policy", APPEND, "compact")]) == {**start, "cleanup.policy": "delete,compact"}
    assert apply_topic_ops({"cleanup.policy": "delete,compact"}, [ConfigOp("cleanup.policy", SUBTRACT, "delete,nope")]) == {
        "cleanup.policy": "compact"}
    assert apply_topic_ops(start, [ConfigOp("retention.ms", D, None), ConfigOp("segment.ms", S, "9")]) == {"segment.ms": "9"}
    with pytest.raises(AlterError) as caught:
        apply_topic_ops(start, [ConfigOp("retention.ms", APPEND, "1")])
    assert (caught.value.error_code, caught.value.message) == (
        ErrorCode.INVALID_CONFIG, "Can't APPEND to key retention.ms because its type is not LIST.")


def test_broker_list_operations_follow_the_forwarding_broker() -> None:
    assert apply_broker_ops({}, [ConfigOp("log.cleanup.policy", APPEND, "compact")]) == {"log.cleanup.policy": "delete,compact"}
    assert apply_broker_ops({}, [ConfigOp("log.cleanup.policy", SUBTRACT, "delete")]) == {"log.cleanup.policy": ""}
    with pytest.raises(AlterError) as caught:
        apply_broker_ops({}, [ConfigOp("message.max.bytes", SUBTRACT, "1")])
    assert caught.value.message == "Config value subtract is not allowed for config key: message.max.bytes"
    with pytest.raises(AlterError) as caught:
        apply_broker_ops({}, [ConfigOp("made.up", APPEND, "1")])
    assert (caught.value.error_code, caught.value.message) == (ErrorCode.UNKNOWN_SERVER_ERROR, None)


def test_dynamic_checks_name_the_refused_keys() -> None:
    validate_dynamic_broker_configs({"message.max.bytes": "5", "made.up.key": "x"}, per_broker=False)
    with pytest.raises(BrokerConfigError, match=r"^Cannot update these configs dynamically: Set\(num.partitions\)$"):
        validate_dynamic_broker_configs({"num.partitions": "3"}, per_broker=True)
    with pytest.raises(BrokerConfigError, match=r"broker id must be specified: Set\(listeners\)"):
        validate_dynamic_broker_configs({"listeners": "PLAINTEXT://:1"}, per_broker=False)
    with pytest.raises(BrokerConfigError, match=r"Invalid value x for configuration log.segment.bytes: Not a number of type INT"):
        validate_dynamic_broker_configs({"log.segment.bytes": "x"}, per_broker=True)


def test_dynamic_configs_override_static_synonyms_and_are_kept_in_the_data_directory(tmp_path: Path) -> None:
    static = {"log.retention.hours": "24", "node.id": "1"}
    first = DynamicBrokerConfigs(static, 1, tmp_path)
    first.replace(True, {"log.retention.ms": "1000"})
    first.replace(False, {"message.max.bytes": "2000"})
    effective = first.effective_properties()
    assert "log.retention.hours" not in effective and effective["log.retention.ms"] == "1000"
    assert effective["message.max.bytes"] == "2000"
    second = DynamicBrokerConfigs(static, 1, tmp_path)
    second.load()
    assert (second.per_broker, second.cluster_default) == ({"log.retention.ms": "1000"}, {"message.max.bytes": "2000"})
    (tmp_path / BROKER_CONFIGS_FILE).write_text("{broken")
    with pytest.raises(ValueError, match="fix or remove the file"):
        DynamicBrokerConfigs(static, 1, tmp_path).load()


def test_broker_describe_sources_and_synonyms() -> None:
    entries = {e.name: e for e in describe_broker_configs({"log.retention.hours": "24"}, {"message.max.bytes": "9"},
                                                          {"message.max.bytes": "8"}, per_broker=True)}
    assert entries["broker.id"].value is not None and entries["broker.id"].read_only
    mmb = entries["message.max.bytes"]
    assert (mmb.value, mmb.source, mmb.read_only) == ("9", ConfigSource.DYNAMIC_BROKER_CONFIG, False)
    assert [s.source for s in mmb.synonyms] == [ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                                                ConfigSource.DEFAULT_CONFIG]
    assert entries["log.retention.hours"].source == ConfigSource.STATIC_BROKER_CONFIG
    defaults = describe_broker_configs({}, {}, {"message.max.bytes": "8"}, per_broker=False)
    assert [(e.name, e.value, e.source) for e in defaults] == [("message.max.bytes", "8", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]


def test_broker_key_knowledge() -> None:
    assert len(BROKER_CONFIGS) > 300 and BROKER_CONFIGS["message.max.bytes"].dynamic
    assert synonyms_of("listener.name.internal.plain.sasl.jaas.config") == ("listener.name.internal.plain.sasl.jaas.config",
                                                                           "sasl.jaas.config")
    assert is_kafka_broker_key("num.io.threads") and not is_kafka_broker_key("num.io.thread")
    assert override_properties({"log.retention.hours": "1", "x": "y"}, {"log.retention.ms": "5"}) == {"x": "y", "log.retention.ms": "5"}


def test_scala_hashmap_order_by_bucket_then_signed_hash() -> None:
    assert scala_table_size(11) == 16 and scala_table_size(12) == 32
    keys = ["b", "a", "c"]
    assert scala_hashmap_order(keys) == ["a", "b", "c"]  # one-letter keys hash to their code point
    assert sorted(scala_hashmap_order(["x", "y", "retention.ms"])) == ["retention.ms", "x", "y"]


def test_topic_name_messages_are_3_9s() -> None:
    assert invalid_topic_name("ok-name") is None
    assert invalid_topic_name("") == "Topic name is invalid: the empty string is not allowed"
    assert invalid_topic_name("..") == "Topic name is invalid: '..' is not allowed"
    assert invalid_topic_name("a" * 250) == f"Topic name is invalid: the length of '{'a' * 250}' is longer than the max allowed length 249"


def test_broker_loggers() -> None:
    loggers = BrokerLoggers()

    def described(*names: str) -> list[str | None]:
        levels = {e.name: e.value for e in loggers.describe()}
        return [levels.get(name) for name in names]

    # A Kafka 3.9 broker's loggers; one without a level of its own shows its nearest configured ancestor's.
    assert described("root", "kafka", "kafka.server.ReplicaManager", "kafka.request.logger", "com.yammer.metrics.reporting.JmxReporter") == [
        "INFO", "INFO", "INFO", "WARN", "INFO"]
    loggers.alter(True, "1", 1, [ConfigOp("root", S, "DEBUG"), ConfigOp("kafka", S, "WARN")], validate_only=False)
    assert described("root", "kafka.server.ReplicaManager", "kafka.request.logger", "com.yammer.metrics.reporting.JmxReporter") == [
        "DEBUG", "WARN", "WARN", "DEBUG"]
    loggers.alter(True, "1", 1, [ConfigOp("kafka.server.ReplicaManager", S, "TRACE")], validate_only=False)
    assert described("kafka.server.ReplicaManager") == ["TRACE"]
    loggers.alter(True, "1", 1, [ConfigOp("kafka.server.ReplicaManager", D, None)], validate_only=False)
    assert described("kafka.server.ReplicaManager") == ["WARN"]  # its own level gone, it follows "kafka" again
    with pytest.raises(AlterError, match="Cannot set the log level of kafka to LOUD"):
        loggers.alter(True, "1", 1, [ConfigOp("kafka", S, "LOUD")], validate_only=False)
    with pytest.raises(AlterError, match=r"Logger kafka\.x does not exist!"):
        loggers.alter(True, "1", 1, [ConfigOp("kafka.x", S, "INFO")], validate_only=False)
    with pytest.raises(AlterError) as caught:
        loggers.alter(False, "1", 1, [ConfigOp("root", S, "INFO")], validate_only=False)
    assert caught.value.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_config_admin_orders_its_checks_as_kafka_without_a_socket() -> None:
    from kafka_shim.shim.cluster.configs.admin import BROKER, TOPIC, AlterResource, ConfigAdmin, Refused
    from kafka_shim.shim.cluster.topics import Topic

    topics = {"orders": Topic("orders", uuid.uuid4(), [], {"retention.ms": "5"})}
    changed: list[tuple[str, dict]] = []
    admin = ConfigAdmin(DynamicBrokerConfigs({}, 1), topics, 1, set_topic_configs=lambda n, c: changed.append((n, c)),
                        broker_properties_changed=lambda p: changed.append(("<broker>", p)))
    allow_all = lambda kind, name: True  # noqa: E731
    deny_topics = lambda kind, name: kind != TOPIC  # noqa: E731
    resources = [
        AlterResource(TOPIC, "orders", [ConfigOp("retention.ms", S, "9")]),
        AlterResource(TOPIC, "absent", [ConfigOp("retention.ms", S, "x")]),   # values are checked before existence
        AlterResource(TOPIC, "absent", [ConfigOp("retention.ms", S, "1")]),   # a duplicate: both refused
        AlterResource(BROKER, "1", [ConfigOp("num.partitions", S, "2")]),
        AlterResource(BROKER, "", [ConfigOp("message.max.bytes", S, "2000")]),
    ]
    results = admin.alter(resources, incremental=True, validate_only=False, authorize=allow_all)
    assert [code for code, _ in results] == [0, 42, 42, 42, 0]
    assert results[1][1] == "Each resource must appear at most once."
    assert changed[0] == ("orders", {"retention.ms": "9"}) and changed[1][1]["message.max.bytes"] == "2000"
    denied = admin.alter([AlterResource(TOPIC, "absent", [ConfigOp("retention.ms", S, "x")])], True, False, deny_topics)
    assert denied == [(29, "Topic authorization failed.")]  # authorization before any value check
    with pytest.raises(Refused) as caught:
        admin.describe(BROKER, "2")
    assert caught.value.message == "Unexpected broker id, expected 1 or empty string, but received 2"
    assert [e.name for e in admin.describe(BROKER, "")] == ["message.max.bytes"]


def _refusal(dynamic: DynamicBrokerConfigs, configs: dict[str, str], per_broker: bool = True) -> str | None:
    """What Kafka's broker answers (INVALID_REQUEST's message) to a validate-only alteration of these configs, or None."""
    wanted = {**dynamic.configs_of(per_broker), **configs}
    try:
        validate_dynamic_broker_configs(wanted, per_broker)
        validate_reconfiguration(dynamic.effective_properties(), dynamic.effective_with(per_broker, wanted))
    except BrokerConfigError as error:
        return error.message
    return None


def _wrapped(reason: str) -> str:
    return f"Invalid value org.apache.kafka.common.config.ConfigException: {reason} for configuration Invalid dynamic configuration"


def test_each_served_listener_checks_its_connection_limits_network_threads_and_overrides() -> None:
    """The shipped server.properties (PLAINTEXT, SASL_PLAINTEXT): each listener's reconfigurables, in listener order
    (tests/differential/test_config_probe_findings.py compares them with Kafka 3.9)."""
    dynamic = DynamicBrokerConfigs(load_properties(Path(__file__).parents[3] / "examples" / "server.properties"), node_id=1)
    for per_broker in (True, False):
        for listener in ("plaintext", "sasl_plaintext"):
            for key in ("max.connections", "max.connection.creation.rate"):
                assert _refusal(dynamic, {f"listener.name.{listener}.{key}": "0"}, per_broker) == _wrapped(f"Invalid {key} 0")
                assert _refusal(dynamic, {f"listener.name.{listener}.{key}": "-1"}, per_broker) == (
                    f"Invalid value -1 for configuration {key}: Value must be at least 0")
                assert _refusal(dynamic, {f"listener.name.{listener}.{key}": "5"}, per_broker) is None
            assert _refusal(dynamic, {f"listener.name.{listener}.socket.send.buffer.bytes": "x"}) == _wrapped(
                "Invalid value x for configuration socket.send.buffer.bytes: Not a number of type INT")
            assert _refusal(dynamic, {f"listener.name.{listener}.num.network.threads": "7"}, per_broker) == _wrapped(
                "Dynamic thread count update validation failed for num.network.threads=7, value should not be greater than "
                "double the current value 3")
        assert _refusal(dynamic, {"max.connections": "0"}, per_broker) == _wrapped("Invalid max.connections 0")
        assert _refusal(dynamic, {"max.connections": "0", "listener.name.plaintext.max.connections": "9",
                                  "listener.name.sasl_plaintext.max.connections": "9"}, per_broker) is None
        assert _refusal(dynamic, {"listener.name.sasl_plaintext.max.connections": "0",
                                  "listener.name.plaintext.max.connection.creation.rate": "0"}, per_broker) == _wrapped(
            "Invalid max.connection.creation.rate 0")
        assert _refusal(dynamic, {"metric.reporters": "x", "num.network.threads": "100"}, per_broker) == _wrapped(
            "Dynamic thread count update validation failed for num.network.threads=100, value should not be greater than "
            "double the current value 3")
        for other in ("listener.name.nosuch.max.connections", "listener.name.PLAINTEXT.max.connections"):
            assert _refusal(dynamic, {other: "0"}, per_broker) is None
    assert _refusal(dynamic, {"listener.name.nosuch.socket.send.buffer.bytes": "x"}) is None
    dynamic.replace(True, {"listener.name.plaintext.num.network.threads": "6"})  # the listener's current count is 6 now
    assert _refusal(dynamic, {"listener.name.plaintext.num.network.threads": "2"}) == _wrapped(
        "Dynamic thread count update validation failed for num.network.threads=2, value should be at least half the "
        "current value 6")
    assert _refusal(dynamic, {"listener.name.plaintext.num.network.threads": "12"}) is None
