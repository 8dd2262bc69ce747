"""Topic administration beside Apache Kafka 3.9: CreateTopics, DeleteTopics, CreatePartitions, DescribeTopicPartitions
and Metadata's automatic topic creation, authorized and denied.

The client under test is User:ANONYMOUS on each broker's PLAINTEXT listener, its rights given by the same ACLs on
both (see test_acl_apis.Peers). Topics outlive a test on both brokers, so every test uses names of its own. Topic
ids differ between brokers and are normalised; DeleteTopics answers are compared as sorted lists because Kafka
shuffles them on purpose.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Iterator

import pytest

from kafka_shim.authorizer import AclOperation, AclPermissionType, PatternType, ResourceType
from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeTopicPartitionsRequest,
    MetadataRequest,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.differential.test_acl_apis import ANONYMOUS, Peers, acl
from tests.support.compare import assert_same
from tests.support.peers import mirror_internal_topics, start_real_kafka, stop_real_kafka
from tests.support.wire import Answer, Wire, exchange_both

# Kafka's codes, from their one definition (protocol.codes, authorizer.model), under short names for the tables below.
CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS, DESCRIBE_TOPIC_PARTITIONS, METADATA = (
    ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS, ApiKey.DESCRIBE_TOPIC_PARTITIONS, ApiKey.METADATA)
TOPIC, CLUSTER = ResourceType.TOPIC, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
DENY, ALLOW = AclPermissionType.DENY, AclPermissionType.ALLOW
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS = (
    AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DELETE, AclOperation.ALTER,
    AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS)
IDS = ("topics.*.topic_id", "responses.*.topic_id")
CT = CreateTopicsRequest.CreatableTopic
CC = CreateTopicsRequest.CreatableTopicConfig
CA = CreateTopicsRequest.CreatableReplicaAssignment
CP = CreatePartitionsRequest.CreatePartitionsTopic
PA = CreatePartitionsRequest.CreatePartitionsAssignment
DS = DeleteTopicsRequest.DeleteTopicState
_unique = itertools.count()


def fresh(stem: str) -> str:
    """A topic name no earlier test used on either broker (both outlive a test)."""
    return f"{stem}-{uuid.uuid4().hex[:8]}-{next(_unique)}"


def cluster_acl(operation: int, permission: int = ALLOW):
    return acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=operation, permission=permission)


def topic_acl(name: str, operation: int, pattern: int = LITERAL, permission: int = ALLOW):
    return acl(rtype=TOPIC, name=name, pattern=pattern, principal=ANONYMOUS, operation=operation, permission=permission)


@pytest.fixture(scope="module")
def shim_secured() -> Iterator[EmbeddedBroker]:
    config = BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "auto.create.topics.enable": "false",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:admin",
        "allow.everyone.if.no.acl.found": "false",
    })
    with EmbeddedBroker(config) as broker:
        yield broker


@pytest.fixture
def peers(oracle, shim_secured) -> Iterator[Peers]:
    mirror_internal_topics(oracle, shim_secured)
    both = Peers(oracle, shim_secured)
    both.reset()
    yield both
    both.reset()


def create(peers: Peers, *topics, version: int = 7, validate_only: bool = False, what: str = "CreateTopics",
           timeout_ms: int = 30000) -> tuple[Answer, Answer]:
    body = CreateTopicsRequest(topics=list(topics), timeout_ms=timeout_ms, validate_only=validate_only)
    kafka, shim = peers.both(CREATE_TOPICS, version, body)
    assert_same(kafka, shim, ignore=IDS, what=what)
    return kafka, shim


def wait_visible(peers: Peers, *names: str) -> None:
    """Kafka's broker learns of a created topic from its controller a moment later: wait until it lists them."""
    deadline = time.monotonic() + 30
    with Wire(peers.oracle.sasl) as admin:
        admin.sasl_plain("admin", "admin-secret")
        while True:
            answer = admin.request(METADATA, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names]))
            if all(t.error_code == 0 and t.partitions for t in answer.body.topics):
                return
            assert time.monotonic() < deadline, f"Kafka never listed {names}: {answer}"
            time.sleep(0.05)


