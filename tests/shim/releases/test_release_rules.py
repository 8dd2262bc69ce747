"""Older releases' authorization rules over the wire (``kafka.version``; authorizer/api_checks/releases.py): each
emulated rule against the same request at Kafka 3.9, with the ACLs that make the difference."""

from __future__ import annotations

import struct
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from kafka_shim.authorizer import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import (
    InitProducerIdRequest,
    ListGroupsRequest,
    OffsetFetchRequest,
    ProduceRequest,
    SaslHandshakeRequest,
)
from kafka_shim.protocol.records import build_batch, encode_batch
from kafka_shim.shim.testing.handle import KafkaShim
from kafka_shim.shim.testing.options import ShimOptions
from tests.support.wire import Wire


def _shim(release: str) -> KafkaShim:
    return KafkaShim(ShimOptions.from_marker({"listener": "SASL_PLAINTEXT", "mechanism": "PLAIN", "authorizer": True,
                                              "kafka_version": release}))


def _allow(op: AclOperation, rtype: ResourceType, name: str, principal: str = "User:alice") -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, PatternType.LITERAL),
                      AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW))


def _wire(shim: KafkaShim, user: str = "alice") -> Wire:
    host, port = shim.bootstrap_servers.rsplit(":", 1)
    wire = Wire((host, int(port)))
    if ApiKey.SASL_AUTHENTICATE in _served(shim):
        wire.sasl_plain(user, shim.users[user])
    else:  # 0.11: SaslHandshake v0, then the raw token in a frame of its own and an empty frame back
        assert wire.request(ApiKey.SASL_HANDSHAKE, 0, SaslHandshakeRequest(mechanism="PLAIN")).body.error_code == 0
        token = b"\x00" + user.encode() + b"\x00" + shim.users[user].encode()
        wire.send_frame(struct.pack(">i", len(token)) + token)
        assert wire._read_exact(4) == b"\x00\x00\x00\x00"
    return wire


def _wait_for_coordinator(wire: Wire, group: str, timeout: float = 60.0) -> None:
    """FindCoordinator until the group's coordinator answers (it makes __consumer_offsets first), with a generous bound."""
    from kafka_shim.protocol.messages import FindCoordinatorRequest

    deadline = time.monotonic() + timeout
    while (error := wire.request(ApiKey.FIND_COORDINATOR, 1, FindCoordinatorRequest(key=group, key_type=0)).body.error_code) != 0:
        assert time.monotonic() < deadline, f"no coordinator for group {group} in {timeout:.0f}s (error {error})"
        time.sleep(0.05)


def _served(shim: KafkaShim) -> set[int]:
    return set(shim.embedded.call(lambda: {a.api_key for a in shim.embedded.broker.services.api_table.served}))


@pytest.mark.parametrize("release, code", [("0.11", ErrorCode.GROUP_AUTHORIZATION_FAILED), ("1.0", ErrorCode.NONE),
                                           ("3.9", ErrorCode.NONE)])
def test_offset_fetch_needed_read_on_the_group_before_kip_163(release: str, code: int) -> None:
    fetch = OffsetFetchRequest(group_id="billing", topics=None)  # v2: every committed offset, a top-level error
    with _shim(release) as shim:
        # Past authorization the answer is NOT_COORDINATOR (no __consumer_offsets yet): only 30 is a denial.
        shim.create_acls(_allow(AclOperation.DESCRIBE, ResourceType.GROUP, "billing"))
        with _wire(shim) as wire:
            error = wire.request(ApiKey.OFFSET_FETCH, 2, fetch).body.error_code
        assert (error == ErrorCode.GROUP_AUTHORIZATION_FAILED) is (code == ErrorCode.GROUP_AUTHORIZATION_FAILED), error
        shim.create_acls(_allow(AclOperation.READ, ResourceType.GROUP, "billing"))
        with _wire(shim) as wire:
            assert wire.request(ApiKey.OFFSET_FETCH, 2, fetch).body.error_code != ErrorCode.GROUP_AUTHORIZATION_FAILED


@pytest.mark.parametrize("release", ["2.0", "2.1"])
def test_list_groups_needed_describe_on_the_cluster_before_kip_231(release: str) -> None:
    with _shim(release) as shim:
        with _wire(shim) as wire:
            denied = wire.request(ApiKey.LIST_GROUPS, 1, ListGroupsRequest())
        assert denied.body.error_code == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED if release == "2.0" else ErrorCode.NONE)
        shim.create_acls(_allow(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME))
        with _wire(shim) as wire:
            assert wire.request(ApiKey.LIST_GROUPS, 1, ListGroupsRequest()).body.error_code == ErrorCode.NONE


