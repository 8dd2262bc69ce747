"""DescribeAcls (29) and DeleteAcls (31) over TCP: the rows of the fact sheet's §7.3 table, filter matching (§7.4),
the grouping of DescribeAcls resources and deletion across several filters."""

from __future__ import annotations

import pytest
import structlog

from kafka_shim.protocol.messages import DeleteAclsRequest, DescribeAclsRequest
from kafka_shim.shim.handlers import CloseConnection
from kafka_shim.shim.handlers.acls import delete_acls, describe_acls, standard_acl_order
from tests.support.acl_helpers import (
    ALLOW,
    ANY,
    CLUSTER,
    DENY,
    DESCRIBE,
    GROUP,
    LITERAL,
    MATCH,
    PREFIXED,
    READ,
    TOPIC,
    WRITE,
    acl_rows,
    binding,
    connect,
    delete_filter,
    describe_filter,
    grant,
    handler_context,
    row,
)

DESCRIBE_ACLS, DELETE_ACLS = 29, 31

# The examples of §7.4: literal, wildcard and prefixed ACLs on topics, one group ACL.
LITERAL_FOO = binding(name="foo")
LITERAL_STAR = binding(name="*")
PREFIX_F = binding(name="f", pattern=PREFIXED)
PREFIX_FO = binding(name="fo", pattern=PREFIXED, principal="User:bob")
PREFIX_FOO = binding(name="foo", pattern=PREFIXED, operation=WRITE, permission=DENY)
LITERAL_BAR = binding(name="bar", host="10.0.0.1")
GROUP_FOO = binding(rtype=GROUP, name="foo", principal="User:*")
ALL = [LITERAL_FOO, LITERAL_STAR, PREFIX_F, PREFIX_FO, PREFIX_FOO, LITERAL_BAR, GROUP_FOO]


@pytest.fixture
async def populated(admin_broker):
    grant(admin_broker, *ALL)
    return admin_broker


async def describe(client, version: int = 3, **kw) -> list[tuple]:
    answer = await client.request(DESCRIBE_ACLS, version, describe_filter(**kw))
    assert (answer.error_code, answer.error_message) == (0, "")
    return acl_rows(answer)


def rows(*bindings) -> list[tuple]:
    return sorted(row(b) for b in bindings)


@pytest.mark.parametrize(("kw", "expected"), [
    ({}, ALL),
    ({"rtype": GROUP}, [GROUP_FOO]),
    ({"rtype": TOPIC, "name": "foo", "pattern": LITERAL}, [LITERAL_FOO]),
    ({"rtype": TOPIC, "name": "Foo", "pattern": LITERAL}, []),  # names are case-sensitive
    ({"rtype": TOPIC, "name": "foo", "pattern": ANY}, [LITERAL_FOO, PREFIX_FOO]),  # ANY: exact names only
    ({"rtype": TOPIC, "name": "foo", "pattern": MATCH}, [LITERAL_FOO, LITERAL_STAR, PREFIX_F, PREFIX_FO, PREFIX_FOO]),
    ({"rtype": ANY, "name": "foo", "pattern": MATCH}, [LITERAL_FOO, LITERAL_STAR, PREFIX_F, PREFIX_FO, PREFIX_FOO, GROUP_FOO]),
    ({"rtype": TOPIC, "name": "fo", "pattern": PREFIXED}, [PREFIX_FO]),
    ({"rtype": TOPIC, "name": "*", "pattern": LITERAL}, [LITERAL_STAR]),  # '*' is not a wildcard in a filter
    ({"pattern": PREFIXED}, [PREFIX_F, PREFIX_FO, PREFIX_FOO]),
    ({"principal": "User:bob"}, [PREFIX_FO]),
    ({"principal": "User:*"}, [GROUP_FOO]),  # only ACLs stored for User:* itself
    ({"host": "10.0.0.1"}, [LITERAL_BAR]),
    ({"operation": WRITE}, [PREFIX_FOO]),
    ({"operation": DESCRIBE}, []),  # no implication in filters
    ({"permission": DENY}, [PREFIX_FOO]),
], ids=lambda v: str(v) if isinstance(v, dict) else None)
async def test_describe_filters(populated, client_of, kw, expected) -> None:
    client = await client_of(populated)
    assert sorted(await describe(client, **kw)) == rows(*expected)


async def test_null_name_principal_and_host_are_wildcards(populated, client_of) -> None:
    # §7.3: a null resource name, principal or host matches anything in that field.
    client = await client_of(populated)
    assert sorted(await describe(client, name=None, principal=None, host=None)) == rows(*ALL)


