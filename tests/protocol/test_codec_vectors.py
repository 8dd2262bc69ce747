"""Byte vectors written by hand from the Kafka protocol guide, not produced by our encoder.

Wire rules used below (https://kafka.apache.org/protocol):

* non-flexible versions: STRING = int16 length + UTF-8 (NULLABLE_STRING: -1 = null),
  BYTES = int32 length, ARRAY = int32 count (-1 = null);
* flexible versions: COMPACT_STRING / COMPACT_ARRAY = unsigned varint (length + 1),
  0 = null, and every struct ends with a tagged-field section: uvarint count, then
  per field uvarint tag, uvarint size, data;
* UUID = 16 raw bytes, BOOLEAN = 1 byte, integers big-endian;
* request header v1 = api key, api version, correlation id, client id (NULLABLE_STRING);
  v2 adds a tagged-field section (the client id stays a non-compact string);
  response header v0 = correlation id; v1 adds a tagged-field section.
  ApiVersions responses always use response header v0 (KIP-511).

Every vector is checked both ways: decoding gives the expected object (built with
the message classes) and encoding that object gives exactly the bytes.
"""

from __future__ import annotations

import uuid

import pytest

from kafka_shim.protocol.errors import DecodeError
from kafka_shim.protocol.framing import (
    decode_response,
    encode_request,
    encode_response,
    parse_request,
    request_header_version,
    response_header_version,
)
from kafka_shim.protocol.messages import message_class

ApiVersionsRequest = message_class("ApiVersionsRequest")
ApiVersionsResponse = message_class("ApiVersionsResponse")
MetadataRequest = message_class("MetadataRequest")
MetadataResponse = message_class("MetadataResponse")
DescribeAclsResponse = message_class("DescribeAclsResponse")
RequestHeader = message_class("RequestHeader")
ResponseHeader = message_class("ResponseHeader")


def hexbytes(text: str) -> bytes:
    """bytes.fromhex, but tolerating the spaces used to group the hex below."""
    return bytes.fromhex(text)


# -- ApiVersions v3 request (flexible, request header v2) ------------------------------------

API_VERSIONS_V3_REQUEST_HEADER = hexbytes(
    "0012"  # RequestApiKey: int16 18 (ApiVersions)
    "0003"  # RequestApiVersion: int16 3
    "00000007"  # CorrelationId: int32 7
    "0003 636c69"  # ClientId: NULLABLE_STRING (int16 length 3) "cli" - not compact even in v2
    "00"  # header tagged fields: none
)
API_VERSIONS_V3_REQUEST_BODY = hexbytes(
    "12 6170616368652d6b61666b612d6a617661"  # ClientSoftwareName: COMPACT_STRING len 17+1, "apache-kafka-java"
    "06 332e392e30"  # ClientSoftwareVersion: COMPACT_STRING len 5+1, "3.9.0"
    "00"  # tagged fields: none
)
API_VERSIONS_V3_REQUEST = ApiVersionsRequest(client_software_name="apache-kafka-java", client_software_version="3.9.0")

# -- Metadata v8 request (non-flexible, request header v1) -----------------------------------

METADATA_V8_REQUEST_HEADER = hexbytes(
    "0003"  # RequestApiKey: int16 3 (Metadata)
    "0008"  # RequestApiVersion: int16 8
    "0000002a"  # CorrelationId: int32 42
    "0003 636c69"  # ClientId: NULLABLE_STRING "cli"
)
METADATA_V8_REQUEST_BODY = hexbytes(
    "00000001"  # Topics: ARRAY, int32 count 1
    "0003 666f6f"  #   Topics[0].Name: STRING "foo"
    "01"  # AllowAutoTopicCreation: true
    "00"  # IncludeClusterAuthorizedOperations: false
    "01"  # IncludeTopicAuthorizedOperations: true
)
METADATA_V8_REQUEST = MetadataRequest(
    topics=[MetadataRequest.MetadataRequestTopic(name="foo")],
    allow_auto_topic_creation=True,
    include_cluster_authorized_operations=False,
    include_topic_authorized_operations=True,
)

# -- Metadata v12 response (flexible, response header v1) ------------------------------------

