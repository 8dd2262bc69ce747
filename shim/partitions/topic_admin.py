"""Topic administration as a single-node Kafka 3.9 KRaft cluster does it: create, delete, add partitions.

Kafka's counterparts: ``ControllerApis`` (createTopics / deleteTopics / createPartitions: duplicates, authorization,
the order of the answer) and ``ReplicationControlManager`` (names, existence, configs, replication factor, manual
assignments, the partition counts). The checks, their order and their messages are Kafka's; where Kafka iterates a
Java ``HashSet`` the answer comes in that order (``javacompat.java_hash``). Kafka shuffles DeleteTopics results on
purpose; so does the handler (shim/handlers/topics.py), after this works them out in Kafka's order.

No wire types and no authorizer here: the handler passes the authorization answers in as plain callables
(``Authorizations``), so this is testable without a socket. Nothing awaits; the topics change on the event loop.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.protocol.primitives import ZERO_UUID
from kafka_shim.shim.cluster.configs.definition import ConfigSource, ConfigValueError
from kafka_shim.shim.cluster.configs.describe import DescribedConfig
from kafka_shim.shim.cluster.configs.dynamic_broker import DynamicBrokerConfigs
from kafka_shim.shim.cluster.configs.scala_order import scala_hashmap_order
from kafka_shim.shim.cluster.configs.topic_configs import (
    CURRENT_TOPIC_CONFIGS,
    TOPIC_CONFIGS,
    TopicConfigSet,
    validate_topic_configs,
)
from kafka_shim.shim.cluster.topics import MAX_TOPIC_NAME_LENGTH, invalid_topic_name
from kafka_shim.shim.javacompat.java_hash import JavaHashMap
from kafka_shim.shim.javacompat.kafka_uuid import random_uuid
from kafka_shim.shim.partitions.manager import Partitions

CLUSTER_METADATA_TOPIC = "__cluster_metadata"
# QuorumController.MAX_RECORDS_PER_USER_OP: one request may write at most this many metadata records (a topic
# record, one per config and one per partition); beyond it the whole request fails with POLICY_VIOLATION.
MAX_RECORDS_PER_USER_OP = 10000
TOO_LARGE_MESSAGE = "Unable to perform excessively large batch operation."

# Kafka's default messages (Errors.*.message()), which ApiError(Errors) carries.
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
UNKNOWN_TOPIC_ID_MESSAGE = "This server does not host this topic ID."
TOPIC_AUTHORIZATION_MESSAGE = "Topic authorization failed."
DUPLICATE_NAME_MESSAGE = "Duplicate topic name."

NameFilter = Callable[[Collection[str]], set[str]]


def effective_topic_configs(overrides: Mapping[str, str], static: Mapping[str, str],
                            cluster_default: Mapping[str, str] | None = None,
                            per_broker: Mapping[str, str] | None = None,
                            config_set: TopicConfigSet = CURRENT_TOPIC_CONFIGS) -> list[DescribedConfig]:
    """A new topic's configs as CreateTopics v5+ reports them (KafkaConfigSchema.resolveEffectiveTopicConfigs, with
    the controller's static config, the cluster-wide dynamic defaults and its own dynamic configs).

    Unlike DescribeConfigs: an override as the request spelled it (TOPIC_CONFIG); else the first broker synonym set
    dynamically for this broker (DYNAMIC_BROKER_CONFIG), else the first one set as a cluster-wide dynamic default
    (DYNAMIC_DEFAULT_BROKER_CONFIG), else the first one in server.properties (STATIC_BROKER_CONFIG), each as written,
    hours and minutes turned into ms; else the topic key's own default (DEFAULT_CONFIG). No synonyms; sensitive values
    hidden. The keys are the emulated release's, sorted by name (a ZooKeeper-mode release: in Scala HashMap order).
    """
    layers = ((per_broker or {}, ConfigSource.DYNAMIC_BROKER_CONFIG),
              (cluster_default or {}, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
              (static, ConfigSource.STATIC_BROKER_CONFIG))
    configs = []
    # KRaft's controller walks every key the topic ConfigDef has, the internal ones too (3.3-3.5's tiered storage
    # keys); ZkAdminManager listed only the public ones
    names = config_set.names if config_set.zookeeper else config_set.names + config_set.internal
    for name in scala_hashmap_order(names) if config_set.zookeeper else sorted(names):
        key = TOPIC_CONFIGS[name]
        value: str | None
        if name in overrides:
            value, source = overrides[name], ConfigSource.TOPIC_CONFIG
        elif name in config_set.internal:
            # no broker synonym then (LogConfig's CONFIGS_WITH_NO_SERVER_DEFAULTS): the key's own default
            value, source = config_set.default_string(name), ConfigSource.DEFAULT_CONFIG
        else:
            value, source = config_set.default_string(name), ConfigSource.DEFAULT_CONFIG
            for properties, layer_source in layers:
                synonym = next((s for s in key.synonyms if s.name in properties), None)
                if synonym is not None:
                    raw = properties[synonym.name]
                    value, source = (raw if synonym.to_ms == 1 else _in_ms(raw, synonym.to_ms)), layer_source
                    break
        sensitive = key.type.sensitive
        configs.append(DescribedConfig(name, None if sensitive else value, source, key.type, sensitive))
    return configs


def _in_ms(raw: str, factor: int) -> str:
    try:
        return str(int(raw.strip()) * factor)
    except ValueError:
        return raw  # the broker refused such a value at start-up; never reached


# AutoTopicCreationManager.creatableTopic: the internal topics come with their coordinators' sizes and configs
# (server.properties key, Kafka's default).
_GROUP_METADATA = ("offsets.topic.num.partitions", 50), ("offsets.topic.replication.factor", 3)
_TRANSACTION_STATE = ("transaction.state.log.num.partitions", 50), ("transaction.state.log.replication.factor", 3)


def auto_created_topic(name: str, properties: Mapping[str, str], num_partitions: int, default_replication_factor: int) -> NewTopic:
    """The CreateTopics entry a broker sends its controller when Metadata auto-creates ``name``."""
    def number(key: str, default: int) -> int:
        try:
            return int(properties.get(key, default))
        except ValueError:
            return default  # the broker refused such a value at start-up

    if name == "__consumer_offsets":
        (partitions_key, partitions), (factor_key, factor) = _GROUP_METADATA
        configs = [("cleanup.policy", "compact"), ("segment.bytes", str(number("offsets.topic.segment.bytes", 104857600))),
                   ("compression.type", "producer")]
    elif name == "__transaction_state":
        (partitions_key, partitions), (factor_key, factor) = _TRANSACTION_STATE
        # TransactionStateManager.transactionTopicConfigs: its records are never compressed
        configs = [("compression.type", "uncompressed"), ("cleanup.policy", "compact"),
                   ("min.insync.replicas", str(number("transaction.state.log.min.isr", 2))),
                   ("segment.bytes", str(number("transaction.state.log.segment.bytes", 104857600))),
                   ("unclean.leader.election.enable", "false")]
    else:
        return NewTopic(name, num_partitions, default_replication_factor)
    return NewTopic(name, number(partitions_key, partitions), number(factor_key, factor), configs=configs)


def _zookeeper_invalid_name(name: str) -> str | None:
    """Topic.validate's message before 3.3 (InvalidTopicException), or None for a legal name."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if invalid_topic_name(name) is None:
        return None
    if len(name.encode("utf-16-le", "surrogatepass")) // 2 > MAX_TOPIC_NAME_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, topic name: {name}"
    return f'Topic name "{name}" is illegal, it contains a character other than ASCII alphanumerics, \'.\', \'_\' and \'-\''


