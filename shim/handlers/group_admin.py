"""DescribeGroups (key 15) v0-5, ListGroups (key 16) v0-5 and DeleteGroups (key 42) v0-2, as Kafka 3.9 answers them.

Kafka's counterparts: KafkaApis.handleDescribeGroupsRequest / handleListGroupsRequest / handleDeleteGroupsRequest over
the default (old, Scala) group coordinator (GroupCoordinatorAdapter, GroupCoordinator.handleDescribeGroup /
handleListGroups / handleDeleteGroups). The groups themselves are plain state in ``shim/groups/coordinator.py``.

Behaviour.
- DescribeGroups: DESCRIBE on each listed group, asked once per entry (duplicates included). Denied groups come first,
  in request order, with 30 and nothing else (state, protocol type and protocol "", no members, authorized operations
  -2147483648); then the others in request order: a Stable group with its protocol and each member's metadata and
  assignment, other states without protocol, metadata or assignment, an unknown group as Dead. The members come in
  Kafka's (Scala HashMap) order. KIP-430: from v3, when asked, each group answered without error carries its
  authorized operations (Kafka 3.9's group set: READ, DELETE, DESCRIBE) from the authorizer.
- ListGroups: DESCRIBE on the cluster lists every group; without it only the groups the principal may DESCRIBE,
  silently (denials not logged). v4 states filter (case-insensitive), v5 types filter: the old coordinator holds only
  classic groups, so a types filter without "classic" lists nothing.
- DeleteGroups: DELETE on each distinct group (30). Empty groups are deleted with their committed offsets; a group with
  members gets 68 (NON_EMPTY_GROUP), an unknown one 69 (GROUP_ID_NOT_FOUND). Authorized results first, in Kafka's
  (Scala HashMap) order, then the denied ones in request order (before 3.5 all of them in one Scala HashMap's order).
- Before this broker leads the group's ``__consumer_offsets`` partition (no FindCoordinator has created the topic yet)
  a group is not local: DescribeGroups and DeleteGroups answer 16 (NOT_COORDINATOR) for it, as Kafka does.

Version notes. DescribeGroups v1+ and ListGroups v1+ carry throttle_time_ms; DescribeGroups v3 adds
include_authorized_operations / authorized_operations, v4 members' group_instance_id, v5 is flexible. ListGroups v3
is flexible, v4 adds states_filter / group_state, v5 types_filter / group_type. DeleteGroups v2 is flexible.
"""

from __future__ import annotations

from collections.abc import Callable

from kafka_shim.authorizer import CLUSTER_NAME, ResourceType
from kafka_shim.authorizer.api_checks.releases import LIST_GROUPS_CLUSTER_DESCRIBE
from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import DeleteGroupsResponse, DescribeGroupsResponse, ListGroupsResponse
from kafka_shim.shim.groups.admin_views import GroupSummary, offsets_partition
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.javacompat.hash_orders import java_hash_map_order, scala_mutable_map_order, topic_partition_hash
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.requests.authz import allowed, allowed_each, authorized_operations, bitfield, check, filter_by_authorized
from kafka_shim.shim.requests.context import RequestContext
from kafka_shim.shim.requests.coordination import coordinates

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
OFFSETS_TOPIC = "__consumer_offsets"

_DESCRIBE = check(ApiKey.DESCRIBE_GROUPS, "groups")
_LIST = check(ApiKey.LIST_GROUPS, "groups")
_DELETE = check(ApiKey.DELETE_GROUPS, "groups")
_GROUP_BITS = bitfield(ApiKey.DESCRIBE_GROUPS, ResourceType.GROUP)

_Described = DescribeGroupsResponse.DescribedGroup
_Member = DescribeGroupsResponse.DescribedGroupMember
_Listed = ListGroupsResponse.ListedGroup
_Deleted = DeleteGroupsResponse.DeletableGroupResult


def _group_error(group_id: str, code: int) -> _Described:
    """DescribeGroupsResponse.groupError: the id and the code, nothing revealed."""
    return _Described(error_code=code, group_id=group_id, group_state="", protocol_type="", protocol_data="", members=[],
                      authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)


def describe_groups_error_response(request: messages.DescribeGroupsRequest, code: int, message: str | None) -> DescribeGroupsResponse:
    """DescribeGroupsRequest.getErrorResponse: every listed group with the code."""
    return DescribeGroupsResponse(groups=[_group_error(g, code) for g in request.groups])


def list_groups_error_response(request: messages.ListGroupsRequest, code: int, message: str | None) -> ListGroupsResponse:
    """ListGroupsRequest.getErrorResponse: the code, no groups."""
    return ListGroupsResponse(error_code=code, groups=[])


def delete_groups_error_response(request: messages.DeleteGroupsRequest, code: int, message: str | None) -> DeleteGroupsResponse:
    """DeleteGroupsRequest.getErrorResponse: every named group with the code."""
    return DeleteGroupsResponse(results=[_Deleted(group_id=g, error_code=code) for g in request.groups_names])


def _is_local(ctx: RequestContext) -> Callable[[str], bool]:
    """Whether this broker leads (and so coordinates) the group's __consumer_offsets partition."""
    partitions = ctx.services.partitions
    count = ctx.services.groups.settings.offsets_topic_num_partitions
    if partitions is None:
        return lambda _group_id: True
    return lambda group_id: (partitions.get(OFFSETS_TOPIC, offsets_partition(group_id, count)) is not None
                             and coordinates(ctx, group_id))  # and not another node's of the cluster