TOPIC_ID = uuid.UUID("3f1c9a5e-7b2d-4e6f-8a0b-1c2d3e4f5a6b")
METADATA_V12_RESPONSE_HEADER = hexbytes(
    "0000002a"  # CorrelationId: int32 42
    "00"  # header tagged fields: none
)
METADATA_V12_RESPONSE_BODY = hexbytes(
    "00000000"  # ThrottleTimeMs: int32 0
    "02"  # Brokers: COMPACT_ARRAY, 1 + 1
    "00000001"  #   NodeId: int32 1
    "0a 6c6f63616c686f7374"  #   Host: COMPACT_STRING len 9+1, "localhost"
    "00002384"  #   Port: int32 9092
    "00"  #   Rack: COMPACT_NULLABLE_STRING null
    "00"  #   broker tagged fields: none
    "0c 6162632d636c7573746572"  # ClusterId: COMPACT_NULLABLE_STRING len 11+1, "abc-cluster"
    "00000001"  # ControllerId: int32 1
    "02"  # Topics: COMPACT_ARRAY, 1 + 1
    "0000"  #   ErrorCode: int16 0
    "04 666f6f"  #   Name: COMPACT_NULLABLE_STRING len 3+1, "foo"
    "3f1c9a5e7b2d4e6f8a0b1c2d3e4f5a6b"  #   TopicId: UUID, 16 bytes
    "00"  #   IsInternal: false
    "02"  #   Partitions: COMPACT_ARRAY, 1 + 1
    "0000"  #     ErrorCode: int16 0
    "00000000"  #     PartitionIndex: int32 0
    "00000001"  #     LeaderId: int32 1
    "00000005"  #     LeaderEpoch: int32 5
    "03 00000001 00000002"  #     ReplicaNodes: COMPACT_ARRAY of int32, 2 + 1: [1, 2]
    "02 00000001"  #     IsrNodes: COMPACT_ARRAY of int32, 1 + 1: [1]
    "01"  #     OfflineReplicas: COMPACT_ARRAY, 0 + 1: []
    "00"  #     partition tagged fields: none
    "00000df8"  #   TopicAuthorizedOperations: int32 0xdf8 (READ..ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)
    "00"  #   topic tagged fields: none
    "00"  # tagged fields: none (ClusterAuthorizedOperations is v8-10 only)
)
METADATA_V12_RESPONSE = MetadataResponse(
    throttle_time_ms=0,
    brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="localhost", port=9092, rack=None)],
    cluster_id="abc-cluster",
    controller_id=1,
    topics=[
        MetadataResponse.MetadataResponseTopic(
            error_code=0,
            name="foo",
            topic_id=TOPIC_ID,
            is_internal=False,
            partitions=[
                MetadataResponse.MetadataResponsePartition(
                    error_code=0,
                    partition_index=0,
                    leader_id=1,
                    leader_epoch=5,
                    replica_nodes=[1, 2],
                    isr_nodes=[1],
                    offline_replicas=[],
                )
            ],
            topic_authorized_operations=0xDF8,
        )
    ],
)

# -- DescribeAcls v1 response (non-flexible, response header v0) -----------------------------

DESCRIBE_ACLS_V1_RESPONSE_HEADER = hexbytes(
    "00000063"  # CorrelationId: int32 99
)
DESCRIBE_ACLS_V1_RESPONSE_BODY = hexbytes(
    "00000000"  # ThrottleTimeMs: int32 0
    "0000"  # ErrorCode: int16 0
    "ffff"  # ErrorMessage: NULLABLE_STRING null (length -1)
    "00000001"  # Resources: ARRAY, int32 count 1
    "02"  #   ResourceType: int8 2 (TOPIC)
    "0003 666f6f"  #   ResourceName: STRING "foo"
    "03"  #   PatternType: int8 3 (LITERAL)
    "00000001"  #   Acls: ARRAY, int32 count 1
    "000a 557365723a616c696365"  #     Principal: STRING "User:alice"
    "0001 2a"  #     Host: STRING "*"
    "02"  #     Operation: int8 2 (ALL)
    "03"  #     PermissionType: int8 3 (ALLOW)
)
DESCRIBE_ACLS_V1_RESPONSE = DescribeAclsResponse(
    throttle_time_ms=0,
    error_code=0,
    error_message=None,
    resources=[
        DescribeAclsResponse.DescribeAclsResource(
            resource_type=2,
            resource_name="foo",
            pattern_type=3,
            acls=[DescribeAclsResponse.AclDescription(principal="User:alice", host="*", operation=2, permission_type=3)],
        )
    ],
)

