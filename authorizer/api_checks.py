"""What each Kafka API asks the authorizer, declared once (Kafka 3.9's KafkaApis / AuthHelper / AclApis).

The broker's handlers ask this module which actions a request needs instead of hard-coding operations, and a
trace auditor asks it the same question about a captured request:

    requirements(api_key, version, request) -> [Requirement(operation, resource_type, name, mode, error_code, ...)]

Requests are read duck-typed through their snake_case attributes (the decoded objects of ``protocol.messages``
or anything shaped alike), so this module imports nothing from the wire or the broker.

Modes, as Kafka applies them:

* ``AUTHORIZE_OR_THROW``: a denial fails the whole request; every error slot carries ``error_code``.
* ``FILTER_WITH_ERROR``: checked once per distinct name (ref count = occurrences); denied items get ``error_code``.
* ``SILENT_FILTER``: denied items are left out of the answer, no error.
* ``GATE``: decides a value, never an error (e.g. cluster authorized operations become 0 without DESCRIBE).
* ``BITFIELD``: the KIP-430 authorized-operations probes, one unlogged check per supported operation.

A check may carry a ``shortcut``: one action that, when allowed, grants the whole check without asking per
name (Kafka's "CREATE on CLUSTER, else CREATE on each TOPIC"). Shortcuts are asked with logIfDenied=false.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kafka_shim.authorizer.model import CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation, ResourceType
from kafka_shim.protocol.codes import ErrorCode

_OP, _RT = AclOperation, ResourceType


class Mode(enum.Enum):
    AUTHORIZE_OR_THROW = "authorize-or-throw"
    FILTER_WITH_ERROR = "filter-with-error"
    SILENT_FILTER = "silent-filter"
    GATE = "gate"
    BITFIELD = "bitfield"


@dataclass(frozen=True, slots=True)
class ById:
    """A resource named in the request only by id (topic ids); the broker resolves the name."""

    id: uuid.UUID


EVERY = None  # a names function returning EVERY means "every existing resource of the type" (e.g. all-topics Metadata)
Name = str | ById
Names = Callable[[Any, int], Iterable[Name] | None]
Condition = Callable[[Any, int], bool]


@dataclass(frozen=True, slots=True)
class Shortcut:
    """An action that, when allowed, satisfies the whole check it belongs to."""

    operation: AclOperation
    resource_type: ResourceType = ResourceType.CLUSTER
    name: str = CLUSTER_NAME
    log_if_denied: bool = False


@dataclass(frozen=True, slots=True)
class Check:
    key: str  # a handler's handle on this check ("describe", "create", ...)
    operation: AclOperation
    resource_type: ResourceType
    names: Names
    mode: Mode
    error_code: int = ErrorCode.NONE
    log_if_allowed: bool = True
    log_if_denied: bool = True
    shortcut: Shortcut | None = None
    applies: Condition | None = None  # None: always asked
    any_resource: bool = False  # KIP-679: "allowed on at least one resource of the type" (InitProducerId)
    note: str = ""

    def applies_to(self, request: Any, version: int) -> bool:
        return self.applies is None or bool(self.applies(request, version))


@dataclass(frozen=True, slots=True)
class Bitfield:
    """A KIP-430 authorized-operations field, computed for ``names`` when ``applies`` holds (after ``gate``, if any)."""

    resource_type: ResourceType
    names: Names
    applies: Condition | None = None
    gate: str | None = None  # key of the GATE check that must pass first; when it fails the field is 0


@dataclass(frozen=True, slots=True)
class ApiChecks:
    api_key: int
    name: str
    checks: tuple[Check, ...] = ()
    bitfields: tuple[Bitfield, ...] = ()
    no_authorizer_error: int | None = None  # the ACL APIs answer ErrorCode.SECURITY_DISABLED when no authorizer is configured
    note: str = ""

    def check(self, key: str) -> Check:
        for c in self.checks:
            if c.key == key:
                return c
        raise KeyError(f"{self.name} declares no check {key!r}; it declares {[c.key for c in self.checks]}")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One action a request needs, as an auditor sees it."""

    operation: AclOperation
    resource_type: ResourceType
    name: str | None  # None: every existing resource of the type, or a resource known only by id
    mode: Mode
    error_code: int
    log_if_denied: bool = True
    log_if_allowed: bool = True
    ref_count: int = 1
    check: str = ""  # the Check.key it comes from
    is_shortcut: bool = False  # allowed: the other requirements of the same check are satisfied
    any_resource: bool = False
    resource_id: uuid.UUID | None = None


