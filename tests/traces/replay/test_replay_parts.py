"""The replayer's parts without a broker: pipelining read from recorded times, producer ids re-mapped inside record
batches (CRC still valid), answers compared through the id mappings, and the credentials file's format."""

from __future__ import annotations

import datetime
import uuid

import pytest

from kafka_shim.protocol.messages import InitProducerIdResponse, MetadataResponse, SyncGroupRequest
from kafka_shim.protocol.records.batch import Record, RecordBatch, decode_batch, encode_batch
from kafka_shim.traces.replay.credentials import CredentialsError, parse_credentials
from kafka_shim.traces.replay.diff import Differ
from kafka_shim.traces.replay.plan import SASL, SKIP, build_plans
from kafka_shim.traces.replay.remap import IdMap

T0 = datetime.datetime(2026, 11, 23, tzinfo=datetime.UTC)


def _row(connection: str, at_us: int, took_us: int, api_key: int = 3, correlation_id: int = 0, **more) -> dict:
    return {"kind": "request", "connection_id": connection, "time": T0 + datetime.timedelta(microseconds=at_us),
            "response_time_us": took_us, "outcome": "response", "api_key": api_key, "api_version": 12,
            "correlation_id": correlation_id, "request": b"x", "principal": "User:ANONYMOUS"} | more


def test_a_request_waits_only_for_the_answers_that_had_arrived_when_it_was_recorded() -> None:
    rows = [_row("c", 0, 500, correlation_id=1),      # answered at 500
            _row("c", 100, 50, correlation_id=2),     # pipelined behind 1 (sent before 1 was answered)
            _row("c", 600, 10, correlation_id=3),     # after both answers
            _row("c", 700, 0, api_key=0, correlation_id=4, outcome="no_response"),  # acks=0
            _row("c", 800, 10, correlation_id=5)]
    [plan] = build_plans(rows)
    assert [s.wait_for for s in plan.steps] == [0, 0, 2, 3, 3]
    assert [s.offset_us for s in plan.steps] == [0, 100, 600, 700, 800]
    assert not plan.steps[3].expects_answer


def test_sasl_rows_are_replaced_by_the_replayers_exchange_and_the_principal_comes_after_it() -> None:
    rows = [_row("c", 0, 1, api_key=17, correlation_id=1), _row("c", 2, 1, api_key=36, correlation_id=2, request=None),
            _row("c", 4, 1, correlation_id=3, principal="User:alice"),
            _row("d", 1, 1, api_key=44, request=None, request_json='{"resources": []}')]
    plans = {p.connection_id: p for p in build_plans(rows)}
    assert [s.action for s in plans["c"].steps] == [SASL, SKIP, "send"] and plans["c"].principal == "User:alice"
    assert plans["d"].steps[0].action == SKIP and "redacted" in plans["d"].steps[0].reason


def test_producer_ids_inside_record_batches_are_re_mapped_with_a_valid_crc() -> None:
    batch = RecordBatch(last_offset_delta=0, base_timestamp=1, max_timestamp=1, producer_id=7, producer_epoch=0,
                        base_sequence=0, records=[Record(offset_delta=0, timestamp_delta=0, key=None, value=b"v")])
    ids = IdMap()
    ids.learn_producer((7, 0), (1000, 3))
    rewritten = decode_batch(ids.rewrite_batches(encode_batch(batch)))  # decode_batch checks the CRC
    assert (rewritten.producer_id, rewritten.producer_epoch) == (1000, 3)
    assert rewritten.records[0].value == b"v"


def test_answers_teach_ids_that_later_requests_get_and_later_answers_must_agree_with() -> None:
    ids = IdMap()
    differ = Differ(ids)
    recorded = InitProducerIdResponse(producer_id=7, producer_epoch=0)
    assert differ.compare(recorded, InitProducerIdResponse(producer_id=42, producer_epoch=0)) == []
    assert ids.producer(7, 0) == (42, 0)
    # Member ids: learnt from an answer, rewritten in a request, nested ones included.
    ids.learn("member", "m-recorded", "m-replayed")
    request = SyncGroupRequest(member_id="m-recorded", assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id="m-recorded")])
    assert ids.rewrite(request)
    assert request.member_id == request.assignments[0].member_id == "m-replayed"
    # Topic ids: a new id is a mapping, a zero id on one side only (the topic no longer described) a difference.
    old, new = uuid.uuid4(), uuid.uuid4()
    topic = MetadataResponse.MetadataResponseTopic
    assert differ.compare(MetadataResponse(topics=[topic(name="t", topic_id=old)]), MetadataResponse(topics=[topic(name="t", topic_id=new)])) == []
    [difference] = differ.compare(MetadataResponse(topics=[topic(name="t", topic_id=old)]),
                                  MetadataResponse(topics=[topic(name="t", topic_id=uuid.UUID(int=0))]))
    assert difference.path == "topics[0].topic_id"


