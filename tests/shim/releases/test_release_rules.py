"""Older releases' authorization rules over the wire (``kafka.version``; authorizer/api_checks/releases.py): each
emulated rule against the same request at Kafka 3.9, with the ACLs that make the difference."""

from __future__ import annotations

import struct

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

@pytest.mark.parametrize(("release", "code", "created"), [("1.1", 29, False), ("2.0", 3, True), ("3.9", 3, True)])
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
