"""Client metrics subscriptions (KIP-714, CLIENT_METRICS resources) as Kafka 3.9 keeps and checks them.

Kafka's counterparts: ``ClientMetricsConfigs.validate`` (run by the controller on every alteration, in its order:
a non-empty name, known keys only, ``interval.ms`` between 100 and 3600000, each ``match`` pattern
``<param>=<Java regex>`` with a known parameter) and ConfigHelper's CLIENT_METRICS describe (only the stored keys,
source CLIENT_METRICS_CONFIG, no type, no synonyms, documentation ""). kafka-shim stores subscriptions and answers
for them as Kafka does; it pushes no metrics subscriptions to clients (GetTelemetrySubscriptions is not served).
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.cluster.configs.alter_ops import AlterError
from kafka_shim.shim.cluster.configs.definition import ConfigSource, ConfigType
from kafka_shim.shim.cluster.configs.describe import DescribedConfig
from kafka_shim.shim.javacompat.java_hash import java_order
from kafka_shim.shim.javacompat.java_regex import JavaRegexError, compile_java_regex

NAMES = ("metrics", "interval.ms", "match")
MATCH_PARAMS = ("client_instance_id", "client_id", "client_software_name", "client_software_version",
                "client_source_address", "client_source_port")
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3600000


def validate_client_metrics(name: str, props: Mapping[str, str]) -> None:
    """ClientMetricsConfigs.validate, raising AlterError with Kafka's code and message."""
    if not name:
        raise AlterError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    for key in java_order(list(props)):
        if key not in NAMES:
            raise AlterError(ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}")
    if "interval.ms" in props:
        text = props["interval.ms"]
        if not _is_java_int(text):
            raise AlterError(ErrorCode.UNKNOWN_SERVER_ERROR, None)  # Integer.parseInt fails, unexpectedly for Kafka
        interval = int(text)
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            raise AlterError(ErrorCode.INVALID_REQUEST,
                             f"Invalid value {interval} for interval.ms, interval must be between 100 and 3600000 (1 hour)")
    if "match" in props:
        for pattern in _java_split(props["match"], ","):
            pair = _java_split(pattern, "=")
            if len(pair) != 2 or pair[0].strip() not in MATCH_PARAMS or not pair[1]:
                raise AlterError(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}")
            try:
                compile_java_regex(pair[1].strip())
            except JavaRegexError:
                raise AlterError(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}") from None


def describe_client_metrics(props: Mapping[str, str]) -> list[DescribedConfig]:
    """The stored keys, in the order Kafka's Properties iterates them."""
    return [DescribedConfig(key, props[key], ConfigSource.CLIENT_METRICS_CONFIG, ConfigType.UNKNOWN, False)
            for key in java_order(list(props))]


def _is_java_int(text: str) -> bool:
    stripped = text[1:] if text[:1] in "+-" else text
    return stripped.isascii() and stripped.isdigit() and -(2**31) <= int(text) < 2**31


def _java_split(text: str, separator: str) -> list[str]:
    """String.split: trailing empty strings dropped (a text without the separator is itself)."""
    parts = text.split(separator)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts
