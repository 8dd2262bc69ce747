"""What a random differential probe of the admin APIs found kafka-shim answering unlike Kafka 3.9, compared again with a
Kafka of this module's own (so that both brokers hold exactly the same topics, created in the same order):

- AlterPartitionReassignments naming no topic: QuorumController answers at once, message "" (not null), whatever the
  timeout; ElectLeaders with an empty (not null) list likewise, whatever the election type and timeout.
- ElectLeaders with a timeout <= 0 and an unknown election type: the passed deadline wins (REQUEST_TIMED_OUT).
- ElectLeaders for every partition lists the topics in the order of the controller's TimelineHashMap of topics by name.
- AlterReplicaLogDirs answers in the order of KafkaApis' ``groupBy`` over ReplicaManager's Scala map.
- ListClientMetricsResources lists in the order of ClientMetricsManager's ConcurrentHashMap.
- AlterClientQuotas reports the first refused value in the order of the controller's ``new HashMap<>(ops.size())``.
- DescribeQuorum v2 lists the voter's controller endpoint from ``controller.quorum.voters``.
- IncrementalAlterConfigs of a BROKER_LOGGER with an operation id Kafka does not know: RuntimeLoggerManager switches on
  ``OpType.forId``'s null, so UNKNOWN_SERVER_ERROR without a message (not INVALID_REQUEST "Unknown operation type").
- IncrementalAlterConfigs forwarding such an id to the controller (a TOPIC or CLIENT_METRICS resource): the switch in
  ConfigurationControlManager.incrementalAlterConfigResource fails the controller's one event for the whole forwarded
  request, so every forwarded resource (refused ones included) answers UNKNOWN_SERVER_ERROR and nothing changes.
- DescribeConfigs of a CLIENT_METRICS subscription lists every stored key whatever configuration_keys asks for
  (ConfigHelper builds those entries without its key filter).
- Alter/IncrementalAlterConfigs whose authorization reaches an ACL with a principal Kafka cannot parse ("alice"): the
  controller fails the forwarded request (UNKNOWN_SERVER_ERROR for each forwarded resource), and a BROKER_LOGGER's
  check fails inside the broker's preprocessing, but the resources the broker refused itself keep their answers.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafka_shim.protocol.messages import (
    AlterClientQuotasRequest,
    AlterConfigsRequest,
    AlterPartitionReassignmentsRequest,
    AlterReplicaLogDirsRequest,
    CreateTopicsRequest,
    DescribeConfigsRequest,
    DescribeQuorumRequest,
    ElectLeadersRequest,
    IncrementalAlterConfigsRequest,
    ListClientMetricsResourcesRequest,
)
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.acl_peers import ALTER, ANONYMOUS, CLUSTER, CREATE, DESCRIBE, Peers, acl, secured_config
from tests.support.peers import RealKafka, start_real_kafka, stop_real_kafka

ELECT, ALTER_REASSIGN, ALTER_LOG_DIRS, ALTER_QUOTAS, CREATE_TOPICS = 43, 45, 34, 49, 19
INCREMENTAL_ALTER_CONFIGS, LIST_CLIENT_METRICS, DESCRIBE_QUORUM = 44, 74, 55
DESCRIBE_CONFIGS, ALTER_CONFIGS = 10, 11
CLIENT_METRICS_RESOURCE = 16
E = ElectLeadersRequest
A = AlterPartitionReassignmentsRequest
Q = AlterClientQuotasRequest
R = AlterReplicaLogDirsRequest


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKafka]:
    """This module's own Kafka: no topic but those the tests below create, on both brokers alike."""
    kafka = start_real_kafka(tmp_path_factory.mktemp("kafka-admin-probe"))
    yield kafka
    stop_real_kafka(kafka)


