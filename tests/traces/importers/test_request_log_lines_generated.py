"""Whole request-log lines rendered the way Kafka's RequestConvertToJson renders them, from random messages of the
schemas, read back: the row's JSON bodies are the messages' (records by size), the header fields the line's."""

from __future__ import annotations

import base64
import datetime
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shim.protocol.messages import request_class, response_class
from kafka_shim.traces.format import to_json_text
from kafka_shim.traces.importers.kafka_json import plain, read_message, write_message
from kafka_shim.traces.importers.request_log import MARKER, parse_line
from tests.support.schema_strategies import message_strategy

CASES = [(0, 9), (0, 11), (1, 12), (1, 16), (3, 12), (9, 8), (11, 9), (19, 7), (29, 3), (30, 3), (32, 4), (60, 1)]


def kafka_line(api_key: int, version: int, request: object, response: object, correlation_id: int) -> str:
    doc = {
        "isForwarded": False,
        "requestHeader": {"requestApiKey": api_key, "requestApiVersion": version, "correlationId": correlation_id,
                          "clientId": "client-1", "requestApiKeyName": "X"},
        "request": write_message(request, version),
        "response": write_message(response, version),
        "connection": "10.0.0.1:9092-10.0.0.7:51234-3-17",
        "totalTimeMs": 2.5, "requestQueueTimeMs": 0.1, "localTimeMs": 2.0, "remoteTimeMs": 0.0, "throttleTimeMs": 0,
        "responseQueueTimeMs": 0.1, "sendTimeMs": 0.3, "securityProtocol": "SASL_SSL", "principal": "User:alice",
        "listener": "EXTERNAL", "clientInformation": {"softwareName": "apache-kafka-java", "softwareVersion": "3.9.0"},
    }
    return f"[2026-11-23 17:38:33,534] DEBUG {MARKER}{json.dumps(doc, separators=(',', ':'))} (kafka.request.logger)"


@pytest.mark.parametrize(("api_key", "version"), CASES)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), correlation_id=st.integers(0, 2**31 - 1))
def test_generated_lines_read_back(api_key: int, version: int, data: st.DataObject, correlation_id: int) -> None:
    req_cls, resp_cls = request_class(api_key), response_class(api_key)
    request = data.draw(message_strategy(req_cls.__name__, version, unknown_tags=False))
    response = data.draw(message_strategy(resp_cls.__name__, version, unknown_tags=False))
    line = kafka_line(api_key, version, request, response, correlation_id)
    row, warnings = parse_line(line, line.index(MARKER), datetime.UTC)
    assert warnings == []
    expected_request = to_json_text(plain(read_message(req_cls, write_message(request, version), version)))
    assert row["request_json"] == expected_request
    assert row["response_json"] == to_json_text(plain(read_message(resp_cls, write_message(response, version), version)))
    assert (row["api_key"], row["api_version"], row["correlation_id"], row["client_id"]) == (api_key, version, correlation_id, "client-1")
    assert (row["client_host"], row["client_port"], row["listener"], row["principal"]) == ("10.0.0.7", 51234, "EXTERNAL", "User:alice")
    assert row["response_time_us"] == 2500
    end = datetime.datetime(2026, 11, 23, 17, 38, 33, 534000, tzinfo=datetime.UTC)
    assert row["time"] == int(end.timestamp()) * 1_000_000 + 534_000 - 2500


def test_credential_bodies_are_not_kept() -> None:
    from kafka_shim.protocol.messages import SaslAuthenticateRequest, SaslAuthenticateResponse

    request = SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00alice-secret")
    line = kafka_line(36, 2, request, SaslAuthenticateResponse(), 3)
    assert base64.b64encode(b"\x00alice\x00alice-secret").decode() in line  # Kafka's JSON carries the token
    row, warnings = parse_line(line, line.index(MARKER), datetime.UTC)
    assert warnings == [] and row["request_json"] is None and row["response_json"] is not None
    assert (row["api_key"], row["api_version"], row["correlation_id"]) == (36, 2, 3)