# -- ApiVersions v3 response with known tagged fields ----------------------------------------

API_VERSIONS_V3_RESPONSE_BODY = hexbytes(
    "0000"  # ErrorCode: int16 0
    "02"  # ApiKeys: COMPACT_ARRAY, 1 + 1
    "0012"  #   ApiKey: int16 18
    "0000"  #   MinVersion: int16 0
    "0004"  #   MaxVersion: int16 4
    "00"  #   api key tagged fields: none
    "00000000"  # ThrottleTimeMs: int32 0
    "03"  # tagged fields: 3
    "00 17"  #   tag 0 (SupportedFeatures), size 23
    "02"  #     COMPACT_ARRAY, 1 + 1
    "11 6d657461646174612e76657273696f6e"  #     Name: COMPACT_STRING len 16+1, "metadata.version"
    "0001"  #     MinVersion: int16 1
    "0014"  #     MaxVersion: int16 20
    "00"  #     feature tagged fields: none
    "01 08"  #   tag 1 (FinalizedFeaturesEpoch), size 8
    "0000000000000005"  #     int64 5
    "02 17"  #   tag 2 (FinalizedFeatures), size 23
    "02"  #     COMPACT_ARRAY, 1 + 1
    "11 6d657461646174612e76657273696f6e"  #     Name: "metadata.version"
    "0014"  #     MaxVersionLevel: int16 20
    "0001"  #     MinVersionLevel: int16 1
    "00"  #     feature tagged fields: none
    # tag 3 (ZkMigrationReady) is at its default (false), so it is not written
)
API_VERSIONS_V3_RESPONSE = ApiVersionsResponse(
    error_code=0,
    api_keys=[ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=4)],
    throttle_time_ms=0,
    supported_features=[ApiVersionsResponse.SupportedFeatureKey(name="metadata.version", min_version=1, max_version=20)],
    finalized_features_epoch=5,
    finalized_features=[
        ApiVersionsResponse.FinalizedFeatureKey(name="metadata.version", max_version_level=20, min_version_level=1)
    ],
    zk_migration_ready=False,
)

# -- Metadata v12 request with unknown tagged fields -----------------------------------------

METADATA_V12_REQUEST_UNKNOWN_TAGS_BODY = hexbytes(
    "02"  # Topics: COMPACT_NULLABLE_ARRAY, 1 + 1
    "3f1c9a5e7b2d4e6f8a0b1c2d3e4f5a6b"  #   TopicId: UUID
    "04 666f6f"  #   Name: COMPACT_NULLABLE_STRING "foo"
    "01"  #   topic tagged fields: 1
    "05 02 beef"  #     tag 5, size 2, data be ef
    "01"  # AllowAutoTopicCreation: true
    "00"  # IncludeTopicAuthorizedOperations: false
    "02"  # tagged fields: 2
    "00 01 2a"  #   tag 0, size 1, data 2a
    "ac02 03 010203"  #   tag 300 (uvarint ac 02), size 3, data 01 02 03
)
METADATA_V12_REQUEST_UNKNOWN_TAGS = MetadataRequest(
    topics=[MetadataRequest.MetadataRequestTopic(topic_id=TOPIC_ID, name="foo", unknown_tagged_fields=[(5, b"\xbe\xef")])],
    allow_auto_topic_creation=True,
    include_topic_authorized_operations=False,
    unknown_tagged_fields=[(0, b"\x2a"), (300, b"\x01\x02\x03")],
)

# ApiVersions v3 response: two known tags (1 and 3) and an unknown one (9) in the same section.
API_VERSIONS_V3_RESPONSE_MIXED_TAGS_BODY = hexbytes(
    "0000"  # ErrorCode: int16 0
    "01"  # ApiKeys: COMPACT_ARRAY, 0 + 1: empty
    "00000000"  # ThrottleTimeMs: int32 0
    "03"  # tagged fields: 3
    "01 08 0000000000000007"  #   tag 1 (FinalizedFeaturesEpoch), size 8, int64 7
    "03 01 01"  #   tag 3 (ZkMigrationReady), size 1, true
    "09 02 cafe"  #   tag 9 (unknown), size 2, data ca fe
)
API_VERSIONS_V3_RESPONSE_MIXED_TAGS = ApiVersionsResponse(
    error_code=0,
    api_keys=[],
    throttle_time_ms=0,
    finalized_features_epoch=7,
    zk_migration_ready=True,
    unknown_tagged_fields=[(9, b"\xca\xfe")],
)

