"""Who may use the ACL APIs (ALTER on the cluster; DESCRIBE for DescribeAcls), and SECURITY_DISABLED without an authorizer."""

from __future__ import annotations

import re

import pytest
import structlog

from kafka_shim.protocol.messages import CreateAclsRequest, DeleteAclsRequest
from tests.support.acl_helpers import (
    ALTER,
    ANONYMOUS,
    CLUSTER,
    DENY,
    DESCRIBE,
    READ,
    TOPIC,
    binding,
    creation,
    delete_filter,
    describe_filter,
    grant,
)

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
CREATE = 5
NOT_AUTHORIZED_PREFIX = "Request Request(processor="
NOT_AUTHORIZED_SUFFIX = ") is not authorized."


def cluster_acl(operation: int, permission: int = 3, principal: str = ANONYMOUS):
    return binding(rtype=CLUSTER, name="kafka-cluster", principal=principal, operation=operation, permission=permission)


async def ask_all_three(client, version: int):
    described = await client.request(DESCRIBE_ACLS, version, describe_filter(pattern=3 if version == 0 else 1))
    created = await client.request(CREATE_ACLS, version, CreateAclsRequest(creations=[creation(), creation(name="b")]))
    deleted = await client.request(DELETE_ACLS, version, DeleteAclsRequest(filters=[delete_filter(pattern=3 if version == 0 else 1)] * 2))
    return described, created, deleted


def _is_not_authorized(message: str) -> bool:
    # Kafka 3.9's Session has no toString: Java prints its class and identity hash, not the principal.
    return (message.startswith(NOT_AUTHORIZED_PREFIX) and message.endswith(NOT_AUTHORIZED_SUFFIX)
            and re.search(r", session=org\.apache\.kafka\.network\.Session@[0-9a-f]+, listenerName=", message) is not None)


@pytest.mark.parametrize("version", range(4))
async def test_without_rights_every_slot_gets_cluster_authorization_failed(secured_broker, client_of, version) -> None:
    grant(secured_broker, binding(name="x", principal="User:alice"))
    client = await client_of(secured_broker)
    with structlog.testing.capture_logs() as logs:
        described, created, deleted = await ask_all_three(client, version)
    assert (described.error_code, described.resources) == (31, [])
    assert _is_not_authorized(described.error_message)
    assert [r.error_code for r in created.results] == [31, 31] and all(_is_not_authorized(r.error_message) for r in created.results)
    assert [(r.error_code, r.matching_acls) for r in deleted.filter_results] == [(31, []), (31, [])]
    assert len(secured_broker.authorizer.acls()) == 1  # nothing created or deleted
    denials = [e for e in logs if e["event"] == "acl_request_denied"]
    assert [(e["api"], e["operation"]) for e in denials] == [(29, "DESCRIBE"), (30, "ALTER"), (31, "ALTER")]


async def test_alter_on_the_cluster_grants_all_three(secured_broker, client_of) -> None:
    grant(secured_broker, cluster_acl(ALTER))
    client = await client_of(secured_broker)
    described, created, deleted = await ask_all_three(client, 3)
    assert described.error_code == 0  # ALLOW ALTER implies DESCRIBE
    assert [r.error_code for r in created.results] == [0, 0]
    assert [r.error_code for r in deleted.filter_results] == [0, 0]


async def test_describe_on_the_cluster_grants_only_describe(secured_broker, client_of) -> None:
    grant(secured_broker, cluster_acl(DESCRIBE))
    client = await client_of(secured_broker)
    described, created, deleted = await ask_all_three(client, 3)
    assert described.error_code == 0
    assert [r.error_code for r in created.results] == [31, 31]
    assert [r.error_code for r in deleted.filter_results] == [31, 31]


async def test_deny_beats_allow_and_is_audited(secured_broker, client_of) -> None:
    grant(secured_broker, cluster_acl(ALTER), cluster_acl(ALTER, permission=DENY, principal="User:*"))
    client = await client_of(secured_broker)
    with structlog.testing.capture_logs() as logs:
        secured_broker.authorizer.audit.refresh()  # as an application does once it has configured its logging
        created = await client.request(CREATE_ACLS, 3, CreateAclsRequest(creations=[creation()]))
    assert created.results[0].error_code == 31
    audit = [e for e in logs if "is Denied operation = ALTER" in e.get("event", "")]
    assert audit and "on resource = Cluster:LITERAL:kafka-cluster for request = CreateAcls" in audit[0]["event"]


async def test_create_on_the_cluster_does_not_imply_describe(secured_broker, client_of) -> None:
    grant(secured_broker, cluster_acl(CREATE))
    client = await client_of(secured_broker)
    assert (await client.request(DESCRIBE_ACLS, 3, describe_filter())).error_code == 31
    # READ, WRITE, DELETE and ALTER do imply DESCRIBE.
    grant(secured_broker, cluster_acl(READ))
    assert (await client.request(DESCRIBE_ACLS, 3, describe_filter())).error_code == 0


async def test_super_users_need_no_acl(admin_broker, client_of) -> None:
    client = await client_of(admin_broker)
    described, created, deleted = await ask_all_three(client, 3)
    assert (described.error_code, [r.error_code for r in created.results], [r.error_code for r in deleted.filter_results]) == (0, [0, 0], [0, 0])


@pytest.mark.parametrize("version", range(4))
async def test_no_authorizer_answers_security_disabled(open_broker, client_of, version) -> None:
    client = await client_of(open_broker)
    described, created, deleted = await ask_all_three(client, version)
    assert (described.error_code, described.error_message, described.resources) == (54, "No Authorizer is configured on the broker", [])
    assert [(r.error_code, r.error_message) for r in created.results] == [(54, "No Authorizer is configured.")] * 2
    assert [(r.error_code, r.error_message, r.matching_acls) for r in deleted.filter_results] == [(54, "No Authorizer is configured.", [])] * 2


async def test_no_authorizer_still_closes_on_raw_code_zero(open_broker, client_of) -> None:
    # Parsing comes before everything else, with or without an authorizer.
    client = await client_of(open_broker)
    await client.send(CREATE_ACLS, 3, CreateAclsRequest(creations=[creation(rtype=0)]))
    assert await client.closed_by_peer()


async def test_no_authorizer_answers_security_disabled_before_looking_at_filter_only_codes(open_broker, client_of) -> None:
    client = await client_of(open_broker)
    created = await client.request(CREATE_ACLS, 3, CreateAclsRequest(creations=[creation(pattern=1)]))
    assert [r.error_code for r in created.results] == [54]


async def test_authorization_comes_before_the_filter_only_code_failure(secured_broker, client_of) -> None:
    client = await client_of(secured_broker)
    created = await client.request(CREATE_ACLS, 3, CreateAclsRequest(creations=[creation(pattern=1)]))
    assert [r.error_code for r in created.results] == [31]


async def test_topic_rights_do_not_open_the_acl_apis(secured_broker, client_of) -> None:
    grant(secured_broker, binding(rtype=TOPIC, name="*", operation=ALTER))
    client = await client_of(secured_broker)
    assert (await client.request(DESCRIBE_ACLS, 3, describe_filter())).error_code == 31
