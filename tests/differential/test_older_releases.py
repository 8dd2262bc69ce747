"""Older Kafka releases as the judge: real Kafka 2.8.2 and 3.0.2 beside kafka-shim emulating them (``kafka.version``).

scripts/real-kafka starts these releases in ZooKeeper mode with AclAuthorizer (KRaft had no authorizer before 3.2), with
the same SASL users and super users as the 3.9 oracle; kafka-shim runs with ``kafka.version=2.8`` / ``3.0``, the same
users and ``User:admin`` as its super user. One real broker per release per session (the fixture is parametrized by
release, so pytest runs every test of one release before it starts the next broker).

Compared, as a user sees it: the API ranges each broker advertises; per request, the answers to ``User:alice`` under
ACLs an admin set on both with CreateAcls, for the authorization rules these releases share with, or have apart from,
3.9; and a real client (confluent-kafka) producing and consuming against both, with the API versions it picked.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from kafka import KafkaConsumer, KafkaProducer

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import (
    ApiVersionsRequest,
    CreateAclsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DeleteGroupsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    DescribeUserScramCredentialsRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListGroupsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.releases.profiles import api_ranges
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.acl_order import canonical, mask_not_authorized
from tests.support.compare import assert_same
from tests.support.consume import consume_values
from tests.support.peers import INTERNAL_TOPIC_PROPERTIES, REPORTED, RealKafka, start_real_kafka, stop_real_kafka
from tests.support.sasl_setup import listener_address, sasl_properties
from tests.support.wire import Answer, Wire, exchange_both

# The release line kafka-shim emulates -> the real release that judges it (the patch tags kafka-release-apis.json used).
RELEASES = {"2.8": "2.8.2", "3.0": "3.0.2"}

TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, USER = 2, 3, 4, 5, 7
ANY, LITERAL = 1, 3
ALLOW = 3
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, IDEMPOTENT_WRITE = 3, 4, 5, 6, 7, 8, 10, 12
ALICE, ADMIN = ("alice", "alice-secret"), ("admin", "admin-secret")
# Errors a coordinator answers while it is still loading or being created: retried, with a bound.
COORDINATOR_NOT_READY = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


@dataclass
class Older:
    """A real Kafka of one older release and kafka-shim emulating it, both with SASL users and ACLs."""

    line: str
    kafka: RealKafka
    shim: EmbeddedBroker
    shim_sasl: tuple[str, int]
    cid: int = 5000
    made: set[tuple[str, str]] = field(default_factory=set)  # topics and groups made once per session

    def frame(self, api_key: int, version: int, body: Any) -> bytes:
        self.cid += 1
        return encode_request(api_key, version, self.cid, body, client_id="older-releases")

    def both(self, api_key: int, version: int, body: Any, user: tuple[str, str] = ALICE) -> tuple[Answer, Answer]:
        """The same request bytes to both brokers' SASL listeners, authenticated as ``user``."""
        return exchange_both(self.kafka.sasl, self.shim_sasl, self.frame(api_key, version, body), api_key, version, *user)

    def same(self, api_key: int, version: int, body: Any, what: str, ignore: tuple[str, ...] = (),
             user: tuple[str, str] = ALICE) -> tuple[Answer, Answer]:
        kafka, shim = self.both(api_key, version, body, user)
        for answer in (kafka, shim):
            mask_not_authorized(canonical(answer))
        assert_same(kafka, shim, ignore=ignore, what=f"{what} (Kafka {RELEASES[self.line]} vs kafka-shim kafka.version={self.line})")
        return kafka, shim

    # -- ACLs, set on both brokers by the admin with CreateAcls, as a user would --------------------------------------
    def grant(self, *creations: CreateAclsRequest.AclCreation) -> None:
        kafka, shim = self.both(ApiKey.CREATE_ACLS, 2, CreateAclsRequest(creations=list(creations)), ADMIN)
        for answer in (kafka, shim):
            assert [r.error_code for r in answer.body.results] == [0] * len(creations), answer
        self.settle()

    def reset(self) -> None:
        everything = DeleteAclsRequest.DeleteAclsFilter(resource_type_filter=ANY, resource_name_filter=None, pattern_type_filter=ANY,
                                                        principal_filter=None, host_filter=None, operation=ANY, permission_type=ANY)
        self.both(ApiKey.DELETE_ACLS, 2, DeleteAclsRequest(filters=[everything]), ADMIN)
        self.settle()

    def acl_rows(self, address: tuple[str, int]) -> list[tuple]:
        with Wire(address) as admin:
            admin.sasl_plain(*ADMIN)
            answer = admin.request(ApiKey.DESCRIBE_ACLS, 2, describe_all())
        assert answer.body.error_code == 0, answer
        return sorted((r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type)
                      for r in answer.body.resources for a in r.acls)

    def settle(self, timeout: float = 30.0) -> None:
        """Wait until both brokers serve the same ACLs (AclAuthorizer applies its ZooKeeper writes to its cache
        through change notifications as well; the bound is generous)."""
        deadline = time.monotonic() + timeout
        while (kafka := self.acl_rows(self.kafka.sasl)) != (shim := self.acl_rows(self.shim_sasl)):
            if time.monotonic() > deadline:
                raise AssertionError(f"the brokers' ACLs never matched:\n  Kafka {kafka}\n  shim  {shim}")
            time.sleep(0.05)

    # -- things an admin sets up on both (once per session: the real broker keeps them) ----------------------------------
    def create_topic_once(self, name: str, partitions: int = 1) -> None:
        if ("topic", name) not in self.made:
            self.create_topic(name, partitions)
            self.made.add(("topic", name))

    def commit_offset_once(self, group: str, topic: str, offset: int) -> None:
        if ("group", group) not in self.made:
            self.commit_offset(group, topic, offset)
            self.made.add(("group", group))

    def create_topic(self, name: str, partitions: int = 1) -> None:
        body = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)])
        kafka, shim = self.both(ApiKey.CREATE_TOPICS, 4, body, ADMIN)
        assert [t.error_code for t in kafka.body.topics] == [t.error_code for t in shim.body.topics] == [0], (kafka, shim)

    def commit_offset(self, group: str, topic: str, offset: int) -> None:
        """A simple (generation -1) offset commit as admin on both, which makes an empty group with that offset."""
        for address in (self.kafka.sasl, self.shim_sasl):
            _commit_at(address, group, topic, offset)