BODY_VECTORS = [
    pytest.param(ApiVersionsRequest, 3, API_VERSIONS_V3_REQUEST_BODY, API_VERSIONS_V3_REQUEST, id="ApiVersionsRequest-v3"),
    pytest.param(MetadataRequest, 8, METADATA_V8_REQUEST_BODY, METADATA_V8_REQUEST, id="MetadataRequest-v8"),
    pytest.param(MetadataResponse, 12, METADATA_V12_RESPONSE_BODY, METADATA_V12_RESPONSE, id="MetadataResponse-v12"),
    pytest.param(
        DescribeAclsResponse, 1, DESCRIBE_ACLS_V1_RESPONSE_BODY, DESCRIBE_ACLS_V1_RESPONSE, id="DescribeAclsResponse-v1"
    ),
    pytest.param(
        ApiVersionsResponse, 3, API_VERSIONS_V3_RESPONSE_BODY, API_VERSIONS_V3_RESPONSE, id="ApiVersionsResponse-v3-known-tags"
    ),
    pytest.param(
        MetadataRequest,
        12,
        METADATA_V12_REQUEST_UNKNOWN_TAGS_BODY,
        METADATA_V12_REQUEST_UNKNOWN_TAGS,
        id="MetadataRequest-v12-unknown-tags",
    ),
    pytest.param(
        ApiVersionsResponse,
        3,
        API_VERSIONS_V3_RESPONSE_MIXED_TAGS_BODY,
        API_VERSIONS_V3_RESPONSE_MIXED_TAGS,
        id="ApiVersionsResponse-v3-mixed-tags",
    ),
]


@pytest.mark.parametrize(("cls", "version", "data", "expected"), BODY_VECTORS)
def test_decode_vector(cls, version: int, data: bytes, expected) -> None:
    decoded = cls.decode(data, version, whole=True)
    assert decoded == expected
    assert decoded.to_dict() == expected.to_dict()
    assert (decoded.unknown_tagged_fields or None) == (expected.unknown_tagged_fields or None)


@pytest.mark.parametrize(("cls", "version", "data", "expected"), BODY_VECTORS)
def test_encode_vector(cls, version: int, data: bytes, expected) -> None:
    assert expected.encode(version) == data


@pytest.mark.parametrize(("cls", "version", "data", "expected"), BODY_VECTORS)
def test_decode_from_reports_end(cls, version: int, data: bytes, expected) -> None:
    msg, end = cls.decode_from(b"\x99" * 5 + data + b"\x77" * 3, version, 5)
    assert msg == expected
    assert end == 5 + len(data)


def test_unknown_tagged_fields_are_kept_and_written_back() -> None:
    data = METADATA_V12_REQUEST_UNKNOWN_TAGS_BODY
    msg = MetadataRequest.decode(data, 12, whole=True)
    assert msg.unknown_tagged_fields == [(0, b"\x2a"), (300, b"\x01\x02\x03")]
    assert msg.topics[0].unknown_tagged_fields == [(5, b"\xbe\xef")]
    assert msg.encode(12) == data
    # Held out of order, they are still written in ascending tag order.
    msg.unknown_tagged_fields = [(300, b"\x01\x02\x03"), (0, b"\x2a")]
    assert msg.encode(12) == data


def test_known_tagged_fields_decode_to_attributes() -> None:
    msg = ApiVersionsResponse.decode(API_VERSIONS_V3_RESPONSE_BODY, 3, whole=True)
    assert msg.unknown_tagged_fields is None
    assert msg.finalized_features_epoch == 5
    assert [f.name for f in msg.supported_features] == ["metadata.version"]
    assert msg.zk_migration_ready is False
    mixed = ApiVersionsResponse.decode(API_VERSIONS_V3_RESPONSE_MIXED_TAGS_BODY, 3, whole=True)
    assert mixed.unknown_tagged_fields == [(9, b"\xca\xfe")]
    assert mixed.supported_features == [] and mixed.finalized_features == []
    assert mixed.zk_migration_ready is True


