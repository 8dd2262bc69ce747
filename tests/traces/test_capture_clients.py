"""Capture in kafka-shim with real clients: what the trace holds after confluent-kafka and kafka-python created topics,
managed ACLs, produced and consumed over TCP against a broker with the authorizer on.

The trace is read back with kafka_shim.traces (read_trace, iter_requests) and checked against what the clients
did and what the broker decided.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.framing import decode_response, encode_request
from kafka_shim.protocol.messages import MetadataRequest, ProduceRequest
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from kafka_shim.traces.format import SCHEMA_VERSION, VERSION_KEY, iter_requests, read_trace
from tests.support.sasl_setup import USERS, listener_address, sasl_properties
from tests.support.wire import Wire

pytestmark = pytest.mark.clients
TIMEOUT = 30


def _sasl(user: str) -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": user,
            "sasl.password": USERS[user]}


def _allow(principal: str, operation, topic: str):
    from confluent_kafka.admin import AclBinding, AclPermissionType, ResourcePatternType, ResourceType

    return AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, principal, "*", operation, AclPermissionType.ALLOW)


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """Run the clients against a capturing broker, stop it, and return the trace directory and what they saw."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AclOperation, AdminClient, NewTopic
    from kafka import KafkaConsumer, TopicPartition

    capture = tmp_path_factory.mktemp("trace")
    seen: dict[str, object] = {}
    with EmbeddedBroker(BrokerConfig.from_properties(sasl_properties()), capture_dir=capture) as broker:
        host, port = listener_address(broker.broker, "SASL_PLAINTEXT")
        sasl = f"{host}:{port}"
        admin = AdminClient({"bootstrap.servers": sasl, **_sasl("admin")})
        for future in admin.create_topics([NewTopic("payments", 1, 1)]).values():
            future.result(timeout=TIMEOUT)
        acls = [_allow("User:alice", AclOperation.WRITE, "payments"), _allow("User:alice", AclOperation.READ, "payments")]
        for future in admin.create_acls(acls).values():
            future.result(timeout=TIMEOUT)

        # Idempotent: InitProducerId asks IDEMPOTENT_WRITE on the cluster (denied), then KIP-679 WRITE on any topic.
        producer = Producer({"bootstrap.servers": sasl, **_sasl("alice"), "enable.idempotence": True, "acks": "all"})
        delivered = []
        for i in range(3):
            producer.produce("payments", f"m{i}".encode(), on_delivery=lambda err, msg: delivered.append(err))
        assert producer.flush(TIMEOUT) == 0
        assert delivered == [None, None, None]

        # bob has no ACL: the broker denies him DESCRIBE on the topic (29 in Metadata).
        bob = AdminClient({"bootstrap.servers": sasl, **_sasl("bob")})
        topic = bob.list_topics(topic="payments", timeout=TIMEOUT).topics["payments"]
        seen["bob_error"] = topic.error.code() if topic.error else None

        # KIP-430: the topic's authorized operations, computed for alice.
        alice_admin = AdminClient({"bootstrap.servers": sasl, **_sasl("alice")})
        from confluent_kafka import TopicCollection

        described = alice_admin.describe_topics(TopicCollection(["payments"]), include_authorized_operations=True)
        seen["alice_operations"] = sorted(op.name for op in described["payments"].result(timeout=TIMEOUT).authorized_operations)

        consumer = KafkaConsumer(bootstrap_servers=sasl, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                                 sasl_plain_username="alice", sasl_plain_password=USERS["alice"], enable_auto_commit=False,
                                 auto_offset_reset="earliest", consumer_timeout_ms=10000)
        consumer.assign([TopicPartition("payments", 0)])
        seen["consumed"] = [record.value for _, record in zip(range(3), consumer, strict=False)]
        consumer.close()

        # A raw client: exactly these requests, whose answers we keep byte for byte.
        with Wire(listener_address(broker.broker, "PLAINTEXT")) as wire:
            answers = [wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="payments")]),
                                    client_id="raw-client") for _ in range(2)]
            # acks=0 is answered by silence; an unsupported version closes the connection, as in Kafka.
            wire.send_frame(encode_request(ApiKey.PRODUCE, 9, 500, ProduceRequest(acks=0, timeout_ms=1000, topic_data=[]),
                                           client_id="raw-client"))
            unsupported = bytearray(encode_request(ApiKey.METADATA, 12, 501, MetadataRequest(topics=[]), client_id="raw-client"))
            unsupported[6:8] = (99).to_bytes(2, "big")  # the version field of the header
            wire.send_frame(bytes(unsupported))
            assert wire.read_answer(ApiKey.METADATA, 12).closed
        seen["raw_answers"] = [a.payload for a in answers]
    return capture, seen


def test_the_trace_directory_is_one_day_partitioned_dataset(captured) -> None:
    capture, _ = captured
    days = [p.name for p in capture.iterdir()]
    assert len(days) == 1 and re.fullmatch(r"day=\d{4}-\d{2}-\d{2}", days[0])
    # No half-written file is left behind: the broker's stop finished them.
    assert not [p for p in capture.rglob("*") if p.name.startswith(".")]
    dataset = ds.dataset(capture, format="parquet", partitioning="hive")
    assert dataset.count_rows() == read_trace(capture).num_rows > 0
    assert {f.metadata[VERSION_KEY] for f in (ds.dataset(capture, format="parquet").schema,)} == {str(SCHEMA_VERSION).encode()}


def test_every_request_row_decodes_and_its_answer_matches_its_correlation_id(captured) -> None:
    capture, _ = captured
    rows = list(iter_requests(capture))
    assert rows
    for traced in rows:
        row = traced.row
        if row["correlation_id"] in (500, 501):
            continue  # the raw client's unanswered requests (test_unanswered_requests_say_how_they_ended)
        assert traced.decode_error is None, row
        # SaslAuthenticate frames carry credentials: recorded without their bytes.
        assert (traced.request_body is None) == (row["api_key"] == ApiKey.SASL_AUTHENTICATE) == (row["request"] is None)
        assert row["outcome"] == "response"
        correlation_id, _ = decode_response(row["api_key"], row["api_version"], row["response"])
        assert correlation_id == row["correlation_id"]
        assert row["source"] == "capture" and row["kind"] == "request"
        assert row["response_time_us"] >= 0 and row["time"] is not None
    # The clients' APIs, each on the listener and under the principal that sent it.
    by_api = Counter((r.row["api_key"], r.row["principal"]) for r in rows)
    assert by_api[(ApiKey.CREATE_TOPICS, "User:admin")] == 1
    assert by_api[(ApiKey.CREATE_ACLS, "User:admin")] == 1
    assert by_api[(ApiKey.PRODUCE, "User:alice")] >= 1
    assert by_api[(ApiKey.FETCH, "User:alice")] >= 1
    assert by_api[(ApiKey.SASL_AUTHENTICATE, "User:ANONYMOUS")] >= 4  # admin, alice twice (two clients), bob
    # Correlation ids never repeat within a connection.
    per_connection = Counter((r.row["connection_id"], r.row["correlation_id"]) for r in rows)
    assert max(per_connection.values()) == 1


def test_raw_bytes_equal_what_the_client_got(captured) -> None:
    capture, seen = captured
    raw = [r.row for r in iter_requests(capture) if r.row["client_id"] == "raw-client" and r.row["outcome"] == "response"]
    assert [r["response"] for r in raw] == seen["raw_answers"]
    assert [r["api_version"] for r in raw] == [12, 12]
    assert raw[0]["connection_id"] == raw[1]["connection_id"]
    assert raw[0]["correlation_id"] + 1 == raw[1]["correlation_id"]
    assert raw[0]["listener"] == "PLAINTEXT" and raw[0]["security_protocol"] == "PLAINTEXT"
    assert raw[0]["principal"] == "User:ANONYMOUS" and raw[0]["client_host"] == "127.0.0.1"
    assert re.fullmatch(r"127\.0\.0\.1:\d+-127\.0\.0\.1:\d+-\d+", raw[0]["connection_id"])
    assert int(raw[0]["connection_id"].split("-")[1].split(":")[1]) == raw[0]["client_port"]