async def test_resources_are_grouped_by_type_name_and_pattern(populated, client_of) -> None:
    client = await client_of(populated)
    grant(populated, binding(name="foo", principal="User:carol", operation=WRITE))
    answer = await client.request(DESCRIBE_ACLS, 3, describe_filter())
    keys = [(r.resource_type, r.resource_name, r.pattern_type) for r in answer.resources]
    assert len(keys) == len(set(keys)) == 7
    foo = next(r for r in answer.resources if (r.resource_type, r.resource_name, r.pattern_type) == (TOPIC, "foo", LITERAL))
    assert sorted((a.principal, a.operation) for a in foo.acls) == [("User:ANONYMOUS", READ), ("User:carol", WRITE)]
    # A stable order (Kafka's own depends on its JVM's hash codes): type, then name descending, then pattern type.
    assert keys == sorted(keys, key=lambda k: (k[0], [-ord(c) for c in k[1]] + [1], k[2]))


@pytest.mark.parametrize("version", range(4))
async def test_describe_every_version(populated, client_of, version) -> None:
    client = await client_of(populated)
    # v0 has no pattern field: the filter is LITERAL, so v0 clients never see PREFIXED ACLs (but do see '*').
    pattern = LITERAL if version == 0 else ANY
    found = await describe(client, version=version, rtype=TOPIC, pattern=pattern)
    expected = [LITERAL_FOO, LITERAL_STAR, LITERAL_BAR] if version == 0 else [LITERAL_FOO, LITERAL_STAR, PREFIX_F, PREFIX_FO, PREFIX_FOO,
                                                                                LITERAL_BAR]
    assert sorted(found) == rows(*expected)


async def test_v0_any_pattern_is_read_as_literal(populated) -> None:
    # Reached only by a decoded request object: v0 has no pattern field on the wire.
    answer = describe_acls(handler_context(populated, DESCRIBE_ACLS, 0), describe_filter(rtype=TOPIC, pattern=ANY))
    assert sorted(acl_rows(answer)) == rows(LITERAL_FOO, LITERAL_STAR, LITERAL_BAR)
    deleted = delete_acls(handler_context(populated, DELETE_ACLS, 0), DeleteAclsRequest(filters=[delete_filter(rtype=TOPIC, name="foo", pattern=ANY)]))
    assert [(m.resource_name, m.pattern_type) for m in deleted.filter_results[0].matching_acls] == [("foo", LITERAL)]


@pytest.mark.parametrize("pattern", [MATCH, PREFIXED])
async def test_v0_match_or_prefixed_is_refused_while_parsing(populated, pattern) -> None:
    with pytest.raises(CloseConnection, match="version 0 does not support"):
        describe_acls(handler_context(populated, DESCRIBE_ACLS, 0), describe_filter(pattern=pattern))
    with pytest.raises(CloseConnection, match="version 0 does not support"):
        delete_acls(handler_context(populated, DELETE_ACLS, 0), DeleteAclsRequest(filters=[delete_filter(pattern=pattern)]))


@pytest.mark.parametrize("field", ["rtype", "pattern", "operation", "permission"])
@pytest.mark.parametrize("api", [DESCRIBE_ACLS, DELETE_ACLS])
async def test_raw_code_zero_closes_the_connection(populated, field, api) -> None:
    bystander = await connect(populated)
    client = await connect(populated)
    try:
        body = describe_filter(**{field: 0}) if api == DESCRIBE_ACLS else DeleteAclsRequest(filters=[delete_filter(**{field: 0})])
        with structlog.testing.capture_logs() as logs:
            await client.send(api, 3, body)
            assert await client.closed_by_peer()
        assert any(e["event"] == "request_rejected" and "UNKNOWN" in e["reason"] for e in logs)
        assert sorted(await describe(bystander)) == rows(*ALL)  # nothing deleted, others still served
    finally:
        await client.close()
        await bystander.close()


@pytest.mark.parametrize("field", ["rtype", "pattern", "operation", "permission"])
async def test_describe_with_codes_outside_the_enums_matches_nothing(populated, client_of, field) -> None:
    client = await client_of(populated)
    assert await describe(client, **{field: 99}) == []


@pytest.mark.parametrize(("field", "message"), [("rtype", "Unknown patternFilter."), ("pattern", "Unknown patternFilter."),
                                                ("operation", "Unknown entryFilter."), ("permission", "Unknown entryFilter.")])
