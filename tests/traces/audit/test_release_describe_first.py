"""``--compare-release`` where DESCRIBE on a topic decides: before 1.0 (KAFKA-5547) Kafka asked DESCRIBE before a
topic's operation, so a DENY on DESCRIBE refused a WRITE that later releases allow; a ZooKeeper-mode DeleteTopics
(1.0-3.2 as presented) needed DELETE alone, where 3.9's controller also needs DESCRIBE. A trace captured from kafka-shim
as 3.9, audited against each release, must list exactly what kafka-shim emulating that release decides otherwise
when the same requests are sent to it."""

from __future__ import annotations

import pytest

from kafka_shim.authorizer import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import DeleteTopicsRequest, ProduceRequest
from kafka_shim.protocol.records import build_batch, encode_batch
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from kafka_shim.shim.tools.acls.output import format_listing
from tests.shim.releases.test_release_rules import _shim, _wire
from tests.support.sasl_setup import USERS, listener_address, sasl_properties
from tests.support.wire import Wire
from tests.traces.audit.workload import audit_against_release

pytestmark = pytest.mark.clients

TOPICS = ("hidden", "open", "gone")


def _acl(name: str, op: AclOperation, permission: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding(ResourcePattern(ResourceType.TOPIC, name, PatternType.LITERAL), AccessControlEntry("User:alice", "*", op, permission))


# alice may write "hidden" and delete "gone" but is denied DESCRIBE on both; "open" she may write and describe.
ACLS = [_acl("hidden", AclOperation.WRITE), _acl("hidden", AclOperation.DESCRIBE, AclPermissionType.DENY),
        _acl("open", AclOperation.WRITE), _acl("open", AclOperation.DESCRIBE),
        _acl("gone", AclOperation.DELETE), _acl("gone", AclOperation.DESCRIBE, AclPermissionType.DENY)]


def _send(wire: Wire) -> dict[str, int]:
    """alice's Produce (v3, which 0.11 serves) to "hidden" and "open", then DeleteTopics (v1) of "gone": code per topic."""
    batch = encode_batch(build_batch([(None, b"v", [], 0)]))
    produced = wire.request(ApiKey.PRODUCE, 3, ProduceRequest(acks=1, timeout_ms=10000, topic_data=[
        ProduceRequest.TopicProduceData(name=n, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])
        for n in ("hidden", "open")])).body
    codes = {t.name: p.error_code for t in produced.responses for p in t.partition_responses}
    deleted = wire.request(ApiKey.DELETE_TOPICS, 1, DeleteTopicsRequest(topic_names=["gone"], timeout_ms=10000)).body
    return codes | {r.name: r.error_code for r in deleted.responses}


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    directory = tmp_path_factory.mktemp("release-describe-first")
    acls, trace = directory / "acls.txt", directory / "trace"
    acls.write_text(format_listing(ACLS, []), encoding="utf-8")
    with EmbeddedBroker(BrokerConfig.from_properties(sasl_properties()), capture_dir=trace) as broker:
        for name in TOPICS:
            broker.call(broker.broker.services.partitions.create_topic, name, 1)
        assert all(r.error is None for r in broker.call(broker.broker.authorizer.create_acls, ACLS))
        with Wire(listener_address(broker.broker, "SASL_PLAINTEXT")) as wire:
            wire.sasl_plain("alice", USERS["alice"])
            # Produce asks only WRITE; DeleteTopics asks DESCRIBE and DELETE (not describable: 29)
            assert _send(wire) == {"hidden": 0, "open": 0, "gone": 29}
    return trace, acls


def _audit(tmp_path, trace, acls, release: str) -> tuple[dict, list[dict]]:
    return audit_against_release(tmp_path / release, trace, acls, release)


def _emulated(release: str) -> dict[str, int]:
    """The same requests, by alice, to kafka-shim emulating ``release`` with the same topics and ACLs."""
    shim = _shim(release)
    with shim:
        for name in TOPICS:
            shim.create_topic(name)
        shim.create_acls(ACLS)
        with _wire(shim) as wire:
            return _send(wire)


def _differences(rows: list[dict]) -> list[tuple]:
    return sorted((r["request_name"], r["question_old"], r["allowed_39"], r["allowed_old"]) for r in rows)


def test_0_11_would_refuse_a_write_on_a_topic_alice_may_not_describe(captured, tmp_path):
    summary, rows = _audit(tmp_path, *captured, "0.11")
    assert summary["broker_differences"] == 0
    assert _differences(rows) == [("Produce", "DESCRIBE on TOPIC hidden (else 3), then WRITE", True, False)]
    assert _emulated("0.11") == {"hidden": 3, "open": 0, "gone": 3}


def test_a_zookeeper_mode_release_would_delete_a_topic_alice_may_not_describe(captured, tmp_path):
    for release in ("1.0", "3.2"):
        rows = _audit(tmp_path, *captured, release)[1]
        assert _differences(rows) == [("DeleteTopics", "DELETE on TOPIC gone", False, True)], release
        assert _emulated(release) == {"hidden": 0, "open": 0, "gone": 0}, release  # deleted


def test_a_kraft_release_decides_these_as_3_9(captured, tmp_path):
    assert _audit(tmp_path, *captured, "3.3")[0]["release_differences"] == 0