def _idempotent_producer(shim: KafkaShim) -> KafkaError | None:
    """What an idempotent confluent-kafka producer meets: its refused InitProducerId as the fatal error flush raises,
    or None when the record is in the log. (No callbacks: confluent-kafka calls them with its fatal exception set.)"""
    producer = Producer(shim.confluent_config("alice", **{"enable.idempotence": True, "message.timeout.ms": 20000}))
    try:
        producer.produce("payments", b"v")
        assert producer.flush(30) == 0
    except KafkaException as exc:
        return exc.args[0]
    consumer = Consumer(shim.confluent_config("admin", **{"group.id": "check"}))
    try:
        assert consumer.get_watermark_offsets(TopicPartition("payments", 0), timeout=30) == (0, 1)
    finally:
        consumer.close()
    return None


@pytest.mark.parametrize("release, grant_cluster, refused", [
    ("2.7", False, True), ("2.7", True, False), ("2.8", False, False)])
def test_idempotent_producer_needed_idempotent_write_before_kip_679(release: str, grant_cluster: bool, refused: bool) -> None:
    with _shim(release) as shim:
        shim.create_topic("payments")
        shim.create_acls(_allow(AclOperation.WRITE, ResourceType.TOPIC, "payments"))
        if grant_cluster:
            shim.create_acls(_allow(AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME))
        error = _idempotent_producer(shim)
        if refused:
            assert error is not None and error.code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
        else:
            assert error is None


@pytest.mark.parametrize("release, code", [("2.7", ErrorCode.CLUSTER_AUTHORIZATION_FAILED), ("2.8", ErrorCode.NONE)])
def test_idempotent_produce_was_checked_for_idempotent_write_before_kip_679(release: str, code: int) -> None:
    with _shim(release) as shim:
        shim.create_topic("payments")
        shim.create_acls(_allow(AclOperation.WRITE, ResourceType.TOPIC, "payments"))
        with _wire(shim, "admin") as wire:  # a producer id from a principal that may have one
            granted = wire.request(ApiKey.INIT_PRODUCER_ID, 1, InitProducerIdRequest(transactional_id=None,
                                                                                     transaction_timeout_ms=60000)).body
        assert granted.error_code == 0
        batch = encode_batch(build_batch([(None, b"v", [], 0)], producer_id=granted.producer_id,
                                         producer_epoch=granted.producer_epoch, base_sequence=0))
        with _wire(shim) as wire:
            answer = wire.request(ApiKey.PRODUCE, 5, ProduceRequest(acks=1, timeout_ms=10000, topic_data=[
                ProduceRequest.TopicProduceData(name="payments", partition_data=[
                    ProduceRequest.PartitionProduceData(index=0, records=batch)])]))
        assert answer.body.responses[0].partition_responses[0].error_code == code


# -- KIP-277 (2.0): CreateTopics with CREATE on the topic alone ------------------------------------------------------

@pytest.mark.parametrize(("release", "codes"), [("1.1", [31, 31]), ("2.0", [0, 29]), ("3.9", [0, 29])])
def test_create_topics_with_create_on_the_topic_only(release: str, codes: list[int]) -> None:
    from kafka_shim.protocol.messages import CreateTopicsRequest

    with _shim(release) as shim:
        shim.create_acls([_allow(AclOperation.CREATE, ResourceType.TOPIC, "mine")])
        body = CreateTopicsRequest(timeout_ms=30000, topics=[CreateTopicsRequest.CreatableTopic(
            name=n, num_partitions=1, replication_factor=1) for n in ("mine", "theirs")])
        with _wire(shim) as wire:
            answer = wire.request(ApiKey.CREATE_TOPICS, 2, body).body
        assert [t.error_code for t in answer.topics] == codes
        shim.create_acls([_allow(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)])
        with _wire(shim) as wire:
            again = wire.request(ApiKey.CREATE_TOPICS, 2, CreateTopicsRequest(timeout_ms=30000, topics=[
                CreateTopicsRequest.CreatableTopic(name="theirs", num_partitions=1, replication_factor=1)])).body
        assert [t.error_code for t in again.topics] == [0]  # CREATE on the cluster: every release


