"""The group coordinator's settings: Kafka's key names, Kafka 3.9's defaults, and server.properties overrides."""

from __future__ import annotations

import pytest
import structlog.testing

from kafka_shim.shim.cluster.configs.broker_configs import BROKER_CONFIGS
from kafka_shim.shim.config.broker_config import BrokerConfig, ConfigError
from kafka_shim.shim.groups.settings import DEFAULTS, GroupSettings


def test_defaults_are_kafkas() -> None:
    kafka = {name: key.default for name, key in BROKER_CONFIGS.items()}
    for key, value in DEFAULTS.items():
        assert kafka[key] == value, key


def test_defaults_without_properties() -> None:
    settings = GroupSettings.from_properties({})
    assert settings == GroupSettings()
    assert not settings.consumer_protocol_enabled


def test_properties_override() -> None:
    settings = GroupSettings.from_properties({
        "group.initial.rebalance.delay.ms": "0",
        "group.coordinator.rebalance.protocols": "classic, CONSUMER",
        "group.max.size": "3",
    })
    assert settings.initial_rebalance_delay_ms == 0
    assert settings.consumer_protocol_enabled
    assert settings.max_size == 3


def test_group_keys_are_not_reported_unknown() -> None:
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", **DEFAULTS})
    assert config.unknown_keys == []


@pytest.mark.parametrize(("value", "says"), [("consumer", "CLASSIC"), ("classic,cooperative", "cooperative")])
def test_protocol_lists_kafka_refuses_at_start(value: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        GroupSettings.from_properties({"group.coordinator.rebalance.protocols": value})


def test_a_migration_policy_kafka_does_not_know_refuses_to_start() -> None:
    """Kafka's CaseInsensitiveValidString over ConsumerGroupMigrationPolicy: the broker does not start."""
    with pytest.raises(ConfigError) as refused:
        GroupSettings.from_properties({"group.consumer.migration.policy": "bogus"})
    assert str(refused.value) == ("Invalid value bogus for configuration group.consumer.migration.policy: String must be "
                                  "one of (case insensitive): DISABLED, DOWNGRADE, UPGRADE, BIDIRECTIONAL")


def test_a_migration_policy_kafka_knows_is_accepted_and_its_absence_logged() -> None:
    with structlog.testing.capture_logs() as logs:
        assert GroupSettings.from_properties({"group.consumer.migration.policy": "Disabled"}).consumer_migration_policy == "disabled"
        assert GroupSettings.from_properties({"group.consumer.migration.policy": "UPGRADE"}).consumer_migration_policy == "upgrade"
    assert [(e["event"], e["policy"]) for e in logs] == [("consumer_group_migration_not_built", "upgrade")]