def _unify_collision_chars(name: str) -> str:
    return name.replace(".", "_")


# -- plain inputs and results -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NewTopic:
    """One topic of a CreateTopics request."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: Sequence[tuple[int, Sequence[int]]] = ()  # (partition index, broker ids)
    configs: Sequence[tuple[str, str | None]] = ()


@dataclass
class CreateResult:
    name: str
    error: int = ErrorCode.NONE
    message: str | None = None
    topic_id: uuid.UUID = ZERO_UUID
    num_partitions: int = -1
    replication_factor: int = -1
    configs: list[DescribedConfig] = field(default_factory=list)  # sorted by name, as Kafka's controller lists them
    config_error: int = ErrorCode.NONE  # 29 when the caller may not describe the topic's configs


@dataclass(frozen=True)
class TopicRef:
    """One topic of a DeleteTopics request: by name (v0-6) or by id (v6)."""

    name: str | None
    topic_id: uuid.UUID = ZERO_UUID


@dataclass
class DeleteResult:
    name: str | None
    topic_id: uuid.UUID
    error: int = ErrorCode.NONE
    message: str | None = None


@dataclass(frozen=True)
class PartitionsIncrease:
    """One topic of a CreatePartitions request: the new total and, optionally, the new partitions' replicas."""

    name: str
    count: int
    assignments: Sequence[Sequence[int]] | None = None


@dataclass
class PartitionsResult:
    name: str
    error: int = ErrorCode.NONE
    message: str | None = None