# -- KAFKA-7394 (2.1): OffsetForLeaderEpoch was inter-broker only ----------------------------------------------------

@pytest.mark.parametrize(("release", "code"), [("2.0", 31), ("2.1", 0)])
def test_offset_for_leader_epoch_with_describe_on_the_topic(release: str, code: int) -> None:
    from kafka_shim.protocol.messages import OffsetForLeaderEpochRequest as O

    with _shim(release) as shim:
        shim.create_topic("t")
        shim.create_acls([_allow(AclOperation.DESCRIBE, ResourceType.TOPIC, "t")])
        body = O(topics=[O.OffsetForLeaderTopic(topic="t", partitions=[O.OffsetForLeaderPartition(partition=0, leader_epoch=0)])])
        with _wire(shim) as wire:
            answer = wire.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 1, body).body
        assert [p.error_code for t in answer.topics for p in t.partitions] == [code]
        shim.create_acls([_allow(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)])
        with _wire(shim) as wire:
            assert [p.error_code for t in wire.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 1, body).body.topics for p in t.partitions] == [0]


# -- follower fetch without CLUSTER_ACTION: 31 on 1.0, 29 from the 1.1 fetch rewrite ----------------------------------

@pytest.mark.parametrize(("release", "code"), [("1.0", 31), ("1.1", 29), ("3.9", 29)])
def test_a_follower_fetch_without_cluster_action(release: str, code: int) -> None:
    from kafka_shim.protocol.messages import FetchRequest as F

    with _shim(release) as shim:
        shim.create_topic("t")
        shim.create_acls([_allow(AclOperation.READ, ResourceType.TOPIC, "t")])
        body = F(replica_id=2, max_wait_ms=0, min_bytes=1, topics=[F.FetchTopic(topic="t", partitions=[F.FetchPartition(partition=0)])])
        with _wire(shim) as wire:
            answer = wire.request(ApiKey.FETCH, 6, body).body
        assert [p.error_code for t in answer.responses for p in t.partitions] == [code]


# -- KIP-277 (2.0): Metadata's auto-creation with CREATE on the topic alone -------------------------------------------

# A ZooKeeper-mode broker (2.0) creates the topic itself and answers LEADER_NOT_AVAILABLE (5; KafkaApis.createTopic at
# 2.0.1), a KRaft one (3.9) forwards the creation and answers 3.
@pytest.mark.parametrize(("release", "code", "created"), [("1.1", 29, False), ("2.0", 5, True), ("3.9", 3, True)])
def test_metadata_auto_creation_with_create_on_the_topic_only(release: str, code: int, created: bool) -> None:
    from kafka_shim.protocol.messages import MetadataRequest

    with _shim(release) as shim:
        shim.create_acls([_allow(AclOperation.CREATE, ResourceType.TOPIC, "mine"),
                          _allow(AclOperation.DESCRIBE, ResourceType.TOPIC, "mine")])
        body = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="mine")], allow_auto_topic_creation=True)
        with _wire(shim) as wire:
            answer = wire.request(ApiKey.METADATA, 4, body).body
        assert [(t.name, t.error_code) for t in answer.topics] == [("mine", code)]
        assert ("mine" in shim.topics()) is created


# -- KAFKA-13527 (3.2): DescribeLogDirs refused with 31 rather than answered empty -----------------------------------

@pytest.mark.parametrize(("release", "version", "code"), [("3.1", 2, 0), ("3.2", 3, 31), ("3.9", 4, 31)])
def test_describe_log_dirs_without_describe_on_the_cluster(release: str, version: int, code: int) -> None:
    """Before 3.2 a refusal was an empty answer; 3.2 added the top-level error with v3, the highest version each
    release serves here, so the versions alone carry the rule."""
    from kafka_shim.protocol.messages import DescribeLogDirsRequest

    with _shim(release) as shim:
        shim.create_topic("t")
        if version < 4:  # the next version is not served (4 is the schema's last)
            with _wire(shim) as wire:
                assert wire.request(ApiKey.DESCRIBE_LOG_DIRS, version + 1, DescribeLogDirsRequest(topics=None)).closed
        with _wire(shim) as wire:
            answer = wire.request(ApiKey.DESCRIBE_LOG_DIRS, version, DescribeLogDirsRequest(topics=None)).body
        assert ((answer.error_code if version >= 3 else 0), answer.results) == (code, [])
        shim.create_acls([_allow(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)])
        with _wire(shim) as wire:
            allowed = wire.request(ApiKey.DESCRIBE_LOG_DIRS, version, DescribeLogDirsRequest(topics=None)).body
        assert len(allowed.results) == 1


