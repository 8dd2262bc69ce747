"""Capture at the edges: a failed SASL authentication, a tap that raises, a broker stopped with requests in flight."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import MetadataRequest
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from kafka_shim.traces.format import iter_requests
from tests.support.sasl_setup import listener_address, sasl_properties
from tests.support.wire import Wire


def test_a_failed_authentication_is_recorded_with_its_answer(tmp_path: Path) -> None:
    config = BrokerConfig.from_properties(sasl_properties() | {"connection.failed.authentication.delay.ms": "0"})
    with EmbeddedBroker(config, capture_dir=tmp_path) as broker:
        with Wire(listener_address(broker.broker, "SASL_PLAINTEXT")) as wire:
            with pytest.raises(ConnectionError, match="SASL/PLAIN as alice failed"):
                wire.sasl_plain("alice", "wrong")
        with Wire(listener_address(broker.broker, "SASL_PLAINTEXT")) as wire:
            wire.sasl_plain("alice", "alice-secret")
            wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=[]))
    rows = [(r.row["api_key"], r.row["principal"], r.row["outcome"]) for r in iter_requests(tmp_path)]
    assert rows == [
        (ApiKey.SASL_HANDSHAKE, "User:ANONYMOUS", "response"),
        (ApiKey.SASL_AUTHENTICATE, "User:ANONYMOUS", "authentication_failed"),
        (ApiKey.SASL_HANDSHAKE, "User:ANONYMOUS", "response"),
        (ApiKey.SASL_AUTHENTICATE, "User:ANONYMOUS", "response"),
        (ApiKey.METADATA, "User:alice", "response"),
    ]
    failed = next(r for r in iter_requests(tmp_path) if r.row["outcome"] == "authentication_failed")
    assert failed.response_body.error_code == 58  # SASL_AUTHENTICATION_FAILED, as the client was told
    # Credentials are never recorded: SaslAuthenticate rows keep which request it was, not its bytes.
    authenticate = [r.row for r in iter_requests(tmp_path) if r.row["api_key"] == ApiKey.SASL_AUTHENTICATE]
    assert [(r["request"], r["api_version"]) for r in authenticate] == [(None, 2), (None, 2)]
    assert [r["correlation_id"] for r in authenticate] == [102, 102]  # Wire numbers each connection's requests from 101
    assert not [p for p in tmp_path.rglob("*.parquet") if b"wrong" in p.read_bytes() or b"alice-secret" in p.read_bytes()]


class RaisingTap:
    def __init__(self) -> None:
        self.calls = 0
        self.closed = False

    def record(self, request) -> None:
        self.calls += 1
        raise RuntimeError("sink broken")

    def close(self) -> None:
        self.closed = True


def test_a_tap_that_raises_does_not_fail_the_request(tmp_path: Path) -> None:
    tap = RaisingTap()
    with capture_logs() as logs:
        with EmbeddedBroker(tap=tap) as broker:
            host, port = broker.bootstrap_servers.rsplit(":", 1)
            with Wire((host, int(port))) as wire:
                answers = [wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=[])) for _ in range(3)]
    assert [a.closed for a in answers] == [False, False, False]
    assert tap.calls == 3 and tap.closed
    assert [e["error"] for e in logs if e["event"] == "request_tap_failed"] == ["sink broken"] * 3


def test_config_values_and_scram_passwords_are_not_recorded(tmp_path: Path) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    with EmbeddedBroker(capture_dir=tmp_path) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("secrets", 1, 1)])["secrets"].result(timeout=30)
        change = ConfigResource(ResourceType.TOPIC, "secrets", incremental_configs=[
            ConfigEntry("retention.ms", "987654321", incremental_operation=AlterConfigOpType.SET)])
        for future in admin.incremental_alter_configs([change]).values():
            future.result(timeout=30)
        upsert = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"carol-password")
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(timeout=30)
    rows = {r.row["api_key"]: r.row for r in iter_requests(tmp_path)}
    altered = rows[ApiKey.INCREMENTAL_ALTER_CONFIGS]
    assert altered["request"] is None and altered["response"] is not None
    body = json.loads(altered["request_json"])
    assert body["resources"][0]["resource_name"] == "secrets"
    assert body["resources"][0]["configs"] == [{"name": "retention.ms", "config_operation": 0, "value": "REDACTED"}]
    scram = rows[ApiKey.ALTER_USER_SCRAM_CREDENTIALS]
    assert scram["request"] is None and scram["api_version"] == 0 and scram["correlation_id"] is not None
    assert not [p for p in tmp_path.rglob("*.parquet") if b"987654321" in p.read_bytes()]