def _commit_at(address: tuple[str, int], group: str, topic: str, offset: int) -> None:
    body = OffsetCommitRequest(group_id=group, topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
        name=topic, partitions=[OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])])
    with Wire(address) as admin:
        admin.sasl_plain(*ADMIN)
        until(lambda: admin.request(ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(key=group)).body.error_code,
              f"FindCoordinator for {group} at {address}")
        until(lambda: admin.request(ApiKey.OFFSET_COMMIT, 5, body).body.topics[0].partitions[0].error_code,
              f"OffsetCommit for {group} at {address}")


def until(error_of: Callable[[], int], what: str, timeout: float = 60.0) -> None:
    """Repeat a request while its coordinator is not ready yet (Kafka creates __consumer_offsets on the first
    FindCoordinator); any other error fails."""
    deadline = time.monotonic() + timeout
    while (error := error_of()) in COORDINATOR_NOT_READY:
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: the coordinator was not ready in {timeout:.0f}s (error {error})")
        time.sleep(0.1)
    assert error == 0, f"{what}: error {error}"


def acl(rtype: int = TOPIC, name: str = "older-topic", operation: int = READ, principal: str = "User:alice") -> CreateAclsRequest.AclCreation:
    return CreateAclsRequest.AclCreation(resource_type=rtype, resource_name=name, resource_pattern_type=LITERAL, principal=principal,
                                         host="*", operation=operation, permission_type=ALLOW)


def describe_all(rtype: int = ANY) -> DescribeAclsRequest:
    return DescribeAclsRequest(resource_type_filter=rtype, resource_name_filter=None, pattern_type_filter=ANY, principal_filter=None,
                               host_filter=None, operation=ANY, permission_type=ANY)


def shim_config(line: str) -> BrokerConfig:
    """kafka-shim as scripts/real-kafka configures the older Kafka: the same users and super user, AclAuthorizer."""
    return BrokerConfig.from_properties(sasl_properties() | {
        "kafka.version": line,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin;User:broker",
        "allow.everyone.if.no.acl.found": "false",
        "group.initial.rebalance.delay.ms": "0",
        # the request counters per (API key, version) tell which versions a client picked
        "kafka.shim.metrics.port": "0",
    } | INTERNAL_TOPIC_PROPERTIES)


@pytest.fixture(scope="session", params=sorted(RELEASES), ids=lambda line: f"kafka-{line}")
def older_pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Older]:
    line = request.param
    started = time.monotonic()
    # Kafka's request log (kafka.request.logger at DEBUG) names each request's API key, version and client id: which
    # versions a client picked, seen from the broker.
    kafka = start_real_kafka(tmp_path_factory.mktemp(f"kafka-{line}"), version=RELEASES[line],
                             log_levels=("kafka.request.logger=DEBUG",))
    REPORTED.append(f"older releases: Kafka {RELEASES[line]} (ZooKeeper mode) started in {time.monotonic() - started:.1f}s")
    try:
        with EmbeddedBroker(shim_config(line)) as shim:
            yield Older(line, kafka, shim, listener_address(shim.broker, "SASL_PLAINTEXT"))
    finally:
        stop_real_kafka(kafka)


@pytest.fixture
def older(older_pair: Older) -> Iterator[Older]:
    """Both brokers with no ACLs but those a test grants; emptied again after it."""
    older_pair.reset()
    yield older_pair
    older_pair.reset()


def _ranges(answer: Answer) -> dict[int, tuple[int, int]]:
    return {k.api_key: (k.min_version, k.max_version) for k in answer.body.api_keys}


# -- 1. ApiVersions ---------------------------------------------------------------------------------------------------------
def test_api_versions_are_the_real_release_ranges(older: Older) -> None:
    kafka, shim = older.both(ApiKey.API_VERSIONS, 0, ApiVersionsRequest())
    real, emulated = _ranges(kafka), _ranges(shim)
    # The release facts kafka-shim is generated from (a ZooKeeper-mode broker's list for these releases) are exactly
    # what the real broker advertises, every key included.
    assert api_ranges(older.line) == real
    # Every key kafka-shim advertises has the real release's range; it advertises no key the release lacked.
    assert {key: real.get(key) for key in emulated} == emulated
    missing = sorted(ApiKey(k).name if k in ApiKey._value2member_map_ else str(k) for k in set(real) - set(emulated))
    REPORTED.append(f"ApiVersions: Kafka {RELEASES[older.line]} advertises {len(real)} keys, kafka-shim kafka.version={older.line} "
                    f"{len(emulated)} (not served: {', '.join(missing)})")


# -- 2. Authorization rules of these releases, per request, as User:alice -----------------------------------------------------
@pytest.mark.parametrize("grants, expected", [
    ((), 31),  # neither IDEMPOTENT_WRITE on the cluster nor WRITE on any topic
    ((acl(TOPIC, "older-idempotent", WRITE),), 0),  # KIP-679 (2.8): WRITE on any topic suffices
    ((acl(CLUSTER, "kafka-cluster", IDEMPOTENT_WRITE),), 0),
    ((acl(TOPIC, "older-idempotent", READ),), 31),  # READ does not imply WRITE
], ids=["no-acls", "write-on-a-topic", "idempotent-write", "read-only"])
def test_idempotent_init_producer_id(older: Older, grants: tuple, expected: int) -> None:
    if grants:
        older.grant(*grants)
    for version in (1, 4):
        kafka, _ = older.same(ApiKey.INIT_PRODUCER_ID, version, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000),
                              f"idempotent InitProducerId v{version}", ignore=("producer_id",))
        assert kafka.body.error_code == expected