# -- KAFKA-5547 (1.0): 0.11 hid a topic it would not describe behind UNKNOWN_TOPIC_OR_PARTITION -------------------------

# alice may DESCRIBE "visible" and "visible-ghost" and nothing else; "secret" and "visible" exist, the ghosts do not
_ASKED = ("secret", "ghost", "visible", "visible-ghost")
# an operation past DESCRIBE (WRITE, READ, DELETE, ALTER_CONFIGS...): 0.11 asked DESCRIBE and existence first (3), 1.0+
# the operation first (29 for all four, as alice has none)
_OPERATION_CODES = {"0.11": [3, 3, 29, 3], "1.0": [29, 29, 29, 29]}
# DESCRIBE itself (ListOffsets, a Metadata topic list): 0.11 said 3 where 1.0+ say 29
_DESCRIBE_CODES = {"0.11": [3, 3, 0, 3], "1.0": [29, 29, 0, 3]}


def _hiding_shim(release: str) -> KafkaShim:
    shim = _shim(release)
    shim.__enter__()
    for name in ("secret", "visible"):
        shim.create_topic(name)
    shim.create_acls([_allow(AclOperation.DESCRIBE, ResourceType.TOPIC, n) for n in ("visible", "visible-ghost")]
                     + [_allow(AclOperation.READ, ResourceType.GROUP, "g"), _allow(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, "tx")])
    return shim


def _per_topic(answers: list[tuple[str, int]]) -> list[int]:
    codes = dict(answers)
    assert len(codes) == len(answers), answers  # one answer per topic
    return [codes[name] for name in _ASKED]


def _produce(wire: Wire) -> list[int]:
    batch = encode_batch(build_batch([(None, b"v", [], 0)]))
    answer = wire.request(ApiKey.PRODUCE, 3, ProduceRequest(acks=1, timeout_ms=10000, topic_data=[
        ProduceRequest.TopicProduceData(name=n, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])
        for n in _ASKED])).body
    return _per_topic([(t.name, p.error_code) for t in answer.responses for p in t.partition_responses])


def _fetch(wire: Wire) -> list[int]:
    from kafka_shim.protocol.messages import FetchRequest as F

    answer = wire.request(ApiKey.FETCH, 5, F(replica_id=-1, max_wait_ms=0, min_bytes=1, topics=[
        F.FetchTopic(topic=n, partitions=[F.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024)]) for n in _ASKED])).body
    return _per_topic([(t.topic, p.error_code) for t in answer.responses for p in t.partitions])


def _offset_commit(wire: Wire) -> list[int]:
    from kafka_shim.protocol.messages import OffsetCommitRequest as C

    answer = wire.request(ApiKey.OFFSET_COMMIT, 2, C(group_id="g", generation_id_or_member_epoch=-1, member_id="", retention_time_ms=-1, topics=[
        C.OffsetCommitRequestTopic(name=n, partitions=[C.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])
        for n in _ASKED])).body
    return _per_topic([(t.name, p.error_code) for t in answer.topics for p in t.partitions])


def _txn_offset_commit(wire: Wire) -> list[int]:
    from kafka_shim.protocol.messages import TxnOffsetCommitRequest as T

    answer = wire.request(ApiKey.TXN_OFFSET_COMMIT, 0, T(transactional_id="tx", group_id="g", producer_id=1, producer_epoch=0, topics=[
        T.TxnOffsetCommitRequestTopic(name=n, partitions=[T.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1)])
        for n in _ASKED])).body
    return _per_topic([(t.name, p.error_code) for t in answer.topics for p in t.partitions])


def _add_partitions_to_txn(wire: Wire) -> list[int]:
    from kafka_shim.protocol.messages import AddPartitionsToTxnRequest as A

    answer = wire.request(ApiKey.ADD_PARTITIONS_TO_TXN, 0, A(
        v3_and_below_transactional_id="tx", v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
        v3_and_below_topics=[A.AddPartitionsToTxnTopic(name=n, partitions=[0]) for n in _ASKED])).body
    return _per_topic([(t.name, p.partition_error_code) for t in answer.results_by_topic_v3_and_below for p in t.results_by_partition])