def as_admin_create(peers: Peers, *topics) -> None:
    """Topics on both brokers, created by the super user (not the principal under test)."""
    body = CreateTopicsRequest(topics=list(topics), timeout_ms=30000)
    with Wire(peers.oracle.sasl) as admin:
        admin.sasl_plain("admin", "admin-secret")
        answer = admin.request(CREATE_TOPICS, 7, body)
    assert [t.error_code for t in answer.body.topics] == [0] * len(topics), answer
    result = peers.shim.call(lambda: _shim_create(peers.shim, topics))
    assert all(r.error == 0 for r in result), result
    wait_visible(peers, *(t.name for t in topics))


def _shim_create(shim: EmbeddedBroker, topics):
    from kafka_shim.shim.partitions.topic_admin import NewTopic, TopicAdmin

    admin = TopicAdmin(shim.broker.services.partitions)
    return admin.create_topics([NewTopic(t.name, t.num_partitions, t.replication_factor) for t in topics], False)


def sorted_responses(answer: Answer) -> Answer:
    if not answer.closed:
        answer.body.responses.sort(key=lambda r: (r.name or "", r.error_code, r.error_message or ""))
    return answer


# -- CreateTopics ---------------------------------------------------------------------------------------------------------


def _every_error(stem: str) -> list:
    return [
        CT(name=f"{stem}-ok", num_partitions=-1, replication_factor=-1, configs=[CC(name="retention.ms", value="1000")]),
        CT(name=f"{stem}-dup", num_partitions=1, replication_factor=1), CT(name=f"{stem}-dup", num_partitions=1, replication_factor=1),
        CT(name=f"{stem}/bad", num_partitions=1, replication_factor=1), CT(name="", num_partitions=1, replication_factor=1),
        CT(name=f"{stem}-rf3", num_partitions=1, replication_factor=3), CT(name=f"{stem}-rf0", num_partitions=1, replication_factor=0),
        CT(name=f"{stem}-rfneg", num_partitions=1, replication_factor=-5), CT(name=f"{stem}-np0", num_partitions=0, replication_factor=1),
        CT(name="__cluster_metadata", num_partitions=1, replication_factor=1),
        CT(name=f"{stem}-cfg-bad", num_partitions=1, replication_factor=1, configs=[CC(name="retention.ms", value="abc")]),
        CT(name=f"{stem}-cfg-unknown", num_partitions=1, replication_factor=1, configs=[CC(name="no.such.key", value="1")]),
        CT(name=f"{stem}-cfg-null", num_partitions=1, replication_factor=1, configs=[CC(name="retention.ms", value=None), CC(name="segment.ms", value=None)]),
        CT(name=f"{stem}-cfg-range", num_partitions=1, replication_factor=1, configs=[CC(name="min.insync.replicas", value="0")]),
        CT(name=f"{stem}-cfg-lag", num_partitions=1, replication_factor=1,
           configs=[CC(name="min.compaction.lag.ms", value="10"), CC(name="max.compaction.lag.ms", value="5")]),
        CT(name=f"{stem}-asg-rf", num_partitions=-1, replication_factor=1, assignments=[CA(partition_index=0, broker_ids=[1])]),
        CT(name=f"{stem}-asg-np", num_partitions=2, replication_factor=-1, assignments=[CA(partition_index=0, broker_ids=[1])]),
        CT(name=f"{stem}-asg-dup", num_partitions=-1, replication_factor=-1,
           assignments=[CA(partition_index=0, broker_ids=[1]), CA(partition_index=0, broker_ids=[1])]),
        CT(name=f"{stem}-asg-nobroker", num_partitions=-1, replication_factor=-1, assignments=[CA(partition_index=0, broker_ids=[7])]),
        CT(name=f"{stem}-asg-twice", num_partitions=-1, replication_factor=-1, assignments=[CA(partition_index=0, broker_ids=[1, 1])]),
        CT(name=f"{stem}-asg-empty", num_partitions=-1, replication_factor=-1, assignments=[CA(partition_index=0, broker_ids=[])]),
        CT(name=f"{stem}-asg-gap", num_partitions=-1, replication_factor=-1, assignments=[CA(partition_index=1, broker_ids=[1])]),
        CT(name=f"{stem}-asg-ok", num_partitions=-1, replication_factor=-1,
           assignments=[CA(partition_index=1, broker_ids=[1]), CA(partition_index=0, broker_ids=[1])]),
        CT(name="__consumer_offsets", num_partitions=1, replication_factor=1),
    ]


