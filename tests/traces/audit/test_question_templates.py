"""Question rows are kept per distinct request body across batches (``questions._Templates``): a batch whose
bodies were all seen before must give exactly the rows a fresh process gives it, and what depends on more than the
body (the source named by a "no frame" problem) or never repeats (Produce records) must not be carried over."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest

from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import MetadataRequest, ProduceRequest
from kafka_shim.protocol.records import build_batch, encode_batch
from kafka_shim.traces.audit import questions
from kafka_shim.traces.format import SCHEMA


def _metadata(*topics: str) -> bytes:
    body = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=t) for t in topics],
                           allow_auto_topic_creation=False, include_topic_authorized_operations=True)
    return encode_request(3, 12, 0, body, client_id="app")[4:]


def _produce(topic: str, value: bytes) -> bytes:
    batch = encode_batch(build_batch([(None, value, [], 1_795_000_000_000)]))
    body = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])
    return encode_request(0, 9, 0, body, client_id="app")[4:]


def _batch(rows: list[tuple], json: list[str | None] | None = None) -> pa.RecordBatch:
    """Trace rows of (api key, version, frame, source), with their request_json if given."""
    n = len(rows)
    columns = {"kind": ["request"] * n, "time": pa.array([1_795_000_000_000_000 + i for i in range(n)], SCHEMA.field("time").type),
               "source": [r[3] for r in rows], "client_host": ["10.0.0.1"] * n, "principal": ["User:alice"] * n,
               "client_id": ["app"] * n, "api_key": pa.array([r[0] for r in rows], pa.int16()),
               "api_version": pa.array([r[1] for r in rows], pa.int16()), "correlation_id": pa.array(range(n), pa.int32()),
               "request": pa.array([r[2] for r in rows], pa.binary()), "request_json": pa.array(json or [None] * n, pa.string())}
    table = pa.table({f.name: columns.get(f.name, pa.nulls(n, f.type)) for f in SCHEMA}, schema=SCHEMA)
    return table.to_batches()[0]


def _questions(batch: pa.RecordBatch) -> list[dict]:
    rows = pa.Table.from_batches([questions.explode(batch, first_index=100)]).to_pylist()
    return [{k: v for k, v in row.items() if k != "time"} for row in rows]


@pytest.fixture
def fresh_templates(monkeypatch):
    """A process that has seen nothing yet; returns a way to start another one."""
    def reset() -> None:
        monkeypatch.setattr(questions, "_TEMPLATES", questions._Templates())
    reset()
    return reset


def test_a_batch_of_known_bodies_gives_the_rows_a_fresh_process_gives(fresh_templates) -> None:
    first = _batch([(3, 12, _metadata("orders", "payments"), "capture"), (0, 9, _produce("orders", b"a"), "capture"),
                    (3, 12, None, "capture"), (3, 12, _metadata("audit"), "capture")])
    second = _batch([(3, 12, _metadata("audit"), "capture"), (3, 12, None, "request-log"),
                     (0, 9, _produce("payments", b"b"), "capture"), (3, 12, _metadata("orders", "payments"), "capture"),
                     (3, 99, _metadata("orders"), "capture")])
    _questions(first)
    carried = _questions(second)
    fresh_templates()
    assert carried == _questions(second)
    # what the rows say: the carried-over Metadata names its own topics, the frame-less row its own source, and the
    # Produce its own topic
    names = [(r["request_index"], r["resource_name"]) for r in carried if r["kind"] == "authorize"]
    assert (100, "audit") in names and (102, "payments") in names and (103, "orders") in names
    assert [r["detail"] for r in carried if r["problem"] == "no_request_bytes"] == [
        "Metadata v12: the trace has no request frame (source request-log)"]
    assert [r["problem"] for r in carried if r["request_index"] == 104] == ["unknown_version"]


def test_the_kept_bodies_start_again_past_their_bound(fresh_templates, monkeypatch) -> None:
    monkeypatch.setattr(questions._Templates, "KEYS", 2)
    batches = [_batch([(3, 12, _metadata(f"t{i}", f"u{j}"), "capture") for j in range(3)]) for i in range(4)]
    carried = [_questions(b) for b in batches + batches[::-1]]
    assert len(questions._TEMPLATES.places) <= 3 + 2
    fresh = []
    for b in batches + batches[::-1]:
        fresh_templates()
        fresh.append(_questions(b))
    assert carried == fresh


def test_a_frame_and_a_json_body_of_the_same_text_are_told_apart(fresh_templates) -> None:
    frame_of_tilde = b"\x00\x03\x00\x0c\x00\x00\x00\x07~"  # a header's fixed part, then "~"
    _questions(_batch([(3, 12, frame_of_tilde, "capture")]))
    json_rows = _questions(_batch([(3, 12, None, "request-log"), (3, 12, None, "request-log")], json=["~", None]))
    assert [(r["problem"], r["detail"].split(": ", 1)[1][:22]) for r in json_rows] == [
        ("decode_error", "request_json is not JS"), ("no_request_bytes", "the trace has no reque")]
