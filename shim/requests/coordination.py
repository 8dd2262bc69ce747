"""Which node coordinates a group or a transactional id: the leader of the group's ``__consumer_offsets`` partition
(the id's ``__transaction_state`` partition), in a cluster of several nodes in one process too; the others answer
NOT_COORDINATOR, as Kafka's coordinators do for a key whose partition they do not lead (``isLocal``), and so does
every node for a key whose partition the topic lacks."""

from __future__ import annotations

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.groups.offsets_log import OFFSETS_TOPIC
from kafka_shim.shim.requests.context import RequestContext
from kafka_shim.shim.txn.coordinator import TransactionCoordinator
from kafka_shim.shim.txn.txn_log import TRANSACTION_STATE_TOPIC


def coordinates(ctx: RequestContext, group_id: str | None) -> bool:
    """Whether the node the request reached coordinates ``group_id``. True for a missing or empty id and while
    ``__consumer_offsets`` does not exist: the group coordinator's own checks answer those. False for a group whose
    partition the topic lacks (made with fewer partitions than the coordinator divides by), as in Kafka."""
    if not group_id:
        return True
    node = ctx.services.cluster.coordinator(OFFSETS_TOPIC, group_id)
    return node is None or node == ctx.node_id


def coordinator_for(ctx: RequestContext, transactional_id: str) -> TransactionCoordinator | int:
    """The coordinator when this node owns the id's ``__transaction_state`` partition, else NOT_COORDINATOR (or
    COORDINATOR_NOT_AVAILABLE when the broker has none)."""
    coordinator = ctx.services.transactions
    if coordinator is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if transactional_id and ctx.services.cluster.coordinator(TRANSACTION_STATE_TOPIC, transactional_id) != ctx.node_id:
        return ErrorCode.NOT_COORDINATOR
    return coordinator


def fenced_for(error: int, version: int, first_known: int) -> int:
    """PRODUCER_FENCED as INVALID_PRODUCER_EPOCH for versions before ``first_known``."""
    return ErrorCode.INVALID_PRODUCER_EPOCH if error == ErrorCode.PRODUCER_FENCED and version < first_known else error


def verification_enabled(ctx: RequestContext, *, offsets: bool = False) -> bool:
    """``transaction.partition.verification.enable`` (KIP-890, on by default): off, ReplicaManager verifies nothing
    and the partitions keep no verification entries. ``offsets``: for a TxnOffsetCommit's ``__consumer_offsets`` append.
    An emulated release before KIP-890 part 1 verified nothing, whatever the key says: Produce before 3.6, TxnOffsetCommit
    before 3.7 (ReleaseRules)."""
    rules = ctx.services.release_rules
    if rules.txn_offset_commit_unverified if offsets else rules.produce_unverified:
        return False
    return ctx.services.config.raw.get("transaction.partition.verification.enable", "true").strip().lower() != "false"


def verifying_coordinator(ctx: RequestContext, transactional_id: str) -> TransactionCoordinator | int:
    """The coordinator a partition's leader asks to verify a transactional write (KIP-890; AddPartitionsToTxnManager):
    whichever node leads the id's ``__transaction_state`` partition, reached from any node; COORDINATOR_NOT_AVAILABLE
    while that partition has no leader or the topic does not exist."""
    coordinator = ctx.services.transactions
    node = ctx.services.cluster.coordinator(TRANSACTION_STATE_TOPIC, transactional_id)
    if coordinator is None or node is None or node < 0 or node in ctx.services.cluster.down:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return coordinator
