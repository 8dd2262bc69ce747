"""Older releases' authorization rules: what an emulated Kafka release (``kafka.version``) asks differently from 3.9.

``table.DECLARATIONS`` is Kafka 3.9. Each rule change below is written once, named by the KIP or JIRA and the first
release that behaves the 3.9 way (facts: kafka-release-rules.md §2 and its switch matrix, from KafkaApis at each
release's tag), as a switch in ``ReleaseRules`` and, where the older release asked something else, the ``Check`` it
asked. The broker's handlers read the switches of the release they emulate; the audit's ``--compare-release``
reads them too.

Emulated so far:

* KIP-163 (1.0): OffsetFetch needed READ on the group (30), not DESCRIBE.
* KIP-231 (2.1): ListGroups needed DESCRIBE on the cluster, else the whole answer is 31 with no groups; from 2.1
  the list is filtered by DESCRIBE on each group.
* KIP-679 (2.8): an idempotent InitProducerId needed IDEMPOTENT_WRITE on the cluster (31), WRITE on a topic was not
  enough; and a Produce of idempotent (non-transactional) batches was checked for IDEMPOTENT_WRITE on the cluster
  too, failing the whole request with 31.
* KIP-373 (3.3) and the ZooKeeper-mode AclAuthorizer (before 3.3, the releases kafka-shim presents as a ZooKeeper-mode
  broker): CreateAcls refuses the USER resource type and operations 13-14 (unknown codes then) with 42 "Failed to
  create ACL", and a principal without a type fails every creation on its resource with -1 (UNKNOWN_SERVER_ERROR).
* Before 3.5 (the group APIs' move onto the GroupCoordinator interface): OffsetFetch v1 puts a group-level error (30
  without DESCRIBE on the group) on each requested partition, as v0 answers it, where 3.5+ answers an empty topic
  list (v1 has no top-level error field); DescribeGroups answers in request order, where 3.5+ lists refused groups first;
  OffsetFetch v8 (3.0-3.4) lists its groups in a hash map's order, where 3.5+ keeps the request's order; OffsetFetch
  and TxnOffsetCommit list partitions, and DeleteGroups groups, in hash maps' orders (seen on real 3.3.2 and 3.4.1).
* Before 3.2: DescribeUserScramCredentials without DESCRIBE on the cluster is answered with the top-level 31 and no
  result rows (a null user list too), where 3.2+ answers a row per requested user and never answers a null list.
* KIP-277 (2.0): CreateTopics needed CREATE on the cluster, else every topic 31; Metadata auto-created a missing
  topic only with CREATE on the cluster, else the topic came back with 29.
* KAFKA-7394 (2.1): OffsetForLeaderEpoch was inter-broker only: CLUSTER_ACTION, else every partition 31.
* Follower fetch (1.1, the incremental-fetch rewrite): without CLUSTER_ACTION 1.0 answered 31 on every partition
  (0.11.0.2 made no check at all, 0.11.0.3 the 31 check: the 0.11 line asks 1.0's).
* The authorizer log line of each release (authorizer.audit.style_for).

* KAFKA-13527 (3.2): a DescribeLogDirs without DESCRIBE on the cluster got an empty answer with no error; 3.2+ sets
  the top-level 31, a field only v3 (new in 3.2) carries. No switch: a release before 3.2 serves v0-2, whose answer
  cannot carry the code, so the empty answer follows from the versions.

* KAFKA-5547 (1.0): 0.11 hid a topic the principal may not DESCRIBE behind UNKNOWN_TOPIC_OR_PARTITION (3). Produce,
  Fetch, OffsetCommit, TxnOffsetCommit, AddPartitionsToTxn, DeleteTopics and DeleteRecords first asked DESCRIBE on the
  topic together with its existence (3 for either), then the operation (29); ListOffsets, a Metadata topic list and
  OffsetFetch's named partitions answered 3 where 1.0+ answer 29; a refused Describe/AlterConfigs of a topic was 29
  only when the topic was describable, else 3.
* Before 3.3 (ZooKeeper mode): DeleteTopics asks DELETE on each named topic before its existence (29 for an absent
  topic alice may describe but not delete, where KRaft's controller says 3), and DELETE on the cluster, which KRaft's
  controller takes as leave to delete every topic, grants nothing (KafkaApis.handleDeleteTopicsRequest at 2.8.2).

* Before 3.0 (the generated Fetch answers; KAFKA-12434): a refused Fetch partition carries a null aborted-transactions
  list where 3.0+ send an empty one; DescribeProducers answers a refused or unknown topic with a bare code (no message,
  no topic name check).
* Before 3.3 (ZooKeeper mode): DeleteTopics answers carry no messages, a refused Alter/IncrementalAlterConfigs
  resource neither, and CreatePartitions words its 29 and 3 as ZooKeeper mode's KafkaApis and ZkAdminManager did.

* Before 3.3 (ZooKeeper mode, seen against real 2.8.2 and 3.0.2): ZkAdminManager checks Alter/IncrementalAlterConfigs
  resources (existence first; unparsable values 42 naming the resource; duplicate keys, nulls and BROKER_LOGGER
  resources in its own words before 3.2) and CreateTopics (KafkaApis' duplicates and refusals keep
  topic_config_error_code 29; partitions, replication factor, name, assignment, configs, in its order and words).
* Before 3.5 (KAFKA-14402): AddPartitionsToTxn v0-3's one-code answers come from a HashMap by partition. Before 3.7
  (KAFKA-16807): DescribeLogDirs lists every topic of a directory.

Rules that follow from the API versions a release advertised need no switch: no PREFIXED ACLs before 2.0 (ACL APIs v1), no authorized operations before 2.3.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_shim.authorizer.api_checks.model import Check, Mode, cluster_names, field
from kafka_shim.authorizer.model import AclOperation, ResourceType
from kafka_shim.protocol.codes import ErrorCode

CURRENT = (3, 9)
# The first release line with 3.9's rule, per change (the audit's --compare-release reads these too).
KIP_163 = (1, 0)  # OffsetFetch: DESCRIBE on the group, not READ
KAFKA_5547 = (1, 0)  # a topic's refused operation is 29 whether or not it exists; 0.11 hid it as 3 without DESCRIBE
KIP_277 = (2, 0)  # CreateTopics: CREATE on the topic suffices
KIP_231 = (2, 1)  # ListGroups: filtered by DESCRIBE on each group, not 31
KAFKA_7394 = (2, 1)  # OffsetForLeaderEpoch: DESCRIBE on the topic
KIP_679 = (2, 8)  # idempotent producers: WRITE on any topic; no Produce-time IDEMPOTENT_WRITE check
KIP_373 = (3, 3)  # the USER resource type (7) and the CREATE_TOKENS / DESCRIBE_TOKENS operations (13, 14)
# The first release kafka-shim presents as a KRaft broker (shim/releases/profiles.py: ZooKeeper-mode API lists before
# it). Before it, ACLs are created as the ZooKeeper-mode AclAuthorizer creates them (seen against real 2.8.2 and
# 3.0.2, tests/differential/test_older_releases.py).
KRAFT_PRESENTED = (3, 3)
# 3.5 moved KafkaApis' group APIs onto the new GroupCoordinator interface, and two answers changed with it (seen
# against real 3.4.1 and 3.5.2 in ZooKeeper mode, and 2.8.2 and 3.0.2 by tests/differential/test_older_releases.py):
# OffsetFetch v1 (no top-level error field) put a group-level error (30, or the coordinator's) on each requested
# partition, as v0 always does, where 3.5+ answers an empty topic list; and DescribeGroups answered in request order,
# where 3.5+ lists the refused groups (30) first, then the described ones. And OffsetFetch v8+ (3.0, KIP-709) listed
# its groups in the iteration order of a Scala mutable.HashMap keyed by group id, where 3.5+ keeps the request's order.
# The KRaft release probe against real 3.3.2 and 3.4.1 found three more answers built from hash maps before 3.5 (source
# read at 2.8.2, 3.0.2 and 3.4.1; earlier releases get them too, not run): OffsetFetch's partitions (one immutable Map,
# authorized ++ unauthorized, grouped by topic in OffsetFetchResponse's java.util.HashMap; v8 keyed by group id, so a
# group named twice is fetched once, with OffsetFetchRequest.isAllPartitionsForGroup's first entry and
# groupIdsToPartitions' last one), TxnOffsetCommit's (combinedCommitStatus, a mutable.HashMap) and DeleteGroups' (the
# coordinator's mutable.HashMap ++ the refused groups); 3.5+ answer in request order (the refused groups of DeleteGroups
# after the others).
GROUP_APIS_3_5 = (3, 5)
# DescribeUserScramCredentials (KIP-554, 2.7) refused without DESCRIBE on the cluster: up to 3.1 the answer is the
# top-level 31 with no result rows (a null user list too); from 3.2 it is getErrorResponse's, one row per requested
# user, and a null user list is never answered (seen against real 2.8.2-3.1.2 and 3.2.3-3.9.0 in ZooKeeper mode).
SCRAM_DESCRIBE_ROWS = (3, 2)
FETCH_REWRITE = (1, 1)  # a follower fetch without CLUSTER_ACTION: 29 on every partition, not 31
# 3.3 (KAFKA-13837) refuses a follower fetch from a replica id the partition does not know (6, or 75 with a leader
# epoch) before reading; before, ReplicaManager read the log for it and then dropped the records (seen against real
# 3.2.3 by the release probe: offset out of range answered 1 where 3.3+ answer 6)
FOLLOWER_REPLICA_CHECKED = (3, 3)
# 3.0 built Fetch answers from the generated FetchResponseData (commit 8205051e90e): a refused partition (29, 3, an
# unknown topic id) got the schema's empty aborted-transactions list; before, KafkaApis built it with a null one
# (seen against real 2.8.2 and 3.0.2 by the release probe). And DescribeProducers' per-partition errors got messages,
# with the topic name validated first (KAFKA-12434, 3.0): 2.8 answered a bare code (2.8 is the first release with it).
GENERATED_FETCH_ANSWERS = (3, 0)
DESCRIBE_PRODUCERS_MESSAGES = (3, 0)
# 3.2 (ConfigAdminManager, for forwarding) moved the checks of duplicate keys, null values and BROKER_LOGGER
# resources of Alter/IncrementalAlterConfigs out of ZkAdminManager into 3.9's broker-side preprocessing (source at
# 3.0.2 / 3.2.3; the ZkAdminManager answers seen against real 2.8.2 and 3.0.2 by the release probe)
CONFIG_PREPROCESSING = (3, 2)
# 3.5 (KAFKA-14402, AddPartitionsToTxn v4's batching) answers v0-3's one-code refusals in the request's own shape,
# where AddPartitionsToTxnRequest.getErrorResponse built them from a HashMap by partition (seen against real 2.8.2 and
# 3.9.0 by the release probe; the source at 3.4.1 and 3.5.2)
ADD_PARTITIONS_BATCHED = (3, 5)

# Seen against real KRaft 3.5.2 and 3.7.2 by the KRaft release probe (/tmp/kraft-probe; the tests are
# tests/differential/test_kraft_release_findings.py). KIP-890 part 1: a transactional Produce is verified with the
# transaction coordinator from 3.6 (KAFKA-14402, transaction.partition.verification.enable), a TxnOffsetCommit from 3.7
# (KAFKA-15449); before (every release, ZooKeeper mode too), a partition the transaction never added was written all the same. And DescribeLogDirs of
# named partitions listed every topic of the directory, those not asked with no partitions, up to 3.7.0 (KAFKA-16807,
# fixed in 3.7.1: the 3.7 line follows 3.7.2).
PRODUCE_VERIFICATION = (3, 6)
TXN_OFFSET_COMMIT_VERIFICATION = (3, 7)
LOG_DIRS_ONLY_ASKED_TOPICS = (3, 7)
# 3.6 (KIP-890 part 1's ReplicaManager.appendEntries) builds a Produce's appended results as an immutable Map; before
# (ZooKeeper mode too, source at 2.8.2 / 3.0.2 / 3.5.2) every map from KafkaApis' authorized partitions to the answer
# was a Scala mutable.HashMap (seen against real 3.5.2 and 2.8.2 by the release probes)
PRODUCE_IMMUTABLE_RESULTS = (3, 6)
# 3.7 (KAFKA-15466) checks BROKER_LOGGER changes in the Java RuntimeLoggerManager, whose switch on an unknown operation id
# throws (-1, no message); before, ConfigAdminManager's Scala match refused it by name (42 "Unknown operation type ...").
RUNTIME_LOGGER_MANAGER = (3, 7)
# The latest MetadataVersion level of each KRaft release (MetadataVersion.latestProduction at its tag): what ApiVersions
# v3+ reports as metadata.version's supported maximum and the level a freshly formatted cluster finalizes.
METADATA_VERSION_LEVELS = {(3, 3): 7, (3, 4): 8, (3, 5): 11, (3, 6): 14, (3, 7): 19, (3, 8): 20}
LATEST_METADATA_VERSION_LEVEL = 21  # 3.9-IV0


def since(change: tuple[int, int]) -> str:
    return f"{change[0]}.{change[1]}"


@dataclass(frozen=True)
class ReleaseRules:
    """The rule switches of one release line; ``ReleaseRules()`` is Kafka 3.9's."""

    release: tuple[int, int] = CURRENT
    offset_fetch_needs_read: bool = False  # KIP-163, before 1.0
    list_groups_needs_cluster_describe: bool = False  # KIP-231, before 2.1
    idempotent_needs_cluster: bool = False  # KIP-679, before 2.8
    # KIP-373, before 3.3: resource type 7 and operations 13-14 are codes the release did not know
    acl_codes_before_kip_373: bool = False
    # before 3.3 (a ZooKeeper-mode broker, AclAuthorizer): CreateAcls refuses a creation with a code the release did
    # not know with INVALID_REQUEST "Failed to create ACL", and a principal without a type ("bob") fails every
    # creation on its resource pattern with UNKNOWN_SERVER_ERROR and no message; KRaft's StandardAuthorizer accepts both
    zookeeper_acl_creation: bool = False
    # before 3.5: OffsetFetch v1 answers a group-level error on each requested partition (not an empty topic list)
    offset_fetch_v1_partition_errors: bool = False
    # before 3.5: DescribeGroups answers in request order (not the refused groups first)
    describe_groups_in_request_order: bool = False
    # before 3.5: OffsetCommit answers topics in java.util.HashMap order of their names, each topic's partitions in
    # the order of one Scala map of every answered partition (not the coordinator's order)
    offset_commit_topics_in_hash_order: bool = False
    # before 3.5: OffsetFetch v8+ lists its groups in Scala mutable.HashMap order of the group ids (not the request's)
    offset_fetch_groups_in_hash_order: bool = False
    # before 3.5: OffsetFetch answers each group's partitions from one Scala immutable Map (a partition named twice
    # once), grouped by topic in a java.util.HashMap; v8 fetches a group named twice with its first entry's
    # all-partitions choice and its last entry's partitions (a null list there fails the request, -1)
    offset_fetch_partitions_in_hash_order: bool = False
    # before 3.5: TxnOffsetCommit answers every partition from one Scala mutable.HashMap (a partition named twice once),
    # grouped by topic in a java.util.HashMap
    txn_offset_commit_in_hash_order: bool = False
    # before 3.5: DeleteGroups answers every group, refused ones included, in one Scala mutable.HashMap's order
    delete_groups_in_hash_order: bool = False
    # before 3.2: a refused DescribeUserScramCredentials is the top-level 31 alone (no rows; a null user list answered)
    describe_scram_refused_without_rows: bool = False
    create_topics_needs_cluster: bool = False  # KIP-277, before 2.0 (CreateTopics and Metadata's auto-creation)
    leader_epoch_needs_cluster_action: bool = False  # KAFKA-7394, before 2.1
    follower_fetch_denied_code: int = ErrorCode.TOPIC_AUTHORIZATION_FAILED  # 31 on 1.0 (the 1.1 fetch rewrite: 29)
    # KAFKA-5547, before 1.0: a topic without DESCRIBE (or, for the write and read paths, missing) answers 3, not 29
    topics_hidden_as_unknown: bool = False
    # KRaft's controller (3.3+ as presented): DELETE on the cluster deletes every topic and DESCRIBE comes before a
    # topic's existence; ZooKeeper mode asked DELETE on each topic, then its existence
    delete_topics_zookeeper: bool = False
    # ZooKeeper mode (before 3.3 as presented): OffsetCommit v0 writes and OffsetFetch v0 reads offsets in ZooKeeper,
    # apart from the group coordinator; a KRaft broker refuses both versions (35)
    offsets_v0_in_zookeeper: bool = False
    # before 3.3 (KAFKA-13837): a follower fetch from an unknown replica id is read, then answered without records
    unknown_follower_read: bool = False
    # before 3.0: a refused Fetch partition carries a null aborted-transactions list (v4+), not an empty one
    fetch_refusal_null_aborted: bool = False
    # before 3.0: DescribeProducers answers a refused or unknown topic with a bare code, no message and no name check
    describe_producers_bare_codes: bool = False
    # ZooKeeper mode (before 3.3 as presented): the broker's own KafkaApis and ZkAdminManager answer the topic admin
    # APIs, not KRaft's controller, with their own messages: none on DeleteTopics' answers nor on a refused
    # Alter/IncrementalAlterConfigs resource; CreatePartitions' "The topic authorization is failed." (29) and "The
    # topic 'NAME' does not exist." (3)
    zookeeper_admin_messages: bool = False
    # ZooKeeper mode (before 3.3 as presented): ZkAdminManager checks an Alter/IncrementalAlterConfigs resource, not
    # KRaft's controller: a topic's existence (3) before its values, a value that does not parse INVALID_REQUEST
    # "Invalid config value for resource ConfigResource(...)", APPEND/SUBTRACT on a non-LIST key INVALID_REQUEST (3.2
    # put 3.9's broker-side preprocessing in front of it)
    zookeeper_config_alteration: bool = False
    # before 3.2 (ConfigAdminManager.preprocess): ZkAdminManager itself refuses duplicate keys and nulls, with its own
    # words ("Error due to duplicate config keys : k", "Null value not supported for : SET:k"), checks BROKER_LOGGER
    # resources, and a null value in AlterConfigs fails the whole request (-1, no message)
    zookeeper_config_preprocessing: bool = False
    # ZooKeeper mode (before 3.3 as presented): CreateTopics is KafkaApis' and ZkAdminManager's, not KRaft's
    # controller's: every entry of a name given twice answered ("Found multiple entries for this topic."), a topic
    # KafkaApis refused keeps topic_config_error_code 29; partitions (37), then the replication factor (38), then the
    # name, the manual assignment and the configs, each with ZooKeeper mode's messages; and Metadata's auto-creation is
    # the broker's own (AutoTopicCreationManager.createTopicsInZk), a created topic answered 5, not KRaft's 3
    zookeeper_topic_creation: bool = False
    # before 3.5 (KAFKA-14402): AddPartitionsToTxn v0-3 answered one code for the whole transaction (53, or the
    # coordinator's) from a java.util.HashMap by partition: topics merged, repeats once, empty topics left out
    add_partitions_errors_by_partition: bool = False

    # KIP-890 part 1, before 3.6: a transactional Produce to a partition not added to its transaction is not verified
    produce_unverified: bool = False
    # KIP-890 part 1, before 3.7: a TxnOffsetCommit's __consumer_offsets partition is not verified
    txn_offset_commit_unverified: bool = False
    # before 3.7 (KAFKA-16807): DescribeLogDirs of named partitions lists every topic of the directory, unasked ones empty
    log_dirs_list_every_topic: bool = False
    # before 3.7: an unknown operation id on a BROKER_LOGGER is refused by name (42), not by a failing switch (-1)
    logger_unknown_op_refused_by_name: bool = False
    # before 3.6: a Produce that appended (or tried to) answers every partition in one Scala mutable.HashMap's order
    produce_answer_in_mutable_map: bool = False
    # the release's latest metadata.version level (ApiVersions' supported maximum, finalized on a fresh cluster)
    metadata_version_level: int = LATEST_METADATA_VERSION_LEVEL

    @property
    def name(self) -> str:
        return f"{self.release[0]}.{self.release[1]}"


