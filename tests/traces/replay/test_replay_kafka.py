"""kafka-shim replay against Apache Kafka 3.9: the workload of test_replay_shim.py captured through
``kafka-shim capture-proxy`` in front of a real Kafka, then replayed straight at the same Kafka after resetting what
the workload created (its topic, group and ACLs): no difference; and after also denying alice READ on the topic:
exactly the requests that read it differ, with Kafka's own 29.

The broker is this module's own (scripts/real-kafka, as tests/differential's oracle): the test deletes and recreates
state, which must not disturb other modules.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid

import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.traces.format import iter_requests
from kafka_shim.traces.replay.cli import main
from tests.support.peers import start_real_kafka, stop_real_kafka
from tests.support.proxy_thread import ProxyThread
from tests.support.sasl_setup import USERS
from tests.traces.replay.workload import acl, alice_acls, plain, run_workload

pytestmark = [pytest.mark.oracle, pytest.mark.clients]
TIMEOUT = 60


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    broker = start_real_kafka(tmp_path_factory.mktemp("kafka-replay"))
    yield broker
    stop_real_kafka(broker)


def _bootstrap(kafka) -> str:
    return f"{kafka.sasl[0]}:{kafka.sasl[1]}"


def _admin(kafka):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": _bootstrap(kafka), **plain("admin")})


@pytest.fixture(scope="module")
def captured(kafka, tmp_path_factory):
    topic, group = f"replayed-{uuid.uuid4().hex[:8]}", f"replay-group-{uuid.uuid4().hex[:8]}"
    # Not captured: warm Kafka's coordinators up, so the workload's FindCoordinator and InitProducerId are answered
    # alike in the capture and in the replays.
    asyncio.run(_until_coordinators_available(kafka))
    # Not captured either: alice's ACLs, set once and kept (they survive the resets), and waited for, since a KRaft
    # broker applies them a moment after CreateAcls is answered.
    _create_acls(kafka, alice_acls(topic, group))
    trace = tmp_path_factory.mktemp("kafka-trace")
    with ProxyThread(kafka.sasl, trace, "SASL_PLAINTEXT") as proxy:
        assert run_workload(proxy.bootstrap, topic, group, create_acls=False) == [b"m0", b"m1", b"m2"]
    creds = tmp_path_factory.mktemp("creds") / "credentials.txt"
    creds.write_text(f"User:admin PLAIN admin {USERS['admin']}\nUser:alice SCRAM-SHA-256 alice {USERS['alice']}\n")
    return trace, creds, topic, group


async def _until_coordinators_available(kafka) -> None:
    """FindCoordinator and InitProducerId as admin until Kafka answers them without an error: a fresh Kafka answers
    the first ones 15 while it creates __consumer_offsets, and 14 while its producer id manager gets its first
    block of ids; the capture and the replays must not depend on which request meets that."""
    from kafka_shim.protocol.framing import decode_response, encode_request
    from kafka_shim.protocol.messages import FindCoordinatorRequest, InitProducerIdRequest
    from kafka_shim.traces.replay.connection import ReplayConnection
    from kafka_shim.traces.replay.credentials import Credential
    from kafka_shim.traces.replay.sasl import authenticate

    conn = await ReplayConnection.open(*kafka.sasl, TIMEOUT)
    try:
        await authenticate(conn, Credential("User:admin", "PLAIN", "admin", USERS["admin"]), 1, 2, [1, 2], "warm-up", TIMEOUT)
        deadline = time.monotonic() + TIMEOUT
        correlation_id = 3
        for api_key, version, request in ((ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="warm-up", key_type=0)),
                                          (ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000))):
            while True:
                correlation_id += 1
                payload = await conn.request(encode_request(api_key, version, correlation_id, request), correlation_id, TIMEOUT)
                assert isinstance(payload, bytes), "Kafka closed the connection"
                if decode_response(api_key, version, payload)[1].error_code == 0:
                    break
                assert time.monotonic() < deadline, f"Kafka still answers api key {api_key} with an error after {TIMEOUT} s"
                await asyncio.sleep(0.2)
    finally:
        await conn.close()


def _create_acls(kafka, bindings: list) -> None:
    """Create ACLs and wait until the broker's authorizer holds them (DescribeAcls answers from it)."""
    from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    admin = _admin(kafka)
    for future in admin.create_acls(bindings).values():
        future.result(timeout=TIMEOUT)
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                  AclPermissionType.ANY)
    deadline = time.monotonic() + TIMEOUT
    while not set(bindings) <= set(admin.describe_acls(everything).result(timeout=TIMEOUT)):
        assert time.monotonic() < deadline, f"Kafka did not apply {bindings} within {TIMEOUT} s"
        time.sleep(0.1)


def _reset(kafka, topic: str, group: str) -> None:
    """Delete what the workload created (not alice's ACLs), and wait until Kafka no longer lists the topic."""
    admin = _admin(kafka)
    for future in admin.delete_consumer_groups([group]).values():
        future.result(timeout=TIMEOUT)
    for future in admin.delete_topics([topic]).values():
        future.result(timeout=TIMEOUT)
    deadline = time.monotonic() + TIMEOUT
    while topic in admin.list_topics(timeout=TIMEOUT).topics:
        assert time.monotonic() < deadline, f"Kafka still lists {topic} {TIMEOUT} s after deleting it"
        time.sleep(0.2)


def _differences(out) -> list[dict]:
    return [json.loads(line) for line in (out / "differences.jsonl").read_text().splitlines()]


def test_replay_at_kafka_after_a_reset_has_no_difference(kafka, captured, tmp_path, capsys) -> None:
    trace, creds, topic, group = captured
    _reset(kafka, topic, group)
    code = main([str(trace), "--bootstrap-server", _bootstrap(kafka), "--credentials", str(creds), "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert _differences(tmp_path) == [], out
    assert code == 0
    identical = {json.loads(line)["api"] for line in (tmp_path / "requests.jsonl").read_text().splitlines()
                 if json.loads(line)["status"] == "identical"}
    assert {"CreateTopics", "InitProducerId", "Produce", "JoinGroup", "SyncGroup", "Fetch", "OffsetCommit"} <= identical


def test_replay_at_kafka_with_one_acl_changed_differs_where_kafka_denies(kafka, captured, tmp_path) -> None:
    from confluent_kafka.admin import AclOperation, AclPermissionType, ResourceType

    trace, creds, topic, group = captured
    _reset(kafka, topic, group)
    deny = acl("User:alice", ResourceType.TOPIC, topic, AclOperation.READ, AclPermissionType.DENY)
    _create_acls(kafka, [deny])
    code = main([str(trace), "--bootstrap-server", _bootstrap(kafka), "--credentials", str(creds), "--out", str(tmp_path),
                 "--pace", "fast"])
    assert code == 1
    differences = _differences(tmp_path)
    rows = {(r.row["connection_id"], r.row["correlation_id"]): r for r in iter_requests(trace)}
    # (A request recorded unanswered on a closing connection is not compared: see "closed" in README.)
    expected = {key for key, r in rows.items() if r.row["principal"] == "User:alice" and r.row["outcome"] == "response"
                and r.row["api_key"] in (ApiKey.FETCH, ApiKey.OFFSET_COMMIT) and getattr(r.request_body, "topics", None)}
    assert expected and {(d["connection_id"], d["correlation_id"]) for d in differences} == expected
    codes = {(d["api"], d["recorded"], d["replayed"]) for d in differences if d["path"].endswith("error_code")}
    assert ("Fetch", 0, 29) in codes and ("OffsetCommit", 0, 29) in codes