@pytest.fixture(scope="module")
def shim_secured(oracle: RealKafka) -> Iterator[EmbeddedBroker]:
    """kafka-shim as the module's Kafka, with the same static quorum (its controller endpoint)."""
    quorum = {"controller.listener.names": "CONTROLLER", "controller.quorum.voters": f"1@127.0.0.1:{oracle.info['ports']['CONTROLLER']}"}
    with EmbeddedBroker(secured_config(**quorum)) as broker:
        yield broker


def _may(peers: Peers, *operations: int) -> None:
    peers.grant(*(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=op) for op in operations))


def _create(peers: Peers, *names: str, partitions: int = 1) -> None:
    """The topics on both brokers, one request each, so that each broker creates them in this order."""
    for name in names:
        kafka, shim = peers.both(CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30000, topics=[
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)]))
        assert kafka.body.topics[0].error_code == 0 and shim.body.topics[0].error_code == 0, (kafka, shim)


@pytest.mark.parametrize("timeout", [30000, 0, -1])
def test_alter_partition_reassignments_naming_no_topic(peers: Peers, timeout: int) -> None:
    _may(peers, ALTER)
    peers.same(ALTER_REASSIGN, 0, A(timeout_ms=timeout, topics=[]), f"AlterPartitionReassignments of nothing, timeout {timeout}")


# v0 has no election type: it is always 0 there.
_EMPTY_ELECTIONS = [(version, election, timeout) for version in (0, 1, 2)
                    for election, timeout in [(0, 30000), (5, 30000), (-1, 0), (1, -1)] if version or election == 0]


@pytest.mark.parametrize(("version", "election", "timeout"), _EMPTY_ELECTIONS)
def test_elect_leaders_with_an_empty_list(peers: Peers, version: int, election: int, timeout: int) -> None:
    _may(peers, ALTER)
    peers.same(ELECT, version, E(election_type=election, timeout_ms=timeout, topic_partitions=[]),
               f"ElectLeaders v{version} of nothing, election {election}, timeout {timeout}")


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("timeout", [0, -1])
def test_elect_leaders_past_its_deadline_with_an_unknown_election_type(peers: Peers, version: int, timeout: int) -> None:
    _may(peers, ALTER)
    body = E(election_type=-1, timeout_ms=timeout, topic_partitions=[E.TopicPartitions(topic="probe-missing", partitions=[0, 1])])
    peers.same(ELECT, version, body, f"ElectLeaders v{version} election -1, timeout {timeout}")


def test_alter_replica_log_dirs_answers_in_kafkas_map_order(peers: Peers) -> None:
    _may(peers, ALTER)
    # An unknown directory (the same on both; the real ones differ) and topics that need not exist: every partition
    # is refused alike, what is compared is where each comes in the answer.
    body = R(dirs=[
        R.AlterReplicaLogDir(path="/no/such/dir", topics=[R.AlterReplicaLogDirTopic(name=name, partitions=[0, 1, 2, 3])
                                                          for name in ("ard-a", "ard-b", "ard-c")]),
        R.AlterReplicaLogDir(path="relative", topics=[R.AlterReplicaLogDirTopic(name="ard-b", partitions=[1, 7])]),
    ])
    for version in (0, 1, 2):
        peers.same(ALTER_LOG_DIRS, version, body, f"AlterReplicaLogDirs v{version}")


def test_alter_client_quotas_reports_the_first_refused_key_of_kafkas_map(peers: Peers) -> None:
    _may(peers, ALTER_CONFIGS)
    entity = [Q.EntityData(entity_type="user", entity_name="probe-user")]
    ops = [Q.OpData(key="request_percentage", value=100.0, remove=False), Q.OpData(key="consumer_byte_rate", value=50.5, remove=False),
           Q.OpData(key="", value=1e300, remove=False)]
    for version in (0, 1):
        peers.same(ALTER_QUOTAS, version, Q(entries=[Q.EntryData(entity=entity, ops=ops)], validate_only=True), f"AlterClientQuotas v{version}")


