"""AddPartitionsToTxn v0-3 answered with one code for the whole transaction, against Kafka 3.9: since 3.5 (KAFKA-14402)
the answer keeps the request's shape (a topic named twice twice, a repeated partition as often as asked, a topic with
no partitions listed empty), where 2.8-3.4 built it from a HashMap by partition
(tests/differential/test_older_release_probe_findings.py). test_transactions pins the 53 of a refused transactional
id; this pins the coordinator's one code (a transaction never initialised), which takes the same path.
"""

from __future__ import annotations

import uuid

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import AddPartitionsToTxnRequest, CreateTopicsRequest
from tests.support.acl_peers import ANONYMOUS, CREATE, TOPIC, TRANSACTIONAL_ID, WRITE, Peers, acl

TOPIC_NAME = "one-code-topic"


def test_coordinator_refusal_keeps_the_request_shape(peers: Peers) -> None:
    txn = f"one-code-{uuid.uuid4().hex[:8]}"
    peers.grant(acl(rtype=TOPIC, name=TOPIC_NAME, principal=ANONYMOUS, operation=CREATE),
                acl(rtype=TOPIC, name=TOPIC_NAME, principal=ANONYMOUS, operation=WRITE),
                acl(rtype=TRANSACTIONAL_ID, name=txn, principal=ANONYMOUS, operation=WRITE))
    create = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name=TOPIC_NAME, num_partitions=3, replication_factor=1)],
                                 timeout_ms=30000)
    for answer in peers.both(ApiKey.CREATE_TOPICS, 4, create):
        assert answer.body.topics[0].error_code in (0, 36), answer  # 36: made by an earlier run against the same Kafka
    body = AddPartitionsToTxnRequest(v3_and_below_transactional_id=txn, v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
                                     v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC_NAME, partitions=p)
                                                          for p in ([2], [1, 2], [])])
    for version in range(0, 4):
        kafka, _ = peers.same(ApiKey.ADD_PARTITIONS_TO_TXN, version, body,
                              f"AddPartitionsToTxn v{version} of a transaction never initialised, one topic three times")
        assert [t.name for t in kafka.body.results_by_topic_v3_and_below] == [TOPIC_NAME] * 3
