"""Differences a random differential probe of the release emulation (/tmp/old-probe) found between real Kafka 2.8.2 /
3.0.2 (ZooKeeper mode) and kafka-shim with ``kafka.version=2.8`` / ``3.0``, each pinned as the same request to both
brokers, as ``User:alice`` under ACLs set on both, answers compared field by field (fixtures of test_older_releases).
"""

from __future__ import annotations

import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import (
    AddPartitionsToTxnRequest,
    AlterConfigsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
    DescribeProducersRequest,
    FetchRequest,
    IncrementalAlterConfigsRequest,
)
from kafka_shim.shim.releases.profiles import api_ranges
from tests.differential import test_older_releases as releases_suite
from tests.differential.test_group_cleanup_on_topic_deletion import empty_groups_after_topic_deletion
from tests.differential.test_kraft_release_findings import (
    Pair,
    mixed_produce_order,
    unverified_produce,
    unverified_txn_offset_commit,
)
from tests.differential.test_older_releases import ADMIN, ALTER, CREATE, DELETE, READ, RELEASES, TOPIC, Older, acl
from tests.support.compare import assert_same
from tests.support.wire import Answer

# the fixtures of test_older_releases: one real Kafka per release for the session, ACLs emptied around each test
older_pair = releases_suite.older_pair
older = releases_suite.older

TOPIC_NAME = "older-fetch-topic"  # made once per session by test_older_releases' tests too
ABSENT = "older-probe-absent"


def _sorted(answer: Answer, field: str, key) -> Answer:
    getattr(answer.body, field).sort(key=key)
    return answer


@pytest.mark.parametrize("isolation_level", [0, 1])
def test_fetch_refused_partition_aborted_transactions(older: Older, isolation_level: int) -> None:
    """A refused partition (29 without READ, 3 for an absent topic alice may read): 2.8 built it in KafkaApis with a
    null aborted-transactions list, 3.0 from the generated FetchResponseData with an empty one."""
    older.create_topic_once(TOPIC_NAME)
    older.grant(acl(TOPIC, ABSENT, READ))
    topics = [FetchRequest.FetchTopic(topic=name, partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0,
                                                                                          partition_max_bytes=1 << 16)])
              for name in (TOPIC_NAME, ABSENT)]
    body = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=isolation_level, session_id=0,
                        session_epoch=-1, topics=topics, forgotten_topics_data=[], rack_id="")
    for version in (4, 7, api_ranges(older.line)[ApiKey.FETCH][1]):
        kafka, _ = older.same(ApiKey.FETCH, version, body, f"Fetch v{version} of refused partitions", ignore=("session_id",))
        assert [p.error_code for t in kafka.body.responses for p in t.partitions] == [29, 3]


def test_describe_producers_refusals(older: Older) -> None:
    """2.8 (the first release with DescribeProducers) answered a refused or unknown topic with a bare code; 3.0 added the
    messages (KAFKA-12434)."""
    older.create_topic_once(TOPIC_NAME)
    older.grant(acl(TOPIC, ABSENT, READ))
    body = DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(name=TOPIC_NAME, partition_indexes=[0, 1]),
                                            DescribeProducersRequest.TopicRequest(name=ABSENT, partition_indexes=[0])])
    kafka, _ = older.same(ApiKey.DESCRIBE_PRODUCERS, 0, body, "DescribeProducers v0 of a refused and an absent topic")
    assert [p.error_code for t in kafka.body.topics for p in t.partitions] == [29, 29, 3]


def test_delete_topics_answers_carry_no_messages(older: Older) -> None:
    """ZooKeeper mode's KafkaApis sets only a code on each topic of a DeleteTopics answer (v5+ have the message field;
    KRaft's controller fills it)."""
    older.create_topic_once(TOPIC_NAME)
    older.grant(acl(TOPIC, ABSENT, DELETE))
    for version in range(5, api_ranges(older.line)[ApiKey.DELETE_TOPICS][1] + 1):
        body = (DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=n) for n in (TOPIC_NAME, ABSENT)], timeout_ms=30000)
                if version >= 6 else DeleteTopicsRequest(topic_names=[TOPIC_NAME, ABSENT], timeout_ms=30000))
        kafka, shim = older.both(ApiKey.DELETE_TOPICS, version, body)
        for answer in (kafka, shim):  # ZooKeeper mode answers from a hash map; a client maps the results by name
            _sorted(answer, "responses", lambda r: r.name)
        assert_same(kafka, shim, ignore=("responses.*.topic_id",),
                    what=f"DeleteTopics v{version} (Kafka {RELEASES[older.line]}, results by name)")
        assert [(r.name, r.error_code) for r in kafka.body.responses] == [(TOPIC_NAME, 29), (ABSENT, 3)]