@pytest.mark.parametrize("version", range(1, 8))
def test_create_every_error_validate_only(peers, version) -> None:
    """Every refusal ReplicationControlManager and ControllerApis make, in one request, as a cluster-wide creator."""
    peers.grant(cluster_acl(CREATE), topic_acl("*", DESCRIBE_CONFIGS))
    topics = _every_error(fresh("every"))
    if version < 4:  # the -1 defaults and manual assignments' -1s are v4+ in Kafka's clients; the broker takes them anyway
        topics = [t for t in topics if t.num_partitions != -1 and t.replication_factor != -1]
    kafka, _ = create(peers, *topics, version=version, validate_only=True, what=f"CreateTopics v{version}, validate only")
    assert {t.error_code for t in kafka.body.topics} >= {42, 38, 37, 17, 40}


@pytest.mark.parametrize("version", range(8))
def test_create_then_exists(peers, version) -> None:
    peers.grant(cluster_acl(CREATE), topic_acl("*", DESCRIBE_CONFIGS))
    name = fresh(f"made-v{version}")
    kafka, _ = create(peers, CT(name=name, num_partitions=3, replication_factor=1, configs=[CC(name="cleanup.policy", value="compact")]),
                      version=version, what=f"CreateTopics v{version}")
    assert kafka.body.topics[0].error_code == 0
    wait_visible(peers, name)
    create(peers, CT(name=name, num_partitions=1, replication_factor=1), version=version, what="CreateTopics of an existing topic")


def test_create_colliding_name(peers) -> None:
    peers.grant(cluster_acl(CREATE))
    stem = fresh("coll")
    create(peers, CT(name=f"{stem}_a", num_partitions=1, replication_factor=1))
    wait_visible(peers, f"{stem}_a")
    kafka, _ = create(peers, CT(name=f"{stem}.a", num_partitions=1, replication_factor=1), what="a name colliding through '.' and '_'")
    assert kafka.body.topics[0].error_code == 17


def test_create_too_many_partitions_fails_whole(peers) -> None:
    peers.grant(cluster_acl(CREATE))
    stem = fresh("big")
    create(peers, CT(name=f"{stem}-a", num_partitions=6000, replication_factor=1), CT(name=f"{stem}-b", num_partitions=6000, replication_factor=1),
           validate_only=True, what="more than 10,000 metadata records")
    create(peers, CT(name=f"{stem}-c", num_partitions=9998, replication_factor=1, configs=[CC(name="retention.ms", value="5")]),
           validate_only=True, what="exactly 10,000 metadata records")


@pytest.mark.parametrize("rights", ["none", "create-topic", "create-prefix-no-describe-configs", "create-cluster-no-describe-configs",
                                    "create-denied-by-prefix", "alter-configs-implies-describe-configs"])
def test_create_authorization(peers, rights) -> None:
    stem = fresh("authz")
    grants = {
        "none": [],
        "create-topic": [topic_acl(f"{stem}-a", CREATE), topic_acl(f"{stem}-a", DESCRIBE_CONFIGS)],
        "create-prefix-no-describe-configs": [topic_acl(stem, CREATE, PREFIXED)],
        "create-cluster-no-describe-configs": [cluster_acl(CREATE)],
        "create-denied-by-prefix": [cluster_acl(CREATE, DENY), topic_acl(stem, CREATE, PREFIXED), topic_acl(f"{stem}-b", CREATE, PREFIXED, DENY)],
        "alter-configs-implies-describe-configs": [topic_acl(stem, CREATE, PREFIXED), topic_acl(f"{stem}-a", ALTER_CONFIGS)],
    }[rights]
    if grants:
        peers.grant(*grants)
    kafka, _ = create(peers, CT(name=f"{stem}-a", num_partitions=2, replication_factor=1), CT(name=f"{stem}-b", num_partitions=1, replication_factor=1),
                      CT(name=f"{stem}-c", num_partitions=1, replication_factor=1), CT(name=f"{stem}-c", num_partitions=1, replication_factor=1),
                      CT(name="__cluster_metadata", num_partitions=1, replication_factor=1), what=f"CreateTopics with {rights}")
    if rights == "none":
        assert {t.error_code for t in kafka.body.topics} == {29, 42}