def _delete_topics(wire: Wire) -> list[int]:
    from kafka_shim.protocol.messages import DeleteTopicsRequest

    answer = wire.request(ApiKey.DELETE_TOPICS, 1, DeleteTopicsRequest(topic_names=list(_ASKED), timeout_ms=10000)).body
    return _per_topic([(r.name, r.error_code) for r in answer.responses])


def _delete_records(wire: Wire) -> list[int]:
    from kafka_shim.protocol.messages import DeleteRecordsRequest as D

    answer = wire.request(ApiKey.DELETE_RECORDS, 0, D(timeout_ms=10000, topics=[
        D.DeleteRecordsTopic(name=n, partitions=[D.DeleteRecordsPartition(partition_index=0, offset=0)]) for n in _ASKED])).body
    return _per_topic([(t.name, p.error_code) for t in answer.topics for p in t.partitions])


def _alter_configs(wire: Wire) -> list[int]:
    from kafka_shim.protocol.messages import AlterConfigsRequest as A

    answer = wire.request(ApiKey.ALTER_CONFIGS, 0, A(validate_only=False, resources=[
        A.AlterConfigsResource(resource_type=2, resource_name=n, configs=[A.AlterableConfig(name="retention.ms", value="1000")])
        for n in _ASKED])).body
    return _per_topic([(r.resource_name, r.error_code) for r in answer.responses])


def _describe_configs(wire: Wire) -> list[int]:
    from kafka_shim.protocol.messages import DescribeConfigsRequest as D

    answer = wire.request(ApiKey.DESCRIBE_CONFIGS, 0, D(resources=[
        D.DescribeConfigsResource(resource_type=2, resource_name=n, configuration_keys=None) for n in _ASKED])).body
    return _per_topic([(r.resource_name, r.error_code) for r in answer.results])


@pytest.mark.parametrize("release", ["0.11", "1.0"])
@pytest.mark.parametrize("ask", [_produce, _fetch, _offset_commit, _txn_offset_commit, _add_partitions_to_txn, _delete_topics,
                                 _delete_records, _alter_configs, _describe_configs], ids=lambda f: f.__name__.strip("_"))
def test_an_operation_on_a_topic_alice_may_not_describe(release: str, ask) -> None:
    shim = _hiding_shim(release)
    try:
        with _wire(shim) as wire:
            codes = ask(wire)
        # 0.11 answered a refused config resource 29 only when alice could describe the topic, existing or not
        expected = [3, 3, 29, 29] if release == "0.11" and ask in (_alter_configs, _describe_configs) else _OPERATION_CODES[release]
        assert codes == expected
        assert set(shim.topics()) >= {"secret", "visible"}  # nothing was deleted
    finally:
        shim.__exit__(None, None, None)


def _list_offsets(wire: Wire) -> list[int]:
    from kafka_shim.protocol.messages import ListOffsetsRequest as L

    answer = wire.request(ApiKey.LIST_OFFSETS, 1, L(replica_id=-1, topics=[
        L.ListOffsetsTopic(name=n, partitions=[L.ListOffsetsPartition(partition_index=0, timestamp=-1)]) for n in _ASKED])).body
    return _per_topic([(t.name, p.error_code) for t in answer.topics for p in t.partitions])


def _metadata(wire: Wire) -> list[int]:
    from kafka_shim.protocol.messages import MetadataRequest

    answer = wire.request(ApiKey.METADATA, 4, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in _ASKED],
                                                               allow_auto_topic_creation=False)).body
    return _per_topic([(t.name, t.error_code) for t in answer.topics])


@pytest.mark.parametrize("release", ["0.11", "1.0"])
@pytest.mark.parametrize("ask", [_list_offsets, _metadata], ids=lambda f: f.__name__.strip("_"))
def test_describing_a_topic_alice_may_not_describe(release: str, ask) -> None:
    shim = _hiding_shim(release)
    try:
        with _wire(shim) as wire:
            assert ask(wire) == _DESCRIBE_CODES[release]
    finally:
        shim.__exit__(None, None, None)