def test_known_tagged_fields_are_omitted_at_their_defaults() -> None:
    # No tagged field differs from its default: the section is the single byte 00.
    assert ApiVersionsResponse(api_keys=[]).encode(3) == hexbytes(
        "0000"  # ErrorCode
        "01"  # ApiKeys: empty COMPACT_ARRAY
        "00000000"  # ThrottleTimeMs
        "00"  # tagged fields: none (FinalizedFeaturesEpoch is at its default, -1)
    )


# -- headers ---------------------------------------------------------------------------------


def test_header_versions() -> None:
    assert request_header_version(18, 3) == 2
    assert request_header_version(3, 8) == 1
    assert request_header_version(3, 12) == 2
    assert request_header_version(7, 0) == 0  # ControlledShutdown v0
    assert response_header_version(3, 12) == 1
    assert response_header_version(29, 1) == 0
    assert response_header_version(18, 3) == 0  # ApiVersions: always v0 (KIP-511)


def test_request_header_vectors() -> None:
    v2 = RequestHeader(request_api_key=18, request_api_version=3, correlation_id=7, client_id="cli")
    assert v2.encode(2) == API_VERSIONS_V3_REQUEST_HEADER
    assert RequestHeader.decode(API_VERSIONS_V3_REQUEST_HEADER, 2, whole=True) == v2
    v1 = RequestHeader(request_api_key=3, request_api_version=8, correlation_id=42, client_id="cli")
    assert v1.encode(1) == METADATA_V8_REQUEST_HEADER
    assert RequestHeader.decode(METADATA_V8_REQUEST_HEADER, 1, whole=True) == v1
    null_client = hexbytes("0003 000c 00000001 ffff 00")  # v2 header, ClientId null = int16 -1
    assert RequestHeader.decode(null_client, 2, whole=True) == RequestHeader(
        request_api_key=3, request_api_version=12, correlation_id=1, client_id=None
    )
    v0 = hexbytes("0007 0000 00000005")  # v0: no ClientId at all
    assert RequestHeader.decode(v0, 0, whole=True) == RequestHeader(
        request_api_key=7,
        request_api_version=0,
        correlation_id=5,
        client_id="",  # absent: the schema default ""
    )


def test_response_header_vectors() -> None:
    assert ResponseHeader(correlation_id=42).encode(1) == METADATA_V12_RESPONSE_HEADER
    assert ResponseHeader(correlation_id=99).encode(0) == DESCRIBE_ACLS_V1_RESPONSE_HEADER
    assert ResponseHeader.decode(METADATA_V12_RESPONSE_HEADER, 1, whole=True) == ResponseHeader(correlation_id=42)


# -- whole frames ----------------------------------------------------------------------------


def size_prefix(n: int) -> bytes:
    return n.to_bytes(4, "big", signed=True)


def test_api_versions_v3_request_frame() -> None:
    payload = API_VERSIONS_V3_REQUEST_HEADER + API_VERSIONS_V3_REQUEST_BODY
    frame = hexbytes("00000027") + payload  # size 39 = 14 header + 25 body
    assert len(payload) == 39
    assert encode_request(18, 3, 7, API_VERSIONS_V3_REQUEST, client_id="cli") == frame
    parsed = parse_request(frame[4:])
    assert (parsed.api_key, parsed.api_version, parsed.correlation_id) == (18, 3, 7)
    assert parsed.header.client_id == "cli"
    assert parsed.header_version == 2
    assert parsed.body_offset == len(API_VERSIONS_V3_REQUEST_HEADER)
    assert parsed.decode_body() == API_VERSIONS_V3_REQUEST


def test_metadata_v8_request_frame() -> None:
    payload = METADATA_V8_REQUEST_HEADER + METADATA_V8_REQUEST_BODY
    frame = hexbytes("00000019") + payload  # size 25 = 13 header + 12 body
    assert len(payload) == 25
    assert encode_request(3, 8, 42, METADATA_V8_REQUEST, client_id="cli") == frame
    parsed = parse_request(frame[4:])
    assert (parsed.api_key, parsed.api_version, parsed.correlation_id) == (3, 8, 42)
    assert parsed.header_version == 1
    assert parsed.body_offset == len(METADATA_V8_REQUEST_HEADER)
    assert parsed.decode_body() == METADATA_V8_REQUEST