def test_create_partitions_refusal_messages(older: Older) -> None:
    """ZooKeeper mode words CreatePartitions' refusals itself: "The topic authorization is failed." (KafkaApis) for 29,
    "The topic 'NAME' does not exist." (ZkAdminManager) for an absent topic alice may alter."""
    older.create_topic_once(TOPIC_NAME)
    older.grant(acl(TOPIC, ABSENT, ALTER))
    body = CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(name=n, count=3, assignments=None)
                                           for n in (TOPIC_NAME, ABSENT)], timeout_ms=30000, validate_only=True)
    for version in range(0, api_ranges(older.line)[ApiKey.CREATE_PARTITIONS][1] + 1):
        kafka, shim = older.both(ApiKey.CREATE_PARTITIONS, version, body)
        for answer in (kafka, shim):  # ZooKeeper mode answers from a Scala map of the results; compared by name
            _sorted(answer, "results", lambda r: r.name)
        assert_same(kafka, shim, what=f"CreatePartitions v{version} (Kafka {RELEASES[older.line]}, results by name)")
        assert [(r.name, r.error_code) for r in kafka.body.results] == [(TOPIC_NAME, 29), (ABSENT, 3)]


def _by_resource(answer: Answer) -> Answer:
    # Kafka keys these answers by ConfigResource in a HashMap whose hash mixes an enum's identity hash: the order is the
    # JVM's; a client maps them by resource
    return _sorted(answer, "responses", lambda r: (r.resource_type, r.resource_name))


@pytest.mark.parametrize("api", ["AlterConfigs", "IncrementalAlterConfigs"])
def test_refused_config_alterations_carry_no_message(older: Older, api: str) -> None:
    """A resource refused for lack of ALTER_CONFIGS (29 on a topic, 31 on a broker) has no message in ZooKeeper mode."""
    older.create_topic_once(TOPIC_NAME)
    if api == "AlterConfigs":
        key, cls = ApiKey.ALTER_CONFIGS, AlterConfigsRequest
        config = lambda name, value: cls.AlterableConfig(name=name, value=value)  # noqa: E731
    else:
        key, cls = ApiKey.INCREMENTAL_ALTER_CONFIGS, IncrementalAlterConfigsRequest
        config = lambda name, value: cls.AlterableConfig(name=name, config_operation=0, value=value)  # noqa: E731
    body = cls(resources=[cls.AlterConfigsResource(resource_type=2, resource_name=TOPIC_NAME, configs=[config("retention.ms", "86400000")]),
                          cls.AlterConfigsResource(resource_type=4, resource_name="", configs=[config("log.cleaner.threads", "1")])],
               validate_only=True)
    for version in (0, 1):
        kafka, shim = older.both(key, version, body)
        assert_same(_by_resource(kafka), _by_resource(shim), what=f"{api} v{version} (Kafka {RELEASES[older.line]}, by resource)")
        assert [r.error_code for r in kafka.body.responses] == [29, 31]


# -- ZkAdminManager's config alterations ---------------------------------------------------------------------------

