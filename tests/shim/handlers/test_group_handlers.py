"""JoinGroup/SyncGroup/Heartbeat/LeaveGroup and FindCoordinator over the wire on a fresh broker: what Kafka 3.9 answers
before and after its group coordinator exists (the session oracle of the differential tests always has one)."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest

from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import (
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.wire import Wire


def _join(group: str, member: str = "") -> JoinGroupRequest:
    metadata = struct.pack(">hi", 0, 0) + struct.pack(">i", -1)
    return JoinGroupRequest(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id=member,
                            protocol_type="consumer",
                            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=metadata)])


@pytest.fixture
def wire() -> Iterator[Wire]:
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "offsets.topic.replication.factor": "1",
                                           "transaction.state.log.replication.factor": "1",
                                           "group.initial.rebalance.delay.ms": "0"})
    with EmbeddedBroker(config) as broker:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        with Wire((host, int(port))) as connection:
            yield connection


def test_not_coordinator_until_find_coordinator_creates_the_offsets_topic(wire: Wire) -> None:
    assert wire.request(ApiKey.JOIN_GROUP, 5, _join("g")).body.error_code == ErrorCode.NOT_COORDINATOR
    assert wire.request(ApiKey.JOIN_GROUP, 5, _join("")).body.error_code == ErrorCode.INVALID_GROUP_ID
    assert wire.request(ApiKey.HEARTBEAT, 4, HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
                        ).body.error_code == ErrorCode.NOT_COORDINATOR
    assert wire.request(ApiKey.SYNC_GROUP, 3, SyncGroupRequest(group_id="g", generation_id=1, member_id="m")
                        ).body.error_code == ErrorCode.NOT_COORDINATOR
    leave = wire.request(ApiKey.LEAVE_GROUP, 3, LeaveGroupRequest(
        group_id="g", members=[LeaveGroupRequest.MemberIdentity(member_id="m")])).body
    assert (leave.error_code, leave.members) == (ErrorCode.NOT_COORDINATOR, [])
    first = wire.request(ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(key="g", key_type=0)).body
    assert (first.error_code, first.node_id, first.error_message) == (
        ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "The coordinator is not available.")
    found = wire.request(ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(key="g", key_type=0)).body
    assert (found.error_code, found.node_id, found.error_message) == (0, 1, "NONE")
    assert found.port == wire.address[1]
    join = wire.request(ApiKey.JOIN_GROUP, 5, _join("g")).body
    assert join.error_code == ErrorCode.MEMBER_ID_REQUIRED and join.member_id
    joined = wire.request(ApiKey.JOIN_GROUP, 5, _join("g", join.member_id)).body
    assert (joined.error_code, joined.generation_id, joined.leader) == (0, 1, join.member_id)


def test_transactional_id_coordinator_and_unknown_key_types(wire: Wire) -> None:
    for _ in range(2):
        answer = wire.request(ApiKey.FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=["tx"])).body
    assert [(c.key, c.error_code, c.node_id) for c in answer.coordinators] == [("tx", 0, 1)]
    share = wire.request(ApiKey.FIND_COORDINATOR, 5, FindCoordinatorRequest(key_type=2, coordinator_keys=["s"])).body
    assert [(c.error_code, c.node_id, c.error_message) for c in share.coordinators] == [(ErrorCode.INVALID_REQUEST, -1, "")]
    unknown = wire.request(ApiKey.FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=42, coordinator_keys=["a", "b"])).body
    assert [(c.key, c.error_code) for c in unknown.coordinators] == [("a", 42), ("b", 42)]
    old = wire.request(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="a", key_type=42)).body
    assert (old.error_code, old.node_id, old.host, old.port) == (42, -1, "", -1)