@pytest.mark.parametrize("grants, group_error, partition_error", [
    ((), 30, None),
    ((acl(GROUP, "older-fetch-group", DESCRIBE),), 0, 29),  # DESCRIBE on the group suffices since 1.0 (KIP-163)
    ((acl(GROUP, "older-fetch-group", DESCRIBE), acl(TOPIC, "older-fetch-topic", DESCRIBE)), 0, 0),
    ((acl(GROUP, "older-fetch-group", READ), acl(TOPIC, "older-fetch-topic", READ)), 0, 0),
], ids=["no-acls", "group-describe", "group-and-topic-describe", "group-and-topic-read"])
def test_offset_fetch_with_describe_on_the_group(older: Older, grants: tuple, group_error: int, partition_error: int | None) -> None:
    older.create_topic_once("older-fetch-topic")
    older.commit_offset_once("older-fetch-group", "older-fetch-topic", 7)
    if grants:
        older.grant(*grants)
    topics = [OffsetFetchRequest.OffsetFetchRequestTopic(name="older-fetch-topic", partition_indexes=[0])]
    for version in (1, 5, 7):
        kafka, _ = older.same(ApiKey.OFFSET_FETCH, version, OffsetFetchRequest(group_id="older-fetch-group", topics=topics),
                              f"OffsetFetch v{version}")
        if version >= 2:
            assert kafka.body.error_code == group_error
        if partition_error is not None:
            assert [p.error_code for t in kafka.body.topics for p in t.partitions] == [partition_error]


def _groups(answer: Answer) -> Answer:
    answer.body.groups.sort(key=lambda g: g.group_id)
    return answer


@pytest.mark.parametrize("grants, visible", [
    ((), []),
    ((acl(GROUP, "older-list-a", DESCRIBE),), ["older-list-a"]),  # filtered by DESCRIBE on each group since 2.1 (KIP-231)
    ((acl(GROUP, "older-list-a", READ), acl(GROUP, "older-list-b", DESCRIBE)), ["older-list-a", "older-list-b"]),
    ((acl(CLUSTER, "kafka-cluster", DESCRIBE),), "all"),  # DESCRIBE on the cluster lists every group
], ids=["no-acls", "one-group", "two-groups", "cluster-describe"])
def test_list_groups_is_filtered_by_group_describe(older: Older, grants: tuple, visible: list[str] | str) -> None:
    older.create_topic_once("older-list-topic")
    for group in ("older-list-a", "older-list-b"):
        older.commit_offset_once(group, "older-list-topic", 1)
    if grants:
        older.grant(*grants)
    for version in (0, 2, 4 if older.line >= "2.6" else 3):
        body = ListGroupsRequest(states_filter=[]) if version >= 4 else ListGroupsRequest()
        kafka, shim = older.both(ApiKey.LIST_GROUPS, version, body)
        assert_same(_groups(kafka), _groups(shim), what=f"ListGroups v{version} (Kafka {RELEASES[older.line]})")
        names = [g.group_id for g in kafka.body.groups]
        assert kafka.body.error_code == 0
        if visible != "all":
            assert names == visible
        else:
            assert {"older-list-a", "older-list-b"} <= set(names)


@pytest.mark.parametrize("grant, expected", [
    (None, 29),
    ((TOPIC, CREATE), 0),  # CREATE on the topic suffices since 2.0 (KIP-277)
    ((CLUSTER, CREATE), 0),
    ((TOPIC, ALTER), 29),
], ids=["no-acls", "topic-create", "cluster-create", "topic-alter"])
def test_create_topics_with_create_on_the_topic(older: Older, grant: tuple[int, int] | None, expected: int) -> None:
    # a fresh topic per case and release: the real broker keeps what it created for the whole session
    name = f"older-create-{older.line}-{grant[0] if grant else 0}-{grant[1] if grant else 0}"
    if grant:
        older.grant(acl(grant[0], name if grant[0] == TOPIC else "kafka-cluster", grant[1]))
    topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)
    kafka, _ = older.same(ApiKey.CREATE_TOPICS, 4, CreateTopicsRequest(topics=[topic]), "CreateTopics v4")
    assert [t.error_code for t in kafka.body.topics] == [expected]


def test_acl_apis_without_rights_fail_for_the_whole_request(older: Older) -> None:
    kafka, _ = older.same(ApiKey.DESCRIBE_ACLS, 2, describe_all(), "DescribeAcls v2 without DESCRIBE on the cluster")
    assert kafka.body.error_code == 31
    kafka, _ = older.same(ApiKey.CREATE_ACLS, 2, CreateAclsRequest(creations=[acl(TOPIC, "older-acl", READ, "User:bob")]),
                          "CreateAcls v2 without ALTER on the cluster")
    assert [r.error_code for r in kafka.body.results] == [31]


def test_acl_apis_with_rights_answer_alike(older: Older) -> None:
    older.grant(acl(CLUSTER, "kafka-cluster", ALTER), acl(CLUSTER, "kafka-cluster", DESCRIBE))
    creations = [acl(TOPIC, "older-acl", READ, "User:bob"), acl(GROUP, "older-acl-group", DESCRIBE, "User:bob"),
                 acl(CLUSTER, "not-kafka-cluster", DESCRIBE, "User:bob"),  # 42: a cluster resource is named kafka-cluster
                 acl(TOPIC, "", READ, "User:bob"),  # 42: an empty name
                 acl(TOPIC, "older-acl", READ, "bob")]  # 42: a principal without a type
    kafka, _ = older.same(ApiKey.CREATE_ACLS, 2, CreateAclsRequest(creations=creations), "CreateAcls v2")
    # the ZooKeeper-mode AclAuthorizer of these releases: "bob" has no principal type, and every creation on its resource
    # pattern fails with UNKNOWN_SERVER_ERROR (-1), the valid one for User:bob included (3.9's KRaft broker accepts both)
    assert [r.error_code for r in kafka.body.results] == [-1, 0, 42, 42, -1]
    older.settle()
    for rtype in (ANY, TOPIC, GROUP, CLUSTER):
        kafka, _ = older.same(ApiKey.DESCRIBE_ACLS, 2, describe_all(rtype), f"DescribeAcls v2 of resource type {rtype}")
        assert kafka.body.error_code == 0