@pytest.mark.parametrize("timeout_ms", [0, -1])
def test_an_expired_timeout_fails_the_request_once_the_controller_has_work(peers, timeout_ms) -> None:
    stem = fresh("late")
    kafka, _ = create(peers, CT(name=f"{stem}-a", num_partitions=1, replication_factor=1), CT(name=f"{stem}-a", num_partitions=1, replication_factor=1),
                      CT(name=f"{stem}-z", num_partitions=1, replication_factor=1),
                      timeout_ms=timeout_ms, what="every topic refused before the controller (duplicates, denied)")
    assert [t.error_code for t in kafka.body.topics] == [42, 29]
    peers.grant(cluster_acl(CREATE), cluster_acl(DELETE), topic_acl(stem, ALTER, PREFIXED))
    kafka, _ = create(peers, CT(name=f"{stem}-b", num_partitions=1, replication_factor=1), CT(name=f"{stem}-b", num_partitions=1, replication_factor=1),
                      CT(name=f"{stem}-c", num_partitions=1, replication_factor=1), timeout_ms=timeout_ms, what="CreateTopics past its deadline")
    assert {t.error_code for t in kafka.body.topics} == {7}
    as_admin_create(peers, CT(name=f"{stem}-d", num_partitions=1, replication_factor=1))
    increase(peers, CP(name=f"{stem}-d", count=2, assignments=None), timeout_ms=timeout_ms, what="CreatePartitions past its deadline")
    kafka, shim = peers.both(DELETE_TOPICS, 6, DeleteTopicsRequest(topics=[DS(name=f"{stem}-d", topic_id=uuid.UUID(int=0))], timeout_ms=timeout_ms))
    assert_same(kafka, shim, ignore=IDS, what="DeleteTopics past its deadline")
    assert [r.error_code for r in kafka.body.responses] == [7]


# -- CreatePartitions -----------------------------------------------------------------------------------------------------


def increase(peers: Peers, *topics, version: int = 3, validate_only: bool = False, what: str = "CreatePartitions",
             timeout_ms: int = 30000) -> Answer:
    kafka, shim = peers.both(CREATE_PARTITIONS, version, CreatePartitionsRequest(topics=list(topics), timeout_ms=timeout_ms,
                                                                                 validate_only=validate_only))
    assert_same(kafka, shim, what=what)
    return kafka


@pytest.mark.parametrize("version", range(4))
def test_create_partitions_errors(peers, version) -> None:
    stem = fresh(f"grow-v{version}")
    as_admin_create(peers, CT(name=f"{stem}-a", num_partitions=2, replication_factor=1), CT(name=f"{stem}-b", num_partitions=1, replication_factor=1))
    peers.grant(topic_acl(stem, ALTER, PREFIXED))
    a, b = f"{stem}-a", f"{stem}-b"
    increase(peers, CP(name=a, count=2, assignments=None), CP(name=f"{stem}-nope", count=3, assignments=None), CP(name=b, count=1, assignments=None),
             CP(name=f"{stem}-x", count=2, assignments=None), CP(name=f"{stem}-x", count=2, assignments=None), CP(name="bad/name", count=2, assignments=None),
             version=version, validate_only=True, what="CreatePartitions refusals")
    for assignments in ([PA(broker_ids=[1])], [PA(broker_ids=[1, 1]), PA(broker_ids=[1])], [PA(broker_ids=[7]), PA(broker_ids=[1])],
                        [PA(broker_ids=[]), PA(broker_ids=[1])], []):
        increase(peers, CP(name=a, count=4, assignments=assignments), version=version, what=f"assignments {assignments}")
    kafka = increase(peers, CP(name=a, count=4, assignments=[PA(broker_ids=[1]), PA(broker_ids=[1])]), CP(name=b, count=3, assignments=None),
                     version=version, what="CreatePartitions that grows two topics")
    assert [r.error_code for r in kafka.body.results] in ([0, 0],)


def test_create_partitions_beyond_ten_thousand_records(peers) -> None:
    stem = fresh("grow-big")
    as_admin_create(peers, *(CT(name=f"{stem}-{i}", num_partitions=1, replication_factor=1) for i in range(4)))
    peers.grant(topic_acl(stem, ALTER, PREFIXED))
    increase(peers, *(CP(name=f"{stem}-{i}", count=4000, assignments=None) for i in range(4)), validate_only=True,
             what="CreatePartitions overflowing Kafka's 10,000 records")
    increase(peers, CP(name=f"{stem}-0", count=10001, assignments=None), validate_only=True, what="exactly 10,000 new partitions")


