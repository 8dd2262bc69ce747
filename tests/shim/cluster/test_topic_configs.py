"""Topic configs as Kafka 3.9 checks them: each type's parsing, ranges and choices, unknown and null keys, and the
cross-key checks, each failing with Kafka's INVALID_CONFIG message."""

from __future__ import annotations

import math

import pytest

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.cluster.configs.definition import (
    ConfigType,
    ConfigValueError,
    java_double_str,
    parse_type,
)
from kafka_shim.shim.cluster.configs.describe import describe_topic_configs
from kafka_shim.shim.cluster.configs.topic_configs import (
    TOPIC_CONFIGS,
    broker_log_defaults,
    topic_config_set,
    validate_topic_configs,
)


def _error(configs: dict[str, str | None], broker: dict[str, str] | None = None, existing: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigValueError) as raised:
        validate_topic_configs(configs, broker or {}, existing)
    assert raised.value.error_code is ErrorCode.INVALID_CONFIG
    return raised.value.message


def test_the_table_has_every_topic_key_of_kafka_3_9_in_its_order() -> None:
    names = list(TOPIC_CONFIGS)
    assert names[:3] == ["segment.bytes", "segment.ms", "segment.jitter.ms"]
    assert len(names) == 36
    assert {"message.timestamp.difference.max.ms", "remote.log.delete.on.disable", "compression.zstd.level"} <= set(names)