CREATIONS = {  # requests of several creations: each answer in request order, and what is stored after
    "unknown-resource-type-user": [acl(USER, "User:bob", DESCRIBE, "User:alice")],
    "user-type-beside-a-topic": [acl(TOPIC, "older-codes-a", READ, "User:bob"), acl(USER, "User:bob", DESCRIBE, "User:alice")],
    "unknown-operation-13": [acl(TOPIC, "older-codes-b", 13, "User:bob")],
    "unknown-operation-14-on-cluster": [acl(CLUSTER, "kafka-cluster", 14, "User:bob")],
    "untyped-principal": [acl(TOPIC, "older-codes-c", READ, "bob")],
    "untyped-principal-fails-its-resource": [acl(TOPIC, "older-codes-d", READ, "User:bob"), acl(TOPIC, "older-codes-d", WRITE, "bob"),
                                             acl(TOPIC, "older-codes-e", READ, "User:bob")],
    "odd-but-typed-principals": [acl(TOPIC, "older-codes-f", READ, "User:"), acl(TOPIC, "older-codes-f", READ, ":bob"),
                                 acl(GROUP, "older-codes-g", READ, "Group:bob")],
}


@pytest.mark.parametrize("creations", list(CREATIONS.values()), ids=list(CREATIONS))
def test_create_acls_codes_and_principals(older: Older, creations: list) -> None:
    """What the release's authorizer refuses at creation: codes it did not know yet (USER and the token operations came
    with KIP-373 in 3.3) and principals it cannot parse."""
    older.grant(acl(CLUSTER, "kafka-cluster", ALTER))
    older.same(ApiKey.CREATE_ACLS, 2, CreateAclsRequest(creations=creations), "CreateAcls v2")
    older.settle()  # the same ACLs stored on both
    for rtype in (ANY, USER):
        older.same(ApiKey.DESCRIBE_ACLS, 2, describe_all(rtype), f"DescribeAcls v2 of resource type {rtype}", user=ADMIN)


@pytest.mark.parametrize("grants", [
    (),
    (acl(TOPIC, "older-metadata", READ),),
    (acl(TOPIC, "older-metadata", WRITE), acl(TOPIC, "older-metadata", ALTER)),
    (acl(TOPIC, "older-metadata", READ), acl(CLUSTER, "kafka-cluster", DESCRIBE)),
    (acl(TOPIC, "older-metadata", DESCRIBE), acl(CLUSTER, "kafka-cluster", ALTER), acl(CLUSTER, "kafka-cluster", IDEMPOTENT_WRITE)),
], ids=["no-acls", "topic-read", "topic-write-alter", "topic-read-cluster-describe", "cluster-alter"])
def test_metadata_authorized_operations(older: Older, grants: tuple) -> None:
    older.create_topic_once("older-metadata")
    if grants:
        older.grant(*grants)
    ignore = ("cluster_id", "brokers.*.port", "topics.*.topic_id")
    for version in (8, 10, 11):
        body = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="older-metadata")], allow_auto_topic_creation=False,
                               include_cluster_authorized_operations=version <= 10, include_topic_authorized_operations=True)
        older.same(ApiKey.METADATA, version, body, f"Metadata v{version} with authorized operations", ignore=ignore)


# -- a real client negotiating down ------------------------------------------------------------------------------------------
# Kafka's request log line starts with the request header as JSON (2.8 and 3.0 write it so)
_REQUEST_LOG = re.compile(r'"requestApiKey":(\d+),"requestApiVersion":(\d+),"correlationId":-?\d+,"clientId":"([^"]*)"')


def _kafka_versions(kafka: RealKafka, client_id: str) -> set[tuple[str, int]]:
    text = (kafka.dir / "logs" / "kafka-request.log").read_text(errors="replace")
    return {(ApiKey(int(key)).name, int(version)) for key, version, client in _REQUEST_LOG.findall(text)
            if client == client_id and ApiKey(int(key)).name not in _AUTHENTICATION_APIS}


# Kafka answers these while authenticating a connection, in its network layer before KafkaApis, so its request log
# never shows them: they are left out on both sides.
_AUTHENTICATION_APIS = {"API_VERSIONS", "SASL_HANDSHAKE", "SASL_AUTHENTICATE"}


def _shim_counts(shim: EmbeddedBroker) -> dict[tuple[str, int], float]:
    def read() -> dict[tuple[str, int], float]:
        latency = shim.broker.metrics.latency
        return {(ApiKey(int.from_bytes(head[:2], "big", signed=True)).name, int.from_bytes(head[2:4], "big", signed=True)):
                sum(buckets[:-1]) for head, buckets in latency.items()}
    return shim.call(read)


def _collect_errors(errors: list[KafkaError]) -> Callable[[KafkaError | None, Any], None]:
    def on_delivery(err: KafkaError | None, _message: Any) -> None:
        if err is not None:
            errors.append(err)
    return on_delivery


