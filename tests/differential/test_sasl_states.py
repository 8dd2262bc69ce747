"""The SASL state machine (§10) against a real Kafka: the same frames, the same answers or closed connections.

Both brokers have a SASL_PLAINTEXT listener with PLAIN and SCRAM users admin/alice/bob and a PLAINTEXT listener.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import (
    AlterReplicaLogDirsRequest,
    ApiVersionsRequest,
    DescribeLogDirsRequest,
    DescribeQuorumRequest,
    MetadataRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.compare import assert_same
from tests.support.sasl_setup import listener_address, sasl_properties
from tests.support.wire import Answer, Wire

CID = 7


@pytest.fixture(scope="module")
def shim_sasl() -> Iterator[EmbeddedBroker]:
    # Kafka delays its answer to a failed authentication by 100 ms; the same here.
    with EmbeddedBroker(BrokerConfig.from_properties(sasl_properties())) as broker:
        yield broker


def frame(api_key: int, version: int, body: Any) -> tuple[bytes, int, int]:
    return encode_request(api_key, version, CID, body, client_id="differential"), api_key, version


API_VERSIONS = frame(18, 3, ApiVersionsRequest(client_software_name="diff", client_software_version="1"))
# ApiVersions v9, which neither broker knows: a v3 frame with its header's version rewritten.
_v3 = API_VERSIONS[0]
API_VERSIONS_V9 = (_v3[:6] + (9).to_bytes(2, "big") + _v3[8:], 18, 0)
API_VERSIONS_V0 = frame(18, 0, ApiVersionsRequest())
METADATA = frame(3, 1, MetadataRequest(topics=None))
HANDSHAKE_PLAIN = frame(17, 1, SaslHandshakeRequest(mechanism="PLAIN"))


def plain(user: str, password: str, version: int = 2) -> tuple[bytes, int, int]:
    return frame(36, version, SaslAuthenticateRequest(auth_bytes=b"\0" + user.encode() + b"\0" + password.encode()))


def run(address: tuple[str, int], steps: list[tuple[bytes, int, int]]) -> list[Answer]:
    """Send each frame after the previous answer; stop at the first closed connection."""
    answers = []
    with Wire(address) as wire:
        for data, key, version in steps:
            answer = wire.exchange(data, key, version)
            answers.append(answer)
            if answer.closed:
                break
        else:
            # After the last step: is the connection still open? (a closing broker sends EOF promptly)
            wire.sock.settimeout(0.5)
            try:
                answers.append(Answer(closed=wire.sock.recv(1) == b""))
            except TimeoutError:
                answers.append(Answer(closed=False))
    return answers


def both(oracle, shim_sasl: EmbeddedBroker, steps, listener: str = "SASL_PLAINTEXT") -> tuple[list[Answer], list[Answer]]:
    kafka = oracle.sasl if listener == "SASL_PLAINTEXT" else oracle.plaintext
    shim = listener_address(shim_sasl.broker, listener)
    return run(kafka, steps), run(shim, steps)


def assert_same_answers(kafka: list[Answer], shim: list[Answer]) -> None:
    assert [a.closed for a in shim] == [a.closed for a in kafka], f"kafka: {kafka}\nshim:  {shim}"
    for k, s in zip(kafka, shim, strict=True):
        if not k.closed:
            if k.body is None:
                continue
            assert s.correlation_id == k.correlation_id
            # ApiVersions' key list and feature epoch are compared in test_foundation; here only the state matters.
            assert_same(k, s, ignore=("api_keys", "finalized_features_epoch", "supported_features",
                                       "brokers.*.host", "brokers.*.port", "cluster_id"))


SCENARIOS = {
    "request before the handshake closes": [METADATA],
    "a second ApiVersions closes": [API_VERSIONS, API_VERSIONS],
    "ApiVersions, handshake, good password, then requests": [API_VERSIONS, HANDSHAKE_PLAIN, plain("alice", "alice-secret"), METADATA],
    "unsupported mechanism gets 33 and the list": [frame(17, 1, SaslHandshakeRequest(mechanism="GSSAPI"))],
    "mechanism names are case-sensitive": [frame(17, 1, SaslHandshakeRequest(mechanism="plain"))],
    "a request during authentication gets 34": [HANDSHAKE_PLAIN, METADATA],
    "ApiVersions during authentication gets 34": [HANDSHAKE_PLAIN, API_VERSIONS],
    "DescribeLogDirs v0 during authentication gets an empty answer": [HANDSHAKE_PLAIN, frame(35, 0, DescribeLogDirsRequest(topics=None))],
    "DescribeLogDirs v4 during authentication gets 34": [HANDSHAKE_PLAIN, frame(35, 4, DescribeLogDirsRequest(topics=None))],
    "AlterReplicaLogDirs during authentication gets 34": [HANDSHAKE_PLAIN, frame(34, 2, AlterReplicaLogDirsRequest(dirs=[
        AlterReplicaLogDirsRequest.AlterReplicaLogDir(path="/d", topics=[
            AlterReplicaLogDirsRequest.AlterReplicaLogDirTopic(name="t", partitions=[0, 1])])]))],
    "DescribeQuorum during authentication gets 34": [HANDSHAKE_PLAIN, frame(55, 2, DescribeQuorumRequest(topics=[
        DescribeQuorumRequest.TopicData(topic_name="__cluster_metadata", partitions=[DescribeQuorumRequest.PartitionData(partition_index=0)])]))],
    "a second handshake during authentication gets 34": [HANDSHAKE_PLAIN, HANDSHAKE_PLAIN],
    "wrong password gets 58": [HANDSHAKE_PLAIN, plain("alice", "wrong")],
    "unknown user gets 58": [HANDSHAKE_PLAIN, plain("mallory", "alice-secret")],
    "empty password gets 58": [HANDSHAKE_PLAIN, plain("alice", "")],
    "garbage token gets 58": [HANDSHAKE_PLAIN, frame(36, 2, SaslAuthenticateRequest(auth_bytes=b"\xff\xfe garbage"))],
    "authzid other than the user gets 58": [
        HANDSHAKE_PLAIN, frame(36, 2, SaslAuthenticateRequest(auth_bytes=b"bob\0alice\0alice-secret"))],
    "SaslAuthenticate v0 and v1 work": [HANDSHAKE_PLAIN, plain("bob", "bob-secret", version=0), METADATA],
    "SaslAuthenticate v1": [HANDSHAKE_PLAIN, plain("bob", "bob-secret", version=1), METADATA],
    "handshake and authenticate after success get 34": [
        HANDSHAKE_PLAIN, plain("alice", "alice-secret"), HANDSHAKE_PLAIN, plain("alice", "alice-secret"), METADATA],
    "SCRAM first message that is not SCRAM gets 58": [
        frame(17, 1, SaslHandshakeRequest(mechanism="SCRAM-SHA-256")),
        frame(36, 2, SaslAuthenticateRequest(auth_bytes=b"not a scram message"))],
    "ApiVersions v0 before the handshake": [API_VERSIONS_V0, HANDSHAKE_PLAIN, plain("admin", "admin-secret")],
    "an unknown ApiVersions version may be retried": [API_VERSIONS_V9, API_VERSIONS, HANDSHAKE_PLAIN],
}


@pytest.mark.parametrize("steps", list(SCENARIOS.values()), ids=list(SCENARIOS))
def test_sasl_state_machine_matches_kafka(oracle, shim_sasl: EmbeddedBroker, steps) -> None:
    kafka, shim = both(oracle, shim_sasl, steps)
    assert_same_answers(kafka, shim)


def test_sasl_apis_on_a_plaintext_listener_get_34(oracle, shim_sasl: EmbeddedBroker) -> None:
    steps = [HANDSHAKE_PLAIN, plain("alice", "alice-secret"), METADATA]
    kafka, shim = both(oracle, shim_sasl, steps, listener="PLAINTEXT")
    assert kafka[0].body.error_code == 34
    assert_same_answers(kafka, shim)


def _raw_exchange(address: tuple[str, int]) -> tuple[bytes | None, Answer]:
    """SaslHandshake v0, then a bare PLAIN token (pre-KIP-152 framing), then Metadata."""
    with Wire(address) as wire:
        hs = wire.exchange(*HANDSHAKE_PLAIN_V0)
        assert not hs.closed and hs.body.error_code == 0
        token = b"\0alice\0alice-secret"
        wire.send_frame(struct.pack(">i", len(token)) + token)
        head = wire._read_exact(4)
        raw = None if head is None else wire._read_exact(struct.unpack(">i", head)[0])
        return raw, wire.exchange(*METADATA)


HANDSHAKE_PLAIN_V0 = frame(17, 0, SaslHandshakeRequest(mechanism="PLAIN"))


def test_v0_handshake_takes_bare_tokens(oracle, shim_sasl: EmbeddedBroker) -> None:
    kafka_raw, kafka_meta = _raw_exchange(oracle.sasl)
    shim_raw, shim_meta = _raw_exchange(listener_address(shim_sasl.broker, "SASL_PLAINTEXT"))
    assert kafka_raw == shim_raw == b""
    assert not kafka_meta.closed and not shim_meta.closed