def test_no_overrides_give_kafkas_defaults() -> None:
    values = validate_topic_configs({}, {})
    assert values["retention.ms"] == 604800000
    assert values["cleanup.policy"] == ["delete"]
    assert values["max.message.bytes"] == 1048588
    assert values["min.cleanable.dirty.ratio"] == 0.5
    assert values["message.format.version"] == "3.0-IV1"
    assert values["local.retention.ms"] == -2


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"preallocate": "yes"}, "Invalid value yes for configuration preallocate: Expected value to be either true or false"),
        ({"segment.bytes": "1GB"}, "Invalid value 1GB for configuration segment.bytes: Not a number of type INT"),
        ({"segment.bytes": "2147483648"}, "Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT"),
        ({"segment.bytes": "13"}, "Invalid value 13 for configuration segment.bytes: Value must be at least 14"),
        ({"segment.ms": "0"}, "Invalid value 0 for configuration segment.ms: Value must be at least 1"),
        ({"retention.ms": "-2"}, "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
        ({"retention.ms": "1_000"}, "Invalid value 1_000 for configuration retention.ms: Not a number of type LONG"),
        ({"retention.ms": "9223372036854775808"}, "Invalid value 9223372036854775808 for configuration retention.ms: Not a number of type LONG"),
        ({"min.cleanable.dirty.ratio": "1.5"}, "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
        ({"min.cleanable.dirty.ratio": "-1e10"}, "Invalid value -1.0E10 for configuration min.cleanable.dirty.ratio: Value must be at least 0"),
        ({"min.cleanable.dirty.ratio": "half"}, "Invalid value half for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"),
        ({"cleanup.policy": "compact,purge"}, "Invalid value purge for configuration cleanup.policy: String must be one of: compact, delete"),
        ({"cleanup.policy": "compact,"}, "Invalid value  for configuration cleanup.policy: String must be one of: compact, delete"),
        ({"compression.type": "GZIP"}, "Invalid value GZIP for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"),
        ({"compression.gzip.level": "0"}, "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
        ({"compression.zstd.level": "23"}, "Invalid value 23 for configuration compression.zstd.level: Value must be no more than 22"),
        ({"message.timestamp.type": "createtime"}, "Invalid value createtime for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"),
        ({"message.format.version": "2.9"}, "Invalid value 2.9 for configuration message.format.version: Version 2.9 is not a valid version"),
        ({"message.format.version": "4.0"}, "Invalid value 4.0 for configuration message.format.version: Version 4.0 is not a valid version"),
        (
            {"leader.replication.throttled.replicas": "0:1, x"},
            "Invalid value [0:1, x] for configuration leader.replication.throttled.replicas: leader.replication.throttled.replicas "
            "must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
        ),
        ({"local.retention.bytes": "-3"}, "Invalid value -3 for configuration local.retention.bytes: Value must be at least -2"),
    ],
)
def test_a_bad_value_fails_with_kafkas_message(configs: dict[str, str], message: str) -> None:
    assert _error(configs) == message


@pytest.mark.parametrize(
    ("configs", "name", "expected"),
    [
        ({"preallocate": " TRUE "}, "preallocate", True),
        ({"cleanup.policy": " compact , delete "}, "cleanup.policy", ["compact", "delete"]),
        ({"cleanup.policy": ""}, "cleanup.policy", []),
        ({"retention.ms": "+5"}, "retention.ms", 5),
        ({"min.cleanable.dirty.ratio": "1d"}, "min.cleanable.dirty.ratio", 1.0),
        ({"min.cleanable.dirty.ratio": "0x1p-1"}, "min.cleanable.dirty.ratio", 0.5),
        ({"message.format.version": "2.8.0"}, "message.format.version", "2.8.0"),
        ({"message.format.version": "0.10.0"}, "message.format.version", "0.10.0"),
        ({"leader.replication.throttled.replicas": "*"}, "leader.replication.throttled.replicas", ["*"]),
        ({"follower.replication.throttled.replicas": "0:1,1:1"}, "follower.replication.throttled.replicas", ["0:1", "1:1"]),
        ({"compression.gzip.level": "-1"}, "compression.gzip.level", -1),
    ],
)
def test_values_parse_as_kafka_parses_them(configs: dict[str, str], name: str, expected: object) -> None:
    assert validate_topic_configs(configs, {})[name] == expected


def test_nan_passes_a_range_as_in_kafka() -> None:
    assert math.isnan(validate_topic_configs({"min.cleanable.dirty.ratio": "NaN"}, {})["min.cleanable.dirty.ratio"])


def test_the_first_bad_key_in_kafkas_order_is_reported() -> None:
    message = _error({"retention.ms": "x", "segment.bytes": "y"})
    assert message == "Invalid value y for configuration segment.bytes: Not a number of type INT"


def test_unknown_and_null_keys() -> None:
    assert _error({"retention.ms": "1", "retention.hours": "1"}) == "Unknown topic config name: retention.hours"
    assert _error({"retention.ms": None, "segment.ms": None}) == "Null value not supported for topic configs: retention.ms,segment.ms"


def test_min_compaction_lag_may_not_exceed_max() -> None:
    message = _error({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
    assert message == "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"
    # The broker's value takes part too.
    message = _error({"min.compaction.lag.ms": "10"}, {"log.cleaner.max.compaction.lag.ms": "9"})
    assert message == "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (9)"


def test_remote_storage_needs_the_system_enabled() -> None:
    assert _error({"remote.storage.enable": "true"}) == (
        "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
    )


def test_remote_storage_cross_checks_when_enabled() -> None:
    broker = {"remote.log.storage.system.enable": "true"}
    assert validate_topic_configs({"remote.storage.enable": "true"}, broker)["remote.storage.enable"] is True
    assert _error({"remote.storage.enable": "true", "cleanup.policy": "compact"}, broker) == (
        "Remote log storage is unsupported for the compacted topics"
    )
    assert _error({"remote.storage.enable": "true", "retention.bytes": "100", "local.retention.bytes": "200"}, broker) == (
        "Invalid value 200 for configuration local.retention.bytes: Value must not be more than retention.bytes property value: 100"
    )
    assert _error({"remote.storage.enable": "true", "retention.ms": "100", "local.retention.ms": "-1"}, broker) == (
        "Invalid value -1 for configuration local.retention.ms: Value must not be -1 as retention.ms value is set as 100."
    )
    assert _error({"remote.storage.enable": "true", "remote.log.copy.disable": "true", "local.retention.ms": "5"}, broker).startswith(
        "When `remote.log.copy.disable` is set to true, the `local.retention.ms` and `retention.ms` must be set"
    )


def test_turning_remote_storage_off_needs_delete_on_disable() -> None:
    message = _error({"remote.storage.enable": "false"}, existing={"remote.storage.enable": "true"})
    assert message.startswith("It is invalid to disable remote storage without deleting remote data.")
    validate_topic_configs(
        {"remote.storage.enable": "false", "remote.log.delete.on.disable": "true"}, {}, {"remote.storage.enable": "true"}
    )


def test_broker_values_become_the_topic_defaults() -> None:
    values = broker_log_defaults({"log.retention.minutes": "5", "log.roll.hours": "2", "log.flush.scheduler.interval.ms": "7"})
    assert values["retention.ms"] == 5 * 60_000
    assert values["segment.ms"] == 2 * 3_600_000
    assert values["flush.ms"] == 7
    assert broker_log_defaults({"log.retention.ms": "10", "log.retention.hours": "1"})["retention.ms"] == 10
    assert broker_log_defaults({"log.retention.hours": "-5"})["retention.ms"] == -1
    # The deprecated difference bound stands in for before/after left at their default.
    values = broker_log_defaults({"log.message.timestamp.difference.max.ms": "100", "log.message.timestamp.after.max.ms": "7"})
    assert (values["message.timestamp.before.max.ms"], values["message.timestamp.after.max.ms"]) == (100, 7)
    # KRaft ignores the broker's message format version.
    assert broker_log_defaults({"log.message.format.version": "2.8"})["message.format.version"] == "3.0-IV1"


def test_a_broker_value_kafka_refuses_is_an_error() -> None:
    with pytest.raises(ConfigValueError, match=r"Invalid value 3 for configuration log\.segment\.bytes: Value must be at least 14"):
        broker_log_defaults({"log.segment.bytes": "3"})


@pytest.mark.parametrize(
    ("kind", "raw", "expected"),
    [
        (ConfigType.SHORT, "32767", 32767),
        (ConfigType.INT, "\t-7 ", -7),
        (ConfigType.PASSWORD, " secret ", "secret"),
        (ConfigType.CLASS, " a.B ", "a.B"),
        (ConfigType.LIST, "a,,b", ["a", "", "b"]),
        (ConfigType.DOUBLE, "-Infinity", -math.inf),
        (ConfigType.DOUBLE, ".5e1f", 5.0),
    ],
)
def test_parse_type_for_every_type(kind: ConfigType, raw: str, expected: object) -> None:
    assert parse_type("k", raw, kind) == expected


@pytest.mark.parametrize(
    ("kind", "raw", "reason"),
    [
        (ConfigType.SHORT, "32768", "Not a number of type SHORT"),
        (ConfigType.INT, "1.0", "Not a number of type INT"),
        (ConfigType.LONG, "", "Not a number of type LONG"),
        (ConfigType.DOUBLE, "inf", "Not a number of type DOUBLE"),
        (ConfigType.DOUBLE, "1_0", "Not a number of type DOUBLE"),
        (ConfigType.BOOLEAN, "1", "Expected value to be either true or false"),
    ],
)
def test_parse_type_errors_name_the_raw_value(kind: ConfigType, raw: str, reason: str) -> None:
    with pytest.raises(ConfigValueError) as raised:
        parse_type("k", raw, kind)
    assert raised.value.message == f"Invalid value {raw} for configuration k: {reason}"


@pytest.mark.parametrize(
    ("number", "text"),
    [(0.5, "0.5"), (1.0, "1.0"), (1e7, "1.0E7"), (1234567.0, "1234567.0"), (0.001, "0.001"), (1e-4, "1.0E-4"),
     (-2.5e-5, "-2.5E-5"), (1.5e300, "1.5E300"), (-0.0, "-0.0"), (math.inf, "Infinity"), (math.nan, "NaN")],
)
def test_doubles_print_as_java_prints_them(number: float, text: str) -> None:
    assert java_double_str(number) == text


# -- each release's own topic keys (kafka.version) ---------------------------------------------------------------------

@pytest.mark.parametrize(("release", "count", "message_format"), [
    ((0, 11), 24, "0.11.0-IV2"), ((1, 1), 24, "1.1-IV0"), ((2, 0), 25, "2.0-IV1"), ((2, 3), 26, "2.3-IV1"),
    ((2, 8), 26, "2.8-IV1"), ((3, 0), 26, "3.0-IV1"), ((3, 6), 31, "3.0-IV1"), ((3, 8), 34, "3.0-IV1"), ((3, 9), 36, "3.0-IV1")])
def test_each_release_lists_its_own_topic_keys(release: tuple[int, int], count: int, message_format: str) -> None:
    keys = topic_config_set(release)
    assert (len(keys.names), keys.message_format_version) == (count, message_format)
    described = describe_topic_configs({}, {}, config_set=keys)
    assert [c.name for c in described] == list(keys.names)
    assert {c.name: c.value for c in described}["message.format.version"] == message_format


def test_a_key_of_a_later_release_is_unknown_to_an_older_one() -> None:
    with pytest.raises(ConfigValueError, match=r"Unknown topic config name: compression\.gzip\.level"):
        validate_topic_configs({"compression.gzip.level": "5"}, {}, config_set=topic_config_set((3, 7)))
    assert validate_topic_configs({"compression.gzip.level": "5"}, {}, config_set=topic_config_set((3, 8)))["compression.gzip.level"] == 5
    # 3.0-3.5 defined the tiered storage keys as internal: accepted, but never listed
    assert validate_topic_configs({"local.retention.ms": "1000"}, {}, config_set=topic_config_set((3, 0)))["local.retention.ms"] == 1000
    assert "local.retention.ms" not in topic_config_set((3, 0)).names
    with pytest.raises(ConfigValueError, match=r"Unknown topic config name: local\.retention\.ms"):
        validate_topic_configs({"local.retention.ms": "1000"}, {}, config_set=topic_config_set((2, 8)))
