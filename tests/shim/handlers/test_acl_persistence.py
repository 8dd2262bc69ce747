"""ACLs created and deleted over the wire survive a restart when the broker has a data directory."""

from __future__ import annotations

from kafka_shim.protocol.messages import CreateAclsRequest, DeleteAclsRequest
from tests.support.acl_helpers import (
    ALTER,
    ANONYMOUS,
    CLUSTER,
    PREFIXED,
    acl_rows,
    config,
    connect,
    creation,
    delete_filter,
    describe_filter,
    running,
)


async def _describe_all(broker) -> list[tuple]:
    client = await connect(broker)
    try:
        return sorted(acl_rows(await client.request(29, 3, describe_filter())))
    finally:
        await client.close()


async def test_a_restart_serves_the_same_acls(tmp_path) -> None:
    cfg = config(super_users=ANONYMOUS, log_dirs=str(tmp_path))
    async with running(cfg) as broker:
        client = await connect(broker)
        created = await client.request(30, 3, CreateAclsRequest(creations=[
            creation(name="pay", pattern=PREFIXED), creation(name="gone"), creation(rtype=CLUSTER, name="kafka-cluster", operation=ALTER)]))
        assert [r.error_code for r in created.results] == [0, 0, 0]
        deleted = await client.request(31, 3, DeleteAclsRequest(filters=[delete_filter(name="gone")]))
        assert len(deleted.filter_results[0].matching_acls) == 1
        await client.close()
        before = await _describe_all(broker)
    assert len(before) == 2
    async with running(cfg) as broker:
        assert await _describe_all(broker) == before
        # The restored ACLs decide, not just list.
        assert broker.authorizer.authorize("User:alice", "127.0.0.1", 3, 2, "payments")


async def test_without_a_data_directory_acls_start_empty(tmp_path) -> None:
    cfg = config(super_users=ANONYMOUS)
    async with running(cfg) as broker:
        client = await connect(broker)
        await client.request(30, 3, CreateAclsRequest(creations=[creation()]))
        await client.close()
    async with running(cfg) as broker:
        assert await _describe_all(broker) == []
