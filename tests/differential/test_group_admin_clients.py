"""Real clients administer consumer groups on kafka-shim and on Apache Kafka 3.9, and see the same thing.

confluent-kafka's AdminClient (describe_consumer_groups with include_authorized_operations, list_consumer_groups
with states, delete_consumer_groups), kafka-python's describe_groups (DescribeGroups v5, authorized operations always
asked), aiokafka's describe_consumer_groups (it sends DescribeGroups v3 with include_authorized_operations but decodes
the answer with v2's schema, so the bitfield is dropped on its side; the raw v3 answers are compared in
test_group_admin.py), and Kafka's own kafka-consumer-groups.sh
(--list, --describe, --reset-offsets, --delete), each against both brokers, with the same ACLs for User:ANONYMOUS on
PLAINTEXT (test_acl_apis.Peers). The group under test has two librdkafka consumers on each broker. What differs by
nature (member ids, ports, the coordinator's address) is left out of the comparison.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from kafka_shim.authorizer import AclOperation, AclPermissionType, PatternType, ResourceType
from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import CreateTopicsRequest
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.differential.test_acl_apis import ANONYMOUS, Peers, acl
from tests.differential.test_group_admin import ensure_coordinators, shim_secured  # noqa: F401 (fixture)
from tests.support.peers import REAL_KAFKA
from tests.support.wire import Wire

GROUP, TOPIC, CLUSTER = ResourceType.GROUP, ResourceType.TOPIC, ResourceType.CLUSTER
PREFIXED, LITERAL = PatternType.PREFIXED, PatternType.LITERAL
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
READ, DELETE, DESCRIBE, ALL = AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE, AclOperation.ALL
TIMEOUT = 60
GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


def needs_group_protocol(shim: EmbeddedBroker) -> None:
    """These tests need the classic protocol (FindCoordinator, JoinGroup) and committed offsets, built beside this
    module (issue 14): without them in this build they are skipped."""
    table = shim.broker.services.api_table
    missing = [name for key, name in ((10, "FindCoordinator"), (11, "JoinGroup"), (8, "OffsetCommit")) if table.versions(key) is None]
    if missing:
        pytest.skip(f"this build does not serve {', '.join(missing)}")


@pytest.fixture
def peers(oracle, shim_secured) -> Iterator[Peers]:  # noqa: F811
    needs_group_protocol(shim_secured)
    both = Peers(oracle, shim_secured)
    both.reset()
    ensure_coordinators(both)
    yield both
    both.reset()


def bootstraps(peers: Peers) -> dict[str, str]:
    host, port = peers.oracle.plaintext
    return {"kafka": f"{host}:{port}", "shim": peers.shim.bootstrap_servers}


def grant_all(peers: Peers, stem: str, *extra) -> None:
    """The consumers' rights (READ on the stem's groups and topics; the topic created by the super user)."""
    peers.grant(acl(rtype=GROUP, name=stem, pattern=PREFIXED, principal=ANONYMOUS, operation=READ),
                acl(rtype=TOPIC, name=stem, pattern=PREFIXED, principal=ANONYMOUS, operation=READ),
                acl(rtype=TOPIC, name=stem, pattern=PREFIXED, principal=ANONYMOUS, operation=DESCRIBE), *extra)


def create_topic(peers: Peers, name: str, partitions: int) -> None:
    body = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1,
                                                                          assignments=[], configs=[])], timeout_ms=30000)
    with Wire(peers.oracle.sasl) as admin:
        admin.sasl_plain("admin", "admin-secret")
        assert admin.request(ApiKey.CREATE_TOPICS, 5, body).body.topics[0].error_code == 0
    peers.shim.call(lambda: peers.shim.broker.services.partitions.create_topic(name, partitions))


@contextmanager
def consumers(bootstrap: str, group: str, topic: str, count: int = 2):
    """``count`` librdkafka consumers in ``group``, each holding its part of ``topic`` (polled until assigned)."""
    from confluent_kafka import Consumer

    members = [Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": f"member-{i}", "enable.auto.commit": False,
                         "session.timeout.ms": 30000, "heartbeat.interval.ms": 200, "partition.assignment.strategy": "range"})
               for i in range(count)]
    try:
        for member in members:
            member.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT
        while not all(m.assignment() for m in members) or len({tp.partition for m in members for tp in m.assignment()}) < count:
            assert time.monotonic() < deadline, "the consumers never all got an assignment"
            for m in members:
                m.poll(0.05)
        # One more round so every member's heartbeat has seen the group settle.
        for _ in range(5):
            for m in members:
                m.poll(0.05)
        yield members
    finally:
        for m in members:
            m.close()


def _admin(bootstrap: str):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000})


def confluent_view(bootstrap: str, groups: list[str]) -> dict:
    """describe_consumer_groups(include_authorized_operations=True), without member ids, ports or coordinator address."""
    admin = _admin(bootstrap)  # kept alive until the futures are done
    futures = admin.describe_consumer_groups(groups, include_authorized_operations=True, request_timeout=30)
    view = {}
    for group_id, future in futures.items():
        try:
            d = future.result(timeout=TIMEOUT)
        except Exception as exc:  # the KafkaError is what a user sees
            view[group_id] = ("error", exc.args[0].code() if exc.args and hasattr(exc.args[0], "code") else repr(exc))
            continue
        members = sorted((m.client_id, m.host, m.group_instance_id,
                          sorted((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions if m.assignment else [])))
                         for m in d.members)
        ops = sorted(op.name for op in d.authorized_operations) if d.authorized_operations is not None else None
        view[group_id] = (d.state.name, d.is_simple_consumer_group, d.partition_assignor, members, ops, d.coordinator.id)
    return view


def test_confluent_describe_list_delete_under_acls(peers) -> None:
    from confluent_kafka import ConsumerGroupState

    stem = f"gac-{uuid.uuid4().hex[:8]}"
    topic = f"{stem}-topic"
    grant_all(peers, stem, acl(rtype=GROUP, name=f"{stem}-hidden", principal=ANONYMOUS, operation=DESCRIBE, permission=DENY))
    create_topic(peers, topic, 4)
    live, hidden, unknown = f"{stem}-live", f"{stem}-hidden", f"{stem}-unknown"
    seen = {}
    for name, bootstrap in bootstraps(peers).items():
        with consumers(bootstrap, live, topic):  # (the hidden group cannot have members: FindCoordinator needs DESCRIBE)
            described = confluent_view(bootstrap, [live, hidden, unknown])
            admin = _admin(bootstrap)
            listed = admin.list_consumer_groups(states={ConsumerGroupState.STABLE}, request_timeout=30).result(timeout=TIMEOUT)
            stable = sorted((g.group_id, g.state.name) for g in listed.valid if g.group_id.startswith(stem))
            busy = admin.delete_consumer_groups([live], request_timeout=30)[live]
            with pytest.raises(Exception) as refused:
                busy.result(timeout=TIMEOUT)
            refusal = refused.value.args[0].code()
        admin = _admin(bootstrap)
        every = admin.list_consumer_groups(request_timeout=30).result(timeout=TIMEOUT)
        empty = sorted((g.group_id, g.state.name) for g in every.valid if g.group_id.startswith(stem))
        deleted = {}
        for group_id, future in admin.delete_consumer_groups([live, unknown], request_timeout=30).items():
            try:
                deleted[group_id] = future.result(timeout=TIMEOUT)
            except Exception as exc:
                deleted[group_id] = exc.args[0].code()
        after = confluent_view(bootstrap, [live])
        seen[name] = (described, stable, refusal, empty, deleted, after)
    assert seen["shim"] == seen["kafka"]
    described = seen["kafka"][0]
    assert described[live][0] == "STABLE" and described[live][4] == ["DESCRIBE", "READ"]


@pytest.mark.parametrize("rights", [[READ], [READ, DELETE], [ALL]], ids=["read", "read+delete", "all"])
def test_confluent_authorized_operations(peers, rights) -> None:
    stem = f"gao-{uuid.uuid4().hex[:8]}"
    topic = f"{stem}-topic"
    grant_all(peers, stem, *(acl(rtype=GROUP, name=stem, pattern=PREFIXED, principal=ANONYMOUS, operation=op) for op in rights if op != READ))
    create_topic(peers, topic, 2)
    group = f"{stem}-g"
    seen = {}
    for name, bootstrap in bootstraps(peers).items():
        with consumers(bootstrap, group, topic):
            seen[name] = confluent_view(bootstrap, [group])
    assert seen["shim"] == seen["kafka"]


def python_clients_view(bootstrap: str, group: str) -> tuple:
    """kafka-python describe_groups (v5, operations always asked) and aiokafka describe_consumer_groups (v3, read as v2)."""
    from aiokafka.admin import AIOKafkaAdminClient
    from kafka import KafkaAdminClient

    kp = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        d = kp.describe_groups([group], include_authorized_operations=True)
    finally:
        kp.close()
    kp_view = {group_id: {**g, "members": sorted(({k: v for k, v in m.items() if k != "member_id"} for m in g["members"]),
                                                 key=lambda m: m["client_id"])}
               for group_id, g in d.items()}

    async def aio():
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
        await admin.start()
        try:
            (response,) = await admin.describe_consumer_groups([group], include_authorized_operations=True)
        finally:
            await admin.close()
        # Each group as aiokafka decodes it, members without their (per-broker) ids and sorted by client id.
        return [(*g[:5], sorted(m[1:] for m in g[5]), *g[6:]) for g in response.groups]

    return kp_view, asyncio.run(aio())


def test_kafka_python_and_aiokafka_describe(peers) -> None:
    stem = f"gap-{uuid.uuid4().hex[:8]}"
    topic = f"{stem}-topic"
    grant_all(peers, stem, acl(rtype=GROUP, name=stem, pattern=PREFIXED, principal=ANONYMOUS, operation=DELETE))
    create_topic(peers, topic, 2)
    group = f"{stem}-g"
    seen = {}
    for name, bootstrap in bootstraps(peers).items():
        with consumers(bootstrap, group, topic):
            seen[name] = python_clients_view(bootstrap, group)
    assert seen["shim"] == seen["kafka"]


# -- kafka-consumer-groups.sh -------------------------------------------------------------------------------------------
_SPACES = re.compile(r" +")


def group_command(bootstrap: str, *args: str) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, str(REAL_KAFKA), "run", GROUP_COMMAND, "--bootstrap-server", bootstrap, *args],
                          capture_output=True, text=True, timeout=300)
    text = proc.stdout + "\n".join(line for line in proc.stderr.splitlines() if line.startswith("Error"))
    # Column widths follow the longest value (the member ids differ); consumer ids are per broker.
    text = re.sub(r"member-\d-[0-9a-f-]{36}", "member-<id>", text)
    text = re.sub(r"rdkafka-[0-9a-f-]{36}", "rdkafka-<id>", text)
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", text)  # the coordinator's address
    # Rows come in the order of the members' ids (random UUIDs, on Kafka too): compared as a set of rows.
    return proc.returncode, "\n".join(sorted(_SPACES.sub(" ", line).strip() for line in text.splitlines()))


def test_kafka_consumer_groups_tool(peers) -> None:
    stem = f"gat-{uuid.uuid4().hex[:8]}"
    topic = f"{stem}-topic"
    grant_all(peers, stem, acl(rtype=GROUP, name=stem, pattern=PREFIXED, principal=ANONYMOUS, operation=DELETE))
    create_topic(peers, topic, 3)
    group = f"{stem}-g"
    seen: dict[str, list] = {}
    for name, bootstrap in bootstraps(peers).items():
        outputs = []
        with consumers(bootstrap, group, topic) as members:
            for m in members:
                owned = m.assignment()
                for tp in owned:
                    tp.offset = 1
                m.commit(offsets=owned, asynchronous=False)
            outputs.append(group_command(bootstrap, "--list"))
            outputs.append(group_command(bootstrap, "--describe", "--group", group))
            outputs.append(group_command(bootstrap, "--describe", "--group", group, "--members"))
            outputs.append(group_command(bootstrap, "--describe", "--group", group, "--state"))
            outputs.append(group_command(bootstrap, "--delete", "--group", group))
            outputs.append(group_command(bootstrap, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"))
        outputs.append(group_command(bootstrap, "--describe", "--group", group, "--state"))
        outputs.append(group_command(bootstrap, "--reset-offsets", "--group", group, "--topic", topic, "--to-offset", "0", "--dry-run"))
        outputs.append(group_command(bootstrap, "--reset-offsets", "--group", group, "--topic", topic, "--to-latest", "--execute"))
        outputs.append(group_command(bootstrap, "--describe", "--group", group, "--offsets"))
        outputs.append(group_command(bootstrap, "--delete", "--group", group))
        outputs.append(group_command(bootstrap, "--delete", "--group", group))
        outputs.append(group_command(bootstrap, "--describe", "--group", f"{stem}-nobody"))
        seen[name] = outputs
    for kafka, shim in zip(seen["kafka"], seen["shim"], strict=True):
        assert shim == kafka