def test_list_client_metrics_resources_in_kafkas_map_order(peers: Peers) -> None:
    _may(peers, ALTER_CONFIGS, DESCRIBE_CONFIGS)
    names = [f"cm-order-{i}" for i in range(4)]  # Kafka's map holds them as 1, 0, 3, 2
    for name in names:
        kafka, shim = peers.both(INCREMENTAL_ALTER_CONFIGS, 1, IncrementalAlterConfigsRequest(validate_only=False, resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=CLIENT_METRICS_RESOURCE, resource_name=name, configs=[
                IncrementalAlterConfigsRequest.AlterableConfig(name="interval.ms", config_operation=0, value="10000")])]))
        assert kafka.body.responses[0].error_code == 0 and shim.body.responses[0].error_code == 0, (kafka, shim)
    deadline = time.monotonic() + 15  # Kafka's broker learns the subscriptions from the controller asynchronously
    while True:
        kafka, _ = peers.both(LIST_CLIENT_METRICS, 0, ListClientMetricsResourcesRequest())
        if len(kafka.body.client_metrics_resources) == len(names) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    peers.same(LIST_CLIENT_METRICS, 0, ListClientMetricsResourcesRequest(), "ListClientMetricsResources")


def test_elect_leaders_for_every_partition_in_the_controllers_order(peers: Peers) -> None:
    _may(peers, CREATE, ALTER)
    _create(peers, *(f"probe-el-{i}" for i in range(5)), partitions=2)  # Kafka's table: 2, 4, 1, 3, 0
    for version in (0, 1, 2):
        peers.same(ELECT, version, E(election_type=0, timeout_ms=30000, topic_partitions=None), f"ElectLeaders v{version} of everything")


def test_describe_quorum_lists_the_voters_controller_endpoint(peers: Peers) -> None:
    _may(peers, DESCRIBE)
    body = DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(topic_name="__cluster_metadata", partitions=[
        DescribeQuorumRequest.PartitionData(partition_index=0)])])
    kafka, shim = peers.both(DESCRIBE_QUORUM, 2, body)
    assert [(n.node_id, [(x.name, x.host, x.port) for x in n.listeners]) for n in shim.body.nodes] == \
        [(n.node_id, [(x.name, x.host, x.port) for x in n.listeners]) for n in kafka.body.nodes]


BROKER_LOGGER_RESOURCE = 8
_IA = IncrementalAlterConfigsRequest


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("ops", [
    [("kafka", -1, "INFO")],
    [("root", 4, "WARN")],
    [("no.such.logger", 7, "WARN")],
    [("state.change.logger", 1, None), ("root", -1, "OFF")],  # a valid DELETE first: the unknown id still fails the switch
    [("root", 0, "LOUD"), ("kafka", -1, "INFO")],  # the first failing operation decides
    [("kafka", -1, None)],  # a null value with an operation other than DELETE: refused before the switch
], ids=["minus-one", "four", "unknown-logger", "after-a-delete", "after-a-bad-level", "null-value"])
def test_broker_logger_operation_kafka_does_not_know(peers: Peers, version: int, ops: list) -> None:
    _may(peers, ALTER_CONFIGS)
    body = _IA(validate_only=True, resources=[_IA.AlterConfigsResource(resource_type=BROKER_LOGGER_RESOURCE, resource_name="1", configs=[
        _IA.AlterableConfig(name=name, config_operation=op, value=value) for name, op, value in ops])])
    peers.same(INCREMENTAL_ALTER_CONFIGS, version, body, f"IncrementalAlterConfigs v{version} of a logger, {ops}")


_D = DescribeConfigsRequest
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
SET, DELETE, APPEND = 0, 1, 2


def _incremental(*resources: tuple[int, str, list], validate_only: bool = True) -> IncrementalAlterConfigsRequest:
    return _IA(validate_only=validate_only, resources=[_IA.AlterConfigsResource(resource_type=t, resource_name=n, configs=[
        _IA.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops]) for t, n, ops in resources])