CONFIGS_TOPIC = "older-probe-configs"
_A, _I = AlterConfigsRequest, IncrementalAlterConfigsRequest
SET, DEL, APPEND, SUBTRACT = 0, 1, 2, 3
# (what, resource type, name, [(key, value)]) for AlterConfigs; the name "T" is CONFIGS_TOPIC, "-" an absent topic
_ALTER_CASES = [
    ("a value that does not parse", 2, "T", [("retention.ms", "x")]),
    ("an unknown key", 2, "T", [("bogus", "x")]),
    ("a value that does not parse, absent topic", 2, "-", [("retention.ms", "x")]),
    ("conflicting compaction lags", 2, "T", [("min.compaction.lag.ms", "10"), ("max.compaction.lag.ms", "5")]),
    # (a null value: the real broker of these tests closes the connection, its request log at DEBUG failing on it
    # first; without that log 2.8.2 answers -1 on every resource, which kafka-shim does)
    ("a broker value that does not parse", 4, "", [("log.cleaner.threads", "x")]),
    ("a static broker key", 4, "1", [("broker.id", "3")]),
    ("an unknown broker key", 4, "1", [("bogus.key", "1")]),
    ("another broker's id", 4, "2", [("log.cleaner.threads", "1")]),
    ("a broker name that is not a number", 4, "x", [("log.cleaner.threads", "1")]),
]
# (what, resource type, name, [(key, operation, value)]) for IncrementalAlterConfigs
_INCREMENTAL_CASES = [
    ("SET a value that does not parse", 2, "T", [("retention.ms", SET, "x")]),
    ("SET an unknown key", 2, "T", [("bogus", SET, "x")]),
    ("APPEND to an unknown key", 2, "T", [("bogus", APPEND, "x")]),
    ("DELETE an unknown key", 2, "T", [("bogus", DEL, None)]),
    ("DELETE a key that is not set", 2, "T", [("retention.ms", DEL, None)]),
    ("APPEND to a key that is not a list", 2, "T", [("retention.ms", APPEND, "1")]),
    ("SUBTRACT from a key that is not a list", 2, "T", [("retention.ms", SUBTRACT, "1")]),
    ("APPEND a value the list refuses", 2, "T", [("cleanup.policy", APPEND, "x")]),
    ("SUBTRACT from a key that is not a list, absent topic", 2, "-", [("retention.ms", SUBTRACT, "1")]),
    ("SET a value that does not parse, absent topic", 2, "-", [("retention.ms", SET, "x")]),
    ("SET an unknown key, absent topic", 2, "-", [("bogus", SET, "x")]),
    ("a key twice", 2, "T", [("retention.ms", SET, "1"), ("retention.ms", DEL, None)]),
    ("SET a null value", 2, "T", [("retention.ms", SET, None)]),
    ("SET a broker value that does not parse", 4, "", [("log.cleaner.threads", SET, "x")]),
    ("APPEND to a broker key that is not a list", 4, "1", [("log.cleaner.threads", APPEND, "1")]),
    ("SUBTRACT from an unknown broker key", 4, "1", [("bogus.key", SUBTRACT, "1")]),
    ("DELETE a broker key that is not set", 4, "", [("log.cleaner.threads", DEL, None)]),
    ("a logger that does not exist", 8, "1", [("no.such.logger", SET, "INFO")]),
    ("a log level that does not exist", 8, "1", [("root", SET, "LOUD")]),
    ("APPEND to a logger", 8, "1", [("root", APPEND, "INFO")]),
]


def _config_resource(api: str, kind: int, name: str, entries: list) -> object:
    name = {"T": CONFIGS_TOPIC, "-": ABSENT}.get(name, name)
    if api == "AlterConfigs":
        return _A.AlterConfigsResource(resource_type=kind, resource_name=name, configs=[_A.AlterableConfig(name=k, value=v) for k, v in entries])
    return _I.AlterConfigsResource(resource_type=kind, resource_name=name,
                                   configs=[_I.AlterableConfig(name=k, config_operation=o, value=v) for k, o, v in entries])


@pytest.mark.parametrize("api", ["AlterConfigs", "IncrementalAlterConfigs"])
def test_config_alterations_validated_as_zookeeper_mode(older: Older, api: str) -> None:
    """ZkAdminManager, not KRaft's controller, checks each resource the admin may alter: a topic's existence (3) before
    its values; a value that does not parse is 42 "Invalid config value for resource ConfigResource(...): ..." (40 for
    unknown keys and conflicts); APPEND/SUBTRACT on a key that is not a list 42, on a key the release does not define
    -1; broker ids in its words; 2.8-3.1 refuse duplicate keys and nulls themselves, and a null in AlterConfigs fails
    the whole request (-1)."""
    older.create_topic_once(CONFIGS_TOPIC)
    key, cls, cases = ((ApiKey.ALTER_CONFIGS, _A, _ALTER_CASES) if api == "AlterConfigs"
                       else (ApiKey.INCREMENTAL_ALTER_CONFIGS, _I, _INCREMENTAL_CASES))
    for version in sorted({0, 1, api_ranges(older.line)[key][1]}):
        for what, kind, name, entries in cases:
            body = cls(resources=[_config_resource(api, kind, name, entries)], validate_only=True)
            older.same(key, version, body, f"{api} v{version}: {what}", user=ADMIN)