def _round_trip_versions(older: Older, client: str, round_trip: Callable[[tuple[str, int], str, str, str], None]) -> set[tuple[str, int]]:
    """Run ``round_trip(address, client_id, topic, group)`` against the real release, then against kafka-shim emulating
    it, as alice with WRITE and READ on the topic and READ on the group; returns the API versions the client picked,
    asserting both brokers saw the same (Kafka's request log; kafka-shim's request counters, which saw only this client
    in the meantime)."""
    topic, group = f"older-{client}-{older.line}", f"older-{client}-group-{older.line}"
    older.create_topic(topic)
    older.grant(acl(TOPIC, topic, WRITE), acl(TOPIC, topic, READ), acl(GROUP, group, READ))
    before = _shim_counts(older.shim)
    round_trip(older.kafka.sasl, f"older-{client}-{older.line}-kafka", topic, group)
    round_trip(older.shim_sasl, f"older-{client}-{older.line}-shim", topic, group)
    # Both brokers log or count a request once its answer is sent, so the last ones (the consumer's LeaveGroup) may
    # still be on their way: wait, with a bound, until both sides have seen the same versions.
    deadline = time.monotonic() + 15
    while True:
        kafka = _kafka_versions(older.kafka, f"older-{client}-{older.line}-kafka")
        after = _shim_counts(older.shim)
        shim = {key for key, count in after.items() if count > before.get(key, 0) and key[0] not in _AUTHENTICATION_APIS}
        if (kafka and _comparable(kafka, shim) == _comparable(shim, kafka)) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert kafka and _comparable(kafka, shim) == _comparable(shim, kafka), {"kafka": sorted(kafka), "shim": sorted(shim)}
    REPORTED.append(f"older releases: {client} against {RELEASES[older.line]} used " + ", ".join(f"{k} v{v}" for k, v in sorted(kafka)))
    return kafka


# A consumer sends Heartbeat only if it lives past heartbeat.interval.ms (3 s), which depends on how fast each broker
# answered: its version is compared when both brokers saw one.
_TIMING_APIS = {"HEARTBEAT"}


def _comparable(versions: set[tuple[str, int]], other: set[tuple[str, int]]) -> set[tuple[str, int]]:
    both = {key for key, _ in other}
    return {(key, v) for key, v in versions if key not in _TIMING_APIS or key in both}


VALUES = [f"record-{i}".encode() for i in range(5)]


def test_confluent_kafka_idempotent_round_trip_negotiates_the_same_versions(older: Older) -> None:
    """An idempotent producer (the default from Kafka 3.0 clients on) and a consumer group, against the real release and
    kafka-shim emulating it: the same records come back, and librdkafka picked the same API versions from both."""
    def round_trip(address: tuple[str, int], client_id: str, topic: str, group: str) -> None:
        config = {"bootstrap.servers": f"{address[0]}:{address[1]}", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                  "sasl.username": ALICE[0], "sasl.password": ALICE[1], "client.id": client_id}
        errors: list[KafkaError] = []
        producer = Producer(config | {"enable.idempotence": True, "acks": "all"})
        for value in VALUES:
            producer.produce(topic, value, on_delivery=_collect_errors(errors))
        assert producer.flush(60) == 0 and errors == [], (client_id, errors)
        assert consume_values(config, topic, len(VALUES), group) == VALUES, client_id

    picked = _round_trip_versions(older, "librdkafka", round_trip)
    assert ("INIT_PRODUCER_ID", 4) in picked  # idempotence with WRITE on the topic only (KIP-679, 2.8)


def test_kafka_python_round_trip_negotiates_the_same_versions(older: Older) -> None:
    """kafka-python probes the broker's release from ApiVersions and picks its versions from there: the same records,
    the same versions, against the real release and kafka-shim emulating it."""
    def round_trip(address: tuple[str, int], client_id: str, topic: str, group: str) -> None:
        config = {"bootstrap_servers": f"{address[0]}:{address[1]}", "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
                  "sasl_plain_username": ALICE[0], "sasl_plain_password": ALICE[1], "client_id": client_id}
        producer = KafkaProducer(**config, acks="all")
        try:
            for value in VALUES:
                producer.send(topic, value).get(timeout=60)
        finally:
            producer.close()
        consumer = KafkaConsumer(topic, **config, group_id=group, auto_offset_reset="earliest", consumer_timeout_ms=60000)
        try:
            got = [message.value for _, message in zip(VALUES, consumer, strict=False)]
        finally:
            consumer.close()
        assert got == VALUES, client_id

    _round_trip_versions(older, "kafka-python", round_trip)


@pytest.mark.parametrize("grants", [(), (acl(CLUSTER, "kafka-cluster", DESCRIBE),), (acl(CLUSTER, "kafka-cluster", ALTER),)],
                         ids=["no-acls", "cluster-describe", "cluster-alter"])
def test_describe_cluster_authorized_operations(older: Older, grants: tuple) -> None:
    """DescribeCluster came with 2.8 (KIP-700): no ACL needed; the cluster bits only with DESCRIBE on the cluster."""
    if grants:
        older.grant(*grants)
    older.same(ApiKey.DESCRIBE_CLUSTER, 0, DescribeClusterRequest(include_cluster_authorized_operations=True), "DescribeCluster v0",
               ignore=("cluster_id", "brokers.*.port"))


@pytest.mark.parametrize("grants", [(), (acl(GROUP, "older-fetch-group", DESCRIBE),), (acl(GROUP, "older-fetch-group", READ),)],
                         ids=["no-acls", "group-describe", "group-read"])
def test_describe_groups_order_and_authorized_operations(older: Older, grants: tuple) -> None:
    """Before 3.5 the answer keeps the request's order (3.5+ lists refused groups first: a release switch)."""
    older.create_topic_once("older-fetch-topic")
    older.commit_offset_once("older-fetch-group", "older-fetch-topic", 7)
    if grants:
        older.grant(*grants)
    groups = ["older-unknown-group", "older-fetch-group", "older-other-group"]
    for version in (0, 3, 5):
        older.same(ApiKey.DESCRIBE_GROUPS, version, DescribeGroupsRequest(groups=groups, include_authorized_operations=version >= 3),
                   f"DescribeGroups v{version}")


@pytest.mark.parametrize("grants, refused", [
    ((), True),
    ((acl(TRANSACTIONAL_ID, "older-transaction", DESCRIBE),), True),
    ((acl(TRANSACTIONAL_ID, "older-transaction", WRITE),), False),
], ids=["no-acls", "describe", "write"])
def test_transactional_init_producer_id(older: Older, grants: tuple, refused: bool) -> None:
    """WRITE on the transactional id, else 53. Past the check, the answer is the transaction coordinator's (this raw
    request did not look it up first, so both answer NOT_COORDINATOR alike)."""
    if grants:
        older.grant(*grants)
    kafka, _ = older.same(ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id="older-transaction", transaction_timeout_ms=60000),
                          "transactional InitProducerId v4", ignore=("producer_id",))
    assert (kafka.body.error_code == 53) is refused