def _describe(*resources: tuple[int, str, list[str] | None]) -> DescribeConfigsRequest:
    return _D(resources=[_D.DescribeConfigsResource(resource_type=t, resource_name=n, configuration_keys=k) for t, n, k in resources],
              include_synonyms=False, include_documentation=False)


def _subscribe(peers: Peers, name: str, **configs: str) -> None:
    """The same CLIENT_METRICS subscription on both brokers, once Kafka's broker describes it."""
    body = _incremental((CLIENT_METRICS_RESOURCE, name, [(k.replace("_", "."), SET, v) for k, v in configs.items()]), validate_only=False)
    kafka, shim = peers.both(INCREMENTAL_ALTER_CONFIGS, 1, body)
    assert kafka.body.responses[0].error_code == 0 and shim.body.responses[0].error_code == 0, (kafka, shim)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        kafka, _ = peers.both(32, 4, _describe((CLIENT_METRICS_RESOURCE, name, None)))
        if len(kafka.body.results[0].configs) == len(configs):
            return
        time.sleep(0.1)


@pytest.mark.parametrize("resources", [
    [(CLIENT_METRICS_RESOURCE, "cm-npe", [("interval.ms", 4, "1000")])],
    [(TOPIC_RESOURCE, "no-such-topic", [("retention.ms", -1, "1")]), (CLIENT_METRICS_RESOURCE, "cm-npe", [("metrics", SET, "a")])],
    # the topic is refused (ANONYMOUS may not alter topics) yet answers the controller's failure like the others
    [(CLIENT_METRICS_RESOURCE, "cm-npe", [("metrics", SET, "a"), ("match", 9, "x")]), (TOPIC_RESOURCE, "no-such-topic", [("retention.ms", SET, "1")])],
    # refused, so never reaches the controller's switch: everything else is answered as usual
    [(TOPIC_RESOURCE, "no-such-topic", [("retention.ms", 4, "1")]), (CLIENT_METRICS_RESOURCE, "cm-npe", [("interval.ms", SET, "50")])],
    # the controller stops at the first APPEND on a non-LIST key (Java HashMap order of the names) before the unknown id
    [(CLIENT_METRICS_RESOURCE, "cm-npe", [("interval.ms", APPEND, "1"), ("metrics", 4, "a")])],
    [(CLIENT_METRICS_RESOURCE, "cm-npe", [("metrics", APPEND, "1"), ("interval.ms", 4, "a")])],
    # preprocessed resources keep their own answers (a BROKER_LOGGER, an unknown broker, the BROKER's own op check)
    [(BROKER_LOGGER_RESOURCE, "1", [("root", SET, "INFO")]), (BROKER_RESOURCE, "7", [("x", SET, "1")]),
     (BROKER_RESOURCE, "1", [("log.retention.ms", 4, "1")]), (CLIENT_METRICS_RESOURCE, "cm-npe", [("interval.ms", 5, "1")])],
    # the BROKER check looks at every operation id before applying any (an APPEND to a non-LIST key comes later)
    [(BROKER_RESOURCE, "1", [("log.cleaner.threads", APPEND, "1"), ("log.retention.ms", 4, "1")])],
], ids=["alone", "topic-then-subscription", "refused-topic-also-fails", "refused-topic-with-the-id", "append-first", "id-first",
        "preprocessed-keep-theirs", "broker-ids-before-appends"])
def test_an_operation_id_the_controller_does_not_know_fails_every_forwarded_resource(peers: Peers, resources: list) -> None:
    _may(peers, ALTER_CONFIGS)
    for version in (0, 1):
        peers.same(INCREMENTAL_ALTER_CONFIGS, version, _incremental(*resources), f"IncrementalAlterConfigs v{version} {resources}")


