"""ApiVersions, Metadata bootstrap, unsupported versions and malformed frames: Kafka and kafka-shim agree."""

from __future__ import annotations

import struct

import pytest

from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import ApiVersionsRequest, MetadataRequest
from tests.support.compare import assert_same, differences
from tests.support.peers import REPORTED
from tests.support.wire import Wire, exchange_both

# What legitimately differs in a Metadata answer: who the broker is and where it listens.
METADATA_IDENTITY = ("brokers.*.host", "brokers.*.port", "cluster_id", "topics.*.topic_id")


def both(oracle_address, shim_address, frame: bytes, api_key: int, response_version: int):
    return exchange_both(oracle_address, shim_address, frame, api_key, response_version)


def api_versions_request(version: int) -> ApiVersionsRequest:
    if version >= 3:
        return ApiVersionsRequest(client_software_name="kafka-shim-differential", client_software_version="1.0")
    return ApiVersionsRequest()


@pytest.mark.parametrize("version", range(5))
def test_api_versions(oracle_open, shim_address, version: int) -> None:
    frame = encode_request(18, version, 7, api_versions_request(version))
    kafka, shim = both(oracle_open.plaintext, shim_address, frame, 18, version)
    # The key/version lists differ by design (kafka-shim advertises only what it serves): reported, not compared.
    assert_same(kafka, shim, ignore=("api_keys", "finalized_features_epoch"), what=f"ApiVersions v{version}")
    kafka_ranges = {k.api_key: (k.min_version, k.max_version) for k in kafka.body.api_keys}
    shim_ranges = {k.api_key: (k.min_version, k.max_version) for k in shim.body.api_keys}
    for key, served in shim_ranges.items():
        assert key in kafka_ranges, f"kafka-shim advertises api key {key}, which Kafka 3.9 does not"
        assert served == kafka_ranges[key], f"api key {key}: kafka-shim serves {served}, Kafka {kafka_ranges[key]}"
    if version == 4:
        missing = sorted(set(kafka_ranges) - set(shim_ranges))
        REPORTED.append(f"ApiVersions: Kafka 3.9 advertises {len(kafka_ranges)} keys, kafka-shim {len(shim_ranges)}; "
                        f"not served yet: {missing}")


@pytest.mark.parametrize("version", [5, 27, 127, -1])
def test_api_versions_from_the_future_or_negative(oracle_open, shim_address, version: int) -> None:
    # An unknown ApiVersions version is answered in v0 (header and body), whatever the body holds.
    frame = encode_request(18, 3, 9, api_versions_request(3))
    frame = frame[:6] + struct.pack(">h", version) + frame[8:]
    kafka, shim = both(oracle_open.plaintext, shim_address, frame, 18, 0)
    assert not kafka.closed
    assert kafka.body.error_code == 35
    assert_same(kafka, shim, what=f"ApiVersions v{version}")


@pytest.mark.parametrize("name,version", [("", 3), ("-leading-dash", 3), ("ok", 4)])
def test_api_versions_invalid_software_name(oracle_open, shim_address, name: str, version: int) -> None:
    body = ApiVersionsRequest(client_software_name=name, client_software_version="1.0" if name != "ok" else "bad version!")
    kafka, shim = both(oracle_open.plaintext, shim_address, encode_request(18, version, 3, body), 18, version)
    assert kafka.body.error_code == 42
    assert_same(kafka, shim, what=f"ApiVersions v{version} with an invalid client software name")


TOPIC = MetadataRequest.MetadataRequestTopic


def metadata_cases():
    for version in range(13):
        lists = {"no-topics": [], "one-missing": [TOPIC(name="no-such-topic")], "illegal-name": [TOPIC(name="bad name!")],
                 "internal": [TOPIC(name="__consumer_offsets")]}
        if version >= 1:
            lists["all-topics"] = None
        for label, topics in lists.items():
            for flags in ((False, False), (True, True)) if version >= 8 else ((False, False),):
                yield pytest.param(version, topics, flags, id=f"v{version}-{label}{'-authz-ops' if flags[0] else ''}")


@pytest.mark.parametrize("version,topics,flags", list(metadata_cases()))
def test_metadata_without_authorizer(oracle_open, shim_address, version, topics, flags) -> None:
    body = MetadataRequest(topics=topics, allow_auto_topic_creation=version < 4)
    if version >= 8:
        body.include_topic_authorized_operations = flags[1]
        if version <= 10:
            body.include_cluster_authorized_operations = flags[0]
    kafka, shim = both(oracle_open.plaintext, shim_address, encode_request(3, version, 11, body), 3, version)
    assert_same(kafka, shim, ignore=METADATA_IDENTITY, what=f"Metadata v{version}")


def test_metadata_names_the_listener_the_client_used(oracle_open, shim_address) -> None:
    for address in (oracle_open.plaintext, shim_address):
        with Wire(address) as wire:
            answer = wire.request(3, 12, MetadataRequest(topics=[]))
        assert [(b.host, b.port) for b in answer.body.brokers] == [address]


