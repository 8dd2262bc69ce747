"""Kafka 3.9's declarations: what each API key asks the authorizer (KafkaApis, AuthHelper, AclApis, ControllerApis).

One ``ApiChecks`` per key, in key order. Another release's differences belong in ``releases``, as changes to this
table, not as a copy of it.
"""

from __future__ import annotations

from typing import Any

from kafka_shim.authorizer.api_checks.model import (
    CONFIG_BROKER,
    CONFIG_BROKER_LOGGER,
    CONFIG_CLIENT_METRICS,
    CONFIG_TOPIC,
    ApiChecks,
    Bitfield,
    Check,
    Mode,
    Names,
    Shortcut,
    cluster_names,
    config_names,
    every_resource,
    field,
    find_coordinator_keys,
    flag_set,
    has_field,
    in_versions,
    is_follower,
    key_type_is,
    metadata_all_topics,
    metadata_cluster_ops,
    metadata_existing_topics,
    metadata_explicit,
    metadata_may_create,
    metadata_topic_ops,
    metadata_topics,
    offset_fetch_all_partitions,
    owner_principal,
    topic_names_or_ids,
)
from kafka_shim.authorizer.model import CLUSTER_NAME, AclOperation, ResourceType
from kafka_shim.protocol.codes import ErrorCode

_OP, _RT = AclOperation, ResourceType


def _throw(key: str, op: AclOperation, rtype: ResourceType, names: Names, error: int, **kw: Any) -> Check:
    return Check(key, op, rtype, names, Mode.AUTHORIZE_OR_THROW, error, **kw)


def _filter(key: str, op: AclOperation, rtype: ResourceType, names: Names, error: int, **kw: Any) -> Check:
    return Check(key, op, rtype, names, Mode.FILTER_WITH_ERROR, error, **kw)


def _silent(key: str, op: AclOperation, rtype: ResourceType, names: Names, **kw: Any) -> Check:
    return Check(key, op, rtype, names, Mode.SILENT_FILTER, ErrorCode.NONE, **kw)


def _cluster_only(api_key: int, name: str, op: AclOperation, note: str = "") -> ApiChecks:
    return ApiChecks(api_key, name, (_throw("cluster", op, _RT.CLUSTER, cluster_names, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),), note=note)


def _group_read(api_key: int, name: str) -> ApiChecks:
    return ApiChecks(api_key, name, (_throw("group", _OP.READ, _RT.GROUP, field("group_id"), ErrorCode.GROUP_AUTHORIZATION_FAILED),))


_TOPIC, _GROUP, _TXN, _CLUSTER = _RT.TOPIC, _RT.GROUP, _RT.TRANSACTIONAL_ID, _RT.CLUSTER
_CONTROLLER_ONLY = "controller-only: ControllerApis requires CLUSTER_ACTION on the cluster"