def test_create_partitions_authorization(peers) -> None:
    stem = fresh("grow-authz")
    as_admin_create(peers, CT(name=f"{stem}-a", num_partitions=1, replication_factor=1), CT(name=f"{stem}-b", num_partitions=1, replication_factor=1))
    peers.grant(topic_acl(f"{stem}-a", ALTER), topic_acl(f"{stem}-b", DESCRIBE), topic_acl(f"{stem}-c", ALTER))
    kafka = increase(peers, CP(name=f"{stem}-a", count=2, assignments=None), CP(name=f"{stem}-b", count=2, assignments=None),
                     CP(name=f"{stem}-c", count=2, assignments=None), CP(name=f"{stem}-d", count=2, assignments=None), what="ALTER per topic")
    assert sorted(r.error_code for r in kafka.body.results) == [0, 3, 29, 29]


# -- DeleteTopics ---------------------------------------------------------------------------------------------------------


def _kafka_ids(address, names: list[str]) -> dict[str, uuid.UUID]:
    with Wire(address) as wire:
        wire.sasl_plain("admin", "admin-secret")
        answer = wire.request(METADATA, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names]))
    return {t.name: t.topic_id for t in answer.body.topics}


def delete_each(peers: Peers, version: int, make, names: list[str], what: str) -> tuple[Answer, Answer]:
    """DeleteTopics where each broker is asked with its own topic ids (``make(ids)`` builds the request body)."""
    kafka_ids = _kafka_ids(peers.oracle.sasl, names)
    shim_ids = peers.shim.call(lambda: {n: peers.shim.broker.services.cluster.topics[n].topic_id for n in names})
    answers = []
    peers._cid += 1
    for address, ids in ((peers.oracle.plaintext, kafka_ids), (peers.shim_address, shim_ids)):
        frame = encode_request(DELETE_TOPICS, version, peers._cid, make(ids))
        with Wire(address) as wire:
            answers.append(sorted_responses(wire.exchange(frame, DELETE_TOPICS, version)))
    assert_same(*answers, ignore=IDS, what=what)
    return answers[0], answers[1]


@pytest.mark.parametrize("version", range(6))
def test_delete_by_name(peers, version) -> None:
    stem = fresh(f"del-v{version}")
    names = [f"{stem}-a", f"{stem}-b", f"{stem}-c", f"{stem}-d"]
    as_admin_create(peers, *(CT(name=n, num_partitions=1, replication_factor=1) for n in names))
    peers.grant(topic_acl(f"{stem}-a", DELETE), topic_acl(f"{stem}-b", DESCRIBE), topic_acl(f"{stem}-nope", DESCRIBE),
                topic_acl(f"{stem}-d", DELETE), topic_acl(f"{stem}-d", DESCRIBE, permission=DENY))
    request = DeleteTopicsRequest(topic_names=[f"{stem}-a", f"{stem}-b", f"{stem}-c", f"{stem}-d", f"{stem}-nope", f"{stem}-hidden",
                                               f"{stem}-x", f"{stem}-x"], timeout_ms=30000)
    kafka, shim = (sorted_responses(a) for a in peers.both(DELETE_TOPICS, version, request))
    assert_same(kafka, shim, ignore=IDS, what=f"DeleteTopics v{version} by name")
    assert sorted(r.error_code for r in kafka.body.responses) == sorted([0, 29, 29, 29, 3, 29, 42])


def test_delete_by_id(peers) -> None:
    stem = fresh("del-id")
    names = [f"{stem}-a", f"{stem}-b", f"{stem}-c", f"{stem}-d"]
    as_admin_create(peers, *(CT(name=n, num_partitions=1, replication_factor=1) for n in names))
    peers.grant(topic_acl(f"{stem}-a", DELETE), topic_acl(f"{stem}-b", DESCRIBE), topic_acl(f"{stem}-d", DELETE))
    unknown = uuid.uuid4()

    def make(ids):
        return DeleteTopicsRequest(topics=[
            DS(name=None, topic_id=ids[f"{stem}-a"]), DS(name=None, topic_id=ids[f"{stem}-b"]), DS(name=None, topic_id=ids[f"{stem}-c"]),
            DS(name=f"{stem}-d", topic_id=uuid.UUID(int=0)), DS(name=None, topic_id=ids[f"{stem}-d"]), DS(name=None, topic_id=unknown),
            DS(name=None, topic_id=unknown), DS(name=None, topic_id=uuid.UUID(int=0)), DS(name="both", topic_id=unknown),
        ], timeout_ms=30000)

    kafka, _ = delete_each(peers, 6, make, names, "DeleteTopics v6 by id")
    assert sorted(r.error_code for r in kafka.body.responses) == sorted([0, 29, 29, 42, 42, 42, 42])


