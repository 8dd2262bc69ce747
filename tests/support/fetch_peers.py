"""Kafka 3.9 and kafka-shim holding the same topics and records, for the read-side differential tests.

Kafka gets its records from Produce requests (as the SASL admin), kafka-shim by appending the same batch bytes to
its log (tests/support/appending.py), so both store the same batches. ACLs are created on both alike.
"""

from __future__ import annotations

import time

from kafka_shim.authorizer import (
    MATCH_ANY,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import (
    CreateAclsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    MetadataRequest,
)
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.appending import append, create_topic
from tests.support.compare import assert_same
from tests.support.produce import produce_once_led
from tests.support.wire import Answer, Wire

METADATA, PRODUCE, CREATE_TOPICS = 3, 0, 19
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
ANONYMOUS = "User:ANONYMOUS"
TOPIC_RT, LITERAL, ALLOW, ANY = 2, 3, 3, 1


class Peers:
    """Kafka (oracle) and kafka-shim with the same topics, records and ACLs."""

    def __init__(self, oracle, shim: EmbeddedBroker) -> None:
        self.oracle = oracle
        self.shim = shim
        host, port = shim.bootstrap_servers.rsplit(":", 1)
        self.shim_address = (host, int(port))
        self.topic_ids: dict[str, tuple] = {}
        self._cid = 5000

    def _admin(self) -> Wire:
        wire = Wire(self.oracle.sasl)
        wire.sasl_plain("admin", "admin-secret")
        return wire

    def topic(self, name: str, partitions: int, configs: dict[str, str] | None = None) -> None:
        with self._admin() as admin:
            created = admin.request(CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30000, topics=[CreateTopicsRequest.CreatableTopic(
                name=name, num_partitions=partitions, replication_factor=1,
                configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])]))
            assert created.body.topics[0].error_code in (0, 36), created
            deadline = time.monotonic() + 30
            while True:
                md = admin.request(METADATA, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)]))
                t = md.body.topics[0]
                if t.error_code == 0 and len(t.partitions) == partitions and all(p.leader_id >= 0 for p in t.partitions):
                    break
                assert time.monotonic() < deadline, f"Kafka never served topic {name}: {md}"
                time.sleep(0.05)
        kafka_id = t.topic_id
        create_topic(self.shim, name, partitions, configs)
        shim_id = self.shim.call(lambda: self.shim.broker.services.cluster.topics[name].topic_id)
        self.topic_ids[name] = (kafka_id, shim_id)

    def produce(self, topic: str, partition: int, data: bytes) -> None:
        with self._admin() as admin:
            produce_once_led(admin, topic, partition, data)
        append(self.shim, topic, partition, data)

    # -- ACLs --------------------------------------------------------------------------------------------------
    def grant(self, topic: str, *operations: int, resource_type: int = TOPIC_RT) -> None:
        """ALLOW ``operations`` to User:ANONYMOUS on the topic (or, with ``resource_type=4``, on the cluster)."""
        creations = [CreateAclsRequest.AclCreation(resource_type=resource_type, resource_name=topic, resource_pattern_type=LITERAL,
                                                   principal=ANONYMOUS, host="*", operation=op, permission_type=ALLOW) for op in operations]
        with self._admin() as admin:
            answer = admin.request(CREATE_ACLS, 3, CreateAclsRequest(creations=creations))
        assert [r.error_code for r in answer.body.results] == [0] * len(creations), answer
        self.shim.call(lambda: self.shim.broker.authorizer.create_acls([
            AclBinding(ResourcePattern(ResourceType(resource_type), topic, PatternType.LITERAL),
                       AccessControlEntry(ANONYMOUS, "*", AclOperation(op), AclPermissionType.ALLOW)) for op in operations]))
        self._settle()

    def revoke(self, name: str, operation: int, resource_type: int = TOPIC_RT) -> None:
        """Remove one ALLOW of User:ANONYMOUS from both brokers."""
        with self._admin() as admin:
            admin.request(DELETE_ACLS, 3, DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(
                resource_type_filter=resource_type, resource_name_filter=name, pattern_type_filter=LITERAL, principal_filter=ANONYMOUS,
                host_filter="*", operation=operation, permission_type=ALLOW)]))
        self.shim.call(lambda: self.shim.broker.authorizer.delete_acls([AclBindingFilter(
            ResourcePatternFilter(ResourceType(resource_type), name, PatternType.LITERAL),
            AccessControlEntryFilter(ANONYMOUS, "*", AclOperation(operation), AclPermissionType.ALLOW))]))
        self._settle()

    def reset_acls(self) -> None:
        with self._admin() as admin:
            admin.request(DELETE_ACLS, 3, DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(
                resource_type_filter=ANY, resource_name_filter=None, pattern_type_filter=ANY, principal_filter=None,
                host_filter=None, operation=ANY, permission_type=ANY)]))
        self.shim.call(lambda: self.shim.broker.authorizer.delete_acls([MATCH_ANY]))
        self._settle()

    def _settle(self) -> None:
        want = len(self.shim.call(lambda: self.shim.broker.authorizer.acls()))
        deadline = time.monotonic() + 15
        while True:
            with self._admin() as admin:
                got = admin.request(DESCRIBE_ACLS, 3, DescribeAclsRequest(
                    resource_type_filter=ANY, resource_name_filter=None, pattern_type_filter=ANY, principal_filter=None,
                    host_filter=None, operation=ANY, permission_type=ANY))
            if sum(len(r.acls) for r in got.body.resources) == want:
                # The broker's authorizer follows the controller's metadata log shortly after DescribeAcls does.
                time.sleep(0.3)
                return
            assert time.monotonic() < deadline, "Kafka's ACLs never matched kafka-shim's"
            time.sleep(0.05)

    # -- requests ----------------------------------------------------------------------------------------------
    def both(self, api_key: int, version: int, make) -> tuple[Answer, Answer]:
        """``make(side)`` builds the request for side 0 (Kafka) or 1 (kafka-shim): topic ids differ."""
        answers = []
        for side, address in enumerate((self.oracle.plaintext, self.shim_address)):
            self._cid += 1
            with Wire(address) as wire:
                answers.append(wire.exchange(encode_request(api_key, version, self._cid, make(side)), api_key, version))
        return answers[0], answers[1]

    def same(self, api_key: int, version: int, make, what: str, ignore: tuple[str, ...] = ()) -> tuple[Answer, Answer]:
        kafka, shim = self.both(api_key, version, make)
        kafka_ids = {ids[0]: name for name, ids in self.topic_ids.items()}
        shim_ids = {ids[1]: name for name, ids in self.topic_ids.items()}
        for answer, ids in ((kafka, kafka_ids), (shim, shim_ids)):
            name_topic_ids(answer, ids)
        kafka.correlation_id = shim.correlation_id
        assert_same(kafka, shim, ignore=ignore, what=what)
        return kafka, shim


def name_topic_ids(answer: Answer, ids: dict) -> None:
    """Replace each broker's own topic ids by the topic's name, so the answers compare."""
    for topic in getattr(answer.body, "responses", None) or []:
        if topic.topic_id in ids:
            topic.topic_id = ids[topic.topic_id]