def test_incremental_append_keeps_repeats_in_zookeeper_mode(older: Older) -> None:
    """ZkAdminManager appends to a list without dropping values it already holds (3.9's controller drops them); the
    topic's stored config shows it."""
    name = f"older-probe-append-{older.line}"
    older.create_topic_once(name)
    append = _I(resources=[_I.AlterConfigsResource(resource_type=2, resource_name=name, configs=[
        _I.AlterableConfig(name="cleanup.policy", config_operation=APPEND, value="compact")])], validate_only=False)
    for _ in range(2):
        kafka, _shim = older.same(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, append, "IncrementalAlterConfigs APPEND", user=ADMIN)
        assert kafka.body.responses[0].error_code == 0
    describe = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=2, resource_name=name, configuration_keys=["cleanup.policy"])], include_synonyms=False)
    kafka, _shim = older.same(ApiKey.DESCRIBE_CONFIGS, 1, describe, "DescribeConfigs after two APPENDs", user=ADMIN)
    assert kafka.body.results[0].configs[0].value == "delete,compact,compact"


# -- ZkAdminManager's CreateTopics ----------------------------------------------------------------------------------

def _new_topic(name: str, partitions: int = 1, factor: int = 1, configs: tuple = (), assignments: tuple = ()) -> object:
    return CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=factor,
        assignments=[CreateTopicsRequest.CreatableReplicaAssignment(partition_index=i, broker_ids=list(b)) for i, b in assignments],
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs])


_CREATE_CASES = [
    ("no partitions and a config that does not parse", [_new_topic("older-ct-a", 0, 1, [("cleanup.policy", "1000")])]),
    ("a replication factor too high and a config that does not parse", [_new_topic("older-ct-b", 1, 2, [("cleanup.policy", "x")])]),
    ("replication factor 0", [_new_topic("older-ct-c", 1, 0)]),
    ("replication factor -2", [_new_topic("older-ct-c", 1, -2)]),
    ("partitions -2", [_new_topic("older-ct-c", -2, 1)]),
    ("no partitions and replication factor 0", [_new_topic("older-ct-c", 0, 0)]),
    ("a replication factor too high", [_new_topic("older-ct-c", 2, 2)]),
    ("a config that does not parse", [_new_topic("older-ct-d", 1, 1, [("retention.ms", "x")])]),
    ("null configs", [_new_topic("older-ct-d", 1, 1, [("retention.ms", None), ("segment.ms", None)])]),
    ("an assignment and a replication factor", [_new_topic("older-ct-e", -1, 1, assignments=[(0, [1])])]),
    ("an assignment and a partition count", [_new_topic("older-ct-e", 1, -1, assignments=[(0, [1])])]),
    ("an assignment with a gap", [_new_topic("older-ct-e", -1, -1, assignments=[(0, [1]), (2, [1])])]),
    ("an assignment naming a broker twice", [_new_topic("older-ct-e", -1, -1, assignments=[(0, [1, 1])])]),
    ("an assignment of uneven replica counts", [_new_topic("older-ct-e", -1, -1, assignments=[(0, [1]), (1, [1, 2])])]),
    ("an assignment to an unknown broker", [_new_topic("older-ct-e", -1, -1, assignments=[(0, [7])])]),
    ("an illegal name and no partitions", [_new_topic("older ct!", 0, 1)]),
    ("an existing topic", [_new_topic(TOPIC_NAME, 0, 1, [("retention.ms", "x")])]),
]


def _configs_by_name(answer: Answer) -> Answer:
    # 2.8's Scala 2.13.5 lists a new topic's configs in another HashMap order (test_older_releases compares by name)
    for topic in answer.body.topics:
        topic.configs.sort(key=lambda c: c.name)
    return answer


def test_create_topics_checked_as_zookeeper_mode(older: Older) -> None:
    """ZkAdminManager's order: existence, nulls (42), assignment with counts (42), partitions (37) then replication
    factor (38) against the live brokers, then the name (17), the assignment (39: no check of the brokers) and the
    configs (40), each in its words; a topic refused there has its topic_config_error_code reset to 0."""
    older.create_topic_once(TOPIC_NAME)
    for version in sorted({1, 4, 5, api_ranges(older.line)[ApiKey.CREATE_TOPICS][1]}):
        for what, topics in _CREATE_CASES:
            kafka, shim = older.both(ApiKey.CREATE_TOPICS, version, CreateTopicsRequest(topics=topics, timeout_ms=30000, validate_only=True),
                                     ADMIN)
            assert_same(_configs_by_name(kafka), _configs_by_name(shim),
                        what=f"CreateTopics v{version}: {what} (Kafka {RELEASES[older.line]}, configs by name)")