def test_create_topics_at_the_release_versions(older: Older) -> None:
    """The versions an admin client of the release sends (v5+ return the new topic's configs, here refused with 29 as
    alice has no DESCRIBE_CONFIGS on it; v7, 3.0 only, its topic id)."""
    older.grant(acl(CLUSTER, "kafka-cluster", CREATE))
    for version in range(5, api_ranges(older.line)[ApiKey.CREATE_TOPICS][1] + 1):
        topic = CreateTopicsRequest.CreatableTopic(name=f"older-create-v{version}-{older.line}", num_partitions=1, replication_factor=1)
        kafka, _ = older.same(ApiKey.CREATE_TOPICS, version, CreateTopicsRequest(topics=[topic]), f"CreateTopics v{version}",
                              ignore=("topics.*.topic_id",))
        assert [(t.error_code, t.topic_config_error_code) for t in kafka.body.topics] == [(0, 29)]


def _config_rows(configs: list) -> list[tuple]:
    return [(c.name, c.value, c.read_only, c.config_source, c.is_sensitive) for c in configs]


def test_create_topics_returns_the_release_topic_configs(older: Older) -> None:
    """Each release's own topic keys (2.8 and 3.0: 26, without 3.x's compression levels, timestamp bounds and tiered
    storage keys) with its own message.format.version default. ZooKeeper mode lists them from a Scala HashMap: the
    order matches 3.0 (Scala 2.13.6+); 2.8's Scala 2.13.5 orders two of its buckets otherwise, so 2.8 is compared by
    name."""
    name = f"older-create-configs-{older.line}"
    older.grant(acl(CLUSTER, "kafka-cluster", CREATE), acl(TOPIC, name, DESCRIBE_CONFIGS))
    topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)
    kafka, shim = older.both(ApiKey.CREATE_TOPICS, 6, CreateTopicsRequest(topics=[topic]))
    assert kafka.body.topics[0].error_code == shim.body.topics[0].error_code == 0
    real, emulated = _config_rows(kafka.body.topics[0].configs), _config_rows(shim.body.topics[0].configs)
    assert sorted(emulated) == sorted(real)
    if older.line == "3.0":
        assert emulated == real


def test_describe_configs_lists_the_release_topic_keys(older: Older) -> None:
    """DescribeConfigs of a whole topic: the same keys and values as the release (compared by name)."""
    older.create_topic_once("older-fetch-topic")
    older.grant(acl(TOPIC, "older-fetch-topic", DESCRIBE_CONFIGS))
    resource = DescribeConfigsRequest.DescribeConfigsResource(resource_type=2, resource_name="older-fetch-topic", configuration_keys=None)
    kafka, shim = older.both(ApiKey.DESCRIBE_CONFIGS, 1, DescribeConfigsRequest(resources=[resource], include_synonyms=False))
    rows = [sorted((c.name, c.value, c.read_only, c.config_source, c.is_sensitive) for r in answer.body.results for c in r.configs)
            for answer in (kafka, shim)]
    assert rows[1] == rows[0]
    assert len(rows[0]) == 26


@pytest.mark.parametrize("key, value", [("compression.gzip.level", "5"), ("message.timestamp.after.max.ms", "1000"),
                                        ("remote.storage.enable", "false")])
def test_create_topics_refuses_a_key_the_release_did_not_have(older: Older, key: str, value: str) -> None:
    """3.9's keys are unknown to the release (40, INVALID_CONFIG), but for the tiered storage keys 3.0 defined as
    internal: accepted, never listed."""
    name = f"older-create-unknown-key-{older.line}"
    older.grant(acl(CLUSTER, "kafka-cluster", CREATE))
    topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1, configs=[
        CreateTopicsRequest.CreatableTopicConfig(name=key, value=value)])
    kafka, _ = older.same(ApiKey.CREATE_TOPICS, 5, CreateTopicsRequest(topics=[topic], validate_only=True), f"CreateTopics with {key}")
    internal = key == "remote.storage.enable" and older.line == "3.0"
    assert kafka.body.topics[0].error_code == (0 if internal else 40)


def test_delete_topics_asks_delete_before_existence(older: Older) -> None:
    """ZooKeeper mode asks DELETE on each named topic, then its existence: an absent topic alice may describe is 29
    (KRaft's controller: 3), DELETE on the cluster, KRaft's leave to delete any topic, grants nothing, and DELETE alone
    deletes a topic alice may not describe (KRaft's controller: 29)."""
    older.create_topic_once("older-delete-kept")
    older.create_topic_once("older-delete-undescribed")
    older.grant(acl(TOPIC, "older-delete-absent", DESCRIBE), acl(CLUSTER, "kafka-cluster", DELETE),
                acl(TOPIC, "older-delete-absent-2", DELETE), acl(TOPIC, "older-delete-undescribed", DELETE))
    body = DeleteTopicsRequest(topic_names=["older-delete-absent", "older-delete-kept", "older-delete-unknown", "older-delete-absent-2",
                                            "older-delete-undescribed"], timeout_ms=30000)
    kafka, shim = older.both(ApiKey.DELETE_TOPICS, 4, body)
    for answer in (kafka, shim):  # ZooKeeper mode answers from a hash map; a client maps the results by name
        answer.body.responses.sort(key=lambda r: r.name)
    assert_same(kafka, shim, what=f"DeleteTopics v4 (Kafka {RELEASES[older.line]}, results by name)")
    assert [(r.name, r.error_code) for r in kafka.body.responses] == [
        ("older-delete-absent", 29), ("older-delete-absent-2", 3), ("older-delete-kept", 29), ("older-delete-undescribed", 0),
        ("older-delete-unknown", 29)]


