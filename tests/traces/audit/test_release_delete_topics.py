"""``--compare-release`` on DeleteTopics: a principal with DELETE on the cluster deletes any topic on Kafka 3.3+
(KRaft's controller), but a ZooKeeper-mode release (before 3.3) asked DELETE on each topic. A trace captured from
confluent-kafka's AdminClient deleting two topics, one of them also granted on its own."""

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
from kafka_shim.shim.tools.acls.output import format_listing
from tests.traces.audit.workload import TIMEOUT, audit_against_release, capturing_broker, sasl

pytestmark = pytest.mark.clients

# DELETE on the cluster: accepted by CreateAcls (an ACL file, as kafka-acls.sh, refuses it), so set through the
# authorizer and handed to the audit as kafka-acls.sh --list prints it.
ACLS = [AclBinding(ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL),
                   AccessControlEntry("User:alice", "*", AclOperation.DELETE, AclPermissionType.ALLOW))] + [
        AclBinding(ResourcePattern(ResourceType.TOPIC, "granted", PatternType.LITERAL),
                   AccessControlEntry("User:alice", "*", op, AclPermissionType.ALLOW)) for op in (AclOperation.DELETE, AclOperation.DESCRIBE)]


@pytest.fixture(scope="module")
def deletions(tmp_path_factory):
    from confluent_kafka.admin import AdminClient

    directory = tmp_path_factory.mktemp("release-delete")
    acls, trace = directory / "acls.txt", directory / "trace"
    acls.write_text(format_listing(ACLS, []), encoding="utf-8")
    with capturing_broker(trace, ("granted", "covered"), ACLS) as address:
        alice = AdminClient({"bootstrap.servers": address, **sasl("alice")})
        for future in alice.delete_topics(["granted", "covered"], operation_timeout=TIMEOUT).values():
            future.result(timeout=TIMEOUT)  # both deleted: DELETE on the cluster covers "covered"
    return trace, acls


def _audit(tmp_path, trace, acls, release: str) -> tuple[dict, list[dict]]:
    return audit_against_release(tmp_path / release, trace, acls, release)


def test_a_zookeeper_mode_release_would_refuse_the_topic_covered_by_the_cluster_grant(deletions, tmp_path):
    summary, rows = _audit(tmp_path, *deletions, "3.2")
    assert summary["broker_differences"] == 0
    assert [(r["request_name"], r["question_old"], r["allowed_39"], r["allowed_old"]) for r in rows] == [
        ("DeleteTopics", "DELETE on TOPIC covered", True, False)]
    assert summary["release_differences"] == 1


def test_a_kraft_release_decides_as_3_9(deletions, tmp_path):
    assert _audit(tmp_path, *deletions, "3.3")[0]["release_differences"] == 0
