"""DescribeQuorum (55) against a real Kafka 3.9 combined broker+controller, every version, allowed and denied.

What legitimately differs is masked before comparing: the metadata log's high watermark and end offsets (Kafka's
grows as its controller writes, kafka-shim keeps no metadata log and reports 0), the leader epoch (Kafka's moves
when it restarts), the leader's fetch and caught-up times (the time of the answer: checked to be recent), and the
voter's controller listener (Kafka's CONTROLLER endpoint; kafka-shim serves none, so lists none).
"""

from __future__ import annotations

import time

import pytest

from kafka_shim.protocol.messages import DescribeQuorumRequest
from tests.support.acl_peers import ALLOW, ALTER, ANONYMOUS, CLUSTER, DENY, DESCRIBE, TOPIC, Peers, acl
from tests.support.compare import assert_same
from tests.support.wire import Answer

DESCRIBE_QUORUM = 55
Q = DescribeQuorumRequest
MASKED = ("topics.*.partitions.*.high_watermark", "topics.*.partitions.*.leader_epoch",
          "topics.*.partitions.*.current_voters.*.log_end_offset", "topics.*.partitions.*.current_voters.*.last_fetch_timestamp",
          "topics.*.partitions.*.current_voters.*.last_caught_up_timestamp", "nodes.*.listeners")


def _quorum(*topics: tuple[str, list[int]]) -> Q:
    return Q(topics=[Q.TopicData(topic_name=name, partitions=[Q.PartitionData(partition_index=p) for p in parts]) for name, parts in topics])


METADATA = _quorum(("__cluster_metadata", [0]))


def _assert_recent(answer: Answer, version: int, before_ms: int) -> None:
    for voter in answer.body.topics[0].partitions[0].current_voters:
        if version >= 1:
            assert before_ms <= voter.last_fetch_timestamp == voter.last_caught_up_timestamp <= time.time() * 1000 + 1, voter
        else:
            assert voter.last_fetch_timestamp == voter.last_caught_up_timestamp == -1  # absent before v1


@pytest.mark.parametrize("version", range(3))
@pytest.mark.parametrize("grant", [DESCRIBE, ALTER], ids=["describe", "alter implies describe"])
def test_describe_quorum_allowed(peers: Peers, version: int, grant: int) -> None:
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=grant))
    before = int(time.time() * 1000)
    kafka, shim = peers.both(DESCRIBE_QUORUM, version, METADATA)
    assert_same(kafka, shim, ignore=MASKED, what=f"DescribeQuorum v{version}")
    for answer in (kafka, shim):
        _assert_recent(answer, version, before)
        partition = answer.body.topics[0].partitions[0]
        assert partition.leader_epoch >= 1 and partition.high_watermark >= 0
        assert partition.current_voters[0].log_end_offset >= partition.high_watermark


REJECTED = {
    "another topic": _quorum(("__consumer_offsets", [0])),
    "another partition": _quorum(("__cluster_metadata", [1])),
    "two partitions": _quorum(("__cluster_metadata", [0, 0])),
    "two topics": _quorum(("__cluster_metadata", [0]), ("other", [2, 3])),
    "no partitions": _quorum(("__cluster_metadata", [])),
    "no topics": _quorum(),
}


@pytest.mark.parametrize("version", range(3))
@pytest.mark.parametrize("name", list(REJECTED))
def test_describe_quorum_not_the_metadata_partition(peers: Peers, version: int, name: str) -> None:
    peers.grant(acl(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=DESCRIBE))
    assert_same(*peers.both(DESCRIBE_QUORUM, version, REJECTED[name]), what=f"DescribeQuorum v{version} ({name})")


@pytest.mark.parametrize("version", range(3))
@pytest.mark.parametrize("acls", [(), ((CLUSTER, "kafka-cluster", DESCRIBE, DENY), (CLUSTER, "kafka-cluster", DESCRIBE, ALLOW)),
                                  ((TOPIC, "__cluster_metadata", DESCRIBE, ALLOW),)],
                         ids=["no acl", "describe denied", "topic describe only"])
def test_describe_quorum_denied(peers: Peers, version: int, acls: tuple) -> None:
    for rtype, name, operation, permission in acls:
        peers.grant(acl(rtype=rtype, name=name, principal=ANONYMOUS, operation=operation, permission=permission))
    for request in (METADATA, REJECTED["two topics"]):
        kafka, shim = peers.both(DESCRIBE_QUORUM, version, request)
        assert_same(kafka, shim, what=f"DescribeQuorum v{version}, not allowed")
        assert shim.body.error_code == 31 and shim.body.topics == []
