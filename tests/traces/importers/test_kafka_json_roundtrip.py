"""The generated converter of Kafka's JSON form: every request and response schema at every version round-trips
(object -> Kafka's JSON -> JSON text -> object), and real Kafka 3.9 request-log bodies read back to the same JSON."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shim.protocol.messages import Struct, message_class, request_class, response_class
from kafka_shim.traces.importers.kafka_json import (
    KafkaJsonError,
    RecordsSize,
    camel_case,
    plain,
    read_message,
    uuid_from_kafka,
    uuid_to_kafka,
    write_message,
)
from tests.support.schema_strategies import all_message_versions, message_strategy, pair_id

DATA = Path(__file__).parent / "data"
BODY_PAIRS = [(n, v) for n, v in all_message_versions() if n.endswith(("Request", "Response"))]
SETTINGS = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _records_as_sizes(value: Any) -> Any:
    """Records survive Kafka's JSON only as their size: turn them into RecordsSize up front."""
    if isinstance(value, Struct):
        for f in value._spec.fields:
            v = getattr(value, f.attr)
            if f.type.kind == "primitive" and f.type.primitive == "records" and v is not None:
                setattr(value, f.attr, RecordsSize(len(v)))
            else:
                _records_as_sizes(v)
    elif isinstance(value, list):
        for item in value:
            _records_as_sizes(item)
    return value


@pytest.mark.parametrize("pair", BODY_PAIRS, ids=pair_id)
@SETTINGS
@given(data=st.data())
def test_every_message_version_round_trips_through_kafka_json(pair: tuple[str, int], data: st.DataObject) -> None:
    name, version = pair
    cls = message_class(name)
    message = _records_as_sizes(data.draw(message_strategy(name, version, unknown_tags=False), label="message"))
    rendered = write_message(message, version)
    text = json.dumps(rendered)  # what a log line carries
    back = read_message(cls, json.loads(text), version)
    assert back == message
    assert write_message(back, version) == rendered  # record sizes included


def test_the_rendering_follows_kafkas_rules() -> None:
    produce = request_class(0)
    msg = produce(acks=-1, timeout_ms=30000, topic_data=[produce.TopicProduceData(
        name="payments", partition_data=[produce.PartitionProduceData(index=1, records=b"x" * 91)])])
    assert plain(read_message(produce, write_message(msg, 10), 10))["topic_data"][0]["partition_data"][0] == {
        "index": 1, "records": None, "records_size_in_bytes": 91}
    assert write_message(msg, 10) == {"transactionalId": None, "acks": -1, "timeoutMs": 30000, "topicData": [
        {"name": "payments", "partitionData": [{"index": 1, "recordsSizeInBytes": 91}]}]}
    # Uuids as Kafka's Uuid.toString (URL-safe base64, no padding); bytes as standard base64.
    topic_id = uuid.UUID("3ecd925b-92c2-4a7d-835c-2057bb059154")
    assert uuid_to_kafka(topic_id) == base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")
    assert len(uuid_to_kafka(topic_id)) == 22 and uuid_from_kafka(uuid_to_kafka(topic_id)) == topic_id
    sasl = request_class(36)(auth_bytes=b"\x00alice\x00secret")
    assert write_message(sasl, 2) == {"authBytes": base64.b64encode(b"\x00alice\x00secret").decode()}
    assert camel_case("TopicAuthorizedOperations") == "topicAuthorizedOperations"


def test_tagged_fields_are_written_only_when_not_default() -> None:
    api_versions = response_class(18)
    assert "supportedFeatures" not in write_message(api_versions(), 3)
    assert "finalizedFeaturesEpoch" not in write_message(api_versions(), 3)
    assert write_message(api_versions(finalized_features_epoch=7), 3)["finalizedFeaturesEpoch"] == 7


def test_a_body_that_does_not_fit_names_the_field() -> None:
    metadata = request_class(3)
    with pytest.raises(KafkaJsonError, match=r"MetadataRequest\.topics\[0\]\.topicId"):
        read_message(metadata, {"topics": [{"topicId": 5, "name": "t"}], "allowAutoTopicCreation": True,
                                "includeTopicAuthorizedOperations": False}, 12)
    with pytest.raises(KafkaJsonError, match="allowAutoTopicCreation: missing"):
        read_message(metadata, {"topics": None, "includeTopicAuthorizedOperations": False}, 12)
    with pytest.raises(KafkaJsonError, match="no version 99"):
        read_message(metadata, {}, 99)
    with pytest.raises(KafkaJsonError, match="out of range for int16"):
        read_message(response_class(25), {"throttleTimeMs": 0, "errorCode": 40000}, 0)


def _real_bodies() -> list[tuple[str, int, int, str, Any]]:
    out = []
    for number, line in enumerate((DATA / "kafka-3.9-request.log").read_text().splitlines(), 1):
        doc, _ = json.JSONDecoder().raw_decode(line, line.index("Completed request:") + len("Completed request:"))
        header = doc["requestHeader"]
        for part in ("request", "response"):
            if doc[part] != "":
                out.append((header["requestApiKeyName"], number, header["requestApiKey"], part, doc))
    return out


def test_real_kafka_bodies_read_back_to_the_same_json() -> None:
    bodies = _real_bodies()
    assert len(bodies) > 100
    assert {name for name, *_ in bodies} >= {"PRODUCE", "FETCH", "METADATA", "CREATE_ACLS", "DESCRIBE_ACLS",
                                              "INCREMENTAL_ALTER_CONFIGS", "JOIN_GROUP", "SYNC_GROUP", "API_VERSIONS"}
    for name, number, api_key, part, doc in bodies:
        version = doc["requestHeader"]["requestApiVersion"]
        cls = request_class(api_key) if part == "request" else response_class(api_key)
        message = read_message(cls, doc[part], version)
        assert write_message(message, version) == doc[part], f"line {number}: {name} {part}"
        json.dumps(plain(message), default=str)  # the trace's JSON form renders
