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

* KIP-277 (2.0): CreateTopics needed CREATE on the cluster, else every topic 31 (Metadata's auto-creation still asks
  3.9's either/or).
* KAFKA-7394 (2.1): OffsetForLeaderEpoch was inter-broker only: CLUSTER_ACTION, else every partition 31.
* Follower fetch (1.1, the incremental-fetch rewrite): without CLUSTER_ACTION 1.0 answered 31 on every partition
  (0.11.0.2 made no check at all, 0.11.0.3 the 31 check: the 0.11 line asks 1.0's).
* The authorizer log line of each release (authorizer.audit.style_for).

Not yet (the broker asks 3.9's question): KAFKA-5547 (1.0, 0.11's DESCRIBE-then-3 for topics), and the log-dir
rules. Rules that follow from the API versions a
release advertised need no switch: no PREFIXED ACLs before 2.0 (ACL APIs v1), no authorized operations before 2.3.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_shim.authorizer.api_checks.model import Check, Mode, cluster_names, field
from kafka_shim.authorizer.model import AclOperation, ResourceType
from kafka_shim.protocol.codes import ErrorCode

CURRENT = (3, 9)
# The first release line with 3.9's rule, per change (the audit's --compare-release reads these too).
KIP_163 = (1, 0)  # OffsetFetch: DESCRIBE on the group, not READ
KIP_277 = (2, 0)  # CreateTopics: CREATE on the topic suffices
KIP_231 = (2, 1)  # ListGroups: filtered by DESCRIBE on each group, not 31
KAFKA_7394 = (2, 1)  # OffsetForLeaderEpoch: DESCRIBE on the topic
KIP_679 = (2, 8)  # idempotent producers: WRITE on any topic; no Produce-time IDEMPOTENT_WRITE check
FETCH_REWRITE = (1, 1)  # a follower fetch without CLUSTER_ACTION: 29 on every partition, not 31


def since(change: tuple[int, int]) -> str:
    return f"{change[0]}.{change[1]}"


@dataclass(frozen=True)
class ReleaseRules:
    """The rule switches of one release line; ``ReleaseRules()`` is Kafka 3.9's."""

    release: tuple[int, int] = CURRENT
    offset_fetch_needs_read: bool = False  # KIP-163, before 1.0
    list_groups_needs_cluster_describe: bool = False  # KIP-231, before 2.1
    idempotent_needs_cluster: bool = False  # KIP-679, before 2.8
    create_topics_needs_cluster: bool = False  # KIP-277, before 2.0
    leader_epoch_needs_cluster_action: bool = False  # KAFKA-7394, before 2.1
    follower_fetch_denied_code: int = ErrorCode.TOPIC_AUTHORIZATION_FAILED  # 31 on 1.0 (the 1.1 fetch rewrite: 29)

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
        create_topics_needs_cluster=line < KIP_277,
        leader_epoch_needs_cluster_action=line < KAFKA_7394,
        follower_fetch_denied_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED if line < FETCH_REWRITE else ErrorCode.TOPIC_AUTHORIZATION_FAILED,
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
