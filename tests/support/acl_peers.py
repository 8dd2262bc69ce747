"""Apache Kafka 3.9 and kafka-shim side by side for the ACL APIs: the two brokers, the request builders, the fixtures.

Both brokers run StandardAuthorizer semantics with super.users=User:admin and hold the same ACLs. Requests go to
both PLAINTEXT listeners as User:ANONYMOUS; the ACLs each holds are compared through ``Peers.settle`` (Kafka's
DescribeAcls of everything, as its super user, against kafka-shim's authorizer). Used by test_acl_apis.py,
test_acl_field_sweep.py and the other differential modules that need ACLs on both brokers. The fixtures built on
them (shim_secured, peers, acl_admin) are in tests/differential/conftest.py.
"""

from __future__ import annotations

import time

from kafka_shim.authorizer import (
    MATCH_ANY,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.acl_order import canonical, mask_not_authorized
from tests.support.compare import assert_same
from tests.support.wire import Answer, Wire, exchange_both

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS, METADATA, DESCRIBE_CLUSTER = 29, 30, 31, 3, 60
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, USER = 2, 3, 4, 5, 7
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
DENY, ALLOW = 2, 3
READ, WRITE, CREATE, ALTER, DESCRIBE = 3, 4, 5, 7, 8
ANONYMOUS = "User:ANONYMOUS"


# -- the two brokers ----------------------------------------------------------------------------------------------------
class Peers:
    """Kafka and kafka-shim with the same ACLs; requests go to both PLAINTEXT listeners as User:ANONYMOUS."""

    def __init__(self, oracle, shim: EmbeddedBroker) -> None:
        self.oracle = oracle
        self.shim = shim
        host, port = shim.bootstrap_servers.rsplit(":", 1)
        self.shim_address = (host, int(port))
        self._cid = 1000

    def _admin(self) -> Wire:
        wire = Wire(self.oracle.sasl)
        wire.sasl_plain("admin", "admin-secret")
        return wire

    def _kafka_rows(self) -> list[tuple]:
        with self._admin() as admin:
            answer = admin.request(DESCRIBE_ACLS, 3, describe(ANY, None, ANY))
        assert not answer.closed and answer.body.error_code == 0, answer
        return sorted((r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type)
                      for r in answer.body.resources for a in r.acls)

    def _shim_rows(self) -> list[tuple]:
        bindings = self.shim.call(lambda: self.shim.broker.authorizer.acls())
        return sorted((int(b.pattern.resource_type), b.pattern.name, int(b.pattern.pattern_type), b.entry.principal, b.entry.host,
                       int(b.entry.operation), int(b.entry.permission_type)) for b in bindings)

    def settle(self, timeout: float = 15.0) -> None:
        """Wait until Kafka's broker serves the ACLs kafka-shim holds (Kafka applies controller changes asynchronously)."""
        want = self._shim_rows()
        deadline = time.monotonic() + timeout
        while (got := self._kafka_rows()) != want:
            if time.monotonic() > deadline:
                raise AssertionError(f"Kafka's ACLs never matched kafka-shim's:\n  Kafka {got}\n  shim  {want}")
            time.sleep(0.05)

    def grant(self, *creations: CreateAclsRequest.AclCreation) -> None:
        """The same ACLs on both brokers, without going through the principal under test."""
        with self._admin() as admin:
            answer = admin.request(CREATE_ACLS, 3, CreateAclsRequest(creations=list(creations)))
        assert [r.error_code for r in answer.body.results] == [0] * len(creations), answer
        results = self.shim.call(lambda: self.shim.broker.authorizer.create_acls([binding_of(c) for c in creations]))
        assert all(r.error is None for r in results), results
        self.settle()

    def reset(self) -> None:
        with self._admin() as admin:
            admin.request(DELETE_ACLS, 3, DeleteAclsRequest(filters=[delete(ANY, None, ANY)]))
        self.shim.call(lambda: self.shim.broker.authorizer.delete_acls([MATCH_ANY]))
        self.settle()

    def both(self, api_key: int, version: int, body, address_of_kafka: tuple[str, int] | None = None) -> tuple[Answer, Answer]:
        self._cid += 1
        frame = encode_request(api_key, version, self._cid, body)
        return exchange_both(address_of_kafka or self.oracle.plaintext, self.shim_address, frame, api_key, version)

    def same(self, api_key: int, version: int, body, what: str, ignore: tuple[str, ...] = ()) -> tuple[Answer, Answer]:
        kafka, shim = self.both(api_key, version, body)
        for answer in (kafka, shim):
            mask_not_authorized(canonical(answer))
        assert_same(kafka, shim, ignore=ignore, what=what)
        return kafka, shim


def binding_of(c) -> AclBinding:
    return AclBinding(ResourcePattern(ResourceType(c.resource_type), c.resource_name, PatternType(c.resource_pattern_type)),
                      AccessControlEntry(c.principal, c.host, AclOperation(c.operation), AclPermissionType(c.permission_type)))


def acl(rtype=TOPIC, name="diff-topic", pattern=LITERAL, principal="User:alice", host="*", operation=READ, permission=ALLOW):
    return CreateAclsRequest.AclCreation(resource_type=rtype, resource_name=name, resource_pattern_type=pattern, principal=principal,
                                         host=host, operation=operation, permission_type=permission)


def describe(rtype=ANY, name=None, pattern=ANY, principal=None, host=None, operation=ANY, permission=ANY) -> DescribeAclsRequest:
    return DescribeAclsRequest(resource_type_filter=rtype, resource_name_filter=name, pattern_type_filter=pattern, principal_filter=principal,
                               host_filter=host, operation=operation, permission_type=permission)


def delete(rtype=ANY, name=None, pattern=ANY, principal=None, host=None, operation=ANY, permission=ANY):
    return DeleteAclsRequest.DeleteAclsFilter(resource_type_filter=rtype, resource_name_filter=name, pattern_type_filter=pattern,
                                              principal_filter=principal, host_filter=host, operation=operation, permission_type=permission)


def secured_config(**extra: str) -> BrokerConfig:
    """kafka-shim configured as scripts/real-kafka configures Kafka's authorizer (``extra``: more properties)."""
    return BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "auto.create.topics.enable": "false",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:admin",
        "allow.everyone.if.no.acl.found": "false", "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1", **extra,
    })


ANONYMOUS_MAY_ALTER = acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=ALTER)
