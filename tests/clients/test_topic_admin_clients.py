"""Real admin clients manage topics on kafka-shim: confluent-kafka's AdminClient, kafka-python's KafkaAdminClient and
aiokafka's AIOKafkaAdminClient, over TCP as User:ANONYMOUS on PLAINTEXT (rights from ACLs put into the authorizer).
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.acl_helpers import ALLOW, CLUSTER, DENY, PREFIXED, READ, TOPIC, WRITE, binding, config

pytestmark = pytest.mark.clients
TIMEOUT = 30
CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS = 5, 6, 7, 8, 10, 11


def fresh(stem: str) -> str:
    return f"{stem}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def open_broker():
    with EmbeddedBroker(config(authorizer=False)) as running:
        yield running


@pytest.fixture
def secured_broker():
    with EmbeddedBroker(config()) as running:
        yield running


def grant(broker: EmbeddedBroker, *bindings) -> None:
    results = broker.call(lambda: broker.broker.authorizer.create_acls(list(bindings)))
    assert all(r.error is None for r in results), results


def _confluent(broker):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": broker.bootstrap_servers, "socket.timeout.ms": 10000})


def _topic_state(broker: EmbeddedBroker, name: str):
    def read():
        topic = broker.broker.services.cluster.topics.get(name)
        return None if topic is None else (len(topic.partitions), dict(topic.configs))
    return broker.call(read)


# -- confluent-kafka ------------------------------------------------------------------------------------------------------


def test_confluent_create_describe_grow_delete(open_broker) -> None:
    from confluent_kafka import KafkaError, KafkaException, TopicCollection
    from confluent_kafka.admin import NewPartitions, NewTopic

    admin = _confluent(open_broker)
    name = fresh("orders")
    checked = admin.create_topics([NewTopic(name, 3, 1, config={"cleanup.policy": "compact"})], validate_only=True)
    assert checked[name].result(timeout=TIMEOUT) is None
    assert _topic_state(open_broker, name) is None  # validate_only created nothing

    assert admin.create_topics([NewTopic(name, 3, 1, config={"cleanup.policy": "compact"})])[name].result(timeout=TIMEOUT) is None
    assert _topic_state(open_broker, name) == (3, {"cleanup.policy": "compact"})
    with pytest.raises(KafkaException) as exists:
        admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=TIMEOUT)
    assert exists.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert f"Topic '{name}' already exists." in str(exists.value)

    bad = fresh("bad")
    with pytest.raises(KafkaException) as invalid:
        admin.create_topics([NewTopic(bad, 1, 1, config={"retention.ms": "soon"})])[bad].result(timeout=TIMEOUT)
    assert invalid.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert "Invalid value soon for configuration retention.ms: Not a number of type LONG" in str(invalid.value)
    with pytest.raises(KafkaException) as factor:
        admin.create_topics([NewTopic(bad, 1, 3)])[bad].result(timeout=TIMEOUT)
    assert factor.value.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR

    assert admin.create_partitions([NewPartitions(name, 5)])[name].result(timeout=TIMEOUT) is None
    assert _topic_state(open_broker, name)[0] == 5
    description = admin.describe_topics(TopicCollection([name]), include_authorized_operations=True)[name].result(timeout=TIMEOUT)
    assert [p.id for p in description.partitions] == [0, 1, 2, 3, 4]
    assert len(description.authorized_operations) == 8  # no authorizer: every topic operation

    assert name in admin.list_topics(timeout=TIMEOUT).topics
    assert admin.delete_topics([name])[name].result(timeout=TIMEOUT) is None
    assert _topic_state(open_broker, name) is None
    with pytest.raises(KafkaException) as gone:
        admin.delete_topics([name])[name].result(timeout=TIMEOUT)
    assert gone.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


@pytest.mark.parametrize(("acls", "expected"), [
    ([(DESCRIBE, ALLOW)], {"DESCRIBE"}),
    ([(READ, ALLOW)], {"READ", "DESCRIBE"}),
    ([(WRITE, ALLOW), (DELETE, ALLOW), (ALTER_CONFIGS, ALLOW)], {"WRITE", "DELETE", "DESCRIBE", "ALTER_CONFIGS", "DESCRIBE_CONFIGS"}),
    ([(2, ALLOW), (ALTER, DENY)], {"READ", "WRITE", "CREATE", "DELETE", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}),
], ids=["describe", "read", "write-delete-alter-configs", "all-but-alter"])
def test_confluent_topic_authorized_operations(secured_broker, acls, expected) -> None:
    from confluent_kafka import TopicCollection

    name = fresh("ops")
    secured_broker.call(lambda: secured_broker.broker.services.partitions.create_topic(name, 2))
    grant(secured_broker, *(binding(TOPIC, name, operation=op, permission=perm) for op, perm in acls))
    admin = _confluent(secured_broker)
    description = admin.describe_topics(TopicCollection([name]), include_authorized_operations=True)[name].result(timeout=TIMEOUT)
    assert {op.name for op in description.authorized_operations} == expected


def test_confluent_create_and_delete_under_acls(secured_broker) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewPartitions, NewTopic

    stem = fresh("team")
    grant(secured_broker, binding(TOPIC, stem, PREFIXED, operation=CREATE), binding(TOPIC, f"{stem}-a", operation=DELETE),
          binding(TOPIC, f"{stem}-a", operation=ALTER))
    admin = _confluent(secured_broker)
    futures = admin.create_topics([NewTopic(f"{stem}-a", 1, 1), NewTopic(f"{stem}-b", 1, 1), NewTopic("elsewhere", 1, 1)])
    assert futures[f"{stem}-a"].result(timeout=TIMEOUT) is None
    assert futures[f"{stem}-b"].result(timeout=TIMEOUT) is None
    with pytest.raises(KafkaException) as denied:
        futures["elsewhere"].result(timeout=TIMEOUT)
    assert denied.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert admin.create_partitions([NewPartitions(f"{stem}-a", 2)])[f"{stem}-a"].result(timeout=TIMEOUT) is None
    with pytest.raises(KafkaException) as no_alter:
        admin.create_partitions([NewPartitions(f"{stem}-b", 2)])[f"{stem}-b"].result(timeout=TIMEOUT)
    assert no_alter.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    deletions = admin.delete_topics([f"{stem}-a", f"{stem}-b"])
    assert deletions[f"{stem}-a"].result(timeout=TIMEOUT) is None
    with pytest.raises(KafkaException) as no_delete:
        deletions[f"{stem}-b"].result(timeout=TIMEOUT)
    assert no_delete.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _topic_state(secured_broker, f"{stem}-b") == (1, {})


def test_create_on_the_cluster_allows_any_topic(secured_broker) -> None:
    from confluent_kafka.admin import NewTopic

    grant(secured_broker, binding(CLUSTER, "kafka-cluster", operation=CREATE), binding(TOPIC, "*", operation=DESCRIBE))
    admin = _confluent(secured_broker)
    name = fresh("cluster-made")
    assert admin.create_topics([NewTopic(name, 2, 1)])[name].result(timeout=TIMEOUT) is None
    assert _topic_state(secured_broker, name) == (2, {})


# -- kafka-python ---------------------------------------------------------------------------------------------------------


def test_kafka_python_admin(open_broker) -> None:
    from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=open_broker.bootstrap_servers, request_timeout_ms=TIMEOUT * 1000)
    try:
        name = fresh("kp")
        admin.create_topics([NewTopic(name, 2, 1, topic_configs={"retention.ms": "60000"})])
        assert _topic_state(open_broker, name) == (2, {"retention.ms": "60000"})
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic(name, 2, 1)])
        admin.create_partitions({name: NewPartitions(4)})
        assert _topic_state(open_broker, name)[0] == 4
        [described] = admin.describe_topics([name])
        assert (described["error_code"], len(described["partitions"])) == (0, 4)
        assert name in admin.list_topics()
        admin.delete_topics([name])
        assert _topic_state(open_broker, name) is None
    finally:
        admin.close()


# -- aiokafka -------------------------------------------------------------------------------------------------------------


def test_aiokafka_admin(open_broker) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic

    name = fresh("aio")

    async def scenario() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=open_broker.bootstrap_servers, request_timeout_ms=TIMEOUT * 1000)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(name, 3, 1, topic_configs={"cleanup.policy": "compact"})])
            assert _topic_state(open_broker, name) == (3, {"cleanup.policy": "compact"})
            await admin.create_partitions({name: NewPartitions(6)})
            assert _topic_state(open_broker, name)[0] == 6
            assert name in await admin.list_topics()
            await admin.delete_topics([name])
            assert _topic_state(open_broker, name) is None
        finally:
            await admin.close()

    asyncio.run(scenario())


# -- kafkajs --------------------------------------------------------------------------------------------------------------


def _kafkajs(bootstrap: str, steps: list[dict]) -> list[dict]:
    import json
    import shutil
    import subprocess
    from pathlib import Path

    directory = Path(__file__).resolve().parents[1] / "kafkajs"
    node = shutil.which("node")
    if node is None or not (directory / "node_modules" / "kafkajs").is_dir():
        pytest.fail("kafkajs is not installed: run scripts/test (or scripts/ensure-node && npm ci --prefix tests/kafkajs)", pytrace=False)
    proc = subprocess.run([node, str(directory / "topics.js")], input=json.dumps({"brokers": [bootstrap], "steps": steps}),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["results"]


def test_kafkajs_admin(open_broker) -> None:
    name = fresh("js")
    results = _kafkajs(open_broker.bootstrap_servers, [
        {"call": "createTopics", "args": {"validateOnly": True, "waitForLeaders": False, "topics": [{"topic": name, "numPartitions": 2}]}},
        {"call": "createTopics", "args": {"topics": [{"topic": name, "numPartitions": 2, "configEntries": [{"name": "cleanup.policy", "value": "compact"}]}]}},
        {"call": "createTopics", "args": {"topics": [{"topic": name, "numPartitions": 2}]}},
        {"call": "createPartitions", "args": {"topicPartitions": [{"topic": name, "count": 3}]}},
        {"call": "fetchTopicMetadata", "args": {"topics": [name]}},
        {"call": "listTopics"},
        {"call": "deleteTopics", "args": {"topics": [name]}},
        {"call": "createTopics", "args": {"topics": [{"topic": f"{name}-rf", "replicationFactor": 3}]}},
    ])
    assert [r["ok"] for r in results] == [True, True, True, True, True, True, True, False]
    assert results[1]["value"] is True and results[2]["value"] is False  # kafkajs: false when the topic already exists
    [described] = results[4]["value"]["topics"]
    assert sorted(p["partitionId"] for p in described["partitions"]) == [0, 1, 2]
    assert name in results[5]["value"]
    assert results[7]["error"]["type"] == "INVALID_REPLICATION_FACTOR"
    assert _topic_state(open_broker, name) is None and _topic_state(open_broker, f"{name}-rf") is None