def test_create_topics_refused_by_kafka_apis_keep_the_config_error(older: Older) -> None:
    """KafkaApis marks a topic alice may not describe the configs of with topic_config_error_code 29 first: a topic it
    refuses itself (29 without CREATE, 42 for every entry of a name given twice) keeps it, one ZkAdminManager refuses
    (37 here) is reset to 0."""
    older.grant(acl(TOPIC, "older-ct-ok", CREATE), acl(TOPIC, "older-ct-twice", CREATE))
    topics = [_new_topic("older-ct-no", 1, 1), _new_topic("older-ct-ok", 0, 1), _new_topic("older-ct-twice", 1, 1),
              _new_topic("older-ct-twice", 1, 1)]
    for version in range(5, api_ranges(older.line)[ApiKey.CREATE_TOPICS][1] + 1):
        kafka, _ = older.same(ApiKey.CREATE_TOPICS, version, CreateTopicsRequest(topics=topics, timeout_ms=30000, validate_only=True),
                              f"CreateTopics v{version} refused by KafkaApis and by ZkAdminManager")
        assert [(t.error_code, t.topic_config_error_code) for t in kafka.body.topics] == [(29, 29), (37, 0), (42, 29), (42, 29)]


# -- DescribeLogDirs ------------------------------------------------------------------------------------------------

def _log_dir_topics(answer: Answer) -> list[tuple[int, dict[str, list[int]]]]:
    # the directory's path is each broker's own (kafka-shim's in memory); partition sizes depend on each log's bytes
    return [(r.error_code, {t.name: sorted(p.partition_index for p in t.partitions) for t in r.topics}) for r in answer.body.results]


def test_describe_log_dirs_lists_every_topic_of_the_directory(older: Older) -> None:
    """ReplicaManager before KAFKA-16807 (3.7.1): every topic of the directory, those with no partition asked for with
    an empty list."""
    older.create_topic_once(TOPIC_NAME)
    older.create_topic_once(CONFIGS_TOPIC)
    body = DescribeLogDirsRequest(topics=[DescribeLogDirsRequest.DescribableLogDirTopic(topic=TOPIC_NAME, partitions=[0])])
    for version in range(0, api_ranges(older.line)[ApiKey.DESCRIBE_LOG_DIRS][1] + 1):
        kafka, shim = older.both(ApiKey.DESCRIBE_LOG_DIRS, version, body, ADMIN)
        assert _log_dir_topics(shim) == _log_dir_topics(kafka), f"DescribeLogDirs v{version} (Kafka {RELEASES[older.line]})"
        assert _log_dir_topics(kafka)[0][1][CONFIGS_TOPIC] == []


# -- AddPartitionsToTxn's one-code answers ----------------------------------------------------------------------------

def test_add_partitions_one_code_answers_by_partition(older: Older) -> None:
    """Before 3.5 a one-code answer (53 here, alice may not WRITE the transactional id) came from a HashMap by
    partition: a topic named twice once, a repeated partition once, a topic with no partitions left out, in the JVM's
    HashMap orders (3.9 keeps the request's shape: tests/differential/test_transactions.py)."""
    body = AddPartitionsToTxnRequest(v3_and_below_transactional_id="older-probe-txn", v3_and_below_producer_id=3,
                                     v3_and_below_producer_epoch=0, v3_and_below_topics=[
                                         AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=n, partitions=p)
                                         for n, p in ((TOPIC_NAME, [2]), ("zz-other", [1, 0]), (TOPIC_NAME, [1, 2]), ("aa", []))])
    for version in range(0, api_ranges(older.line)[ApiKey.ADD_PARTITIONS_TO_TXN][1] + 1):
        kafka, _ = older.same(ApiKey.ADD_PARTITIONS_TO_TXN, version, body, f"AddPartitionsToTxn v{version}, a topic twice")
        assert sorted(t.name for t in kafka.body.results_by_topic_v3_and_below) == sorted([TOPIC_NAME, "zz-other"])


def test_transactional_produce_to_a_partition_not_added(older: Older) -> None:
    """No release before KIP-890 part 1 (3.6) verified a transactional batch's partition with its coordinator: a
    partition the transaction never added is appended (the KRaft release findings show 3.5 doing the same)."""
    unverified_produce(Pair(older.kafka, older.shim_sasl), f"older-probe-{older.line}",
                       f"transactional Produce to a partition not added, Kafka {RELEASES[older.line]}")