def test_delete_with_cluster_delete(peers) -> None:
    stem = fresh("del-cluster")
    as_admin_create(peers, CT(name=f"{stem}-a", num_partitions=1, replication_factor=1))
    peers.grant(cluster_acl(DELETE))
    kafka, shim = (sorted_responses(a) for a in peers.both(DELETE_TOPICS, 6, DeleteTopicsRequest(
        topics=[DS(name=f"{stem}-a", topic_id=uuid.UUID(int=0)), DS(name=f"{stem}-missing", topic_id=uuid.UUID(int=0))], timeout_ms=30000)))
    assert_same(kafka, shim, ignore=IDS, what="DELETE on the cluster")
    assert sorted(r.error_code for r in kafka.body.responses) == [0, 3]


# -- DescribeTopicPartitions and authorized operations ----------------------------------------------------------------------


def describe_partitions(peers: Peers, body, what: str) -> Answer:
    kafka, shim = peers.both(DESCRIBE_TOPIC_PARTITIONS, 0, body)
    assert_same(kafka, shim, ignore=IDS, what=what)
    return kafka


def test_describe_topic_partitions_paging_and_denials(peers) -> None:
    stem = fresh("dtp")
    as_admin_create(peers, CT(name=f"{stem}-a", num_partitions=3, replication_factor=1), CT(name=f"{stem}-b", num_partitions=2, replication_factor=1),
                    CT(name=f"{stem}-c", num_partitions=1, replication_factor=1), CT(name=f"{stem}-hidden", num_partitions=1, replication_factor=1))
    peers.grant(topic_acl(stem, DESCRIBE, PREFIXED), topic_acl(f"{stem}-b", WRITE), topic_acl(f"{stem}-c", ALTER_CONFIGS),
                topic_acl(f"{stem}-hidden", DESCRIBE, permission=DENY))
    T, C = DescribeTopicPartitionsRequest.TopicRequest, DescribeTopicPartitionsRequest.Cursor
    listed = [T(name=n) for n in (f"{stem}-c", f"{stem}-a", f"{stem}-b", f"{stem}-hidden", f"{stem}-nope", "bad/name", "zz-denied", "aa-denied")]
    for limit in (1, 2, 3, 4, 5, 6, 100):
        cursor = None
        for page in range(8):
            kafka = describe_partitions(peers, DescribeTopicPartitionsRequest(topics=listed, response_partition_limit=limit, cursor=cursor),
                                        f"limit {limit}, page {page}")
            if kafka.body.next_cursor is None:
                break
            cursor = C(topic_name=kafka.body.next_cursor.topic_name, partition_index=kafka.body.next_cursor.partition_index)
    describe_partitions(peers, DescribeTopicPartitionsRequest(topics=listed, response_partition_limit=10, cursor=C(topic_name=f"{stem}-a", partition_index=9)),
                        "a cursor past the topic's partitions")
    describe_partitions(peers, DescribeTopicPartitionsRequest(topics=listed, response_partition_limit=10, cursor=C(topic_name="absent", partition_index=0)),
                        "a cursor topic not in the list")
    describe_partitions(peers, DescribeTopicPartitionsRequest(topics=listed, response_partition_limit=10, cursor=C(topic_name=f"{stem}-a", partition_index=-1)),
                        "a negative cursor partition")


def test_describe_all_topic_partitions_from_a_cursor(peers) -> None:
    # Topic names sort with 'z' last; starting the cursor at this test's own topics keeps the others out of the page.
    stem = fresh("zzzz-all")
    as_admin_create(peers, CT(name=f"{stem}-a", num_partitions=3, replication_factor=1), CT(name=f"{stem}-b", num_partitions=1, replication_factor=1),
                    CT(name=f"{stem}-c", num_partitions=2, replication_factor=1))
    peers.grant(topic_acl(f"{stem}-a", READ), topic_acl(f"{stem}-c", DESCRIBE))
    C = DescribeTopicPartitionsRequest.Cursor
    cursor = C(topic_name=f"{stem}-a", partition_index=1)
    for page in range(6):
        kafka = describe_partitions(peers, DescribeTopicPartitionsRequest(topics=[], response_partition_limit=2, cursor=cursor),
                                    f"all topics, page {page}")
        assert f"{stem}-b" not in [t.name for t in kafka.body.topics]  # undescribable: silently left out
        if kafka.body.next_cursor is None:
            break
        cursor = C(topic_name=kafka.body.next_cursor.topic_name, partition_index=kafka.body.next_cursor.partition_index)
    assert page >= 1


