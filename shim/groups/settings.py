"""The group coordinator's settings, read from server.properties with Kafka 3.9's key names and defaults.

Kafka's GroupCoordinatorConfig. The defaults are KafkaConfig's (``shim/cluster/configs/broker_configs.py`` lists the
same keys; tests/shim/groups/test_settings.py checks that both agree). Kafka's own shipped server.properties sets
``group.initial.rebalance.delay.ms=0`` so that a lone developer's consumer is not kept waiting 3 s, and so does
kafka-shim's example config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafka_shim.shim.config.broker_config import ConfigError
from kafka_shim.shim.config.logging import get_logger

log = get_logger(__name__)

# GroupType's names, which group.coordinator.rebalance.protocols may list (ConfigDef's ValidList).
PROTOCOL_NAMES = ("consumer", "classic", "share", "unknown")
# ConsumerGroupMigrationPolicy's names as Kafka's CaseInsensitiveValidString lists them (a HashSet, upper case).
MIGRATION_POLICIES = ("DISABLED", "DOWNGRADE", "UPGRADE", "BIDIRECTIONAL")

DEFAULTS: dict[str, str] = {
    "group.min.session.timeout.ms": "6000",
    "group.max.session.timeout.ms": "1800000",
    "group.initial.rebalance.delay.ms": "3000",
    "group.max.size": "2147483647",
    "group.coordinator.rebalance.protocols": "classic",
    "offset.metadata.max.bytes": "4096",
    "offsets.topic.num.partitions": "50",
    "offsets.retention.minutes": "10080",
    "offsets.retention.check.interval.ms": "600000",
    "group.consumer.session.timeout.ms": "45000",
    "group.consumer.min.session.timeout.ms": "45000",
    "group.consumer.max.session.timeout.ms": "60000",
    "group.consumer.heartbeat.interval.ms": "5000",
    "group.consumer.min.heartbeat.interval.ms": "5000",
    "group.consumer.max.heartbeat.interval.ms": "15000",
    "group.consumer.max.size": "2147483647",
    "group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.UniformAssignor,"
                                "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
    "group.consumer.migration.policy": "disabled",
    "group.coordinator.new.enable": "false",
}


@dataclass(frozen=True)
class GroupSettings:
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2147483647
    # "classic" always; "consumer" turns on KIP-848's ConsumerGroupHeartbeat/ConsumerGroupDescribe.
    rebalance_protocols: frozenset[str] = frozenset({"classic"})
    offset_metadata_max_bytes: int = 4096
    offsets_topic_num_partitions: int = 50
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600000
    consumer_session_timeout_ms: int = 45000
    consumer_min_session_timeout_ms: int = 45000
    consumer_max_session_timeout_ms: int = 60000
    consumer_heartbeat_interval_ms: int = 5000
    consumer_min_heartbeat_interval_ms: int = 5000
    consumer_max_heartbeat_interval_ms: int = 15000
    consumer_max_size: int = 2147483647
    consumer_assignors: tuple[str, ...] = ("org.apache.kafka.coordinator.group.assignor.UniformAssignor",
                                           "org.apache.kafka.coordinator.group.assignor.RangeAssignor")
    consumer_migration_policy: str = "disabled"

    # group.coordinator.new.enable (internal in 3.9): the new coordinator without the consumer protocol.
    new_coordinator_enabled: bool = False

    @property
    def consumer_protocol_enabled(self) -> bool:
        return "consumer" in self.rebalance_protocols

    @property
    def new_coordinator(self) -> bool:
        """KafkaConfig.isNewGroupCoordinatorEnabled: Kafka 3.9 runs the new group coordinator (group-coordinator/,
        Java) for every group, classic ones too, when the consumer protocol is on; its answers keep other orders."""
        return self.new_coordinator_enabled or self.consumer_protocol_enabled

    @classmethod
    def from_properties(cls, raw: Mapping[str, str]) -> GroupSettings:
        def get(key: str) -> str:
            return raw.get(key, DEFAULTS[key]).strip()

        def number(key: str) -> int:
            return int(get(key))

        def items(key: str) -> list[str]:
            return [item.strip() for item in get(key).split(",") if item.strip()]

        protocols = frozenset(p.lower() for p in items("group.coordinator.rebalance.protocols"))
        unknown = sorted(protocols - set(PROTOCOL_NAMES))
        if unknown:
            raise ConfigError(f"group.coordinator.rebalance.protocols lists {', '.join(unknown)}; each must be one of "
                              f"{', '.join(PROTOCOL_NAMES)} (e.g. classic,consumer)")
        if "classic" not in protocols:  # KafkaConfig.groupCoordinatorRebalanceProtocols refuses it at start
            raise ConfigError("Disabling the 'CLASSIC' protocol is not supported: group.coordinator.rebalance.protocols "
                              "must list classic (e.g. classic or classic,consumer)")
        migration_policy = get("group.consumer.migration.policy")
        if migration_policy.upper() not in MIGRATION_POLICIES:
            raise ConfigError(f"Invalid value {raw.get('group.consumer.migration.policy')} for configuration "
                              "group.consumer.migration.policy: String must be one of (case insensitive): "
                              + ", ".join(MIGRATION_POLICIES))
        if migration_policy.lower() != "disabled":
            log.warning("consumer_group_migration_not_built", policy=migration_policy.lower(),
                        reason="kafka-shim does not convert non-empty groups between the classic and consumer protocols",
                        hint="groups behave as with group.consumer.migration.policy=disabled (Kafka 3.9's default)")
        return cls(
            min_session_timeout_ms=number("group.min.session.timeout.ms"),
            max_session_timeout_ms=number("group.max.session.timeout.ms"),
            initial_rebalance_delay_ms=number("group.initial.rebalance.delay.ms"),
            max_size=number("group.max.size"),
            rebalance_protocols=protocols,
            offset_metadata_max_bytes=number("offset.metadata.max.bytes"),
            offsets_topic_num_partitions=number("offsets.topic.num.partitions"),
            offsets_retention_minutes=number("offsets.retention.minutes"),
            offsets_retention_check_interval_ms=number("offsets.retention.check.interval.ms"),
            consumer_session_timeout_ms=number("group.consumer.session.timeout.ms"),
            consumer_min_session_timeout_ms=number("group.consumer.min.session.timeout.ms"),
            consumer_max_session_timeout_ms=number("group.consumer.max.session.timeout.ms"),
            consumer_heartbeat_interval_ms=number("group.consumer.heartbeat.interval.ms"),
            consumer_min_heartbeat_interval_ms=number("group.consumer.min.heartbeat.interval.ms"),
            consumer_max_heartbeat_interval_ms=number("group.consumer.max.heartbeat.interval.ms"),
            consumer_max_size=number("group.consumer.max.size"),
            consumer_assignors=tuple(items("group.consumer.assignors")),
            consumer_migration_policy=migration_policy.lower(),
            new_coordinator_enabled=get("group.coordinator.new.enable").lower() == "true",
        )