def rules_for(release: str | tuple[int, int]) -> ReleaseRules:
    """The switches of a release line (``"2.0"`` or ``(2, 0)``)."""
    line = release if isinstance(release, tuple) else tuple(int(p) for p in release.split(".")[:2])
    return ReleaseRules(
        release=line,  # type: ignore[arg-type]
        offset_fetch_needs_read=line < KIP_163,
        list_groups_needs_cluster_describe=line < KIP_231,
        idempotent_needs_cluster=line < KIP_679,
        acl_codes_before_kip_373=line < KIP_373,
        zookeeper_acl_creation=line < KRAFT_PRESENTED,
        offset_fetch_v1_partition_errors=line < GROUP_APIS_3_5,
        describe_groups_in_request_order=line < GROUP_APIS_3_5,
        offset_fetch_groups_in_hash_order=line < GROUP_APIS_3_5,
        offset_commit_topics_in_hash_order=line < GROUP_APIS_3_5,
        offset_fetch_partitions_in_hash_order=line < GROUP_APIS_3_5,
        txn_offset_commit_in_hash_order=line < GROUP_APIS_3_5,
        delete_groups_in_hash_order=line < GROUP_APIS_3_5,
        describe_scram_refused_without_rows=line < SCRAM_DESCRIBE_ROWS,
        create_topics_needs_cluster=line < KIP_277,
        leader_epoch_needs_cluster_action=line < KAFKA_7394,
        follower_fetch_denied_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED if line < FETCH_REWRITE else ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        topics_hidden_as_unknown=line < KAFKA_5547,
        delete_topics_zookeeper=line < KRAFT_PRESENTED,
        offsets_v0_in_zookeeper=line < KRAFT_PRESENTED,
        unknown_follower_read=line < FOLLOWER_REPLICA_CHECKED,
        fetch_refusal_null_aborted=line < GENERATED_FETCH_ANSWERS,
        describe_producers_bare_codes=line < DESCRIBE_PRODUCERS_MESSAGES,
        zookeeper_admin_messages=line < KRAFT_PRESENTED,
        zookeeper_config_alteration=line < KRAFT_PRESENTED,
        zookeeper_config_preprocessing=line < CONFIG_PREPROCESSING,
        zookeeper_topic_creation=line < KRAFT_PRESENTED,
        add_partitions_errors_by_partition=line < ADD_PARTITIONS_BATCHED,
        # KRaft releases as presented (3.3+); the ZooKeeper-mode ones keep 3.9's answers here, as before
        produce_unverified=line < PRODUCE_VERIFICATION,
        txn_offset_commit_unverified=line < TXN_OFFSET_COMMIT_VERIFICATION,
        # ReplicaManager's, so the ZooKeeper-mode releases too (seen against real 2.8.2 by the release probe)
        log_dirs_list_every_topic=line < LOG_DIRS_ONLY_ASKED_TOPICS,
        logger_unknown_op_refused_by_name=line < RUNTIME_LOGGER_MANAGER,
        produce_answer_in_mutable_map=line < PRODUCE_IMMUTABLE_RESULTS,
        metadata_version_level=METADATA_VERSION_LEVELS.get(line, LATEST_METADATA_VERSION_LEVEL),
    )