async def test_delete_with_codes_outside_the_enums_fails_that_filter(populated, client_of, field, message) -> None:
    client = await client_of(populated)
    answer = await client.request(DELETE_ACLS, 3, DeleteAclsRequest(filters=[delete_filter(**{field: 99}), delete_filter(name="bar")]))
    bad, good = answer.filter_results
    assert (bad.error_code, bad.error_message, bad.matching_acls) == (42, message, [])
    assert (good.error_code, good.error_message) == (0, None)
    assert [m.resource_name for m in good.matching_acls] == ["bar"]


async def test_delete_lists_what_each_filter_deleted(populated, client_of) -> None:
    client = await client_of(populated)
    answer = await client.request(DELETE_ACLS, 3, DeleteAclsRequest(filters=[
        delete_filter(rtype=TOPIC, name="foo", pattern=MATCH),
        delete_filter(principal="User:bob"),
        delete_filter(name="nothing-here"),
    ]))
    match_foo, bob, nothing = answer.filter_results
    assert sorted((m.resource_name, m.pattern_type) for m in match_foo.matching_acls) == [
        ("*", LITERAL), ("f", PREFIXED), ("fo", PREFIXED), ("foo", LITERAL), ("foo", PREFIXED)]
    # An ACL hit by two filters is listed under both (each filter sees the ACLs as they were), deleted once.
    assert [(m.resource_name, m.principal) for m in bob.matching_acls] == [("fo", "User:bob")]
    assert (nothing.error_code, nothing.matching_acls) == (0, [])
    assert all((m.error_code, m.error_message) == (0, None) for m in match_foo.matching_acls)
    assert sorted(await describe(client)) == rows(LITERAL_BAR, GROUP_FOO)


@pytest.mark.parametrize("version", range(4))
async def test_delete_every_version(populated, client_of, version) -> None:
    client = await client_of(populated)
    pattern = LITERAL if version == 0 else ANY
    answer = await client.request(DELETE_ACLS, version, DeleteAclsRequest(filters=[delete_filter(rtype=TOPIC, name="foo", pattern=pattern)]))
    deleted = [(m.resource_name, m.pattern_type) for m in answer.filter_results[0].matching_acls]
    assert sorted(deleted) == ([("foo", LITERAL)] if version == 0 else [("foo", LITERAL), ("foo", PREFIXED)])


async def test_delete_with_no_filters(populated, client_of) -> None:
    client = await client_of(populated)
    assert (await client.request(DELETE_ACLS, 3, DeleteAclsRequest(filters=[]))).filter_results == []
    assert sorted(await describe(client)) == rows(*ALL)


async def test_deleted_acls_stop_applying(populated, client_of) -> None:
    client = await client_of(populated)
    az = populated.authorizer
    assert az.authorize("User:bob", "127.0.0.1", READ, TOPIC, "fox")
    await client.request(DELETE_ACLS, 3, DeleteAclsRequest(filters=[delete_filter(rtype=TOPIC, pattern=ANY)]))
    assert not az.authorize("User:bob", "127.0.0.1", READ, TOPIC, "fox")


async def test_cluster_acls_are_described(admin_broker, client_of) -> None:
    grant(admin_broker, binding(rtype=CLUSTER, name="kafka-cluster", operation=DESCRIBE))
    client = await client_of(admin_broker)
    assert await describe(client, rtype=CLUSTER) == [(CLUSTER, "kafka-cluster", LITERAL, "User:ANONYMOUS", "*", DESCRIBE, ALLOW)]


async def test_describe_request_with_unusual_text(admin_broker, client_of) -> None:
    grant(admin_broker, binding(name="ünïcode-тема", principal="User:\U0001f600"))
    client = await client_of(admin_broker)
    found = await client.request(DESCRIBE_ACLS, 3, DescribeAclsRequest(resource_type_filter=TOPIC, resource_name_filter="ünïcode-тема",
                                                                       pattern_type_filter=MATCH, principal_filter=None, host_filter=None,
                                                                       operation=ANY, permission_type=ANY))
    assert [a.principal for r in found.resources for a in r.acls] == ["User:\U0001f600"]


def test_stable_order_follows_javas_string_order() -> None:
    # Java compares UTF-16 code units: a character beyond U+FFFF (a surrogate pair, 0xD83D...) sorts before U+FB01,
    # although its code point is larger. Names sort descending, as in Kafka's ACL cache.
    emoji, ligature = binding(name="\U0001f600"), binding(name="\ufb01")
    assert [b.pattern.name for b in standard_acl_order([emoji, ligature])] == ["\ufb01", "\U0001f600"]
    by_principal = standard_acl_order([binding(principal="User:\ufb01"), binding(principal="User:\U0001f600")])
    assert [b.entry.principal for b in by_principal] == ["User:\U0001f600", "User:\ufb01"]
