"""What a random differential probe of the config APIs' success and validation paths (real topic, broker, logger and
client-metrics keys, values at and past every validator's edges, applied or validate_only, then described) found
kafka-shim answering unlike Kafka 3.9:

- ``log.cleaner.backoff.ms=0`` (valid: at least 0): Kafka's cleaner thread then spins between passes on its own
  thread; kafka-shim's cleaner, on the event loop, rested not at all and never yielded, so the broker stopped
  answering anything.
- A broker alteration leaving ``sasl.mechanism.inter.broker.protocol`` out of the inter-broker listener's
  ``sasl.enabled.mechanisms`` (its listener-prefixed value, else the broker-wide one): KafkaConfig.validateValues
  requires it whenever brokers talk SASL, so INVALID_REQUEST "requirement failed: ..."; kafka-shim accepted it.
  Reading that listener's overrides (AbstractConfig.valuesWithPrefixOverride) parses and validates each of them whose
  name is a KafkaConfig key (read-only ones too, as connections.max.reauth.ms), so a bad value fails there, unwrapped.
- IncrementalAlterConfigs APPEND/SUBTRACT on a BROKER resource: the broker only validates its own reading of the
  operations (ConfigAdminManager.prepareIncrementalConfigs); the controller stores what
  ConfigurationControlManager.incrementalAlterConfigResource makes of them, where an APPEND adds each value at most
  once ("compact,compact" appended to "delete" is "delete,compact") and empty parts of the old value are dropped.
"""

from __future__ import annotations

import pytest

from tests.differential.test_config_apis import (  # noqa: F401 (fixtures)
    BROKER,
    SET,
    TOPIC,
    brokers,
    converged,
    describe,
    incremental,
    legacy,
    make_topic,
    reset_broker_configs,
    same,
    shim_like_oracle,
)

INCREMENTAL_ALTER_CONFIGS, DESCRIBE_CONFIGS = 44, 32


def test_a_cleaner_backoff_of_zero_keeps_the_broker_answering(brokers) -> None:  # noqa: F811 (the fixture)
    try:
        same(brokers, "admin", INCREMENTAL_ALTER_CONFIGS, 1, incremental((BROKER, "", [("log.cleaner.backoff.ms", SET, "0")])),
             "a cluster-wide log.cleaner.backoff.ms of 0")
        converged(brokers, describe((BROKER, "", None), synonyms=True), "the cluster-wide defaults")
        name = make_topic(brokers, {"cleanup.policy": "compact"})
        same(brokers, "admin", DESCRIBE_CONFIGS, 4, describe((TOPIC, name, None), (BROKER, "1", ["log.cleaner.backoff.ms"]), synonyms=True),
             "the broker, while its cleaner has nothing to clean")
    finally:
        reset_broker_configs(brokers)


@pytest.mark.parametrize("configs", [
    {"sasl.mechanism.inter.broker.protocol": ""},
    {"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"},
    {"sasl.mechanism.inter.broker.protocol": " PLAIN "},
    {"sasl.mechanism.inter.broker.protocol": "GSSAPI", "sasl.enabled.mechanisms": "GSSAPI"},  # the listener's own list wins
    {"listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-256"},
    {"listener.name.internal.sasl.enabled.mechanisms": "PLAIN,"},
    {"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-256"},  # not the inter-broker listener
], ids=["empty", "not-enabled", "trimmed", "broker-wide-list", "listener-list", "trailing-comma", "other-listener"])
def test_the_inter_broker_sasl_mechanism_must_stay_enabled(brokers, configs: dict[str, str]) -> None:  # noqa: F811
    same(brokers, "admin", INCREMENTAL_ALTER_CONFIGS, 1, incremental((BROKER, "1", [(k, SET, v) for k, v in configs.items()]),
                                                                     validate_only=True), f"IncrementalAlterConfigs {configs}")
    same(brokers, "admin", 33, 2, legacy((BROKER, "1", configs), validate_only=True), f"AlterConfigs {configs}")


@pytest.mark.parametrize("resource", ["1", ""], ids=["broker", "cluster-default"])
def test_a_broker_append_stores_what_the_controller_makes_of_it(brokers, resource: str) -> None:  # noqa: F811
    SUBTRACT, APPEND = 3, 2
    steps = [
        [("log.cleanup.policy", APPEND, "compact,compact")],
        [("log.cleanup.policy", APPEND, "delete,compact")],
        [("log.cleanup.policy", SUBTRACT, "compact,compact")],
        [("log.cleanup.policy", APPEND, "compact,delete,compact")],
    ]
    try:
        for ops in steps:
            same(brokers, "admin", INCREMENTAL_ALTER_CONFIGS, 1, incremental((BROKER, resource, ops)), f"IncrementalAlterConfigs {ops}")
            converged(brokers, describe((BROKER, resource, ["log.cleanup.policy"]), synonyms=True), f"after {ops}")
    finally:
        reset_broker_configs(brokers)


@pytest.mark.parametrize("configs", [
    {"listener.name.internal.connections.max.reauth.ms": "99999999999999999999999"},
    {"listener.name.internal.plain.connections.max.reauth.ms": "x"},
    {"listener.name.internal.sasl.login.refresh.buffer.seconds": "40000"},
    {"listener.name.internal.ssl.client.auth": "sometimes"},
    {"listener.name.internal.no.such.key": "x"},
    {"listener.name.internal.connections.max.reauth.ms": "5000"},
], ids=["huge", "past-a-mechanism", "short-overflow", "not-a-choice", "unknown", "valid"])
def test_the_inter_broker_listeners_overrides_are_parsed(brokers, configs: dict[str, str]) -> None:  # noqa: F811
    same(brokers, "admin", INCREMENTAL_ALTER_CONFIGS, 1, incremental((BROKER, "1", [(k, SET, v) for k, v in configs.items()]),
                                                                     validate_only=True), f"IncrementalAlterConfigs {configs}")