def test_request_frame_with_null_client_id() -> None:
    frame = encode_request(3, 8, 42, METADATA_V8_REQUEST, client_id=None)
    header = hexbytes("0003 0008 0000002a ffff")  # ClientId null: int16 -1
    assert frame == size_prefix(len(header) + len(METADATA_V8_REQUEST_BODY)) + header + METADATA_V8_REQUEST_BODY
    assert parse_request(frame[4:]).header.client_id is None


@pytest.mark.parametrize(
    ("api_key", "version", "correlation_id", "header", "body", "message"),
    [
        pytest.param(
            3, 12, 42, METADATA_V12_RESPONSE_HEADER, METADATA_V12_RESPONSE_BODY, METADATA_V12_RESPONSE, id="MetadataResponse-v12"
        ),
        pytest.param(
            29,
            1,
            99,
            DESCRIBE_ACLS_V1_RESPONSE_HEADER,
            DESCRIBE_ACLS_V1_RESPONSE_BODY,
            DESCRIBE_ACLS_V1_RESPONSE,
            id="DescribeAclsResponse-v1",
        ),
        pytest.param(
            18, 3, 7, hexbytes("00000007"), API_VERSIONS_V3_RESPONSE_BODY, API_VERSIONS_V3_RESPONSE, id="ApiVersionsResponse-v3"
        ),
    ],
)
def test_response_frames(api_key: int, version: int, correlation_id: int, header: bytes, body: bytes, message) -> None:
    frame = size_prefix(len(header) + len(body)) + header + body
    assert encode_response(api_key, version, correlation_id, message) == frame
    corr, decoded = decode_response(api_key, version, frame[4:])
    assert corr == correlation_id
    assert decoded == message


def test_metadata_v12_response_frame_literal() -> None:
    # The same frame as above, with the size prefix spelled out: 5 header + 102 body bytes.
    assert len(METADATA_V12_RESPONSE_BODY) == 102
    assert encode_response(3, 12, 42, METADATA_V12_RESPONSE)[:9] == hexbytes("0000006b 0000002a 00")


# -- invalid UTF-8 ---------------------------------------------------------------------------


def test_invalid_utf8_is_replaced_like_java() -> None:
    # Java's new String(bytes, UTF_8) turns malformed input into U+FFFD rather than failing.
    flexible = hexbytes(
        "03 ff61"  # ClientSoftwareName: COMPACT_STRING len 2+1, bytes ff 61 (ff is never valid UTF-8)
        "02 62"  # ClientSoftwareVersion: "b"
        "00"  # tagged fields: none
    )
    msg = ApiVersionsRequest.decode(flexible, 3, whole=True)
    assert (msg.client_software_name, msg.client_software_version) == ("\ufffda", "b")
    non_flexible = hexbytes(
        "00000001"  # Topics: 1
        "0002 c328"  #   Name: STRING, bytes c3 28 (a truncated two-byte sequence, then "(")
        "01 00 00"  # AllowAutoTopicCreation, IncludeClusterAuthorizedOperations, IncludeTopicAuthorizedOperations
    )
    assert MetadataRequest.decode(non_flexible, 8, whole=True).topics[0].name == "\ufffd("


def test_invalid_utf8_in_truncated_data_is_a_decode_error() -> None:
    with pytest.raises(DecodeError) as info:
        ApiVersionsRequest.decode(hexbytes("05 ff61"), 3)  # 4 bytes claimed, 2 present, invalid UTF-8
    assert info.value.field == "ClientSoftwareName"



def test_every_tag_in_the_schemas_is_a_number() -> None:
    # BrokerHeartbeatRequest.json writes "tag": "0"; the model must hold 0, or code that compares tags (the
    # hypothesis strategies reserving known tags, for one) treats the known field as an unknown one.
    from kafka_shim.protocol.schema import message_spec, schema_files

    for name in schema_files():
        for struct in message_spec(name).struct_specs():
            for f in struct.fields:
                assert f.tag is None or type(f.tag) is int, (name, struct.name, f.name, f.tag)
    assert message_spec("BrokerHeartbeatRequest").struct.fields[-1].tag == 0
