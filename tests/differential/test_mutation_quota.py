"""controller_mutation_rate (KIP-599) against a real Kafka 3.9: the same CreateTopics, CreatePartitions and
DeleteTopics requests by a client id whose quota is 1 partition mutation per second, strict (v6 / v3 / v5) and
permissive (older versions). Compared: each topic's error code and message, and whether the answer is throttled
(the throttle times themselves depend on when each broker ran the request)."""

from __future__ import annotations

import time
import uuid

from kafka_shim.protocol.messages import AlterClientQuotasRequest as A
from kafka_shim.protocol.messages import CreatePartitionsRequest as P
from kafka_shim.protocol.messages import CreateTopicsRequest as C
from kafka_shim.protocol.messages import DeleteTopicsRequest as D
from kafka_shim.protocol.messages import DescribeClientQuotasRequest
from tests.support.wire import Wire

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS, DESCRIBE_QUOTAS, ALTER_QUOTAS = 19, 20, 37, 48, 49


def _set_quota(wire: Wire, client_id: str) -> None:
    answer = wire.request(ALTER_QUOTAS, 1, A(entries=[A.EntryData(
        entity=[A.EntityData(entity_type="client-id", entity_name=client_id)],
        ops=[A.OpData(key="controller_mutation_rate", value=1.0)])]))
    assert answer.body.entries[0].error_code == 0, answer
    # Kafka applies it once its metadata record is replayed: wait until the broker describes it.
    described = DescribeClientQuotasRequest(components=[DescribeClientQuotasRequest.ComponentData(
        entity_type="client-id", match_type=0, match=client_id)], strict=True)
    deadline = time.monotonic() + 60
    while not wire.request(DESCRIBE_QUOTAS, 1, described).body.entries:
        assert time.monotonic() < deadline, "the quota never showed"
        time.sleep(0.05)


def _conversation(address: tuple[str, int], suffix: str) -> list[tuple]:
    client = f"mutator-{suffix}"
    seen = []
    with Wire(address, timeout=60) as wire:
        _set_quota(wire, client)

        def ask(what: str, api_key: int, version: int, body) -> None:
            answer = wire.request(api_key, version, body, client_id=client).body
            rows = getattr(answer, "topics", None) or getattr(answer, "results", None) or answer.responses
            seen.append((what, [(r.name.rsplit("-", 1)[0], r.error_code, r.error_message) for r in rows],
                         answer.throttle_time_ms > 0))

        topics = [C.CreatableTopic(name=f"{n}-{suffix}", num_partitions=10, replication_factor=1) for n in ("a", "b", "c")]
        ask("create 3 x 10 partitions, strict", CREATE_TOPICS, 6, C(timeout_ms=30_000, topics=topics))
        ask("create 1 x 2 partitions, permissive", CREATE_TOPICS, 5,
            C(timeout_ms=30_000, topics=[C.CreatableTopic(name=f"d-{suffix}", num_partitions=2, replication_factor=1)]))
        ask("add partitions, strict", CREATE_PARTITIONS, 3,
            P(timeout_ms=30_000, topics=[P.CreatePartitionsTopic(name=f"a-{suffix}", count=12)]))
        ask("delete, strict", DELETE_TOPICS, 5, D(timeout_ms=30_000, topic_names=[f"b-{suffix}"]))
        ask("delete, permissive", DELETE_TOPICS, 4, D(timeout_ms=30_000, topic_names=[f"d-{suffix}"]))
    return seen


def test_the_mutation_quota_answers_as_kafka(oracle_open, shim_address) -> None:
    suffix = uuid.uuid4().hex[:8]
    kafka = _conversation(oracle_open.plaintext, suffix)
    shim = _conversation(shim_address, suffix)
    assert kafka == shim
    assert kafka[0][1][2][1] == 89 and kafka[0][2]  # the third topic refused, the answer throttled
