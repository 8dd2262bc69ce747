"""Property tests of the generated codecs, driven by strategies built from the schemas.

For every (message, version) in schemas/ (RequestHeader v0-2 and ResponseHeader
v0-1 included) random valid messages must survive ``decode(encode(m)) == m`` and
``encode(decode(b)) == b``. Then: non-default values in fields a version lacks
raise UnsupportedVersionError unless the schema marks the field ignorable, in
which case they are silently dropped.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shim.protocol.errors import EncodeError, UnsupportedVersionError
from kafka_shim.protocol.messages import message_class
from kafka_shim.protocol.schema import FieldSpec, StructSpec, message_spec, schema_files
from tests.support.schema_strategies import (
    all_message_versions,
    default_of,
    field_strategy,
    message_strategy,
    pair_id,
    sort_unknown_tags,
    struct_class,
)

PAIRS = all_message_versions()

SETTINGS = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def test_every_schema_and_version_is_covered() -> None:
    names = {name for name, _ in PAIRS}
    assert names == set(schema_files())
    assert {v for n, v in PAIRS if n == "RequestHeader"} == {0, 1, 2}
    assert {v for n, v in PAIRS if n == "ResponseHeader"} == {0, 1}
    assert ("MetadataResponse", 12) in PAIRS
    assert len(PAIRS) == sum(message_spec(n).valid_versions.hi - message_spec(n).valid_versions.lo + 1 for n in schema_files())


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
@SETTINGS
@given(data=st.data())
def test_roundtrip(pair: tuple[str, int], data: st.DataObject) -> None:
    """decode(encode(m)) == m and encode(decode(b)) == b, for b = encode(m)."""
    name, version = pair
    cls = message_class(name)
    msg = data.draw(message_strategy(name, version), label="message")

    encoded = msg.encode(version)
    assert isinstance(encoded, bytes)

    decoded = cls.decode(encoded, version, whole=True)
    assert type(decoded) is cls
    # The encoder writes tagged fields sorted by tag; the drawn message may hold its
    # unknown ones in any order.
    assert decoded == sort_unknown_tags(msg)

    assert decoded.encode(version) == encoded

    # decode_from at an offset inside a larger buffer reports where the message ends.
    padded = b"\xaa\xbb\xcc" + encoded + b"\xdd"
    again, end = cls.decode_from(padded, version, 3)
    assert end == 3 + len(encoded)
    assert again == decoded


# -- fields a version lacks ------------------------------------------------------------------


@dataclass(frozen=True)
class AbsentField:
    """A field missing from ``version``, reached from the message through ``path`` (all present)."""

    message: str
    version: int
    path: tuple[FieldSpec, ...]  # ancestors (arrays or structs present in the version), then the field

    @property
    def dotted(self) -> str:
        return ".".join(f.name for f in self.path)

    @property
    def leaf(self) -> FieldSpec:
        return self.path[-1]

    def __str__(self) -> str:
        return f"{self.message}-v{self.version}-{self.dotted}"


def absent_fields() -> list[AbsentField]:
    """Every field absent from a version whose enclosing arrays/structs are present in it."""
    found: list[AbsentField] = []

    def walk(name: str, version: int, struct: StructSpec, ancestors: tuple[FieldSpec, ...]) -> None:
        for f in struct.fields:
            if not f.present_in(version):
                found.append(AbsentField(name, version, (*ancestors, f)))
                continue
            t = f.type.element if f.type.kind == "array" else f.type
            if t.kind == "struct":
                walk(name, version, t.struct, (*ancestors, f))

    for name, version in PAIRS:
        walk(name, version, message_spec(name).struct, ())
    return found


ABSENT = absent_fields()
NON_IGNORABLE = [a for a in ABSENT if not a.leaf.ignorable]
IGNORABLE = [a for a in ABSENT if a.leaf.ignorable]


def leaf_value_strategy(a: AbsentField) -> st.SearchStrategy[Any]:
    """Non-default, non-null values for the absent field, drawn at a version that has it."""
    f = a.leaf
    version = f.versions.lo
    flexible = version in message_spec(a.message).flexible_versions
    default = default_of(a.message, f)
    return field_strategy(a.message, f, version, flexible, unknown_tags=False).filter(lambda v: v is not None and v != default)


def build_with(a: AbsentField, value: Any) -> Any:
    """A default message in which the path to the absent field exists, with that field set to ``value``.

    Enclosing arrays get one default element; enclosing structs are default instances.
    """
    msg = message_class(a.message)()
    holder = msg
    for f in a.path[:-1]:
        t = f.type.element if f.type.kind == "array" else f.type
        child = struct_class(a.message, t.struct)()
        setattr(holder, f.attr, [child] if f.type.kind == "array" else child)
        holder = child
    setattr(holder, a.leaf.attr, value)
    return msg


def test_absent_field_inventory() -> None:
    # A few cases that the schemas promise, so the lists above are not silently empty.
    ids = {str(a) for a in ABSENT}
    assert "MetadataRequest-v11-IncludeClusterAuthorizedOperations" in ids
    assert "MetadataRequest-v3-AllowAutoTopicCreation" in ids
    assert "DescribeAclsResponse-v0-Resources.PatternType" in ids
    assert "MetadataRequest-v9-Topics.TopicId" in ids
    assert len(NON_IGNORABLE) > 100 and len(IGNORABLE) > 100


@SETTINGS
@given(case=st.sampled_from(NON_IGNORABLE), data=st.data())
def test_non_default_non_ignorable_field_raises(case: AbsentField, data: st.DataObject) -> None:
    value = data.draw(leaf_value_strategy(case), label="value")
    msg = build_with(case, value)
    with pytest.raises(UnsupportedVersionError) as info:
        msg.encode(case.version)
    err = info.value
    assert err.message == case.message
    assert err.version == case.version
    assert err.field == case.dotted


@SETTINGS
@given(case=st.sampled_from(IGNORABLE), data=st.data())
def test_non_default_ignorable_field_is_dropped(case: AbsentField, data: st.DataObject) -> None:
    value = data.draw(leaf_value_strategy(case), label="value")
    msg = build_with(case, value)
    encoded = msg.encode(case.version)
    decoded = message_class(case.message).decode(encoded, case.version, whole=True)
    # The same message with the field left at its default encodes to the same bytes.
    plain = build_with(case, default_of(case.message, case.leaf))
    assert plain.encode(case.version) == encoded
    assert decoded == plain


@SETTINGS
@given(data=st.data())
def test_default_values_of_absent_fields_are_accepted(data: st.DataObject) -> None:
    """Leaving a missing non-ignorable field at its default is fine at every version."""
    case = data.draw(st.sampled_from(NON_IGNORABLE), label="case")
    msg = build_with(case, default_of(case.message, case.leaf))
    decoded = message_class(case.message).decode(msg.encode(case.version), case.version, whole=True)
    assert decoded == msg


# -- concrete cases from the schemas ---------------------------------------------------------


def test_metadata_request_include_cluster_authorized_operations_is_not_ignorable() -> None:
    # "IncludeClusterAuthorizedOperations": versions 8-10, no "ignorable" -> must raise from v11.
    req_cls = message_class("MetadataRequest")
    f = next(f for f in message_spec("MetadataRequest").struct.fields if f.name == "IncludeClusterAuthorizedOperations")
    assert not f.ignorable and str(f.versions) == "8-10"
    req = req_cls(topics=None, include_cluster_authorized_operations=True)
    for version in (8, 9, 10):
        assert req_cls.decode(req.encode(version), version).include_cluster_authorized_operations is True
    for version in (7, 11, 12):
        with pytest.raises(UnsupportedVersionError) as info:
            req.encode(version)
        assert info.value.field == "IncludeClusterAuthorizedOperations"
        assert info.value.message == "MetadataRequest" and info.value.version == version
    # At its default (false) it is fine everywhere.
    req_cls(topics=None).encode(12)


def test_metadata_request_allow_auto_topic_creation_default_true() -> None:
    # "AllowAutoTopicCreation": versions 4+, default true, "ignorable": false.
    req_cls = message_class("MetadataRequest")
    assert req_cls().allow_auto_topic_creation is True
    req_cls(topics=[]).encode(3)  # the default is fine at v3
    with pytest.raises(UnsupportedVersionError) as info:
        req_cls(topics=[], allow_auto_topic_creation=False).encode(3)
    assert info.value.field == "AllowAutoTopicCreation"


def test_metadata_request_topic_id_is_ignorable() -> None:
    req_cls = message_class("MetadataRequest")
    topic = req_cls.MetadataRequestTopic(topic_id=uuid.UUID(int=7), name="t")
    data = req_cls(topics=[topic]).encode(9)  # TopicId is 10+, ignorable: dropped
    assert data == req_cls(topics=[req_cls.MetadataRequestTopic(name="t")]).encode(9)
    assert req_cls.decode(data, 9).topics[0].topic_id == uuid.UUID(int=0)


def test_describe_acls_pattern_type_not_ignorable() -> None:
    # "PatternType": int8, versions 1+, default 3 (LITERAL), "ignorable": false.
    cls = message_class("DescribeAclsResponse")
    resource = cls.DescribeAclsResource(resource_type=2, resource_name="t", pattern_type=3)
    cls(resources=[resource]).encode(0)  # LITERAL is the default: fine at v0
    resource.pattern_type = 4  # PREFIXED cannot be said at v0
    with pytest.raises(UnsupportedVersionError) as info:
        cls(resources=[resource]).encode(0)
    assert info.value.field == "Resources.PatternType"
    assert info.value.message == "DescribeAclsResponse" and info.value.version == 0


def test_api_versions_request_client_software_is_ignorable() -> None:
    cls = message_class("ApiVersionsRequest")
    assert cls(client_software_name="x", client_software_version="1").encode(2) == b""


def test_api_versions_response_tagged_fields_are_ignorable() -> None:
    cls = message_class("ApiVersionsResponse")
    msg = cls(finalized_features_epoch=5, zk_migration_ready=True)
    assert msg.encode(2) == cls().encode(2)


# -- encoder validation that Kafka's generated code performs ---------------------------------
# Each of these once failed: they pin behaviour Kafka's generated Java codecs have.


def test_unknown_tagged_fields_at_non_flexible_version_raise() -> None:
    cls = message_class("MetadataRequest")
    with pytest.raises(UnsupportedVersionError):
        cls(topics=[], unknown_tagged_fields=[(1, b"a")]).encode(8)


def test_compact_string_longer_than_int16_raises() -> None:
    cls = message_class("ApiVersionsRequest")
    with pytest.raises(EncodeError) as info:
        cls(client_software_name="x" * 40000, client_software_version="1").encode(3)
    assert info.value.field == "ClientSoftwareName"


def test_string_longer_than_int16_is_not_a_version_error() -> None:
    cls = message_class("MetadataRequest")
    msg = cls(topics=[cls.MetadataRequestTopic(name="x" * 40000)])
    with pytest.raises(EncodeError) as info:
        msg.encode(8)
    assert info.value.field == "Topics.Name"
    assert not isinstance(info.value, UnsupportedVersionError)


def test_unknown_tagged_field_with_non_bytes_data_raises_encode_error() -> None:
    cls = message_class("MetadataRequest")
    with pytest.raises(EncodeError):
        cls(topics=[], unknown_tagged_fields=[(1, "a")]).encode(12)


def test_encode_error_in_tagged_fields_names_the_tagged_section() -> None:
    cls = message_class("MetadataRequest")
    with pytest.raises(EncodeError) as info:
        cls(topics=[], unknown_tagged_fields=[(2**32, b"")]).encode(12)
    assert info.value.field == "<tagged fields>"