def _by_shard(ctx: RequestContext, group_ids: list[str]) -> list[int]:
    """The new group coordinator's answer order (GroupCoordinatorService.describeGroups / deleteGroups): the groups
    grouped by their ``__consumer_offsets`` partition in the order of a java.util.HashMap filled with
    computeIfAbsent, each group in request order. Only a null id is answered first, which these requests cannot carry:
    the empty id goes to its partition (0) like any other. Positions into ``group_ids``."""
    count = ctx.services.groups.settings.offsets_topic_num_partitions
    shards: dict[tuple[str, int], list[int]] = {}
    for index, group_id in enumerate(group_ids):
        shards.setdefault((OFFSETS_TOPIC, offsets_partition(group_id, count)), []).append(index)
    return [index for shard in java_hash_map_order(shards, topic_partition_hash, by_compute=True) for index in shards[shard]]


def _described(summary: GroupSummary) -> _Described:
    return _Described(
        error_code=summary.error, group_id=summary.group_id, group_state=summary.state,
        protocol_type=summary.protocol_type, protocol_data=summary.protocol,
        members=[_Member(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                         client_host=m.client_host, member_metadata=m.metadata, member_assignment=m.assignment)
                 for m in summary.members],
        authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
    )


@handles(ApiKey.DESCRIBE_GROUPS, 0, 5, error_response=describe_groups_error_response)
def describe_groups(ctx: RequestContext, request: messages.DescribeGroupsRequest) -> DescribeGroupsResponse:
    coordinator = ctx.services.groups
    denied: list[_Described] = []
    authorized: list[str] = []
    for group_id in request.groups:
        if allowed(ctx, _DESCRIBE, group_id):
            authorized.append(group_id)
        else:
            denied.append(_group_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED))
    is_local = _is_local(ctx)
    described = [_described(coordinator.describe_group(group_id, is_local)) for group_id in authorized]
    if ctx.api_version >= 3 and request.include_authorized_operations:
        for group in described:
            if group.error_code == ErrorCode.NONE:
                group.authorized_operations = authorized_operations(ctx, _GROUP_BITS, group.group_id)
    if ctx.services.release_rules.describe_groups_in_request_order:  # before 3.5 (api_checks.releases)
        # every requested group (a repeated one too) has one answer: put them back in the request's order
        slots: dict[str, list[_Described]] = {}
        for group in denied + described:
            slots.setdefault(group.group_id, []).append(group)
        return DescribeGroupsResponse(groups=[slots[group_id].pop(0) for group_id in request.groups])
    if coordinator.settings.new_coordinator:
        described = [described[i] for i in _by_shard(ctx, authorized)]
    return DescribeGroupsResponse(groups=denied + described)


@handles(ApiKey.LIST_GROUPS, 0, 5, error_response=list_groups_error_response)
def list_groups(ctx: RequestContext, request: messages.ListGroupsRequest) -> ListGroupsResponse:
    version = ctx.api_version
    states = request.states_filter if version >= 4 and request.states_filter else ()
    types = request.types_filter if version >= 5 and request.types_filter else ()
    if ctx.services.release_rules.list_groups_needs_cluster_describe:
        # KIP-231: before 2.1, DESCRIBE on the cluster lists every group and its absence fails the whole request.
        if not allowed(ctx, LIST_GROUPS_CLUSTER_DESCRIBE, CLUSTER_NAME):
            return list_groups_error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
        listed = ctx.services.groups.list_groups(states, types)
        visible = {g.group_id for g in listed}
    else:
        # Each node's coordinator lists (and asks about) only the groups it coordinates.
        listed = [g for g in ctx.services.groups.list_groups(states, types) if coordinates(ctx, g.group_id)]
        visible = allowed_each(ctx, _LIST, [g.group_id for g in listed])
    # Each node lists the groups it coordinates (a cluster in one process: kafka-consumer-groups asks them all).
    return ListGroupsResponse(error_code=ErrorCode.NONE, groups=[
        _Listed(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state, group_type=g.group_type)
        for g in listed if g.group_id in visible and coordinates(ctx, g.group_id)])


@handles(ApiKey.DELETE_GROUPS, 0, 2, error_response=delete_groups_error_response)
def delete_groups(ctx: RequestContext, request: messages.DeleteGroupsRequest) -> DeleteGroupsResponse:
    distinct = list(dict.fromkeys(request.groups_names))
    permitted = filter_by_authorized(ctx, _DELETE, distinct)
    asked = [g for g in distinct if g in permitted]
    errors = ctx.services.groups.delete_groups(asked, _is_local(ctx))
    if ctx.services.groups.settings.new_coordinator:
        errors = {asked[i]: errors[asked[i]] for i in _by_shard(ctx, asked)}
    results = [_Deleted(group_id=g, error_code=code) for g, code in errors.items()]
    results += [_Deleted(group_id=g, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in distinct if g not in permitted]
    if ctx.services.release_rules.delete_groups_in_hash_order:
        # before 3.5 (api_checks.releases): the coordinator's mutable.HashMap ++ the refused groups, one mutable.HashMap
        by_id = {r.group_id: r for r in results}
        results = [by_id[g] for g in scala_mutable_map_order(by_id, java_string_hash)]
    return DeleteGroupsResponse(results=results)
