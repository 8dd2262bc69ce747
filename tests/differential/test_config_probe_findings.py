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
- Each listener's own reconfigurables (DynamicBrokerConfig.processListenerReconfigurable): a listener's
  ``max.connections`` or ``max.connection.creation.rate`` of 0, its own or the broker-wide one, fails
  ListenerConnectionQuota.validateReconfiguration ("Invalid max.connections 0", INVALID_REQUEST wrapped as
  "Invalid dynamic configuration"), its ``num.network.threads`` its DataPlaneAcceptor's halve-or-double rule, and
  every listener's overrides (not only the inter-broker listener's) are parsed there, the controller listener's
  first (the broker's SASL client to it); kafka-shim accepted them all, and checked the network threads broker-wide
  after the metric reporters.
"""

from __future__ import annotations

import pytest

from tests.differential.test_config_apis import (  # noqa: F401 (fixtures)
    BROKER,
    DELETE,
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


# -- each listener's reconfigurables: its overrides read, its connection quotas and network threads checked ------------

_QUOTA_VALUES = ["0", "-1", "99999999999", "x", " 0", "1.5", "5"]


@pytest.mark.parametrize("key", ["max.connections", "max.connection.creation.rate"])
@pytest.mark.parametrize("listener", ["plaintext", "sasl_plaintext", "internal"])
def test_a_listeners_connection_limits_must_stay_positive(brokers, listener: str, key: str) -> None:  # noqa: F811
    """ListenerConnectionQuota.validateReconfiguration: "Invalid max.connections 0" (0 passes the key's own validator,
    at least 0), wrapped as every reconfigurable's refusal is; negative and unparseable values fail the key's type
    first, unwrapped. Cluster-wide (an empty resource name) as for this broker: these keys may be either."""
    name = f"listener.name.{listener}.{key}"
    for resource in ("1", ""):
        for value in _QUOTA_VALUES:
            what = f"{name}={value!r} on {resource!r}"
            shim = same(brokers, "admin", INCREMENTAL_ALTER_CONFIGS, 1,
                        incremental((BROKER, resource, [(name, SET, value)]), validate_only=True), f"IncrementalAlterConfigs {what}")
            if value.strip() == "0":
                assert (shim.body.responses[0].error_code, shim.body.responses[0].error_message) == (
                    42, f"Invalid value org.apache.kafka.common.config.ConfigException: Invalid {key} 0 for configuration "
                        "Invalid dynamic configuration"), what
            same(brokers, "admin", 33, 2, legacy((BROKER, resource, {name: value}), validate_only=True), f"AlterConfigs {what}")


_WHICH_LISTENERS = [
    # the broker-wide values reach every listener without its own
    {"max.connections": "0"},
    {"max.connection.creation.rate": "0"},
    {"max.connections": "0", "listener.name.plaintext.max.connections": "5", "listener.name.sasl_plaintext.max.connections": "5"},
    {"max.connections": "0", "listener.name.plaintext.max.connections": "5", "listener.name.sasl_plaintext.max.connections": "5",
     "listener.name.internal.max.connections": "5"},
    # the listeners in the order they are served, each listener's max.connections before its creation rate
    {"listener.name.sasl_plaintext.max.connections": "0", "listener.name.plaintext.max.connection.creation.rate": "0"},
    {"listener.name.plaintext.max.connection.creation.rate": "0", "listener.name.plaintext.max.connections": "0"},
    # before the metric reporters and the thread pools
    {"metric.reporters": "x", "max.connections": "0"},
    {"num.io.threads": "100", "max.connection.creation.rate": "0"},
    # no listener of this broker: only the key's own type and validator apply
    {"listener.name.nosuch.max.connections": "0"},
    {"listener.name.nosuch.max.connection.creation.rate": "-1"},
    {"listener.name.controller.max.connections": "0"},  # the controller's listener, the controller's config
    {"listener.name.PLAINTEXT.max.connections": "0"},  # the prefix is lower case
]


def test_which_listeners_check_their_connection_limits(brokers) -> None:  # noqa: F811
    """The listeners this broker serves, each with its own value or the broker-wide one; no other listener."""
    for configs in _WHICH_LISTENERS:
        for resource in ("1", ""):
            same(brokers, "admin", INCREMENTAL_ALTER_CONFIGS, 1, incremental((BROKER, resource, [(k, SET, v) for k, v in configs.items()]),
                                                                             validate_only=True), f"IncrementalAlterConfigs {configs} on {resource!r}")
            same(brokers, "admin", 33, 2, legacy((BROKER, resource, configs), validate_only=True), f"AlterConfigs {configs} on {resource!r}")


@pytest.mark.parametrize("listener", ["plaintext", "sasl_plaintext"])
def test_every_listeners_overrides_are_parsed(brokers, listener: str) -> None:  # noqa: F811
    """Each listener reconfigurable reads its listener's values (AbstractConfig.valuesWithPrefixOverride), parsing and
    validating every override whose name, or name past one more prefix, is a KafkaConfig key, read-only ones too;
    inside DynamicBrokerConfig.processReconfiguration, so the first bad one fails wrapped as "Invalid dynamic
    configuration" (the inter-broker listener's were already read, unwrapped, by KafkaConfig)."""
    prefix = f"listener.name.{listener}."
    cases = [
        {prefix + "socket.send.buffer.bytes": "x"},
        {prefix + "plain.max.connections": "x"},
        {prefix + "plain.connections.max.reauth.ms": "x"},
        {prefix + "connections.max.reauth.ms": "99999999999999999999999"},
        {prefix + "sasl.login.refresh.buffer.seconds": "40000"},
        {prefix + "ssl.client.auth": "sometimes"},
        {prefix + "socket.send.buffer.bytes": "x", prefix + "connections.max.idle.ms": "y", prefix + "socket.receive.buffer.bytes": "z"},
        {prefix + "max.connections": "0", prefix + "socket.send.buffer.bytes": "x"},
        {"listener.name.sasl_plaintext.socket.send.buffer.bytes": "x", "listener.name.plaintext.max.connections": "0"},
        {"listener.name.controller.socket.send.buffer.bytes": "x"},  # the broker's SASL client to its controller
        {"listener.name.controller.socket.send.buffer.bytes": "x", prefix + "max.connections": "0"},
        {"listener.name.nosuch.socket.send.buffer.bytes": "x"},
        {prefix + "no.such.key": "x"},
        {prefix + "socket.send.buffer.bytes": "1024"},
    ]
    for configs in cases:
        for resource in ("1", ""):
            same(brokers, "admin", INCREMENTAL_ALTER_CONFIGS, 1, incremental((BROKER, resource, [(k, SET, v) for k, v in configs.items()]),
                                                                             validate_only=True), f"IncrementalAlterConfigs {configs} on {resource!r}")
        same(brokers, "admin", 33, 2, legacy((BROKER, "1", configs), validate_only=True), f"AlterConfigs {configs}")


_NETWORK_THREADS = [
    {"listener.name.plaintext.num.network.threads": "100"},
    {"listener.name.plaintext.num.network.threads": "0"},
    {"listener.name.sasl_plaintext.num.network.threads": "7"},
    {"listener.name.sasl_plaintext.num.network.threads": "1"},
    {"listener.name.controller.num.network.threads": "100"},
    {"num.network.threads": "100", "listener.name.plaintext.num.network.threads": "3", "listener.name.sasl_plaintext.num.network.threads": "3",
     "listener.name.internal.num.network.threads": "3"},
    {"metric.reporters": "x", "num.network.threads": "100"},  # each listener's acceptor before the metric reporters
]


def test_each_listeners_acceptor_checks_its_network_threads(brokers) -> None:  # noqa: F811
    """DataPlaneAcceptor.validateReconfiguration: a listener's network threads (its own, else the broker-wide value) may
    at most halve or double its current count, as the broker's thread pools."""
    for configs in _NETWORK_THREADS:
        for resource in ("1", ""):
            same(brokers, "admin", INCREMENTAL_ALTER_CONFIGS, 1, incremental((BROKER, resource, [(k, SET, v) for k, v in configs.items()]),
                                                                             validate_only=True), f"IncrementalAlterConfigs {configs} on {resource!r}")
            same(brokers, "admin", 33, 2, legacy((BROKER, resource, configs), validate_only=True), f"AlterConfigs {configs} on {resource!r}")


def test_listener_limits_applied_deleted_and_described(brokers) -> None:  # noqa: F811
    """Applied, not only validated: a refused value stores nothing, an accepted one is described as a dynamic config
    and is the listener's current value from then on (the next change is checked against it), a DELETE brings back
    the broker-wide value. On the PLAINTEXT listener, which the admin requests do not use."""
    plain = "listener.name.plaintext."
    steps = [
        ("1", [(plain + "max.connection.creation.rate", SET, "0")]),
        ("1", [(plain + "max.connections", SET, "500"), (plain + "max.connection.creation.rate", SET, "1000")]),
        ("1", [(plain + "max.connections", SET, "0")]),
        ("", [("max.connections", SET, "0")]),  # PLAINTEXT keeps its own; the other listeners get 0
        ("1", [(plain + "num.network.threads", SET, "6")]),
        ("1", [(plain + "num.network.threads", SET, "13")]),  # more than double the 6 it has now
        ("1", [(plain + "num.network.threads", SET, "2")]),  # less than half
        ("1", [(plain + "max.connections", DELETE, None)]),
        ("", [("listener.name.nosuch.max.connection.creation.rate", SET, "0"), (plain + "max.connection.creation.rate", SET, "2000")]),
        ("", [(plain + "max.connection.creation.rate", SET, "0")]),  # this broker's own 1000 wins: nothing changes, stored
        ("1", [(plain + "max.connection.creation.rate", DELETE, None)]),  # which would bring the cluster-wide 0 in
        ("1", [(plain + "num.network.threads", DELETE, None)]),
        ("", [(plain + "max.connection.creation.rate", DELETE, None)]),
    ]
    try:
        for index, (resource, ops) in enumerate(steps):
            same(brokers, "admin", INCREMENTAL_ALTER_CONFIGS, 1, incremental((BROKER, resource, ops)), f"step {index}: {ops} on {resource!r}")
            converged(brokers, describe((BROKER, "1", None), (BROKER, "", None), synonyms=True), f"after step {index}")
    finally:
        reset_broker_configs(brokers)