@pytest.mark.parametrize(("release", "code"), [("0.11", 3), ("1.0", 29)])
def test_offset_fetch_of_a_topic_alice_may_not_describe(release: str, code: int) -> None:
    from kafka_shim.protocol.messages import OffsetFetchRequest as O

    shim = _hiding_shim(release)
    try:
        with _wire(shim, "admin") as wire:  # the offsets topic, so that the group's answer comes from its coordinator
            _wait_for_coordinator(wire, "g")
        with _wire(shim) as wire:
            answer = wire.request(ApiKey.OFFSET_FETCH, 3, O(group_id="g", topics=[
                O.OffsetFetchRequestTopic(name=n, partition_indexes=[0]) for n in _ASKED])).body
        assert answer.error_code == 0
        offsets = {t.name: (p.error_code, p.committed_offset) for t in answer.topics for p in t.partitions}
        assert [offsets[n] for n in _ASKED] == [(code, -1), (code, -1), (0, -1), (0, -1)]
    finally:
        shim.__exit__(None, None, None)


@pytest.mark.parametrize(("release", "deleted"), [("3.0", False), ("3.3", True)])
def test_delete_on_the_cluster_deletes_topics_only_on_a_kraft_broker(release: str, deleted: bool) -> None:
    """KRaft's controller takes DELETE on the cluster as leave to delete any topic; ZooKeeper mode (the releases
    kafka-shim presents as ZooKeeper brokers, before 3.3) asks DELETE on the topic alone."""
    from kafka_shim.protocol.messages import DeleteTopicsRequest

    with _shim(release) as shim:
        shim.create_topic("t")
        shim.create_acls([_allow(AclOperation.DELETE, ResourceType.CLUSTER, CLUSTER_NAME)])
        with _wire(shim) as wire:
            answer = wire.request(ApiKey.DELETE_TOPICS, 4, DeleteTopicsRequest(topic_names=["t"], timeout_ms=10000)).body
        assert [r.error_code for r in answer.responses] == [0 if deleted else 29]
        assert ("t" in shim.topics()) is not deleted


def _commit_v0(wire: Wire, group: str, offsets: list[tuple[str, int, int]], metadata: str | None = None) -> dict[tuple[str, int], int]:
    from kafka_shim.protocol.messages import OffsetCommitRequest as C

    by_topic: dict[str, list] = {}
    for topic, partition, offset in offsets:
        by_topic.setdefault(topic, []).append(C.OffsetCommitRequestPartition(partition_index=partition, committed_offset=offset,
                                                                            committed_metadata=metadata))
    answer = wire.request(ApiKey.OFFSET_COMMIT, 0, C(group_id=group, topics=[
        C.OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()])).body
    return {(t.name, p.partition_index): p.error_code for t in answer.topics for p in t.partitions}