def test_client_software_comes_from_api_versions(captured) -> None:
    capture, _ = captured
    rows = [r.row for r in iter_requests(capture)]
    confluent = {r["client_software_name"] for r in rows if r["api_key"] == ApiKey.CREATE_TOPICS}
    assert confluent == {"confluent-kafka-python"}
    fetches = {(r["client_software_name"], r["client_software_version"]) for r in rows if r["api_key"] == ApiKey.FETCH}
    assert len(fetches) == 1 and next(iter(fetches))[0] == "kafka-python"


def _decisions(capture: Path, api_key: int, principal: str) -> list[dict]:
    return [d for r in iter_requests(capture) if r.row["api_key"] == api_key and r.row["principal"] == principal
            for d in r.row["decisions"]]


def test_the_broker_decisions_are_recorded_with_their_rules(captured) -> None:
    capture, seen = captured
    # admin is a super user.
    (create_acls,) = _decisions(capture, ApiKey.CREATE_ACLS, "User:admin")
    assert create_acls | {} == {"kind": "authorize", "operation": "ALTER", "resource_type": "CLUSTER", "resource_name": "kafka-cluster",
                                "allowed": True, "rule": "SuperUser", "resource_ref_count": 1, "authorized_operations": None}
    # alice writes through her ACL, quoted as Kafka's audit log quotes it.
    writes = [d for d in _decisions(capture, ApiKey.PRODUCE, "User:alice") if d["operation"] == "WRITE"]
    assert writes and all(d["allowed"] and d["resource_name"] == "payments" for d in writes)
    assert {d["rule"] for d in writes} == {
        "MatchingAcl(acl=StandardAcl(resourceType=TOPIC, resourceName=payments, patternType=LITERAL, principal=User:alice, "
        "host=*, operation=WRITE, permissionType=ALLOW))"}
    reads = [d for d in _decisions(capture, ApiKey.FETCH, "User:alice") if d["operation"] == "READ"]
    assert reads and all(d["allowed"] for d in reads)
    # bob is denied, by default, and was told so.
    assert seen["bob_error"] == 29
    denied = [d for d in _decisions(capture, ApiKey.METADATA, "User:bob") if d["resource_name"] == "payments"]
    assert denied and {(d["operation"], d["allowed"], d["rule"]) for d in denied} == {("DESCRIBE", False, "DefaultDeny")}
    assert seen["consumed"] == [b"m0", b"m1", b"m2"]


def test_sasl_and_api_versions_rows_have_no_decisions(captured) -> None:
    capture, _ = captured
    for r in iter_requests(capture):
        if r.row["api_key"] in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            assert r.row["decisions"] == []


def test_unanswered_requests_say_how_they_ended(captured) -> None:
    capture, _ = captured
    rows = {r.row["correlation_id"]: r for r in iter_requests(capture) if r.row["client_id"] == "raw-client"}
    silent, closed = rows[500], rows[501]
    assert (silent.row["outcome"], silent.row["response"], silent.request_body.acks) == ("no_response", None, 0)
    assert (closed.row["outcome"], closed.row["response"], closed.row["api_version"]) == ("closed", None, 99)
    assert closed.request_body is None and "version 99" in closed.decode_error


def test_kip679_and_kip430_questions_are_recorded(captured) -> None:
    capture, seen = captured
    init = _decisions(capture, ApiKey.INIT_PRODUCER_ID, "User:alice")
    assert [(d["kind"], d["operation"], d["resource_type"], d["resource_name"], d["allowed"], d["rule"]) for d in init] == [
        ("authorize", "IDEMPOTENT_WRITE", "CLUSTER", "kafka-cluster", False, "DefaultDeny"),
        ("by_resource_type", "WRITE", "TOPIC", None, True, None),
    ]
    bits = [d for r in iter_requests(capture) if r.row["principal"] == "User:alice"
            for d in r.row["decisions"] if d["kind"] == "authorized_operations"]
    assert bits and {(d["resource_type"], d["resource_name"]) for d in bits} == {("TOPIC", "payments")}
    # READ, WRITE and DESCRIBE (implied) are what alice may do: bits 3, 4 and 8.
    assert {d["authorized_operations"] for d in bits} == {(1 << 3) | (1 << 4) | (1 << 8)}
    assert seen["alice_operations"] == ["DESCRIBE", "READ", "WRITE"]