# -- names, read from the request ------------------------------------------------------------------------------------
def field(*path: str) -> Names:
    """Names found by walking attributes (lists are flattened; missing or null values contribute nothing)."""

    def names(request: Any, version: int) -> list[Name]:
        level = [request]
        for attr in path:
            nxt: list[Any] = []
            for obj in level:
                value = getattr(obj, attr, None)
                if value is None:
                    continue
                if isinstance(value, list):
                    nxt.extend(v for v in value if v is not None)
                else:
                    nxt.append(value)
            level = nxt
        return level

    return names


def _cluster(request: Any, version: int) -> list[Name]:
    return [CLUSTER_NAME]


def _every(request: Any, version: int) -> None:
    return EVERY


def _has(attr: str) -> Condition:
    return lambda request, version: getattr(request, attr, None) is not None


def _flag(attr: str) -> Condition:
    return lambda request, version: bool(getattr(request, attr, False))


def _versions(lo: int, hi: int = 1 << 15) -> Condition:
    return lambda request, version: lo <= version <= hi


def _topic_names_or_ids(names_attr: str, id_attr: str, *outer: str) -> Names:
    """Topic names, or ById for entries that carry only a topic id (Fetch v13+, DeleteTopics v6, Metadata v12)."""

    def names(request: Any, version: int) -> list[Name]:
        out: list[Name] = []
        for entry in field(*outer)(request, version) if outer else []:
            name = getattr(entry, names_attr, None)
            topic_id = getattr(entry, id_attr, None)
            if name is not None:
                out.append(name)
            elif topic_id is not None:
                out.append(ById(topic_id))
        return out

    return names


def _configs(resource_types: set[int], to_cluster: bool) -> Names:
    """DescribeConfigs/AlterConfigs: resource names of the given config resource types (or the cluster for them)."""

    def names(request: Any, version: int) -> list[Name]:
        found = [r for r in getattr(request, "resources", None) or [] if getattr(r, "resource_type", None) in resource_types]
        return [CLUSTER_NAME] * len(found) if to_cluster else [r.resource_name for r in found]

    return names


def _owner(request: Any, version: int) -> list[Name]:
    kind, name = getattr(request, "owner_principal_type", None), getattr(request, "owner_principal_name", None)
    return [f"{kind}:{name}"] if kind is not None and name is not None else []


def _is_follower(request: Any, version: int) -> bool:
    state = getattr(request, "replica_state", None)
    replica = state.replica_id if state is not None and version >= 15 else getattr(request, "replica_id", -1)
    return replica is not None and replica >= 0


def _key_type(kind: int) -> Condition:
    return lambda request, version: (getattr(request, "key_type", 0) if version >= 1 else 0) == kind


def _find_coordinator_keys(request: Any, version: int) -> list[Name]:
    return list(getattr(request, "coordinator_keys", None) or []) if version >= 4 else [getattr(request, "key", "")]


# ConfigResource.Type codes (3.9 has no GROUP config resource).
CONFIG_TOPIC, CONFIG_BROKER, CONFIG_BROKER_LOGGER, CONFIG_CLIENT_METRICS = 2, 4, 8, 16


# -- Metadata (key 3), the rules the broker's handler follows ---------------------------------------------------------
def metadata_all_topics(request: Any, version: int) -> bool:
    """Kafka's isAllTopics: a null topic list, or an empty one at v0."""
    topics = getattr(request, "topics", None)
    return topics is None or (version == 0 and not topics)