class TopicDeletionDisabled(Exception):
    """delete.topic.enable=false: the whole DeleteTopics request fails (42 before v3, 73 from v3)."""


class BatchTooLarge(Exception):
    """The request would write more than MAX_RECORDS_PER_USER_OP metadata records: the whole request fails (44)."""

    code = ErrorCode.POLICY_VIOLATION
    message = TOO_LARGE_MESSAGE


class RequestTimedOut(Exception):
    """The request's timeout_ms (0 or less) expired before the controller took it up: the whole request fails (7).

    Kafka checks the deadline only when there is controller work: a request whose every topic was refused before
    (duplicates, denials) is answered normally."""

    code = ErrorCode.REQUEST_TIMED_OUT


class _Refused(Exception):
    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Authorizations:
    """What the caller may do, as the handler's authorizer answers it (everything, without an authorizer)."""

    cluster_wide: bool = True  # CREATE (CreateTopics) or DELETE (DeleteTopics) on the cluster
    permitted: NameFilter = set  # CREATE / DELETE / ALTER on each topic: the names allowed
    describable: NameFilter = set  # DESCRIBE_CONFIGS (CreateTopics) or DESCRIBE (DeleteTopics) on each topic
    # DeleteTopics by name in ZooKeeper mode: DELETE (29) before existence (3), where KRaft asks DESCRIBE before existence
    permission_before_existence: bool = False


def _java_hash_set() -> JavaHashMap[None]:
    return JavaHashMap()


def manual_assignment_problem(brokers: Sequence[int], registered: set[int] | Sequence[int], replicas: int | None = None) -> str | None:
    """ReplicationControlManager.validateManualPartitionAssignment's message for a replica list (CreateTopics,
    CreatePartitions, AlterPartitionReassignments), or None when it is valid."""
    if not brokers:
        return "The manual partition assignment includes an empty replica list."
    previous = None
    for broker in sorted(brokers):
        if broker not in registered:
            return f"The manual partition assignment includes broker {broker}, but no such broker is registered."
        if broker == previous:
            return f"The manual partition assignment includes the broker {previous} more than once."
        previous = broker
    if replicas is not None and len(brokers) != replicas:
        return (f"The manual partition assignment includes a partition with {len(brokers)} replica(s), but this is not "
                f"consistent with previous partitions, which have {replicas} replica(s).")
    return None


# -- the administration ---------------------------------------------------------------------------------------------------