@pytest.mark.parametrize("grant", [None, "*"])
def test_describe_a_topic_named_empty(peers, grant) -> None:
    """A describable topic named "" fails the whole request (-1, from a NullPointerException in Kafka's handler) unless
    a cursor names it; undescribable, it is an ordinary denial (29)."""
    stem = fresh("dtp-empty")
    as_admin_create(peers, CT(name=f"{stem}-a", num_partitions=2, replication_factor=1))
    if grant is not None:
        peers.grant(topic_acl(grant, DESCRIBE))
    else:
        peers.grant(topic_acl(f"{stem}-a", DESCRIBE))
    T, C = DescribeTopicPartitionsRequest.TopicRequest, DescribeTopicPartitionsRequest.Cursor
    answers = [
        describe_partitions(peers, DescribeTopicPartitionsRequest(topics=[T(name="")], response_partition_limit=10), '"" alone'),
        describe_partitions(peers, DescribeTopicPartitionsRequest(topics=[T(name=f"{stem}-a"), T(name=""), T(name="x/y")], response_partition_limit=10),
                            '"" among others'),
        describe_partitions(peers, DescribeTopicPartitionsRequest(topics=[T(name=""), T(name=f"{stem}-a")], response_partition_limit=10,
                                                                  cursor=C(topic_name="", partition_index=0)), '"" named by the cursor'),
    ]
    codes = [sorted(t.error_code for t in a.body.topics) for a in answers]
    # What Kafka answered (the same as kafka-shim's, compared above) is what this test is about: say it.
    assert codes[:2] == ([[29], [0, 29, 29]] if grant is None else [[-1], [-1, -1, -1]]), codes


@pytest.mark.parametrize("grants", ["describe", "read", "write-and-delete", "all", "all-but-denied-alter", "prefixed-create-configs"])
def test_topic_authorized_operations(peers, grants) -> None:
    stem = fresh("ops")
    name = f"{stem}-t"
    as_admin_create(peers, CT(name=name, num_partitions=1, replication_factor=1))
    sets = {
        "describe": [topic_acl(name, DESCRIBE)],
        "read": [topic_acl(name, READ)],
        "write-and-delete": [topic_acl(name, WRITE), topic_acl(name, DELETE)],
        "all": [topic_acl(name, 2)],
        "all-but-denied-alter": [topic_acl(stem, 2, PREFIXED), topic_acl(name, ALTER, permission=DENY)],
        "prefixed-create-configs": [topic_acl(stem, DESCRIBE, PREFIXED), topic_acl(stem, CREATE, PREFIXED), topic_acl(name, ALTER_CONFIGS)],
    }
    peers.grant(*sets[grants])
    kafka, shim = peers.both(METADATA, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)],
                                                             include_topic_authorized_operations=True))
    assert_same(kafka, shim, ignore=(*IDS, "brokers.*.port", "brokers.*.host", "cluster_id"), what=f"Metadata topic operations with {grants}")
    dtp = describe_partitions(peers, DescribeTopicPartitionsRequest(topics=[DescribeTopicPartitionsRequest.TopicRequest(name=name)],
                                                                    response_partition_limit=10), f"DescribeTopicPartitions with {grants}")
    assert dtp.body.topics[0].topic_authorized_operations == kafka.body.topics[0].topic_authorized_operations


# -- Metadata auto-creation and delete.topic.enable=false (both brokers so configured, no authorizer) -------------------


@pytest.fixture(scope="module")
def oracle_auto_create(tmp_path_factory):
    kafka = start_real_kafka(tmp_path_factory.mktemp("kafka-auto-create"), "authorizer.class.name=", "auto.create.topics.enable=true",
                             "num.partitions=3", "delete.topic.enable=false")
    yield kafka
    stop_real_kafka(kafka)


@pytest.fixture(scope="module")
def shim_auto_create() -> Iterator[EmbeddedBroker]:
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "auto.create.topics.enable": "true",
                                           "num.partitions": "3", "delete.topic.enable": "false",
                                           # as scripts/real-kafka configures Kafka
                                           "offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
                                           "transaction.state.log.min.isr": "1"})
    with EmbeddedBroker(config) as broker:
        yield broker