@pytest.mark.parametrize("version", [0, 1])
def test_an_operation_id_the_controller_does_not_know_on_an_authorized_topic(peers: Peers, version: int) -> None:
    _may(peers, ALTER_CONFIGS)
    peers.grant(acl(rtype=TOPIC_RESOURCE, name="no-such-topic", principal=ANONYMOUS, operation=ALTER_CONFIGS))
    body = _incremental((TOPIC_RESOURCE, "no-such-topic", [("retention.ms", -1, "1")]), (CLIENT_METRICS_RESOURCE, "cm-npe", [("metrics", SET, "a")]),
                        (TOPIC_RESOURCE, "other-topic", [("retention.ms", SET, "1")]))
    peers.same(INCREMENTAL_ALTER_CONFIGS, version, body, f"IncrementalAlterConfigs v{version}")


def test_a_failed_controller_event_changes_nothing(peers: Peers) -> None:
    _may(peers, ALTER_CONFIGS, DESCRIBE_CONFIGS)
    _subscribe(peers, "cm-kept", interval_ms="10000", metrics="a,b")
    body = _incremental((CLIENT_METRICS_RESOURCE, "cm-kept", [("interval.ms", DELETE, None)]),
                        (CLIENT_METRICS_RESOURCE, "cm-other", [("metrics", 4, "x")]), validate_only=False)
    peers.same(INCREMENTAL_ALTER_CONFIGS, 1, body, "IncrementalAlterConfigs that fails the controller's event")
    time.sleep(1)  # what Kafka's broker would have learnt by now, had anything changed
    peers.same(32, 4, _describe((CLIENT_METRICS_RESOURCE, "cm-kept", None)), "the subscription afterwards")


@pytest.mark.parametrize("keys", [["metrics"], ["no.such.key"], ["interval.ms", "metrics"], [], None])
def test_describe_of_a_subscription_ignores_the_keys_asked_for(peers: Peers, keys: list[str] | None) -> None:
    _may(peers, ALTER_CONFIGS, DESCRIBE_CONFIGS)
    _subscribe(peers, "cm-keys", interval_ms="10000", metrics="a,b", match="client_id=x")
    for version in (0, 1, 2, 3, 4):
        peers.same(32, version, _describe((CLIENT_METRICS_RESOURCE, "cm-keys", keys)), f"DescribeConfigs v{version} of {keys}")


_A = AlterConfigsRequest


@pytest.mark.parametrize("request_", [
    _A(validate_only=True, resources=[
        _A.AlterConfigsResource(resource_type=BROKER_LOGGER_RESOURCE, resource_name="", configs=[_A.AlterableConfig(name="root", value=None)]),
        _A.AlterConfigsResource(resource_type=BROKER_RESOURCE, resource_name="1", configs=[_A.AlterableConfig(name="log.retention.ms", value="1000")]),
        _A.AlterConfigsResource(resource_type=BROKER_RESOURCE, resource_name="7", configs=[_A.AlterableConfig(name="log.retention.ms", value="1")])]),
    _incremental((BROKER_LOGGER_RESOURCE, "1", [("root", SET, "INFO")]), (CLIENT_METRICS_RESOURCE, "cm-acl", [("metrics", SET, "a")]),
                 (TOPIC_RESOURCE, "t-acl", [("retention.ms", SET, None)])),
    _incremental((BROKER_LOGGER_RESOURCE, "2", [("root", SET, "INFO")]), (BROKER_RESOURCE, "1", [("log.retention.ms", SET, "5")])),
], ids=["legacy", "incremental", "incremental-logger-of-another-node"])
def test_alters_whose_authorization_reaches_an_acl_kafka_cannot_parse(peers: Peers, request_) -> None:
    _may(peers, ALTER_CONFIGS)
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal="alice", operation=ALTER_CONFIGS))
    api = 33 if isinstance(request_, AlterConfigsRequest) else INCREMENTAL_ALTER_CONFIGS
    for version in (0, 1):
        peers.same(api, version, request_, f"{type(request_).__name__} v{version}")
