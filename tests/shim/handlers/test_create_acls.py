"""CreateAcls (key 30) over TCP, one test per row of the fact sheet's §7.2 table, plus results and storage."""

from __future__ import annotations

import pytest
import structlog

from kafka_shim.authorizer import AclPermissionType, PatternType
from kafka_shim.protocol.messages import ApiVersionsRequest, CreateAclsRequest
from kafka_shim.shim.handlers import CloseConnection
from kafka_shim.shim.handlers.acls import create_acls
from tests.support.acl_helpers import (
    ALLOW,
    ALTER,
    ANONYMOUS,
    ANY,
    CLUSTER,
    DESCRIBE,
    LITERAL,
    MATCH,
    PREFIXED,
    READ,
    TOPIC,
    USER,
    acl_rows,
    binding,
    connect,
    creation,
    describe_filter,
    grant,
    handler_context,
)

CREATE, DESCRIBE_ACLS = 30, 29


async def create(client, *creations, version: int = 3):
    return await client.request(CREATE, version, CreateAclsRequest(creations=list(creations)))


def results(response) -> list[tuple[int, str | None]]:
    return [(r.error_code, r.error_message) for r in response.results]


async def stored(client) -> list[tuple]:
    return acl_rows(await client.request(DESCRIBE_ACLS, 3, describe_filter()))


@pytest.mark.parametrize("version", range(4))
async def test_creates_in_every_version_with_one_result_per_creation(admin_broker, client_of, version) -> None:
    client = await client_of(admin_broker)
    answer = await create(client, creation(name="a"), creation(name="b", operation=DESCRIBE), version=version)
    # Success carries an empty message, as Kafka's generated default.
    assert results(answer) == [(0, ""), (0, "")]
    assert sorted(await stored(client)) == [(TOPIC, "a", LITERAL, "User:alice", "*", READ, ALLOW),
                                            (TOPIC, "b", LITERAL, "User:alice", "*", DESCRIBE, ALLOW)]


async def test_v0_has_no_pattern_type_and_creates_literal_acls(admin_broker, client_of) -> None:
    client = await client_of(admin_broker)
    assert results(await create(client, creation(name="legacy"), version=0)) == [(0, "")]
    assert await stored(client) == [(TOPIC, "legacy", LITERAL, "User:alice", "*", READ, ALLOW)]


async def test_v0_with_a_non_literal_pattern_is_refused_while_parsing(admin_broker) -> None:
    # v0 cannot carry a pattern type on the wire, so this row is reached only by a decoded request object.
    ctx = handler_context(admin_broker, CREATE, 0)
    with pytest.raises(CloseConnection, match="version 0 only supports literal"):
        create_acls(ctx, CreateAclsRequest(creations=[creation(pattern=PREFIXED)]))