def test_txn_offset_commit_without_add_offsets(older: Older) -> None:
    """Nor, before 3.7, a TxnOffsetCommit's __consumer_offsets partition: taken without AddOffsetsToTxn."""
    unverified_txn_offset_commit(Pair(older.kafka, older.shim_sasl), f"older-probe-{older.line}",
                                 f"TxnOffsetCommit without AddOffsetsToTxn, Kafka {RELEASES[older.line]}")


def test_produce_answers_in_one_mutable_map_order(older: Older) -> None:
    """Before 3.6 a Produce that appends answers all its partitions in one Scala mutable.HashMap's order (the KRaft
    release findings show 3.5 doing the same)."""
    mixed_produce_order(Pair(older.kafka, older.shim_sasl), f"older-probe-{older.line}",
                        f"Produce of an appended and refused partitions, Kafka {RELEASES[older.line]}")


def _increase(name: str, count: int, assignments: list[list[int]] | None = None) -> CreatePartitionsRequest.CreatePartitionsTopic:
    return CreatePartitionsRequest.CreatePartitionsTopic(name=name, count=count, assignments=None if assignments is None else [
        CreatePartitionsRequest.CreatePartitionsAssignment(broker_ids=brokers) for brokers in assignments])


CREATE_PARTITIONS_CHECKS = {  # ZkAdminManager's and AdminZkClient's checks, each on a two-partition topic
    "fewer": [_increase("older-probe-cp", 1)],
    "as many": [_increase("older-probe-cp", 2)],
    "unknown brokers before the count": [_increase("older-probe-cp", 4, [[7], [1, 8], [7]])],
    "assignments not matching the count": [_increase("older-probe-cp", 4, [[1]])],
    "an empty replica list": [_increase("older-probe-cp", 3, [[]])],
    "a broker twice": [_increase("older-probe-cp", 3, [[1, 1]])],
    "a name given twice": [_increase("older-probe-cp", 3), _increase("older-probe-cp", 4), _increase(ABSENT, 2)],
}


@pytest.mark.parametrize("case", list(CREATE_PARTITIONS_CHECKS))
def test_create_partitions_checks_in_zookeeper_order(older: Older, case: str) -> None:
    """ZooKeeper mode's CreatePartitions: ZkAdminManager's order and words (fewer or as many partitions, then a manual
    assignment's unknown brokers, its count, each partition's replicas), its results first, then KafkaApis' (a name
    given twice)."""
    older.create_topic_once("older-probe-cp", 2)
    body = CreatePartitionsRequest(topics=CREATE_PARTITIONS_CHECKS[case], timeout_ms=30000, validate_only=True)
    for version in range(0, api_ranges(older.line)[ApiKey.CREATE_PARTITIONS][1] + 1):
        older.same(ApiKey.CREATE_PARTITIONS, version, body, f"CreatePartitions v{version}: {case}", user=ADMIN)


def test_create_partitions_without_waiting(older: Older) -> None:
    """A timeout of 0 in ZooKeeper mode: the partitions are added and answered REQUEST_TIMED_OUT (not waited for),
    while a topic that fails its checks keeps its own error."""
    older.create_topic_once("older-probe-cp-nowait", 1)
    body = CreatePartitionsRequest(topics=[_increase("older-probe-cp-nowait", 2), _increase(ABSENT, 2)], timeout_ms=0,
                                   validate_only=False)
    kafka, _ = older.same(ApiKey.CREATE_PARTITIONS, 1, body, "CreatePartitions v1 with timeout 0", user=ADMIN)
    assert [(r.name, r.error_code) for r in kafka.body.results] == [("older-probe-cp-nowait", 7), (ABSENT, 3)]


def test_topic_deletion_removes_every_empty_group_without_offsets(older: Older) -> None:
    """As in 3.9 (tests/differential/test_group_cleanup_on_topic_deletion.py): ZooKeeper mode's UpdateMetadata of a
    deleted topic runs the group coordinator's cleanup over every group, so a group a JoinGroup made without a member
    goes then."""
    empty_groups_after_topic_deletion(Pair(older.kafka, older.shim_sasl), f"older-probe-{older.line}-cleanup",
                                      with_transaction=False)
