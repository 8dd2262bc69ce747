"""DescribeClientQuotas (48) and AlterClientQuotas (49) against a real Kafka 3.9: the same answers, authorized and
denied, valid and refused, at v0 and v1; and kafka-configs.sh on users and clients against kafka-shim.

The real broker lives for the session, so each test uses user names of its own and removes what it set."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest

from kafka_shim.protocol.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka_shim.shim.testing.handle import KafkaShim
from tests.support.acl_peers import ANONYMOUS, CLUSTER, Peers, acl
from tests.support.peers import REAL_KAFKA

DESCRIBE, ALTER = 48, 49
ALTER_CONFIGS, DESCRIBE_CONFIGS = 11, 10
A = AlterClientQuotasRequest
D = DescribeClientQuotasRequest
EXACT, DEFAULT, SPECIFIED = 0, 1, 2


def entry(entity: dict[str, str | None], ops: list[tuple[str, float | None]]) -> A.EntryData:
    return A.EntryData(entity=[A.EntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
                       ops=[A.OpData(key=k, value=0.0 if v is None else v, remove=v is None) for k, v in ops])


def alter(*entries: A.EntryData, validate_only: bool = False) -> A:
    return A(entries=list(entries), validate_only=validate_only)


def exact(**names: str) -> D:
    return D(components=[D.ComponentData(entity_type=t.replace("_", "-"), match_type=EXACT, match=n) for t, n in names.items()],
             strict=True)


@pytest.fixture
def quota_admin(peers: Peers) -> Iterator[tuple[Peers, str]]:
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=ALTER_CONFIGS),
                acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=DESCRIBE_CONFIGS))
    user = f"quota-{uuid.uuid4().hex[:8]}"
    yield peers, user
    for entity in ({"user": user}, {"user": user + "-2"}, {"user": user, "client-id": "app"}):
        peers.both(ALTER, 1, alter(entry(entity, [("producer_byte_rate", None), ("consumer_byte_rate", None),
                                                  ("request_percentage", None)])))


def _settled(peers: Peers, body: D, version: int, what: str) -> None:
    """Kafka's brokers describe quotas from their metadata image, a moment after the controller answered."""
    deadline = time.monotonic() + 30
    while True:
        try:
            peers.same(DESCRIBE, version, body, what)
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.mark.parametrize("version", [0, 1])
def test_both_apis_denied_without_the_cluster_operations(peers: Peers, version: int) -> None:
    peers.same(ALTER, version, alter(entry({"user": "nobody"}, [("producer_byte_rate", 1024.0)])), f"Alter v{version} denied")
    peers.same(DESCRIBE, version, exact(user="nobody"), f"Describe v{version} denied")


@pytest.mark.parametrize("version", [0, 1])
def test_set_describe_and_remove_quotas(quota_admin, version: int) -> None:
    peers, user = quota_admin
    peers.same(ALTER, version, alter(entry({"user": user}, [("producer_byte_rate", 1024.0), ("consumer_byte_rate", 2048.0)])), "set")
    _settled(peers, exact(user=user), version, "after set")
    peers.same(ALTER, version, alter(entry({"user": user, "client-id": "app"}, [("request_percentage", 12.5)]),
                                     entry({"user": user + "-2"}, [("consumer_byte_rate", 10.0)])), "two entities")
    _settled(peers, exact(user=user, client_id="app"), version, "user and client")
    _settled(peers, D(components=[D.ComponentData(entity_type="user", match_type=EXACT, match=user)], strict=False), version,
             "not strict: both of the user's entities")
    peers.same(ALTER, version, alter(entry({"user": user}, [("producer_byte_rate", None), ("consumer_byte_rate", 4096.0)])), "remove one")
    _settled(peers, exact(user=user), version, "after removal")
    peers.same(ALTER, version, alter(entry({"user": user}, [("consumer_byte_rate", 1.0)]), validate_only=True), "validate only")
    _settled(peers, exact(user=user), version, "unchanged by validate_only")