@pytest.mark.parametrize("version", [1, 2])
def test_delete_groups_of_mixed_rights(older: Older, version: int) -> None:
    """Deletable, refused and unknown groups in one request: each answer per group, in each release's order."""
    deletable, refused = f"older-delete-a-{older.line}-{version}", f"older-delete-b-{older.line}-{version}"
    older.create_topic_once("older-delete-topic")
    for group in (deletable, refused):
        older.commit_offset(group, "older-delete-topic", 3)
    older.grant(acl(GROUP, deletable, DELETE), acl(GROUP, "older-delete-unknown", DELETE))
    body = DeleteGroupsRequest(groups_names=[refused, deletable, "older-delete-unknown"])
    kafka, shim = older.both(ApiKey.DELETE_GROUPS, version, body)
    # Kafka 2.8/3.0 merge the deleted and the refused groups in a Scala hash map, so the results come in hash order (3.0
    # showed another order than 2.8 for the same request shape); a client maps them by group id, so the comparison does too
    for answer in (kafka, shim):
        answer.body.results.sort(key=lambda r: r.group_id)
    assert_same(kafka, shim, what=f"DeleteGroups v{version} (Kafka {RELEASES[older.line]}, results by group id)")
    assert sorted(r.error_code for r in kafka.body.results) == [0, 30, 69]  # GROUP_ID_NOT_FOUND for the unknown group



def _by_user(answer: Answer) -> Answer:
    answer.body.results.sort(key=lambda r: r.user)
    return answer


@pytest.mark.parametrize("users", [None, ["alice", "nobody"]], ids=["all-users", "named-users"])
@pytest.mark.parametrize("user", [ALICE, ADMIN], ids=["alice", "admin"])
def test_describe_user_scram_credentials(older: Older, user: tuple[str, str], users: list[str] | None) -> None:
    """Without DESCRIBE on the cluster, 2.7-3.1 answer the top-level 31 alone (3.2+ a row per user, and no answer at all
    for a null list: a release switch). The users come in ZooKeeper's child order on Kafka and in kafka-shim's own; a
    client maps them by name, so they are compared by name."""
    body = DescribeUserScramCredentialsRequest(users=None if users is None else [
        DescribeUserScramCredentialsRequest.UserName(name=name) for name in users])
    kafka, shim = older.both(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, body, user)
    assert_same(_by_user(kafka), _by_user(shim), what=f"DescribeUserScramCredentials as {user[0]} (Kafka {RELEASES[older.line]})")
    assert kafka.body.error_code == (31 if user == ALICE else 0)


@pytest.mark.parametrize("grants", [(), (acl(TOPIC, "older-fetch-topic", DESCRIBE_CONFIGS),), (acl(CLUSTER, "kafka-cluster", DESCRIBE_CONFIGS),)],
                         ids=["no-acls", "topic-describe-configs", "cluster-describe-configs"])
def test_describe_configs_of_keys_both_releases_have(older: Older, grants: tuple) -> None:
    """DESCRIBE_CONFIGS on the topic (29 without) and on the cluster for a broker (31 without), for config keys that
    2.8, 3.0 and 3.9 share."""
    older.create_topic_once("older-fetch-topic")
    if grants:
        older.grant(*grants)
    resources = [DescribeConfigsRequest.DescribeConfigsResource(resource_type=2, resource_name="older-fetch-topic",
                                                                configuration_keys=["cleanup.policy", "retention.ms"]),
                 DescribeConfigsRequest.DescribeConfigsResource(resource_type=4, resource_name="1", configuration_keys=["log.retention.hours"])]
    for version in (1, 3):
        older.same(ApiKey.DESCRIBE_CONFIGS, version, DescribeConfigsRequest(resources=resources, include_synonyms=True),
                   f"DescribeConfigs v{version}")


def test_offset_fetch_of_several_groups_at_v8(older: Older) -> None:
    """OffsetFetch v8 (KIP-709, 3.0) checks each group on its own: 30 for one, offsets for another; 3.0-3.4 list the
    groups in a Java HashMap's order (3.5+ in the request's: a release switch)."""
    if ApiKey.OFFSET_FETCH not in api_ranges(older.line) or api_ranges(older.line)[ApiKey.OFFSET_FETCH][1] < 8:
        pytest.skip(f"Kafka {older.line} has no OffsetFetch v8 (KIP-709 came with 3.0)")
    older.create_topic_once("older-fetch-topic")
    older.commit_offset_once("older-fetch-group", "older-fetch-topic", 7)
    older.grant(acl(GROUP, "older-fetch-group", DESCRIBE), acl(TOPIC, "older-fetch-topic", DESCRIBE))
    group, topics = OffsetFetchRequest.OffsetFetchRequestGroup, OffsetFetchRequest.OffsetFetchRequestTopics
    body = OffsetFetchRequest(groups=[group(group_id="older-fetch-group", topics=[topics(name="older-fetch-topic", partition_indexes=[0])]),
                                      group(group_id="older-other-group", topics=None), group(group_id="g1", topics=None),
                                      group(group_id="older-fetch-group-2", topics=None), group(group_id="g0", topics=None)])
    kafka, _ = older.same(ApiKey.OFFSET_FETCH, 8, body, "OffsetFetch v8")
    assert sorted((g.group_id, g.error_code) for g in kafka.body.groups) == [
        ("g0", 30), ("g1", 30), ("older-fetch-group", 0), ("older-fetch-group-2", 30), ("older-other-group", 30)]


# -- ZooKeeper-mode offsets: OffsetCommit and OffsetFetch v0 ------------------------------------------------------------
def _offset_commit(group: str, partitions: list[tuple[str, int, int, str | None]], version: int = 0) -> OffsetCommitRequest:
    by_topic: dict[str, list] = {}
    for topic, partition, offset, metadata in partitions:
        by_topic.setdefault(topic, []).append(OffsetCommitRequest.OffsetCommitRequestPartition(
            partition_index=partition, committed_offset=offset, committed_metadata=metadata))
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", retention_time_ms=-1,
                               topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()])