_DECLARATIONS: tuple[ApiChecks, ...] = (
    ApiChecks(0, "Produce", (
        _throw("transactional_id", _OP.WRITE, _TXN, field("transactional_id"), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
               applies=has_field("transactional_id"),
               note="only when the batches are transactional; the error goes to every partition"),
        _filter("topics", _OP.WRITE, _TOPIC, field("topic_data", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    ), note="authorization, then existence (3), then record validation; with acks=0 any error closes the connection"),
    ApiChecks(1, "Fetch", (
        _throw("follower", _OP.CLUSTER_ACTION, _CLUSTER, cluster_names, ErrorCode.TOPIC_AUTHORIZATION_FAILED, applies=is_follower,
               note="a follower without the permission gets 29 on every partition, not 31"),
        _filter("topics", _OP.READ, _TOPIC, topic_names_or_ids("topic", "topic_id", "topics"), ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                applies=lambda r, v: not is_follower(r, v), note="v13+: unknown topic ids get 100 before authorization"),
    )),
    ApiChecks(2, "ListOffsets", (_filter("topics", _OP.DESCRIBE, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED),)),
    ApiChecks(3, "Metadata", (
        _filter("describe", _OP.DESCRIBE, _TOPIC, metadata_topics, ErrorCode.TOPIC_AUTHORIZATION_FAILED, applies=metadata_explicit,
                note="denied topics come last, name echoed (null with the id when asked by id), no partitions"),
        _silent("describe_all", _OP.DESCRIBE, _TOPIC, every_resource, applies=metadata_all_topics, log_if_denied=False,
                note="all-topics request: undescribable topics are left out"),
        _filter("create", _OP.CREATE, _TOPIC, metadata_topics, ErrorCode.TOPIC_AUTHORIZATION_FAILED, applies=metadata_may_create,
                shortcut=Shortcut(_OP.CREATE), after="describe", existing=metadata_existing_topics,
                note="only for describable topics that do not exist, with auto.create.topics.enable"),
        Check("cluster_operations", _OP.DESCRIBE, _CLUSTER, cluster_names, Mode.GATE, applies=metadata_cluster_ops,
              note="without it ClusterAuthorizedOperations is 0"),
    ), bitfields=(
        Bitfield(_CLUSTER, cluster_names, metadata_cluster_ops, gate="cluster_operations"),
        Bitfield(_TOPIC, metadata_topics, metadata_topic_ops, after="describe"),
    ), note="no cluster-level check: the broker list is always returned"),
    *(_cluster_only(k, n, _OP.CLUSTER_ACTION, "ZooKeeper inter-broker API")
      for k, n in ((4, "LeaderAndIsr"), (5, "StopReplica"), (6, "UpdateMetadata"), (7, "ControlledShutdown"))),
    ApiChecks(8, "OffsetCommit", (
        _throw("group", _OP.READ, _GROUP, field("group_id"), ErrorCode.GROUP_AUTHORIZATION_FAILED),
        _filter("topics", _OP.READ, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    )),
    ApiChecks(9, "OffsetFetch", (
        _throw("group", _OP.DESCRIBE, _GROUP, field("group_id"), ErrorCode.GROUP_AUTHORIZATION_FAILED, applies=in_versions(0, 7)),
        _filter("groups", _OP.DESCRIBE, _GROUP, field("groups", "group_id"), ErrorCode.GROUP_AUTHORIZATION_FAILED, applies=in_versions(8)),
        _filter("topics", _OP.DESCRIBE, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED, applies=in_versions(0, 7)),
        _filter("group_topics", _OP.DESCRIBE, _TOPIC, field("groups", "topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                applies=in_versions(8)),
        _silent("all_topics", _OP.DESCRIBE, _TOPIC, every_resource, applies=offset_fetch_all_partitions,
                note="a group asking for all partitions (null topics) silently loses the topics with offsets it may not "
                     "describe (asked only once the group is allowed, and only if it has offsets)"),
    )),
    ApiChecks(10, "FindCoordinator", (
        _filter("group", _OP.DESCRIBE, _GROUP, find_coordinator_keys, ErrorCode.GROUP_AUTHORIZATION_FAILED, applies=key_type_is(0)),
        _filter("transaction", _OP.DESCRIBE, _TXN, find_coordinator_keys, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                applies=key_type_is(1)),
        _filter("share", _OP.CLUSTER_ACTION, _CLUSTER, lambda r, v: [CLUSTER_NAME] * len(find_coordinator_keys(r, v)),
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED, applies=key_type_is(2)),
    ), note="v4+: one error per key; v0-3: the whole response"),
    *(_group_read(k, n) for k, n in ((11, "JoinGroup"), (12, "Heartbeat"), (13, "LeaveGroup"), (14, "SyncGroup"))),
    ApiChecks(15, "DescribeGroups", (_filter("groups", _OP.DESCRIBE, _GROUP, field("groups"), ErrorCode.GROUP_AUTHORIZATION_FAILED),),
              bitfields=(Bitfield(_GROUP, field("groups"), lambda r, v: v >= 3 and bool(getattr(r, "include_authorized_operations", False)),
                                  after="groups"),)),
    ApiChecks(16, "ListGroups", (
        _silent("groups", _OP.DESCRIBE, _GROUP, every_resource, log_if_denied=False, shortcut=Shortcut(_OP.DESCRIBE)),
    ), note="never an error: without ACLs the list is empty"),
    ApiChecks(17, "SaslHandshake"),
    ApiChecks(18, "ApiVersions"),
    ApiChecks(19, "CreateTopics", (
        _filter("create", _OP.CREATE, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED, shortcut=Shortcut(_OP.CREATE)),
        Check("describe_configs", _OP.DESCRIBE_CONFIGS, _TOPIC, field("topics", "name"), Mode.GATE, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
              log_if_denied=False, note="denied: created, but TopicConfigErrorCode 29 and no configs"),
    )),
    ApiChecks(20, "DeleteTopics", (
        _filter("describe", _OP.DESCRIBE, _TOPIC, lambda r, v: field("topic_names")(r, v) if v < 6 else
                topic_names_or_ids("name", "topic_id", "topics")(r, v), ErrorCode.TOPIC_AUTHORIZATION_FAILED, shortcut=Shortcut(_OP.DELETE)),
        _filter("delete", _OP.DELETE, _TOPIC, lambda r, v: field("topic_names")(r, v) if v < 6 else
                topic_names_or_ids("name", "topic_id", "topics")(r, v), ErrorCode.TOPIC_AUTHORIZATION_FAILED, shortcut=Shortcut(_OP.DELETE)),
    )),
    ApiChecks(21, "DeleteRecords", (_filter("topics", _OP.DELETE, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED),)),
    ApiChecks(22, "InitProducerId", (
        _throw("transactional_id", _OP.WRITE, _TXN, field("transactional_id"), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
               applies=has_field("transactional_id")),
        _throw("idempotent", _OP.WRITE, _TOPIC, every_resource, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, any_resource=True,
               shortcut=Shortcut(_OP.IDEMPOTENT_WRITE), applies=lambda r, v: getattr(r, "transactional_id", None) is None,
               note="KIP-679: WRITE on any one topic is enough for an idempotent producer"),
    )),
    ApiChecks(23, "OffsetForLeaderEpoch", (
        _filter("topics", _OP.DESCRIBE, _TOPIC, field("topics", "topic"), ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                shortcut=Shortcut(_OP.CLUSTER_ACTION)),
    )),
    ApiChecks(24, "AddPartitionsToTxn", (
        _throw("transactional_id", _OP.WRITE, _TXN, field("v3_and_below_transactional_id"), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
               applies=in_versions(0, 3)),
        _filter("topics", _OP.WRITE, _TOPIC, field("v3_and_below_topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED, applies=in_versions(0, 3),
                note="internal topics are always unauthorized; other partitions get OPERATION_NOT_ATTEMPTED (55)"),
        _throw("cluster", _OP.CLUSTER_ACTION, _CLUSTER, cluster_names, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, applies=in_versions(4)),
    )),
    ApiChecks(25, "AddOffsetsToTxn", (
        _throw("transactional_id", _OP.WRITE, _TXN, field("transactional_id"), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        _throw("group", _OP.READ, _GROUP, field("group_id"), ErrorCode.GROUP_AUTHORIZATION_FAILED),
    )),
    ApiChecks(26, "EndTxn", (_throw("transactional_id", _OP.WRITE, _TXN, field("transactional_id"), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),)),
    ApiChecks(27, "WriteTxnMarkers", (
        _throw("cluster", _OP.CLUSTER_ACTION, _CLUSTER, cluster_names, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, shortcut=Shortcut(_OP.ALTER)),
    )),
    ApiChecks(28, "TxnOffsetCommit", (
        _throw("transactional_id", _OP.WRITE, _TXN, field("transactional_id"), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        _throw("group", _OP.READ, _GROUP, field("group_id"), ErrorCode.GROUP_AUTHORIZATION_FAILED),
        _filter("topics", _OP.READ, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    )),
    ApiChecks(29, "DescribeAcls", (_throw("cluster", _OP.DESCRIBE, _CLUSTER, cluster_names, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),),
              no_authorizer_error=ErrorCode.SECURITY_DISABLED, note="ALLOW ALTER on the cluster implies DESCRIBE"),
    ApiChecks(30, "CreateAcls", (_throw("cluster", _OP.ALTER, _CLUSTER, cluster_names, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),),
              no_authorizer_error=ErrorCode.SECURITY_DISABLED),
    ApiChecks(31, "DeleteAcls", (_throw("cluster", _OP.ALTER, _CLUSTER, cluster_names, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),),
              no_authorizer_error=ErrorCode.SECURITY_DISABLED),
    ApiChecks(32, "DescribeConfigs", (
        _filter("topics", _OP.DESCRIBE_CONFIGS, _TOPIC, config_names({CONFIG_TOPIC}, False), ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        _filter("cluster", _OP.DESCRIBE_CONFIGS, _CLUSTER, config_names({CONFIG_BROKER, CONFIG_BROKER_LOGGER, CONFIG_CLIENT_METRICS}, True),
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    ), note="an unknown config resource type fails the whole request"),
    ApiChecks(33, "AlterConfigs", (
        _filter("topics", _OP.ALTER_CONFIGS, _TOPIC, config_names({CONFIG_TOPIC}, False), ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        _filter("cluster", _OP.ALTER_CONFIGS, _CLUSTER, config_names({CONFIG_BROKER, CONFIG_CLIENT_METRICS}, True),
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    )),
    _cluster_only(34, "AlterReplicaLogDirs", _OP.ALTER),
    _cluster_only(35, "DescribeLogDirs", _OP.DESCRIBE, "v3+: top-level 31 with an empty result; older versions an empty result"),
    ApiChecks(36, "SaslAuthenticate"),
    ApiChecks(37, "CreatePartitions", (_filter("topics", _OP.ALTER, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED),)),
    ApiChecks(38, "CreateDelegationToken", (
        _throw("owner", _OP.CREATE_TOKENS, _RT.USER, owner_principal, ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
               note="only when the owner differs from the requester"),
    )),
    ApiChecks(39, "RenewDelegationToken", note="no ACL: the caller must be the owner or a renewer (63)"),
    ApiChecks(40, "ExpireDelegationToken", note="no ACL: the caller must be the owner or a renewer (63)"),
    ApiChecks(41, "DescribeDelegationToken", (
        _silent("tokens", _OP.DESCRIBE, _RT.DELEGATION_TOKEN, every_resource,
                note="visible to the owner or a renewer, or with DESCRIBE on the token, or DESCRIBE_TOKENS on USER(owner)"),
        _silent("owners", _OP.DESCRIBE_TOKENS, _RT.USER, every_resource,
                note="asked for a token the requester neither owns nor renews, when DESCRIBE on the token is denied"),
    )),
    ApiChecks(42, "DeleteGroups", (_filter("groups", _OP.DELETE, _GROUP, field("groups_names"), ErrorCode.GROUP_AUTHORIZATION_FAILED),)),
    _cluster_only(43, "ElectLeaders", _OP.ALTER),
    ApiChecks(44, "IncrementalAlterConfigs", (
        _filter("topics", _OP.ALTER_CONFIGS, _TOPIC, config_names({CONFIG_TOPIC}, False), ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        _filter("cluster", _OP.ALTER_CONFIGS, _CLUSTER, config_names({CONFIG_BROKER, CONFIG_BROKER_LOGGER, CONFIG_CLIENT_METRICS}, True),
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    )),
    _cluster_only(45, "AlterPartitionReassignments", _OP.ALTER),
    _cluster_only(46, "ListPartitionReassignments", _OP.DESCRIBE),
    ApiChecks(47, "OffsetDelete", (
        _throw("group", _OP.DELETE, _GROUP, field("group_id"), ErrorCode.GROUP_AUTHORIZATION_FAILED),
        _filter("topics", _OP.READ, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    )),
    _cluster_only(48, "DescribeClientQuotas", _OP.DESCRIBE_CONFIGS),
    _cluster_only(49, "AlterClientQuotas", _OP.ALTER_CONFIGS),
    _cluster_only(50, "DescribeUserScramCredentials", _OP.DESCRIBE),
    _cluster_only(51, "AlterUserScramCredentials", _OP.ALTER),
    *(_cluster_only(k, n, _OP.CLUSTER_ACTION, _CONTROLLER_ONLY)
      for k, n in ((52, "Vote"), (53, "BeginQuorumEpoch"), (54, "EndQuorumEpoch"), (59, "FetchSnapshot"),
                   (62, "BrokerRegistration"), (63, "BrokerHeartbeat"), (70, "ControllerRegistration"),
                   (73, "AssignReplicasToDirs"), (82, "UpdateRaftVoter"))),
    _cluster_only(55, "DescribeQuorum", _OP.DESCRIBE, "forwarded; the controller checks"),
    _cluster_only(56, "AlterPartition", _OP.CLUSTER_ACTION, "inter-broker"),
    _cluster_only(57, "UpdateFeatures", _OP.ALTER),
    _cluster_only(58, "Envelope", _OP.CLUSTER_ACTION, "only on the inter-broker listener; elsewhere the connection is closed"),
    ApiChecks(60, "DescribeCluster", (
        Check("cluster_operations", _OP.DESCRIBE, _CLUSTER, cluster_names, Mode.GATE,
              applies=flag_set("include_cluster_authorized_operations"), note="without it ClusterAuthorizedOperations is 0"),
    ), bitfields=(Bitfield(_CLUSTER, cluster_names, flag_set("include_cluster_authorized_operations"), gate="cluster_operations"),),
              note="no check on a broker: anyone gets the broker list"),
    ApiChecks(61, "DescribeProducers", (_filter("topics", _OP.READ, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED),)),
    _cluster_only(64, "UnregisterBroker", _OP.ALTER, "forwarded; the controller checks"),
    ApiChecks(65, "DescribeTransactions", (
        _filter("transactional_ids", _OP.DESCRIBE, _TXN, field("transactional_ids"), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        _silent("topics", _OP.DESCRIBE, _TOPIC, every_resource, note="topics inside a returned state are dropped unless describable"),
    )),
    ApiChecks(66, "ListTransactions", (_silent("transactional_ids", _OP.DESCRIBE, _TXN, every_resource),)),
    _cluster_only(67, "AllocateProducerIds", _OP.CLUSTER_ACTION, "controller / inter-broker"),
    _group_read(68, "ConsumerGroupHeartbeat"),
    ApiChecks(69, "ConsumerGroupDescribe", (_filter("groups", _OP.DESCRIBE, _GROUP, field("group_ids"), ErrorCode.GROUP_AUTHORIZATION_FAILED),),
              bitfields=(Bitfield(_GROUP, field("group_ids"), flag_set("include_authorized_operations"), after="groups"),)),
    ApiChecks(71, "GetTelemetrySubscriptions"),
    ApiChecks(72, "PushTelemetry"),
    _cluster_only(74, "ListClientMetricsResources", _OP.DESCRIBE_CONFIGS),
    ApiChecks(75, "DescribeTopicPartitions", (
        _filter("topics", _OP.DESCRIBE, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED, applies=lambda r, v: bool(r.topics)),
        _silent("all_topics", _OP.DESCRIBE, _TOPIC, every_resource, applies=lambda r, v: not r.topics),
    ), bitfields=(Bitfield(_TOPIC, field("topics", "name")),), note="the bitfield is always computed"),
    _group_read(76, "ShareGroupHeartbeat"),
    ApiChecks(77, "ShareGroupDescribe", (_filter("groups", _OP.DESCRIBE, _GROUP, field("group_ids"), ErrorCode.GROUP_AUTHORIZATION_FAILED),),
              bitfields=(Bitfield(_GROUP, field("group_ids"), flag_set("include_authorized_operations")),)),
    _cluster_only(80, "AddRaftVoter", _OP.ALTER, "forwarded; the controller checks"),
    _cluster_only(81, "RemoveRaftVoter", _OP.ALTER, "forwarded; the controller checks"),
    _cluster_only(84, "ReadShareGroupState", _OP.CLUSTER_ACTION, "inter-broker"),
    _cluster_only(85, "WriteShareGroupState", _OP.CLUSTER_ACTION, "inter-broker"),
)

DECLARATIONS: dict[int, ApiChecks] = {d.api_key: d for d in _DECLARATIONS}
if len(DECLARATIONS) != len(_DECLARATIONS):  # pragma: no cover - a typo in the table above
    raise RuntimeError("an API key is declared twice in authorizer.api_checks")


def declaration(api_key: int) -> ApiChecks | None:
    """The checks of one API, or None for a key this module does not declare."""
    return DECLARATIONS.get(api_key)

