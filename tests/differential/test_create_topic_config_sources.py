"""CreateTopics v5+ reports a new topic's configs with their sources from the broker's effective properties: after
IncrementalAlterConfigs on BROKER resources, Kafka 3.9 names DYNAMIC_BROKER_CONFIG (this broker's own) and
DYNAMIC_DEFAULT_BROKER_CONFIG (the cluster-wide defaults) there; kafka-shim must answer the same entries.
"""

from __future__ import annotations

import uuid

from kafka_shim.protocol.messages import CreateTopicsRequest
from tests.differential.test_config_apis import (  # noqa: F401 (fixtures)
    BROKER,
    DELETE,
    SET,
    brokers,
    converged,
    describe,
    incremental,
    reset_broker_configs,
    same,
    shim_like_oracle,
)

CREATE_TOPICS, INCREMENTAL_ALTER_CONFIGS = 19, 44
_IDS = ("topics.*.topic_id",)


def _create(name: str) -> CreateTopicsRequest:
    return CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1, assignments=[],
        configs=[CreateTopicsRequest.CreatableTopicConfig(name="retention.bytes", value="123456")])],
        timeout_ms=30000, validate_only=True)


def test_create_topics_reports_dynamic_broker_config_sources(brokers) -> None:  # noqa: F811 (the fixture)
    steps = [
        # This broker's own keys, a cluster-wide default, and one key set at both levels (the broker's wins);
        # log.roll.hours is reported in ms, as segment.ms.
        incremental((BROKER, "1", [("log.retention.ms", SET, "3600000"), ("log.roll.hours", SET, "5"),
                                   ("message.max.bytes", SET, "2000000")])),
        incremental((BROKER, "", [("log.segment.bytes", SET, "20000000"), ("message.max.bytes", SET, "3000000"),
                                  ("log.cleanup.policy", SET, "compact")])),
        # Without the broker's own value the default shows through.
        incremental((BROKER, "1", [("message.max.bytes", DELETE, None)])),
    ]
    try:
        for version in (5, 7):
            same(brokers, "admin", CREATE_TOPICS, version, _create(f"src-{uuid.uuid4().hex[:8]}"), f"static v{version}", ignore=_IDS)
        for index, request in enumerate(steps):
            same(brokers, "admin", INCREMENTAL_ALTER_CONFIGS, 1, request, f"step {index}")
            converged(brokers, describe((BROKER, "1", None), (BROKER, "", None), synonyms=True), f"after step {index}")
            for version in (5, 7):
                same(brokers, "admin", CREATE_TOPICS, version, _create(f"src-{uuid.uuid4().hex[:8]}"),
                     f"CreateTopics v{version} after step {index}", ignore=_IDS)
    finally:
        reset_broker_configs(brokers)