class TopicAdmin:
    """The single node's topic administration over ``Partitions``."""

    def __init__(self, partitions: Partitions, *, num_partitions: int = 1, default_replication_factor: int = 1,
                 delete_topic_enable: bool = True, broker_configs: DynamicBrokerConfigs | None = None,
                 config_set: TopicConfigSet = CURRENT_TOPIC_CONFIGS) -> None:
        self.partitions = partitions
        self.config_set = config_set  # the topic keys of the emulated release (kafka.version)
        self.broker_configs = broker_configs  # where CreateTopics' config sources come from (else all static)
        self.num_partitions = num_partitions
        self.default_replication_factor = default_replication_factor
        self.delete_topic_enable = delete_topic_enable

    @property
    def _topics(self):
        return self.partitions.cluster.topics

    @property
    def brokers(self) -> set[int]:
        """The registered (and live) brokers: every node of the process but those a fault has stopped."""
        return set(self.partitions.cluster.live_nodes)

    # -- CreateTopics ---------------------------------------------------------------------------------------------------

    def create_topics(self, topics: Sequence[NewTopic], validate_only: bool, auth: Authorizations | None = None, *,
                      timeout_ms: int = 30000, mutation_quota: MutationQuota | None = None) -> list[CreateResult]:
        """ControllerApis.createTopics then ReplicationControlManager.createTopics; raises BatchTooLarge, RequestTimedOut."""
        auth = auth or Authorizations()
        names, duplicates = _java_hash_set(), _java_hash_set()
        for topic in topics:
            if topic.name in duplicates:
                continue
            if topic.name in names:
                names.remove(topic.name)
                duplicates.put(topic.name, None)
            else:
                names.put(topic.name, None)
        allowed = [n for n in names.keys() if n != CLUSTER_METADATA_TOPIC]
        authorized = set(allowed) if auth.cluster_wide else auth.permitted(allowed)
        describable = auth.describable(allowed)
        effective = [t for t in topics if t.name not in duplicates and t.name in authorized]
        if effective and timeout_ms <= 0:
            raise RequestTimedOut()
        results = self._create(effective, validate_only, describable, mutation_quota)
        results += [CreateResult(n, ErrorCode.INVALID_REQUEST, DUPLICATE_NAME_MESSAGE) for n in duplicates.keys()]
        for n in names.keys():
            if n == CLUSTER_METADATA_TOPIC:
                results.append(CreateResult(n, ErrorCode.INVALID_REQUEST, f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited."))
            elif n not in authorized:
                results.append(CreateResult(n, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."))
        return results

    def _create(self, topics: Sequence[NewTopic], validate_only: bool, describable: set[str],
                mutation_quota: MutationQuota | None = None) -> list[CreateResult]:
        # Every check runs against the topics as they were before the request (Kafka applies the records at the end).
        colliding: dict[str, str] = {}
        for existing in self._topics:
            if "." in existing or "_" in existing:
                colliding.setdefault(_unify_collision_chars(existing), existing)
        planned: list[tuple[NewTopic, int, dict[str, str], list[list[int]] | None, int]] = []
        results: list[CreateResult] = []
        records = 0
        for topic in topics:
            try:
                partitions, overrides = self._check_new_topic(topic, colliding)
                _apply_quota(mutation_quota, partitions)  # KIP-599, after every other check (createTopic)
            except _Refused as refused:
                results.append(CreateResult(topic.name, refused.code, refused.message))
                continue
            records += 1 + len(overrides) + partitions
            if records > MAX_RECORDS_PER_USER_OP:
                raise BatchTooLarge(TOO_LARGE_MESSAGE)
            result = CreateResult(topic.name, topic_id=random_uuid())
            manual = [list(brokers) for _, brokers in sorted(topic.assignments)] if topic.assignments else None
            factor = len(manual[0]) if manual else (
                self.default_replication_factor if topic.replication_factor == -1 else topic.replication_factor)
            if topic.name in describable:
                result.num_partitions, result.replication_factor = partitions, factor
                result.configs = self._effective_configs(overrides)
            else:
                result.config_error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            results.append(result)
            planned.append((topic, partitions, overrides, manual, factor))
        if not validate_only:
            ids = {r.name: r.topic_id for r in results if r.error == ErrorCode.NONE}
            for topic, partitions, overrides, manual, factor in planned:
                replicas = manual or self.partitions.cluster.placement(partitions, factor)
                self.partitions.create_topic(topic.name, partitions, overrides, topic_id=ids[topic.name], replicas=replicas)
        return results

    def create_topics_zookeeper(self, topics: Sequence[NewTopic], validate_only: bool, auth: Authorizations | None = None, *,
                                timeout_ms: int = 30000, mutation_quota: MutationQuota | None = None) -> list[CreateResult]:
        """A ZooKeeper-mode broker's CreateTopics (before 3.3): KafkaApis answers a name given twice (every entry) and
        refused topics, then ZkAdminManager checks each remaining topic in its own order. Every entry is answered, in
        request order. A topic refused by KafkaApis keeps topic_config_error_code 29 when its configs may not be
        described; one ZkAdminManager refuses has it reset to 0."""
        auth = auth or Authorizations()
        names = [t.name for t in topics]
        distinct = list(dict.fromkeys(names))
        authorized = set(distinct) if auth.cluster_wide else auth.permitted(distinct)
        describable = auth.describable(distinct)
        existing = list(self._topics)
        results: list[CreateResult] = []
        for topic in topics:
            config_error = ErrorCode.NONE if topic.name in describable else ErrorCode.TOPIC_AUTHORIZATION_FAILED
            if names.count(topic.name) > 1:
                results.append(CreateResult(topic.name, ErrorCode.INVALID_REQUEST, "Found multiple entries for this topic.",
                                            config_error=config_error))
                continue
            if topic.name not in authorized:
                results.append(CreateResult(topic.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.",
                                            config_error=config_error))
                continue
            try:
                assignment = self._check_new_topic_zookeeper(topic, existing, validate_only)
                if not validate_only:
                    _apply_quota(mutation_quota, len(assignment))
            except _Refused as refused:
                results.append(CreateResult(topic.name, refused.code, refused.message))
                continue
            overrides = {n: v for n, v in topic.configs if v is not None}
            replicas = [assignment[i] for i in range(len(assignment))]
            result = CreateResult(topic.name, config_error=config_error)
            if topic.name in describable:
                result.num_partitions, result.replication_factor = len(replicas), len(replicas[0])
                result.configs = self._effective_configs(overrides)
            if not validate_only:  # the id is known once the topic is written (v7, 3.0)
                result.topic_id = random_uuid()
                self.partitions.create_topic(topic.name, len(replicas), overrides, topic_id=result.topic_id, replicas=replicas)
                if timeout_ms <= 0:  # created, but not waited for
                    result = CreateResult(topic.name, ErrorCode.REQUEST_TIMED_OUT, None)
            results.append(result)
        return results

    def _check_new_topic_zookeeper(self, topic: NewTopic, existing: Sequence[str], validate_only: bool) -> dict[int, list[int]]:
        """ZkAdminManager.createTopics' checks, then AdminZkClient.validateTopicCreate's, in their order; the
        partition -> replicas assignment."""
        name = topic.name
        if name in self._topics:
            raise _Refused(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        nulls = [n for n, v in topic.configs if v is None]
        if nulls:
            raise _Refused(ErrorCode.INVALID_REQUEST, "Null value not supported for topic configs : " + ",".join(nulls))
        if topic.assignments:
            if topic.num_partitions != -1 or topic.replication_factor != -1:
                raise _Refused(ErrorCode.INVALID_REQUEST, "Both numPartitions or replicationFactor and replicasAssignments "
                                                          "were set. Both cannot be used at the same time.")
            assignment = {index: list(brokers) for index, brokers in topic.assignments}  # a later index wins
        else:
            # AdminUtils.assignReplicasToBrokers: partitions, then the replication factor against the live brokers
            count = self.num_partitions if topic.num_partitions == -1 else topic.num_partitions
            factor = self.default_replication_factor if topic.replication_factor == -1 else topic.replication_factor
            if count <= 0:
                raise _Refused(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
            if factor <= 0:
                raise _Refused(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
            if factor > len(self.brokers):
                raise _Refused(ErrorCode.INVALID_REPLICATION_FACTOR,
                               f"Replication factor: {factor} larger than available brokers: {len(self.brokers)}.")
            # (placing moves the cluster's round-robin start on: only for a topic that is created)
            placed = self.partitions.cluster.placement(count, factor) if not validate_only else [sorted(self.brokers)[:factor]] * count
            assignment = dict(enumerate(placed))
        invalid = _zookeeper_invalid_name(name)  # the name is checked only here
        if invalid is not None:
            raise _Refused(ErrorCode.INVALID_TOPIC_EXCEPTION, invalid)
        if "." in name or "_" in name:
            colliding = [t for t in existing if _unify_collision_chars(t) == _unify_collision_chars(name)]
            if colliding:
                raise _Refused(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topics: {', '.join(colliding)}")
        if len({len(brokers) for brokers in assignment.values()}) != 1:
            raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "All partitions should have the same number of replicas")
        if any(len(set(brokers)) != len(brokers) for brokers in assignment.values()):
            # the assignment as Scala prints a mutable.HashMap of ArrayBuffers (small partition numbers: ascending)
            shown = ", ".join(f"{i} -> ArrayBuffer({', '.join(map(str, b))})" for i, b in sorted(assignment.items()))
            raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Duplicate replica assignment found: HashMap({shown})")
        if sum(i for i in assignment if i >= 0) != len(assignment) * (len(assignment) - 1) // 2:
            raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence")
        overrides = {n: v for n, v in topic.configs if v is not None}
        try:  # LogConfig.validate against LogConfig's own defaults; a ConfigException is INVALID_CONFIG here too
            validate_topic_configs(overrides, {}, config_set=self.config_set)
        except ConfigValueError as exc:
            raise _Refused(ErrorCode.INVALID_CONFIG, exc.message) from None
        if not validate_only:  # ZooKeeper mode writes whatever brokers it is given; kafka-shim can only place replicas
            for brokers in assignment.values():  # on its own nodes, and refuses others as KRaft's controller does
                self._check_manual_assignment(brokers, None)
        return assignment

    def _effective_configs(self, overrides: Mapping[str, str]) -> list[DescribedConfig]:
        dynamic = self.broker_configs
        if dynamic is None:
            return effective_topic_configs(overrides, self.partitions.broker_properties, config_set=self.config_set)
        return effective_topic_configs(overrides, dynamic.static, dynamic.cluster_default, dynamic.per_broker, self.config_set)

    def _check_new_topic(self, topic: NewTopic, colliding: dict[str, str]) -> tuple[int, dict[str, str]]:
        """ReplicationControlManager's checks in its order; the partition count and config overrides to create."""
        name = topic.name
        refused: _Refused | None = None
        invalid = invalid_topic_name(name)
        if invalid is not None:
            refused = _Refused(ErrorCode.INVALID_TOPIC_EXCEPTION, invalid)
        if ("." in name or "_" in name) and _unify_collision_chars(name) in colliding:
            refused = _Refused(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topic: "
                                                                  f"{colliding[_unify_collision_chars(name)]}")
        if name in self._topics:
            refused = _Refused(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if refused is not None:
            raise refused
        nulls = [n for n, v in topic.configs if v is None]  # computeConfigChanges: an ArrayList in request order
        if nulls:
            raise _Refused(ErrorCode.INVALID_CONFIG, "Null value not supported for topic configs: " + ",".join(nulls))
        overrides = {n: v for n, v in topic.configs if v is not None}
        if overrides:
            try:
                validate_topic_configs(overrides, self.partitions.broker_properties, config_set=self.config_set)
            except ConfigValueError as exc:
                raise _Refused(ErrorCode.INVALID_CONFIG, exc.message) from None
        return self._partition_count(topic), overrides

    def _partition_count(self, topic: NewTopic) -> int:
        if topic.assignments:
            if topic.replication_factor != -1:
                raise _Refused(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but replication factor was not set to -1.")
            if topic.num_partitions != -1:
                raise _Refused(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but numPartitions was not set to -1.")
            seen: set[int] = set()
            replicas: int | None = None
            for index, brokers in topic.assignments:
                if index in seen:
                    raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Found multiple manual partition assignments for partition {index}")
                self._check_manual_assignment(brokers, replicas)
                replicas = len(brokers)
                seen.add(index)
            if seen != set(range(len(seen))):
                raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence")
            return len(seen)
        if topic.replication_factor < -1 or topic.replication_factor == 0:
            raise _Refused(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0, or -1 to use the default value.")
        if topic.num_partitions < -1 or topic.num_partitions == 0:
            raise _Refused(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
        count = self.num_partitions if topic.num_partitions == -1 else topic.num_partitions
        factor = self.default_replication_factor if topic.replication_factor == -1 else topic.replication_factor
        self._check_placement(factor)
        return count

    def _check_placement(self, factor: int) -> None:
        """StripedReplicaPlacer: a replication factor the registered brokers can hold."""
        reason = None
        if factor <= 0:
            reason = f"Invalid replication factor {factor}: the replication factor must be positive."
        elif factor > len(self.brokers):
            reason = (f"The target replication factor of {factor} cannot be reached because only {len(self.brokers)} "
                      f"broker(s) are registered.")
        if reason is not None:
            raise _Refused(ErrorCode.INVALID_REPLICATION_FACTOR, f"Unable to replicate the partition {factor} time(s): {reason}")

    def _check_manual_assignment(self, brokers: Sequence[int], replicas: int | None) -> None:
        problem = manual_assignment_problem(brokers, self.brokers, replicas)
        if problem is not None:
            raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)

    # -- CreatePartitions -----------------------------------------------------------------------------------------------

    def create_partitions(self, topics: Sequence[PartitionsIncrease], validate_only: bool,
                          alterable: NameFilter = set, *, timeout_ms: int = 30000,
                          mutation_quota: MutationQuota | None = None) -> list[PartitionsResult]:
        """ControllerApis.createPartitions then ReplicationControlManager.createPartitions; raises RequestTimedOut.

        ``alterable`` gives the names the caller may ALTER (every name, without an authorizer)."""
        names, duplicates = _java_hash_set(), _java_hash_set()
        for topic in topics:
            if topic.name in names:
                duplicates.put(topic.name, None)
            else:
                names.put(topic.name, None)
        results = [PartitionsResult(n, ErrorCode.INVALID_REQUEST, DUPLICATE_NAME_MESSAGE) for n in duplicates.keys()]
        for n in duplicates.keys():
            names.remove(n)
        authorized = alterable(names.keys())
        first = {}
        for topic in topics:
            first.setdefault(topic.name, topic)
        work = []
        for n in names.keys():
            if n in authorized:
                work.append(first[n])
            else:
                results.append(PartitionsResult(n, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
        if work and timeout_ms <= 0:
            raise RequestTimedOut()
        planned: list[PartitionsIncrease] = []
        records = 0
        for topic in work:
            try:
                additional = self._check_increase(topic)
                _apply_quota(mutation_quota, additional)
            except _Refused as refused:
                results.append(PartitionsResult(topic.name, refused.code, refused.message))
                continue
            if records + additional > MAX_RECORDS_PER_USER_OP:
                # Kafka's record list overflows inside this topic: an unexpected error for it (and, the list being
                # full, for every later topic that adds a partition). Kafka keeps the partial records; none are kept here.
                records = MAX_RECORDS_PER_USER_OP
                results.append(PartitionsResult(topic.name, ErrorCode.UNKNOWN_SERVER_ERROR))
                continue
            records += additional
            results.append(PartitionsResult(topic.name))
            planned.append(topic)
        if not validate_only:
            for topic in planned:
                self.partitions.add_partitions(topic.name, topic.count)
        return results

    def create_partitions_zookeeper(self, topics: Sequence[PartitionsIncrease], validate_only: bool,
                                    alterable: NameFilter = set, *, timeout_ms: int = 30000,
                                    mutation_quota: MutationQuota | None = None) -> list[PartitionsResult]:
        """A ZooKeeper-mode broker's CreatePartitions (before 3.3): KafkaApis sets aside names given twice and refused
        topics, ZkAdminManager checks and adds the others, and the answer is its results in request order followed by
        KafkaApis' errors (the order of a Scala map of up to four entries; larger answers are ordered by Scala's
        immutable HashMap, not modelled). A timeout of 0 or less answers the topics it added REQUEST_TIMED_OUT: added,
        but not waited for."""
        names = [t.name for t in topics]
        duplicates = [n for n in dict.fromkeys(names) if names.count(n) > 1]
        single = [t for t in topics if t.name not in duplicates]
        permitted = alterable([t.name for t in single])
        results: list[PartitionsResult] = []
        planned: list[PartitionsIncrease] = []
        for topic in (t for t in single if t.name in permitted):
            try:
                additional = self._check_increase_zookeeper(topic)
                if not validate_only:
                    _apply_quota(mutation_quota, additional)
            except _Refused as refused:
                results.append(PartitionsResult(topic.name, refused.code, refused.message))
                continue
            results.append(PartitionsResult(topic.name))
            planned.append(topic)
        if not validate_only:
            for topic in planned:
                self.partitions.add_partitions(topic.name, topic.count)
            if timeout_ms <= 0:
                results = [PartitionsResult(r.name, ErrorCode.REQUEST_TIMED_OUT) if r.error == ErrorCode.NONE else r for r in results]
        results += [PartitionsResult(n, ErrorCode.INVALID_REQUEST, "Duplicate topic in request.") for n in duplicates]
        results += [PartitionsResult(t.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "The topic authorization is failed.")
                    for t in single if t.name not in permitted]
        return results

    def _check_increase_zookeeper(self, topic: PartitionsIncrease) -> int:
        """ZkAdminManager.createPartitions' checks and AdminZkClient's validation of a manual assignment, in order and
        in their words; the number of partitions added."""
        existing = self._topics.get(topic.name)
        if existing is None:
            raise _Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic.name}' does not exist.")
        current = len(existing.partitions)
        if topic.count < current:
            raise _Refused(ErrorCode.INVALID_PARTITIONS,
                           f"Topic currently has {current} partitions, which is higher than the requested {topic.count}.")
        if topic.count == current:
            raise _Refused(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
        additional = topic.count - current
        if topic.assignments is None:
            return additional
        # a Scala Set of the brokers named, less the live ones (up to four keep their order: beyond, not modelled)
        unknown = [b for b in dict.fromkeys(b for brokers in topic.assignments for b in brokers) if b not in self.brokers]
        if unknown:
            raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.")
        if len(topic.assignments) != additional:
            raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Increasing the number of partitions by {additional} "
                                                                  f"but {len(topic.assignments)} assignments provided.")
        proposed = {current + index: list(brokers) for index, brokers in enumerate(topic.assignments)}
        for partition, replicas in proposed.items():
            if not replicas:
                raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Cannot have replication factor of 0 for partition id {partition}.")
            if len(set(replicas)) != len(replicas):
                raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Duplicate brokers not allowed in replica assignment: "
                                                                      f"{', '.join(map(str, replicas))} for partition id {partition}.")
        factor = len(existing.partitions[0].replicas) if existing.partitions else 1
        bad = [(partition, len(replicas)) for partition, replicas in sorted(proposed.items()) if len(replicas) != factor]
        if bad:
            raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"Inconsistent replication factor between partitions, partition 0 has {factor} while partitions "
                           f"[{', '.join(str(p) for p, _ in bad)}] have replication factors [{', '.join(str(n) for _, n in bad)}], "
                           "respectively.")
        return additional

    def _check_increase(self, topic: PartitionsIncrease) -> int:
        existing = self._topics.get(topic.name)
        if existing is None:
            raise _Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
        current = len(existing.partitions)
        if topic.count == current:
            raise _Refused(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
        if topic.count < current:
            raise _Refused(ErrorCode.INVALID_PARTITIONS,
                           f"The topic {topic.name} currently has {current} partition(s); {topic.count} would not be an increase.")
        additional = topic.count - current
        if topic.assignments is not None:
            if len(topic.assignments) != additional:
                raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Attempted to add {additional} additional partition(s), but only "
                                                                      f"{len(topic.assignments)} assignment(s) were specified.")
            factor = len(existing.partitions[0].replicas) if existing.partitions else 1
            for brokers in topic.assignments:
                self._check_manual_assignment(brokers, factor)
        return additional

    # -- DeleteTopics ---------------------------------------------------------------------------------------------------

    def delete_topics(self, refs: Sequence[TopicRef], auth: Authorizations | None = None, *, timeout_ms: int = 30000,
                      mutation_quota: MutationQuota | None = None) -> list[DeleteResult]:
        """ControllerApis.deleteTopics (v0-5 name every topic; v6 names or ids); raises TopicDeletionDisabled, RequestTimedOut.

        ``auth.cluster_wide`` is DELETE on the cluster, ``permitted`` DELETE and ``describable`` DESCRIBE per topic."""
        if not self.delete_topic_enable:
            raise TopicDeletionDisabled("Topic deletion is disabled.")
        auth = auth or Authorizations()
        responses: list[DeleteResult] = []
        names, duplicate_names = _java_hash_set(), _java_hash_set()
        ids: dict[uuid.UUID, None] = {}
        duplicate_ids: dict[uuid.UUID, None] = {}

        def add_name(name: str) -> None:
            if name in duplicate_names or name in names:
                duplicate_names.put(name, None)
                names.remove(name)
            else:
                names.put(name, None)

        for ref in refs:
            if ref.name is None:
                if ref.topic_id == ZERO_UUID:
                    responses.append(DeleteResult(None, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified."))
                elif ref.topic_id in duplicate_ids or ref.topic_id in ids:
                    duplicate_ids[ref.topic_id] = None
                    ids.pop(ref.topic_id, None)
                else:
                    ids[ref.topic_id] = None
            elif ref.topic_id == ZERO_UUID:
                add_name(ref.name)
            else:
                responses.append(DeleteResult(ref.name, ref.topic_id, ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id."))
        responses += [DeleteResult(n, ZERO_UUID, ErrorCode.INVALID_REQUEST, DUPLICATE_NAME_MESSAGE) for n in duplicate_names.keys()]
        responses += [DeleteResult(None, i, ErrorCode.INVALID_REQUEST, "Duplicate topic id.") for i in duplicate_ids]

        if (ids or len(names)) and timeout_ms <= 0:
            raise RequestTimedOut()
        cluster = self.partitions.cluster
        id_to_name: dict[uuid.UUID, str] = {}
        for topic_id in ids:
            known = cluster.topic_by_id(topic_id)
            if known is None:
                responses.append(DeleteResult(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_ID_MESSAGE))
            else:
                id_to_name[topic_id] = known.name
        to_check = list(dict.fromkeys([*names.keys(), *id_to_name.values()]))
        if auth.cluster_wide:
            describable = deletable = set(to_check)
        else:
            describable, deletable = auth.describable(to_check), auth.permitted(to_check)
        for topic_id, name in list(id_to_name.items()):
            if name not in deletable:
                responses.append(DeleteResult(name if name in describable else None, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                              TOPIC_AUTHORIZATION_MESSAGE))
                del id_to_name[topic_id]
        for name in names.keys():
            known = self._topics.get(name)
            if name not in (deletable if auth.permission_before_existence else describable):
                responses.append(DeleteResult(name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_MESSAGE))
            elif known is None:
                responses.append(DeleteResult(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE))
            elif name in deletable:
                if known.topic_id in duplicate_ids or known.topic_id in id_to_name:
                    # Asked by name and by id at once; said only once authorized, so as not to reveal the mapping.
                    duplicate_ids[known.topic_id] = None
                    id_to_name.pop(known.topic_id, None)
                    responses.append(DeleteResult(name, known.topic_id, ErrorCode.INVALID_REQUEST,
                                                  "The provided topic name maps to an ID that was already supplied."))
                else:
                    id_to_name[known.topic_id] = name
            else:
                responses.append(DeleteResult(name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_MESSAGE))
        for topic_id, name in id_to_name.items():
            try:
                _apply_quota(mutation_quota, len(self._topics[name].partitions))
            except _Refused as refused:
                responses.append(DeleteResult(name, topic_id, refused.code, refused.message))
                continue
            self.partitions.delete_topic(name)
            responses.append(DeleteResult(name, topic_id))
        return responses


class MutationQuota(Protocol):
    """The request's controller mutation quota (KIP-599, shim.quotas.metering): False when it refuses the mutation."""

    def record(self, permits: int) -> bool: ...


def _apply_quota(quota: MutationQuota | None, permits: int) -> None:
    if quota is not None and not quota.record(permits):
        raise _Refused(ErrorCode.THROTTLING_QUOTA_EXCEEDED, None)