def test_ignored_fields_are_a_table_that_can_be_overridden() -> None:
    a, b = MetadataResponse(cluster_id="one", throttle_time_ms=0), MetadataResponse(cluster_id="two", throttle_time_ms=5)
    assert Differ(IdMap()).compare(a, b) == []
    assert [d.path for d in Differ(IdMap(), ignore={"throttle_time_ms"}).compare(a, b)] == ["cluster_id"]


def test_the_credentials_file_format() -> None:
    creds = parse_credentials("# comment\nUser:alice  SCRAM-SHA-512 alice  pass with spaces\n\nUser:bob plain bob b\n")
    assert creds["User:alice"].password == "pass with spaces" and creds["User:bob"].mechanism == "PLAIN"
    # OAUTHBEARER: the token to send, or none (the replayer makes an unsecured one naming the username).
    creds = parse_credentials("User:carol OAUTHBEARER carol\nUser:dave oauthbearer dave eyJ.eyJ.\n")
    assert (creds["User:carol"].password, creds["User:dave"].password) == ("", "eyJ.eyJ.")
    for bad, message in (("User:a GSSAPI a p", "unknown mechanism"), ("alice PLAIN alice p", "TYPE:NAME"),
                         ("User:a PLAIN a", "expected"), ("User:a PLAIN a p\nUser:a PLAIN a q", "twice")):
        with pytest.raises(CredentialsError, match=message):
            parse_credentials(bad, "f")


def test_log_append_time_batches_are_compared_without_the_brokers_append_time() -> None:
    from kafka_shim.protocol.messages import FetchResponse

    def fetch(max_timestamp: int, attributes: int) -> FetchResponse:
        batch = RecordBatch(attributes=attributes, last_offset_delta=0, base_timestamp=1, max_timestamp=max_timestamp,
                            records=[Record(offset_delta=0, timestamp_delta=0, key=None, value=b"v")])
        partition = FetchResponse.PartitionData(records=encode_batch(batch))
        return FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[partition])])

    assert Differ(IdMap()).compare(fetch(100, 0x08), fetch(200, 0x08)) == []
    [difference] = Differ(IdMap()).compare(fetch(100, 0), fetch(200, 0))  # CreateTime: the producer's, compared
    assert difference.path == "responses[0].partitions[0].records.batch[0].max_timestamp"


def test_arrays_of_different_lengths_are_matched_by_their_entries_key() -> None:
    from kafka_shim.protocol.messages import ApiVersionsResponse

    key = ApiVersionsResponse.ApiVersion
    few = ApiVersionsResponse(api_keys=[key(api_key=0, max_version=11), key(api_key=3, max_version=12)])
    more = ApiVersionsResponse(api_keys=[key(api_key=0, max_version=11), key(api_key=1, max_version=17), key(api_key=3, max_version=13)])
    assert [(d.path, d.recorded, d.replayed) for d in Differ(IdMap()).compare(few, more)] == [
        ("api_keys.length", 2, 3), ("api_keys[api_key=3].max_version", 12, 13), ("api_keys[api_key=1]", "missing", "present")]


def test_delete_topics_answers_compare_whatever_their_order_as_kafka_shuffles_them() -> None:
    from kafka_shim.protocol.messages import DeleteTopicsResponse

    entry = DeleteTopicsResponse.DeletableTopicResult
    recorded = DeleteTopicsResponse(responses=[entry(name="a", error_code=0), entry(name="b", error_code=3), entry(name="c", error_code=29)])
    shuffled = DeleteTopicsResponse(responses=[entry(name="c", error_code=29), entry(name="a", error_code=0), entry(name="b", error_code=3)])
    assert Differ(IdMap()).compare(recorded, shuffled) == []
    changed = DeleteTopicsResponse(responses=[entry(name="c", error_code=29), entry(name="a", error_code=0), entry(name="b", error_code=0)])
    assert [(d.path, d.recorded, d.replayed) for d in Differ(IdMap()).compare(recorded, changed)] == [
        ("responses[1].error_code", 3, 0)]