def _metadata_uses_ids(request: Any, version: int) -> bool:
    return version >= 12 and any(getattr(t, "topic_id", None) not in (None, _ZERO) for t in getattr(request, "topics", None) or [])


_ZERO = uuid.UUID(int=0)


def _metadata_explicit(request: Any, version: int) -> bool:
    return not metadata_all_topics(request, version)


def _metadata_topics(request: Any, version: int) -> list[Name]:
    if _metadata_uses_ids(request, version):
        # With any topic id present, Kafka resolves the ids and ignores the names.
        return [ById(t.topic_id) for t in request.topics if t.topic_id not in (None, _ZERO)]
    return [t.name for t in request.topics or [] if t.name is not None]


def _metadata_may_create(request: Any, version: int) -> bool:
    # v0-3 always ask for auto-creation; the broker also needs auto.create.topics.enable and the topic to be missing.
    return _metadata_explicit(request, version) and not _metadata_uses_ids(request, version) and (
        version < 4 or bool(getattr(request, "allow_auto_topic_creation", True)))


def _metadata_cluster_ops(request: Any, version: int) -> bool:
    return 8 <= version <= 10 and bool(getattr(request, "include_cluster_authorized_operations", False))


def _metadata_topic_ops(request: Any, version: int) -> bool:
    return version >= 8 and bool(getattr(request, "include_topic_authorized_operations", False))


# -- the declarations ---------------------------------------------------------------------------------------------------
def _throw(key: str, op: AclOperation, rtype: ResourceType, names: Names, error: int, **kw: Any) -> Check:
    return Check(key, op, rtype, names, Mode.AUTHORIZE_OR_THROW, error, **kw)


def _filter(key: str, op: AclOperation, rtype: ResourceType, names: Names, error: int, **kw: Any) -> Check:
    return Check(key, op, rtype, names, Mode.FILTER_WITH_ERROR, error, **kw)


def _silent(key: str, op: AclOperation, rtype: ResourceType, names: Names, **kw: Any) -> Check:
    return Check(key, op, rtype, names, Mode.SILENT_FILTER, ErrorCode.NONE, **kw)


def _cluster_only(api_key: int, name: str, op: AclOperation, note: str = "") -> ApiChecks:
    return ApiChecks(api_key, name, (_throw("cluster", op, _RT.CLUSTER, _cluster, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),), note=note)


def _group_read(api_key: int, name: str) -> ApiChecks:
    return ApiChecks(api_key, name, (_throw("group", _OP.READ, _RT.GROUP, field("group_id"), ErrorCode.GROUP_AUTHORIZATION_FAILED),))


_TOPIC, _GROUP, _TXN, _CLUSTER = _RT.TOPIC, _RT.GROUP, _RT.TRANSACTIONAL_ID, _RT.CLUSTER
_CONTROLLER_ONLY = "controller-only: ControllerApis requires CLUSTER_ACTION on the cluster"

