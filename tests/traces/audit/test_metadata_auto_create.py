"""CREATE questions of a Metadata request that allows auto-creation, as Kafka 3.9 asks them: only for topics that
do not exist (KafkaApis.handleTopicMetadataRequest). The request alone cannot say which exist; the broker's answer
can: a topic it lists with error 0 existed, so no CREATE was asked for it, and no cluster CREATE either when no
topic of the request is left."""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest

from kafka_shim.protocol.framing import encode_request, encode_response
from kafka_shim.protocol.messages import MetadataRequest, MetadataResponse
from kafka_shim.traces.audit import questions
from kafka_shim.traces.format import SCHEMA

_ZERO = uuid.UUID(int=0)


def _request(*topics: str, auto_create: bool = True) -> bytes:
    body = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=_ZERO, name=t) for t in topics],
                           allow_auto_topic_creation=auto_create, include_topic_authorized_operations=False)
    return encode_request(3, 12, 7, body, client_id="rdkafka")[4:]


def _answer_body(errors: dict[str, int]) -> MetadataResponse:
    return MetadataResponse(throttle_time_ms=0, brokers=[], cluster_id="c", controller_id=1, topics=[
        MetadataResponse.MetadataResponseTopic(error_code=code, name=name, topic_id=uuid.uuid4() if code == 0 else _ZERO,
                                               is_internal=False, partitions=[], topic_authorized_operations=-2147483648)
        for name, code in errors.items()])


def _answer(errors: dict[str, int]) -> bytes:
    return encode_response(3, 12, 7, _answer_body(errors))[4:]


def _rows(*requests: tuple[bytes | None, bytes | None, str | None, str | None]) -> pa.Table:
    """Trace rows of (request frame, response frame, request_json, response_json), all Metadata v12 from alice."""
    n = len(requests)
    columns = {"kind": ["request"] * n, "time": pa.array([1_795_000_000_000_000 + i for i in range(n)], SCHEMA.field("time").type),
               "source": ["capture"] * n, "client_host": ["10.0.0.1"] * n, "principal": ["User:alice"] * n,
               "client_id": ["rdkafka"] * n, "api_key": pa.array([3] * n, pa.int16()), "api_version": pa.array([12] * n, pa.int16()),
               "correlation_id": pa.array([7] * n, pa.int32()), "request": pa.array([r[0] for r in requests], pa.binary()),
               "response": pa.array([r[1] for r in requests], pa.binary()),
               "request_json": pa.array([r[2] for r in requests], pa.string()),
               "response_json": pa.array([r[3] for r in requests], pa.string())}
    table = pa.table({f.name: columns.get(f.name, pa.nulls(n, f.type)) for f in SCHEMA}, schema=SCHEMA)
    return table.append_column("request_index", pa.array(range(100, 100 + n), pa.int64()))


def _asked(batch: pa.RecordBatch) -> dict[int, list[tuple]]:
    out: dict[int, list[tuple]] = {}
    for r in pa.Table.from_batches([batch]).to_pylist():
        out.setdefault(r["request_index"], []).append((r["seq"], r["check"], r["kind"], r["operation"], r["resource_name"]))
    return out


@pytest.fixture(autouse=True)
def fresh_templates(monkeypatch):
    monkeypatch.setattr(questions, "_TEMPLATES", questions._Templates())


DESCRIBE = [(0, "describe", "authorize", "DESCRIBE", "orders"), (1, "describe", "authorize", "DESCRIBE", "fresh")]


def test_create_is_asked_only_for_the_topics_the_answer_shows_missing() -> None:
    table = _rows((_request("orders", "fresh"), _answer({"orders": 0, "fresh": 3}), None, None),
                  (_request("orders"), _answer({"orders": 0}), None, None),
                  (_request("orders", "fresh"), None, None, None))
    asked = _asked(questions.explode(table.to_batches()[0]))
    # the cluster question, then fresh's; orders existed; the questions keep consecutive places
    assert asked[100] == [*DESCRIBE, (2, "create", "shortcut", "CREATE", "kafka-cluster"), (3, "create", "authorize", "CREATE", "fresh")]
    # every topic existed: no CREATE at all, not even on the cluster
    assert asked[101] == [(0, "describe", "authorize", "DESCRIBE", "orders")]
    # no answer in the trace: the request's own questions, every topic's CREATE
    assert asked[102] == [*DESCRIBE, (2, "create", "shortcut", "CREATE", "kafka-cluster"),
                          (3, "create", "authorize", "CREATE", "orders"), (4, "create", "authorize", "CREATE", "fresh")]


def test_answers_read_only_when_needed_and_from_the_unit_when_the_batch_lacks_them() -> None:
    table = _rows((_request("orders", "fresh"), _answer({"orders": 0, "fresh": 29}), None, None),
                  (_request("orders", "fresh", auto_create=False), _answer({"orders": 0, "fresh": 3}), None, None))
    reads = []

    def answers() -> pa.Table:
        reads.append(1)
        return table.select(["request_index", "response", "response_json"])

    batch = table.drop_columns(["response", "response_json"]).to_batches()[0]
    asked = _asked(questions.explode(batch, answers=answers))
    # fresh's 29 may be a CREATE denied: its questions stay
    assert asked[100] == [*DESCRIBE, (2, "create", "shortcut", "CREATE", "kafka-cluster"), (3, "create", "authorize", "CREATE", "fresh")]
    assert asked[101] == DESCRIBE  # no auto-creation asked for: no CREATE, whatever the answer
    assert reads == [1]
    reads.clear()
    no_create = table.take([1]).drop_columns(["response", "response_json"]).to_batches()[0]
    questions.explode(no_create, answers=answers)
    assert reads == []  # nothing to decide from an answer: responses not read


def test_request_log_rows_use_the_json_answer() -> None:
    request = {"topics": [{"topic_id": str(_ZERO), "name": "orders"}, {"topic_id": str(_ZERO), "name": "fresh"}],
               "allow_auto_topic_creation": True, "include_topic_authorized_operations": False}
    answer = {"throttle_time_ms": 0, "brokers": [], "cluster_id": "c", "controller_id": 1,
              "topics": [{"error_code": 0, "name": "orders"}, {"error_code": 3, "name": "fresh"}]}
    table = _rows((None, None, json.dumps(request), json.dumps(answer)))
    asked = _asked(questions.explode(table.to_batches()[0]))
    assert asked[100] == [*DESCRIBE, (2, "create", "shortcut", "CREATE", "kafka-cluster"), (3, "create", "authorize", "CREATE", "fresh")]


def test_a_damaged_answer_keeps_the_questions() -> None:
    table = _rows((_request("orders"), _answer({"orders": 0})[:9], None, None))
    asked = _asked(questions.explode(table.to_batches()[0]))
    assert [q[1:3] for q in asked[100]] == [("describe", "authorize"), ("create", "shortcut"), ("create", "authorize")]