def _offset_fetch(group: str, partitions: list[tuple[str, int]]) -> OffsetFetchRequest:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return OffsetFetchRequest(group_id=group, topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=ps)
                                                      for t, ps in by_topic.items()])


ZK_TOPICS = {"older-zk-a": 6, "older-zk-b": 2, "older-zk-secret": 1}


def _zk_setup(older: Older) -> None:
    for name, partitions in ZK_TOPICS.items():
        older.create_topic_once(name, partitions)
    older.grant(acl(GROUP, "older-zk-group", READ), acl(TOPIC, "older-zk-a", READ), acl(TOPIC, "older-zk-b", READ),
                acl(TOPIC, "older-zk-ghost", DESCRIBE))


@pytest.mark.parametrize("shape", ["two-partitions", "many-partitions"])
def test_version_0_offsets_are_kept_in_zookeeper(older: Older, shape: str) -> None:
    """OffsetCommit v0 goes straight to ZooKeeper (no coordinator, no FindCoordinator first) and OffsetFetch v0 reads
    it back: the written offsets, 3 for partitions never committed there or not existing, 29 for topics alice may not
    describe, 12 for metadata too long; answers in the real broker's map orders (over four partitions: hash tries)."""
    _zk_setup(older)
    group = f"older-zk-group-{shape}"
    older.grant(acl(GROUP, group, READ))
    if shape == "two-partitions":
        commits = [("older-zk-b", 1, 11, None), ("older-zk-a", 2, 22, "m")]
        asked = [("older-zk-a", 2), ("older-zk-b", 0)]
    else:
        commits = [("older-zk-a", p, 100 * p + 1, None) for p in range(6)] + [("older-zk-b", 1, 7, None)]
        commits += [("older-zk-secret", 0, 5, None), ("older-zk-a", 9, 5, None), ("older-zk-ghost", 0, 5, None),
                    ("older-zk-b", 0, 7, "x" * 4097), ("older-zk-none", 0, 1, None)]
        asked = [(t, p) for t in ("older-zk-b", "older-zk-a", "older-zk-secret", "older-zk-ghost") for p in range(8)]
    kafka, _ = older.same(ApiKey.OFFSET_COMMIT, 0, _offset_commit(group, commits), f"OffsetCommit v0 ({shape})")
    assert {p.error_code for t in kafka.body.topics for p in t.partitions} <= {0, 3, 12, 29}
    kafka, _ = older.same(ApiKey.OFFSET_FETCH, 0, _offset_fetch(group, asked), f"OffsetFetch v0 ({shape})")
    written = {(t.name, p.partition_index): p.committed_offset for t in kafka.body.topics for p in t.partitions if p.error_code == 0}
    assert written == {(t, p): o for t, p, o, m in commits if (t, p) in asked and m != "x" * 4097 and p < ZK_TOPICS.get(t, 0)
                       and t != "older-zk-secret"}


def test_version_0_offsets_are_not_the_coordinators(older: Older) -> None:
    """What v0 wrote to ZooKeeper a v1+ fetch (the group coordinator) does not see, and the reverse."""
    _zk_setup(older)
    older.commit_offset_once("older-zk-group", "older-zk-a", 3)  # v5 through the coordinator, on both
    older.same(ApiKey.OFFSET_COMMIT, 0, _offset_commit("older-zk-group", [("older-zk-a", 1, 40, None)]), "OffsetCommit v0")
    asked = [("older-zk-a", 0), ("older-zk-a", 1)]
    kafka, _ = older.same(ApiKey.OFFSET_FETCH, 0, _offset_fetch("older-zk-group", asked), "OffsetFetch v0")
    assert sorted((p.partition_index, p.error_code, p.committed_offset) for t in kafka.body.topics for p in t.partitions) == [
        (0, 3, -1), (1, 0, 40)]
    kafka, _ = older.same(ApiKey.OFFSET_FETCH, 1, _offset_fetch("older-zk-group", asked), "OffsetFetch v1")
    assert sorted((p.partition_index, p.error_code, p.committed_offset) for t in kafka.body.topics for p in t.partitions) == [
        (0, 0, 3), (1, 0, -1)]


@pytest.mark.parametrize("version", [2, 5])
def test_offset_commit_of_several_topics_through_the_coordinator(older: Older, version: int) -> None:
    """The coordinator's answer to a commit of several topics, some refused or unknown, in the real broker's order."""
    _zk_setup(older)
    older.commit_offset_once("older-zk-group", "older-zk-a", 3)
    commits = [(t, p, 10 + p, None) for t in ("older-zk-b", "older-zk-a") for p in range(ZK_TOPICS[t])]
    commits += [("older-zk-secret", 0, 5, None), ("older-zk-a", 9, 5, None), ("older-zk-ghost", 0, 5, None)]
    older.same(ApiKey.OFFSET_COMMIT, version, _offset_commit("older-zk-group", commits), f"OffsetCommit v{version}")


def test_describe_configs_message_format_version_is_the_releases(older: Older) -> None:
    """message.format.version and its broker synonym default to the release's latest inter-broker protocol before
    3.0 (2.8-IV1 on 2.8), 3.0-IV1 after: on the topic, with synonyms, and on the broker."""
    older.create_topic_once("older-fetch-topic")
    resources = [DescribeConfigsRequest.DescribeConfigsResource(resource_type=2, resource_name="older-fetch-topic",
                                                                configuration_keys=["message.format.version"]),
                 DescribeConfigsRequest.DescribeConfigsResource(resource_type=4, resource_name="1",
                                                                configuration_keys=["log.message.format.version", "inter.broker.protocol.version"])]
    for version in (1, 3):
        older.same(ApiKey.DESCRIBE_CONFIGS, version, DescribeConfigsRequest(resources=resources, include_synonyms=True),
                   f"DescribeConfigs v{version}", user=ADMIN)