# The checks older releases asked where 3.9 asks another (each used only when its switch is on).
OFFSET_FETCH_GROUP_READ = Check("group", AclOperation.READ, ResourceType.GROUP, field("group_id"), Mode.AUTHORIZE_OR_THROW,
                                ErrorCode.GROUP_AUTHORIZATION_FAILED, note="KIP-163: before 1.0, READ on the group")
LIST_GROUPS_CLUSTER_DESCRIBE = Check("cluster", AclOperation.DESCRIBE, ResourceType.CLUSTER, cluster_names,
                                     Mode.AUTHORIZE_OR_THROW, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                     note="KIP-231: before 2.1, DESCRIBE on the cluster or the whole answer fails")
IDEMPOTENT_WRITE_CLUSTER = Check("idempotent_write", AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, cluster_names,
                                 Mode.AUTHORIZE_OR_THROW, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                 note="KIP-679: before 2.8, IDEMPOTENT_WRITE on the cluster (InitProducerId and Produce)")
CREATE_TOPICS_CLUSTER_CREATE = Check("cluster", AclOperation.CREATE, ResourceType.CLUSTER, cluster_names, Mode.AUTHORIZE_OR_THROW,
                                     ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                     note="KIP-277: before 2.0, CREATE on the cluster or every topic is 31")
LEADER_EPOCH_CLUSTER_ACTION = Check("cluster", AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, cluster_names,
                                    Mode.AUTHORIZE_OR_THROW, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                    note="KAFKA-7394: before 2.1, OffsetForLeaderEpoch was inter-broker only (31)")
TOPIC_DESCRIBE_BEFORE_1_0 = Check("topic_describe", AclOperation.DESCRIBE, ResourceType.TOPIC, lambda request, version: (),
                                  Mode.FILTER_WITH_ERROR, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                  note="KAFKA-5547: before 1.0, DESCRIBE on the topic first, else 3 as if it did not exist")