_DECLARATIONS: tuple[ApiChecks, ...] = (
    ApiChecks(0, "Produce", (
        _throw("transactional_id", _OP.WRITE, _TXN, field("transactional_id"), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
               applies=_has("transactional_id"),
               note="only when the batches are transactional; the error goes to every partition"),
        _filter("topics", _OP.WRITE, _TOPIC, field("topic_data", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    ), note="authorization, then existence (3), then record validation; with acks=0 any error closes the connection"),
    ApiChecks(1, "Fetch", (
        _throw("follower", _OP.CLUSTER_ACTION, _CLUSTER, _cluster, ErrorCode.TOPIC_AUTHORIZATION_FAILED, applies=_is_follower,
               note="a follower without the permission gets 29 on every partition, not 31"),
        _filter("topics", _OP.READ, _TOPIC, _topic_names_or_ids("topic", "topic_id", "topics"), ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                applies=lambda r, v: not _is_follower(r, v), note="v13+: unknown topic ids get 100 before authorization"),
    )),
    ApiChecks(2, "ListOffsets", (_filter("topics", _OP.DESCRIBE, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED),)),
    ApiChecks(3, "Metadata", (
        _filter("describe", _OP.DESCRIBE, _TOPIC, _metadata_topics, ErrorCode.TOPIC_AUTHORIZATION_FAILED, applies=_metadata_explicit,
                note="denied topics come last, name echoed (null with the id when asked by id), no partitions"),
        _silent("describe_all", _OP.DESCRIBE, _TOPIC, _every, applies=metadata_all_topics, log_if_denied=False,
                note="all-topics request: undescribable topics are left out"),
        _filter("create", _OP.CREATE, _TOPIC, _metadata_topics, ErrorCode.TOPIC_AUTHORIZATION_FAILED, applies=_metadata_may_create,
                shortcut=Shortcut(_OP.CREATE),
                note="only for describable topics that do not exist, with auto.create.topics.enable"),
        Check("cluster_operations", _OP.DESCRIBE, _CLUSTER, _cluster, Mode.GATE, applies=_metadata_cluster_ops,
              note="without it ClusterAuthorizedOperations is 0"),
    ), bitfields=(
        Bitfield(_CLUSTER, _cluster, _metadata_cluster_ops, gate="cluster_operations"),
        Bitfield(_TOPIC, _metadata_topics, _metadata_topic_ops),
    ), note="no cluster-level check: the broker list is always returned"),
    *(_cluster_only(k, n, _OP.CLUSTER_ACTION, "ZooKeeper inter-broker API")
      for k, n in ((4, "LeaderAndIsr"), (5, "StopReplica"), (6, "UpdateMetadata"), (7, "ControlledShutdown"))),
    ApiChecks(8, "OffsetCommit", (
        _throw("group", _OP.READ, _GROUP, field("group_id"), ErrorCode.GROUP_AUTHORIZATION_FAILED),
        _filter("topics", _OP.READ, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    )),
    ApiChecks(9, "OffsetFetch", (
        _throw("group", _OP.DESCRIBE, _GROUP, field("group_id"), ErrorCode.GROUP_AUTHORIZATION_FAILED, applies=_versions(0, 7)),
        _filter("groups", _OP.DESCRIBE, _GROUP, field("groups", "group_id"), ErrorCode.GROUP_AUTHORIZATION_FAILED, applies=_versions(8)),
        _filter("topics", _OP.DESCRIBE, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED, applies=_versions(0, 7)),
        _filter("group_topics", _OP.DESCRIBE, _TOPIC, field("groups", "topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                applies=_versions(8), note="a group asking for all partitions (null topics) silently loses undescribable topics"),
    )),
    ApiChecks(10, "FindCoordinator", (
        _filter("group", _OP.DESCRIBE, _GROUP, _find_coordinator_keys, ErrorCode.GROUP_AUTHORIZATION_FAILED, applies=_key_type(0)),
        _filter("transaction", _OP.DESCRIBE, _TXN, _find_coordinator_keys, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                applies=_key_type(1)),
        _filter("share", _OP.CLUSTER_ACTION, _CLUSTER, lambda r, v: [CLUSTER_NAME] * len(_find_coordinator_keys(r, v)),
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED, applies=_key_type(2)),
    ), note="v4+: one error per key; v0-3: the whole response"),
    *(_group_read(k, n) for k, n in ((11, "JoinGroup"), (12, "Heartbeat"), (13, "LeaveGroup"), (14, "SyncGroup"))),
    ApiChecks(15, "DescribeGroups", (_filter("groups", _OP.DESCRIBE, _GROUP, field("groups"), ErrorCode.GROUP_AUTHORIZATION_FAILED),),
              bitfields=(Bitfield(_GROUP, field("groups"), lambda r, v: v >= 3 and bool(getattr(r, "include_authorized_operations", False))),)),
    ApiChecks(16, "ListGroups", (
        _silent("groups", _OP.DESCRIBE, _GROUP, _every, log_if_denied=False, shortcut=Shortcut(_OP.DESCRIBE)),
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
                _topic_names_or_ids("name", "topic_id", "topics")(r, v), ErrorCode.TOPIC_AUTHORIZATION_FAILED, shortcut=Shortcut(_OP.DELETE)),
        _filter("delete", _OP.DELETE, _TOPIC, lambda r, v: field("topic_names")(r, v) if v < 6 else
                _topic_names_or_ids("name", "topic_id", "topics")(r, v), ErrorCode.TOPIC_AUTHORIZATION_FAILED, shortcut=Shortcut(_OP.DELETE)),
    )),
    ApiChecks(21, "DeleteRecords", (_filter("topics", _OP.DELETE, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED),)),
    ApiChecks(22, "InitProducerId", (
        _throw("transactional_id", _OP.WRITE, _TXN, field("transactional_id"), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
               applies=_has("transactional_id")),
        _throw("idempotent", _OP.WRITE, _TOPIC, _every, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, any_resource=True,
               shortcut=Shortcut(_OP.IDEMPOTENT_WRITE), applies=lambda r, v: getattr(r, "transactional_id", None) is None,
               note="KIP-679: WRITE on any one topic is enough for an idempotent producer"),
    )),
    ApiChecks(23, "OffsetForLeaderEpoch", (
        _filter("topics", _OP.DESCRIBE, _TOPIC, field("topics", "topic"), ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                shortcut=Shortcut(_OP.CLUSTER_ACTION)),
    )),
    ApiChecks(24, "AddPartitionsToTxn", (
        _throw("transactional_id", _OP.WRITE, _TXN, field("v3_and_below_transactional_id"), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
               applies=_versions(0, 3)),
        _filter("topics", _OP.WRITE, _TOPIC, field("v3_and_below_topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED, applies=_versions(0, 3),
                note="internal topics are always unauthorized; other partitions get OPERATION_NOT_ATTEMPTED (55)"),
        _throw("cluster", _OP.CLUSTER_ACTION, _CLUSTER, _cluster, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, applies=_versions(4)),
    )),
    ApiChecks(25, "AddOffsetsToTxn", (
        _throw("transactional_id", _OP.WRITE, _TXN, field("transactional_id"), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        _throw("group", _OP.READ, _GROUP, field("group_id"), ErrorCode.GROUP_AUTHORIZATION_FAILED),
    )),
    ApiChecks(26, "EndTxn", (_throw("transactional_id", _OP.WRITE, _TXN, field("transactional_id"), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),)),
    ApiChecks(27, "WriteTxnMarkers", (
        _throw("cluster", _OP.CLUSTER_ACTION, _CLUSTER, _cluster, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, shortcut=Shortcut(_OP.ALTER)),
    )),
    ApiChecks(28, "TxnOffsetCommit", (
        _throw("transactional_id", _OP.WRITE, _TXN, field("transactional_id"), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        _throw("group", _OP.READ, _GROUP, field("group_id"), ErrorCode.GROUP_AUTHORIZATION_FAILED),
        _filter("topics", _OP.READ, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    )),
    ApiChecks(29, "DescribeAcls", (_throw("cluster", _OP.DESCRIBE, _CLUSTER, _cluster, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),),
              no_authorizer_error=ErrorCode.SECURITY_DISABLED, note="ALLOW ALTER on the cluster implies DESCRIBE"),
    ApiChecks(30, "CreateAcls", (_throw("cluster", _OP.ALTER, _CLUSTER, _cluster, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),),
              no_authorizer_error=ErrorCode.SECURITY_DISABLED),
    ApiChecks(31, "DeleteAcls", (_throw("cluster", _OP.ALTER, _CLUSTER, _cluster, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),),
              no_authorizer_error=ErrorCode.SECURITY_DISABLED),
    ApiChecks(32, "DescribeConfigs", (
        _filter("topics", _OP.DESCRIBE_CONFIGS, _TOPIC, _configs({CONFIG_TOPIC}, False), ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        _filter("cluster", _OP.DESCRIBE_CONFIGS, _CLUSTER, _configs({CONFIG_BROKER, CONFIG_BROKER_LOGGER, CONFIG_CLIENT_METRICS}, True),
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    ), note="an unknown config resource type fails the whole request"),
    ApiChecks(33, "AlterConfigs", (
        _filter("topics", _OP.ALTER_CONFIGS, _TOPIC, _configs({CONFIG_TOPIC}, False), ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        _filter("cluster", _OP.ALTER_CONFIGS, _CLUSTER, _configs({CONFIG_BROKER, CONFIG_CLIENT_METRICS}, True),
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    )),
    _cluster_only(34, "AlterReplicaLogDirs", _OP.ALTER),
    _cluster_only(35, "DescribeLogDirs", _OP.DESCRIBE, "v3+: top-level 31 with an empty result; older versions an empty result"),
    ApiChecks(36, "SaslAuthenticate"),
    ApiChecks(37, "CreatePartitions", (_filter("topics", _OP.ALTER, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED),)),
    ApiChecks(38, "CreateDelegationToken", (
        _throw("owner", _OP.CREATE_TOKENS, _RT.USER, _owner, ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
               note="only when the owner differs from the requester"),
    )),
    ApiChecks(39, "RenewDelegationToken", note="no ACL: the caller must be the owner or a renewer (63)"),
    ApiChecks(40, "ExpireDelegationToken", note="no ACL: the caller must be the owner or a renewer (63)"),
    ApiChecks(41, "DescribeDelegationToken", (
        _silent("tokens", _OP.DESCRIBE, _RT.DELEGATION_TOKEN, _every,
                note="visible to the owner or a renewer, or with DESCRIBE on the token, or DESCRIBE_TOKENS on USER(owner)"),
    )),
    ApiChecks(42, "DeleteGroups", (_filter("groups", _OP.DELETE, _GROUP, field("groups_names"), ErrorCode.GROUP_AUTHORIZATION_FAILED),)),
    _cluster_only(43, "ElectLeaders", _OP.ALTER),
    ApiChecks(44, "IncrementalAlterConfigs", (
        _filter("topics", _OP.ALTER_CONFIGS, _TOPIC, _configs({CONFIG_TOPIC}, False), ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        _filter("cluster", _OP.ALTER_CONFIGS, _CLUSTER, _configs({CONFIG_BROKER, CONFIG_BROKER_LOGGER, CONFIG_CLIENT_METRICS}, True),
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
        Check("cluster_operations", _OP.DESCRIBE, _CLUSTER, _cluster, Mode.GATE,
              applies=_flag("include_cluster_authorized_operations"), note="without it ClusterAuthorizedOperations is 0"),
    ), bitfields=(Bitfield(_CLUSTER, _cluster, _flag("include_cluster_authorized_operations"), gate="cluster_operations"),),
              note="no check on a broker: anyone gets the broker list"),
    ApiChecks(61, "DescribeProducers", (_filter("topics", _OP.READ, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED),)),
    _cluster_only(64, "UnregisterBroker", _OP.ALTER, "forwarded; the controller checks"),
    ApiChecks(65, "DescribeTransactions", (
        _filter("transactional_ids", _OP.DESCRIBE, _TXN, field("transactional_ids"), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        _silent("topics", _OP.DESCRIBE, _TOPIC, _every, note="topics inside a returned state are dropped unless describable"),
    )),
    ApiChecks(66, "ListTransactions", (_silent("transactional_ids", _OP.DESCRIBE, _TXN, _every),)),
    _cluster_only(67, "AllocateProducerIds", _OP.CLUSTER_ACTION, "controller / inter-broker"),
    _group_read(68, "ConsumerGroupHeartbeat"),
    ApiChecks(69, "ConsumerGroupDescribe", (_filter("groups", _OP.DESCRIBE, _GROUP, field("group_ids"), ErrorCode.GROUP_AUTHORIZATION_FAILED),),
              bitfields=(Bitfield(_GROUP, field("group_ids"), _flag("include_authorized_operations")),)),
    ApiChecks(71, "GetTelemetrySubscriptions"),
    ApiChecks(72, "PushTelemetry"),
    _cluster_only(74, "ListClientMetricsResources", _OP.DESCRIBE_CONFIGS),
    ApiChecks(75, "DescribeTopicPartitions", (
        _filter("topics", _OP.DESCRIBE, _TOPIC, field("topics", "name"), ErrorCode.TOPIC_AUTHORIZATION_FAILED, applies=lambda r, v: bool(r.topics)),
        _silent("all_topics", _OP.DESCRIBE, _TOPIC, _every, applies=lambda r, v: not r.topics),
    ), bitfields=(Bitfield(_TOPIC, field("topics", "name")),), note="the bitfield is always computed"),
    _group_read(76, "ShareGroupHeartbeat"),
    ApiChecks(77, "ShareGroupDescribe", (_filter("groups", _OP.DESCRIBE, _GROUP, field("group_ids"), ErrorCode.GROUP_AUTHORIZATION_FAILED),),
              bitfields=(Bitfield(_GROUP, field("group_ids"), _flag("include_authorized_operations")),)),
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


def distinct_names(names: Iterable[Name]) -> list[tuple[Name, int]]:
    """(name, occurrences) in first-appearance order: Kafka checks each distinct name once with that ref count."""
    counts: dict[Name, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return list(counts.items())


def _requirement(check: Check, mode: Mode, name: Name | None, ref_count: int) -> Requirement:
    return Requirement(
        operation=check.operation, resource_type=check.resource_type,
        name=name if isinstance(name, str) else None, resource_id=name.id if isinstance(name, ById) else None,
        mode=mode, error_code=check.error_code, log_if_denied=check.log_if_denied, log_if_allowed=check.log_if_allowed,
        ref_count=ref_count, check=check.key, any_resource=check.any_resource,
    )


def requirements(api_key: int, version: int, request: Any) -> list[Requirement]:
    """Every action Kafka would ask the authorizer about for this request, in the order it asks.

    Conditions that depend on broker state (does the topic exist, is auto-creation on, is the requester the
    token owner) are not evaluated here; the Check notes say which. Bitfield probes come last (mode BITFIELD).
    An undeclared key raises KeyError.
    """
    decl = DECLARATIONS.get(api_key)
    if decl is None:
        raise KeyError(f"api key {api_key} has no declared ACL checks")
    out: list[Requirement] = []
    for check in decl.checks:
        if not check.applies_to(request, version):
            continue
        if check.shortcut is not None:
            s = check.shortcut
            out.append(Requirement(s.operation, s.resource_type, s.name, check.mode, check.error_code, s.log_if_denied,
                                   check.log_if_allowed, 1, check.key, is_shortcut=True))
        names = check.names(request, version)
        if names is EVERY:
            out.append(_requirement(check, check.mode, None, 1))
            continue
        out += [_requirement(check, check.mode, name, count) for name, count in distinct_names(names)]
    for bits in decl.bitfields:
        if bits.applies is not None and not bits.applies(request, version):
            continue
        names = bits.names(request, version)
        for name, _ in distinct_names(names or []):
            for op in sorted(SUPPORTED_OPERATIONS[bits.resource_type]):
                out.append(Requirement(op, bits.resource_type, name if isinstance(name, str) else None, Mode.BITFIELD, ErrorCode.NONE,
                                       log_if_denied=False, log_if_allowed=False, check=bits.gate or "bitfield",
                                       resource_id=name.id if isinstance(name, ById) else None))
    return out