def _fetch_offsets(wire: Wire, version: int, group: str, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
    from kafka_shim.protocol.messages import OffsetFetchRequest as O

    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    answer = wire.request(ApiKey.OFFSET_FETCH, version, O(group_id=group, topics=[
        O.OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in by_topic.items()])).body
    return {(t.name, p.partition_index): (p.error_code, p.committed_offset) for t in answer.topics for p in t.partitions}


@pytest.mark.parametrize(("release", "hidden"), [("0.11", 3), ("2.8", 29), ("3.2", 29)])
def test_version_0_offsets_live_in_zookeeper_before_kraft(release: str, hidden: int) -> None:
    """A ZooKeeper-mode broker writes OffsetCommit v0 to ZooKeeper and reads OffsetFetch v0 from there: no coordinator
    is needed, an offset never committed there is UNKNOWN_TOPIC_OR_PARTITION, and v1+ (the coordinator) never sees it."""
    with _shim(release) as shim:
        shim.create_topic("orders", partitions=2)
        shim.create_topic("secret")
        shim.create_acls([_allow(AclOperation.READ, ResourceType.GROUP, "old-consumer"),
                          _allow(AclOperation.READ, ResourceType.TOPIC, "orders"), _allow(AclOperation.DESCRIBE, ResourceType.TOPIC, "ghost")])
        with _wire(shim) as wire:  # no FindCoordinator first: ZooKeeper needs none
            assert _commit_v0(wire, "old-consumer", [("orders", 0, 41), ("secret", 0, 1), ("orders", 7, 1)]) == {
                ("orders", 0): 0, ("secret", 0): 29 if release != "0.11" else 3, ("orders", 7): 3}
            asked = [("orders", 0), ("orders", 1), ("secret", 0), ("ghost", 0)]
            assert _fetch_offsets(wire, 0, "old-consumer", asked) == {
                ("orders", 0): (0, 41), ("orders", 1): (3, -1), ("secret", 0): (hidden, -1), ("ghost", 0): (3, -1)}
            assert _commit_v0(wire, "old-consumer", [("orders", 1, 5)], metadata="x" * 4097) == {("orders", 1): 12}
            assert _fetch_offsets(wire, 0, "other-group", [("orders", 0)]) == {("orders", 0): (30, -1)}
        with _wire(shim, "admin") as wire:
            _wait_for_coordinator(wire, "old-consumer")  # so that v1 answers from the coordinator
            assert _fetch_offsets(wire, 1, "old-consumer", [("orders", 0)]) == {("orders", 0): (0, -1)}


def test_version_0_offsets_are_refused_by_a_kraft_broker() -> None:
    with _shim("3.3") as shim:
        shim.create_topic("orders")
        shim.create_acls([_allow(AclOperation.READ, ResourceType.GROUP, "old-consumer"),
                          _allow(AclOperation.READ, ResourceType.TOPIC, "orders")])
        with _wire(shim) as wire:
            assert _commit_v0(wire, "old-consumer", [("orders", 0, 41)]) == {("orders", 0): ErrorCode.UNSUPPORTED_VERSION}
            assert _fetch_offsets(wire, 0, "old-consumer", [("orders", 0)]) == {("orders", 0): (ErrorCode.UNSUPPORTED_VERSION, -1)}


# What real Kafka 3.4.1 and 3.5.2 (ZooKeeper mode, no authorizer) answered to the commit below: before 3.5 the topics
# in java.util.HashMap order and partitions in one Scala map's order; from 3.5 the unknown partitions first, as named.
_COMMIT_ORDERS = {
    "3.4": [("zk-ghost", [(0, 3)]), ("zk-a", [(2, 0), (3, 0), (4, 0), (0, 0), (9, 3), (5, 0), (1, 0)]), ("zk-b", [(1, 0), (0, 0)])],
    "3.5": [("zk-a", [(9, 3), (5, 0), (0, 0), (4, 0), (1, 0), (3, 0), (2, 0)]), ("zk-ghost", [(0, 3)]), ("zk-b", [(0, 0), (1, 0)])],
}


@pytest.mark.parametrize("release", sorted(_COMMIT_ORDERS))
def test_offset_commit_answer_order_changed_in_3_5(release: str) -> None:
    from kafka_shim.protocol.messages import OffsetCommitRequest as C

    with KafkaShim(ShimOptions.from_marker({"kafka_version": release})) as shim:
        shim.create_topic("zk-b", partitions=2)
        shim.create_topic("zk-a", partitions=6)
        host, port = shim.bootstrap_servers.rsplit(":", 1)
        with Wire((host, int(port))) as wire:
            _wait_for_coordinator(wire, "g")
            body = C(group_id="g", generation_id_or_member_epoch=-1, member_id="", retention_time_ms=-1, topics=[
                C.OffsetCommitRequestTopic(name=name, partitions=[C.OffsetCommitRequestPartition(partition_index=p, committed_offset=1)
                                                                 for p in partitions])
                for name, partitions in (("zk-b", [0, 1]), ("zk-a", [0, 1, 2, 3, 4, 5, 9]), ("zk-ghost", [0]))])
            answer = wire.request(ApiKey.OFFSET_COMMIT, 5, body).body
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in answer.topics] == _COMMIT_ORDERS[release]


@pytest.mark.parametrize("release, code", [("3.6", ErrorCode.NOT_ENOUGH_REPLICAS), ("3.7", ErrorCode.NONE)])
def test_acks_all_with_min_insync_replicas_above_the_replicas(release: str, code: int) -> None:
    """Partition.effectiveMinIsr came with 3.7: before it, min.insync.replicas=2 on a one-replica topic refused every
    acks=all write (19), where 3.7+ counts it as 1."""
    with KafkaShim(ShimOptions.from_marker({"kafka_version": release})) as shim:
        shim.create_topic("isr", config={"min.insync.replicas": "2"})
        host, port = shim.bootstrap_servers.rsplit(":", 1)
        with Wire((host, int(port))) as wire:
            batch = encode_batch(build_batch([(None, b"v", [], 0)]))
            answer = wire.request(ApiKey.PRODUCE, 7, ProduceRequest(acks=-1, timeout_ms=10000, topic_data=[
                ProduceRequest.TopicProduceData(name="isr", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])).body
        assert [p.error_code for t in answer.responses for p in t.partition_responses] == [code]