@pytest.mark.parametrize("case", [
    ({"user": "u"}, [("no_such_quota", 1.0)]),
    ({"user": "u"}, [("producer_byte_rate", 10.5)]),
    ({"user": "u"}, [("producer_byte_rate", 0.0)]),
    ({"user": "u"}, [("consumer_byte_rate", -5.0)]),
    ({"user": "u"}, [("connection_creation_rate", 5.0)]),
    ({"ip": "127.0.0.1"}, [("producer_byte_rate", 5.0)]),
    ({"ip": "127.0.0.1", "user": "u"}, [("connection_creation_rate", 5.0)]),
    ({"ip": "127.0.0.1"}, [("connection_creation_rate", 5.5)]),
    ({"group": "g"}, [("producer_byte_rate", 5.0)]),
    ({"user": ""}, [("producer_byte_rate", 5.0)]),
    ({}, [("producer_byte_rate", 5.0)]),
    ({"user": "u"}, [("producer_byte_rate", 5.0), ("producer_byte_rate", 6.0)]),
    ({"user": "u"}, [("request_percentage", 1e300), ("producer_byte_rate", 1e300)]),
], ids=repr)
def test_refused_alterations(quota_admin, case) -> None:
    peers, _ = quota_admin
    entity, ops = case
    peers.same(ALTER, 1, alter(entry(entity, ops), validate_only=True), f"Alter {case}")


def test_an_entity_named_twice(quota_admin) -> None:
    peers, user = quota_admin
    peers.same(ALTER, 1, alter(entry({"user": user}, [("producer_byte_rate", 100.0)]),
                               entry({"user": user}, [("consumer_byte_rate", 200.0)])), "an entity twice")
    _settled(peers, exact(user=user), 1, "what the first of the two set")


@pytest.mark.parametrize("components", [
    [("", EXACT, "x")],
    [("user", EXACT, "x"), ("user", SPECIFIED, None)],
    [("user", EXACT, None)],
    [("user", DEFAULT, "x")],
    [("user", SPECIFIED, "x")],
    [("user", 7, None)],
    [("ip", SPECIFIED, None), ("client-id", EXACT, "c")],
    [("group", EXACT, "g")],
], ids=repr)
def test_refused_filters(quota_admin, components) -> None:
    peers, _ = quota_admin
    body = D(components=[D.ComponentData(entity_type=t, match_type=m, match=n) for t, m, n in components], strict=False)
    peers.same(DESCRIBE, 1, body, f"Describe {components}")


def test_kafka_configs_sh_on_users_and_clients() -> None:
    def configs(bootstrap: str, *args: str) -> tuple[int, str]:
        proc = subprocess.run([sys.executable, str(REAL_KAFKA), "run", "kafka.admin.ConfigCommand", "--bootstrap-server",
                               bootstrap, *args], capture_output=True, text=True, timeout=300)
        return proc.returncode, proc.stdout.strip()

    with KafkaShim() as shim:
        b = shim.bootstrap_servers
        assert configs(b, "--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config",
                       "producer_byte_rate=1024,consumer_byte_rate=2048") == (0, "Completed updating config for user alice.")
        code, out = configs(b, "--describe", "--entity-type", "users", "--entity-name", "alice")
        assert code == 0 and out.startswith("Quota configs for user-principal 'alice' are ")
        assert sorted(out.split(" are ", 1)[1].split(", ")) == ["consumer_byte_rate=2048.0", "producer_byte_rate=1024.0"]
        assert configs(b, "--alter", "--entity-type", "clients", "--entity-default", "--add-config",
                       "request_percentage=50") == (0, "Completed updating default config for clients in the cluster.")
        assert configs(b, "--describe", "--entity-type", "clients", "--entity-default") == (
            0, "Quota configs for the default client-id are request_percentage=50.0")
        assert configs(b, "--alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config",
                       "producer_byte_rate")[0] == 0
        assert configs(b, "--describe", "--entity-type", "users", "--entity-name", "alice") == (
            0, "Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0")