@pytest.mark.parametrize("count", [5, 11, 12, 20, 23, 40])
def test_metadata_auto_creates_several_in_kafkas_order(oracle_auto_create, shim_auto_create, count) -> None:
    host, port = shim_auto_create.bootstrap_servers.rsplit(":", 1)
    stem = fresh("several")
    names = [f"{stem}-{i}" for i in range(count)] + ["bad/one", "bad/two"]
    frame = encode_request(METADATA, 12, 9, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                                                            allow_auto_topic_creation=True))
    first = exchange_both(oracle_auto_create.plaintext, (host, int(port)), frame, METADATA, 12)
    assert_same(*first, ignore=("brokers.*.host", "brokers.*.port", "cluster_id", "topics.*.topic_id"), what=f"Metadata creating {count} topics")


@pytest.mark.parametrize("version", [1, 4, 9, 12])
def test_metadata_auto_creates(oracle_auto_create, shim_auto_create, version) -> None:
    host, port = shim_auto_create.bootstrap_servers.rsplit(":", 1)
    shim_address = (host, int(port))
    name = fresh(f"auto-v{version}")
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in (name, "bad/name")], allow_auto_topic_creation=True)
    frame = encode_request(METADATA, version, 7, request)
    first = exchange_both(oracle_auto_create.plaintext, shim_address, frame, METADATA, version)
    assert_same(*first, ignore=("brokers.*.host", "brokers.*.port", "cluster_id", "topics.*.topic_id"), what="the first Metadata")
    assert [t.error_code for t in first[0].body.topics] == [17, 3]
    deadline = time.monotonic() + 30
    while True:
        later = exchange_both(oracle_auto_create.plaintext, shim_address, frame, METADATA, version)
        if {t.name: t.error_code for t in later[0].body.topics}[name] == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert_same(*later, ignore=("brokers.*.host", "brokers.*.port", "cluster_id", "topics.*.topic_id"), what="the next Metadata")
    assert [len(t.partitions) for t in later[0].body.topics if t.name == name] == [3]


@pytest.mark.parametrize("version", range(7))
def test_delete_disabled(oracle_auto_create, shim_auto_create, version) -> None:
    host, port = shim_auto_create.bootstrap_servers.rsplit(":", 1)
    name = fresh(f"kept-v{version}")
    warm = encode_request(METADATA, 12, 3, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)], allow_auto_topic_creation=True))
    exchange_both(oracle_auto_create.plaintext, (host, int(port)), warm, METADATA, 12)  # auto-creates it on both
    if version < 6:
        body = DeleteTopicsRequest(topic_names=[name, "never-there"], timeout_ms=30000)
    else:
        body = DeleteTopicsRequest(topics=[DS(name=name, topic_id=uuid.UUID(int=0)), DS(name=None, topic_id=uuid.uuid4())], timeout_ms=30000)
    frame = encode_request(DELETE_TOPICS, version, 11, body)
    kafka, shim = exchange_both(oracle_auto_create.plaintext, (host, int(port)), frame, DELETE_TOPICS, version)
    assert_same(kafka, shim, what=f"DeleteTopics v{version} with delete.topic.enable=false")
    assert {r.error_code for r in kafka.body.responses} == {42 if version < 3 else 73}


def test_metadata_auto_creates_the_internal_topics(oracle_auto_create, shim_auto_create) -> None:
    host, port = shim_auto_create.bootstrap_servers.rsplit(":", 1)
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in ("__consumer_offsets", "__transaction_state")],
                              allow_auto_topic_creation=True)
    frame = encode_request(METADATA, 12, 5, request)
    identity = ("brokers.*.host", "brokers.*.port", "cluster_id", "topics.*.topic_id")
    assert_same(*exchange_both(oracle_auto_create.plaintext, (host, int(port)), frame, METADATA, 12), ignore=identity,
                what="the first Metadata for the internal topics")
    deadline = time.monotonic() + 60
    while True:
        later = exchange_both(oracle_auto_create.plaintext, (host, int(port)), frame, METADATA, 12)
        if all(t.error_code == 0 for t in later[0].body.topics) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert_same(*later, ignore=identity, what="the internal topics once created")
    assert [len(t.partitions) for t in later[0].body.topics] == [50, 50]
    configs = shim_auto_create.call(lambda: {n: dict(t.configs) for n, t in shim_auto_create.broker.services.cluster.topics.items()
                                             if n.startswith("__")})
    assert configs["__consumer_offsets"]["cleanup.policy"] == "compact"
    assert configs["__transaction_state"]["min.insync.replicas"] == "1"