def raw_frame(api_key: int, version: int, body: bytes, flexible: bool = False) -> bytes:
    """A frame with a request header (v1, or v2 when ``flexible``) and the given body bytes."""
    payload = struct.pack(">hhih", api_key, version, 1, -1) + (b"\x00" if flexible else b"") + body
    return struct.pack(">i", len(payload)) + payload


def unserved_frames():
    yield "metadata-v13", raw_frame(3, 13, b"\x01\x00\x00\x00", flexible=True)
    yield "metadata-negative-version", raw_frame(3, -1, b"")
    yield "unknown-api-key", raw_frame(999, 0, b"")
    yield "negative-api-key", raw_frame(-3, 0, b"")
    yield "leader-and-isr-on-kraft", raw_frame(4, 7, b"\x00" * 16, flexible=True)
    yield "controlled-shutdown-v0", struct.pack(">ihhi", 8, 7, 0, 1)


@pytest.mark.parametrize("frame", [f for _, f in unserved_frames()], ids=[n for n, _ in unserved_frames()])
def test_unserved_versions_and_keys(oracle_open, shim_address, frame: bytes) -> None:
    kafka, shim = both(oracle_open.plaintext, shim_address, frame, 3, 12)
    assert kafka.closed, "Kafka answered a request it should refuse"
    assert not differences(kafka, shim)


def malformed_frames():
    good = encode_request(3, 9, 1, MetadataRequest(topics=[TOPIC(name="x")]))
    yield "truncated-body", struct.pack(">i", len(good) - 6) + good[4:-2]
    yield "huge-array", raw_frame(3, 1, b"\x7f\xff\xff\xff")
    yield "compact-array-past-end", raw_frame(3, 9, b"\x05\x00", flexible=True)
    yield "endless-varint", raw_frame(18, 3, b"\x80" * 6, flexible=True)
    yield "null-topic-name-v1", raw_frame(3, 1, b"\x00\x00\x00\x01\xff\xff")
    yield "short-header", struct.pack(">i", 2) + b"\x00\x03"
    yield "empty-frame", struct.pack(">i", 0)
    yield "negative-size", struct.pack(">i", -5)
    yield "size-above-limit", struct.pack(">i", 200 * 1024 * 1024) + b"\x00" * 16


@pytest.mark.parametrize("frame", [f for _, f in malformed_frames()], ids=[n for n, _ in malformed_frames()])
def test_malformed_frames(oracle_open, shim_address, frame: bytes) -> None:
    kafka, shim = both(oracle_open.plaintext, shim_address, frame, 3, 9)
    assert not differences(kafka, shim), f"Kafka {'closed' if kafka.closed else 'answered'}, kafka-shim did not"


def test_pipelined_requests_answered_in_order(oracle_open, shim_address) -> None:
    frames = b"".join(encode_request(18 if i % 2 else 3, 0 if i % 2 else 1, i, ApiVersionsRequest() if i % 2 else MetadataRequest(topics=[]))
                      for i in range(1, 21))
    for address in (oracle_open.plaintext, shim_address):
        with Wire(address) as wire:
            wire.send_frame(frames)
            order = [wire.read_answer(18 if i % 2 else 3, 0 if i % 2 else 1).correlation_id for i in range(1, 21)]
        assert order == list(range(1, 21))


def test_trailing_bytes_after_a_body_are_ignored(oracle_open, shim_address) -> None:
    frame = raw_frame(3, 1, b"\x00\x00\x00\x00" + b"junk")
    kafka, shim = both(oracle_open.plaintext, shim_address, frame, 3, 1)
    assert not kafka.closed, "Kafka ignores bytes after a request body"
    assert_same(kafka, shim, ignore=METADATA_IDENTITY, what="Metadata v1 with trailing bytes")


@pytest.mark.parametrize("version", [1, 10, 12])
def test_metadata_as_anonymous_with_authorizer(oracle, version: int) -> None:
    from kafka_shim.shim.config.broker_config import BrokerConfig
    from kafka_shim.shim.testing.embedded import EmbeddedBroker

    config = BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "auto.create.topics.enable": "false",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:admin",
    })
    # (Both brokers run with auto.create.topics.enable=false; before v4 a request cannot say "do not create".)
    body = MetadataRequest(topics=[TOPIC(name="no-such-topic")], allow_auto_topic_creation=version < 4)
    if version >= 8:
        body.include_topic_authorized_operations = True
        body.include_cluster_authorized_operations = version <= 10
    with EmbeddedBroker(config) as shim_broker:
        host, port = shim_broker.bootstrap_servers.rsplit(":", 1)
        kafka, shim = both(oracle.plaintext, (host, int(port)), encode_request(3, version, 5, body), 3, version)
    assert kafka.body.topics[0].error_code == 29  # TOPIC_AUTHORIZATION_FAILED for an anonymous client
    assert_same(kafka, shim, ignore=METADATA_IDENTITY, what=f"Metadata v{version} as User:ANONYMOUS")