@pytest.mark.parametrize("field", ["resource_type", "resource_pattern_type", "operation", "permission_type"])
async def test_raw_code_zero_closes_the_connection_and_the_broker_keeps_serving(admin_broker, field) -> None:
    bystander = await connect(admin_broker)
    client = await connect(admin_broker)
    try:
        with structlog.testing.capture_logs() as logs:
            await client.send(CREATE, 3, CreateAclsRequest(creations=[creation(name="ok"), creation(**{_arg(field): 0})]))
            assert await client.closed_by_peer(), "Kafka closes the connection on a raw code 0"
        assert any(e["event"] == "request_rejected" and "UNKNOWN" in e["reason"] for e in logs), logs
        assert await stored(bystander) == []  # nothing of the request was applied
        assert (await bystander.request(18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"))).error_code == 0
    finally:
        await client.close()
        await bystander.close()


def _arg(field: str) -> str:
    return {"resource_type": "rtype", "resource_pattern_type": "pattern", "operation": "operation", "permission_type": "permission"}[field]


@pytest.mark.parametrize("change", [{"rtype": ANY}, {"pattern": ANY}, {"pattern": MATCH}, {"operation": ANY}, {"permission": ANY}],
                         ids=["resource-type-any", "pattern-any", "pattern-match", "operation-any", "permission-any"])
async def test_filter_only_codes_fail_the_whole_request_with_unknown_server_error(admin_broker, client_of, change) -> None:
    client = await client_of(admin_broker)
    with structlog.testing.capture_logs() as logs:
        answer = await create(client, creation(name="fine"), creation(**change), creation(name="also-fine"))
    assert results(answer) == [(-1, None)] * 3
    assert await stored(client) == []
    assert any(e["event"] == "acl_creation_refused" for e in logs)


@pytest.mark.parametrize(("change", "message"), [
    ({"rtype": 99}, "Invalid resourceType UNKNOWN"),
    ({"pattern": 99}, "Invalid patternType UNKNOWN"),
    ({"operation": 99}, "Invalid operation UNKNOWN"),
    ({"permission": 99}, "Invalid permissionType UNKNOWN"),
    ({"rtype": 99, "pattern": 99, "operation": 99, "permission": 99}, "Invalid resourceType UNKNOWN"),
], ids=["resource-type", "pattern", "operation", "permission", "all-four"])
async def test_codes_outside_the_enums_fail_that_item_with_invalid_request(admin_broker, client_of, change, message) -> None:
    client = await client_of(admin_broker)
    answer = await create(client, creation(**change), creation(name="kept"))
    assert results(answer) == [(42, message), (0, "")]
    assert [r[1] for r in await stored(client)] == ["kept"]


@pytest.mark.parametrize("name", ["my-cluster", "", "Kafka-Cluster"])
async def test_cluster_resource_must_be_named_kafka_cluster(admin_broker, client_of, name) -> None:
    client = await client_of(admin_broker)
    answer = await create(client, creation(rtype=CLUSTER, name=name, operation=ALTER), creation(rtype=CLUSTER, name="kafka-cluster",
                                                                                                   operation=ALTER))
    assert results(answer) == [(42, "The only valid name for the CLUSTER resource is kafka-cluster"), (0, "")]


async def test_empty_resource_name_is_invalid(admin_broker, client_of) -> None:
    client = await client_of(admin_broker)
    assert results(await create(client, creation(name=""))) == [(42, "Invalid empty resource name")]
    # The empty-name check comes before the enum checks, as in Kafka's AclApis.
    assert results(await create(client, creation(name="", rtype=99))) == [(42, "Invalid empty resource name")]


@pytest.mark.parametrize("principal", ["alice", ""])
async def test_principal_without_a_colon_is_stored_as_in_kafka_3_9(admin_broker, client_of, principal) -> None:
    # Kafka 3.9 stores it (KAFKA-18051 refuses it in later releases); what authorizations then do with it is in
    # tests/authorizer/test_unparseable_principals.py and tests/differential/test_acl_walk.py.
    client = await client_of(admin_broker)
    assert results(await create(client, creation(principal=principal))) == [(0, "")]
    assert [row[3] for row in await stored(client)] == [principal]


async def test_slash_in_a_resource_name_is_accepted_as_in_kraft(admin_broker, client_of) -> None:
    # Only the ZooKeeper authorizer refused '/' in names.
    client = await client_of(admin_broker)
    assert results(await create(client, creation(name="a/b"))) == [(0, "")]


async def test_duplicates_succeed_without_a_second_copy(admin_broker, client_of) -> None:
    client = await client_of(admin_broker)
    assert results(await create(client, creation(), creation())) == [(0, ""), (0, "")]
    assert results(await create(client, creation())) == [(0, "")]
    assert len(await stored(client)) == 1


async def test_prefixed_and_user_resources(admin_broker, client_of) -> None:
    client = await client_of(admin_broker)
    answer = await create(client, creation(name="pay", pattern=PREFIXED), creation(rtype=USER, name="User:bob", operation=13))
    assert results(answer) == [(0, ""), (0, "")]
    assert sorted(await stored(client)) == sorted([(TOPIC, "pay", PREFIXED, "User:alice", "*", READ, ALLOW),
                                                   (USER, "User:bob", LITERAL, "User:alice", "*", 13, ALLOW)])


async def test_created_acls_take_effect_at_once(admin_broker, client_of) -> None:
    client = await client_of(admin_broker)
    await create(client, creation(name="pay", pattern=PREFIXED, principal="User:alice", operation=READ))
    assert admin_broker.authorizer.authorize("User:alice", "10.0.0.1", 8, 2, "payments") is True  # READ implies DESCRIBE


async def test_enum_values_round_trip(admin_broker, client_of) -> None:
    client = await client_of(admin_broker)
    await create(client, creation(permission=int(AclPermissionType.DENY), pattern=int(PatternType.PREFIXED)))
    assert await stored(client) == [(TOPIC, "orders", PREFIXED, "User:alice", "*", READ, 2)]


async def test_empty_request_gets_an_empty_answer(admin_broker, client_of) -> None:
    client = await client_of(admin_broker)
    assert (await create(client)).results == []


async def test_anonymous_with_alter_on_the_cluster_may_create(secured_broker, client_of) -> None:
    grant(secured_broker, binding(rtype=CLUSTER, name="kafka-cluster", principal=ANONYMOUS, operation=ALTER))
    client = await client_of(secured_broker)
    assert results(await create(client, creation())) == [(0, "")]
