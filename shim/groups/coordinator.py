"""The group coordinator of a single-broker Kafka 3.9 (GroupCoordinatorService / GroupMetadataManager on one node).

Every group lives here, whatever its protocol: ``groups`` maps a group id to a classic group (``classic.py``, the
JoinGroup/SyncGroup state table) or a consumer group (``consumer.py``, KIP-848), never both at once. Committed
offsets are kept beside them (``offsets.py``), in ``__consumer_offsets`` when there is a data directory. The handlers
call this class with plain values and turn its answers into wire messages; nothing here knows a socket.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.groups.classic import ClassicGroup
from kafka_shim.shim.groups.classic_coordinator import ClassicCoordinator
from kafka_shim.shim.groups.consumer import ConsumerGroup, ConsumerGroupManager
from kafka_shim.shim.groups.settings import GroupSettings
from kafka_shim.shim.groups.timers import LoopScheduler, Scheduler


class GroupCoordinator:
    def __init__(self, settings: GroupSettings, clock: Callable[[], float] = time.monotonic,
                 scheduler: Scheduler | None = None) -> None:
        self.settings = settings
        self.clock = clock
        # group id -> its group (classic or consumer protocol).
        self.groups: dict[str, Any] = {}
        # --- classic protocol (classic.py, classic_coordinator.py) ---
        self.scheduler: Scheduler = scheduler if scheduler is not None else LoopScheduler()
        self.classic = ClassicCoordinator(self.groups, settings, self.scheduler)

    def close(self) -> None:
        """Stop the timers; called once when the broker stops."""
        self.classic.close()

    # --- classic protocol: the interface the offsets and admin parts use ---

    def classic_group(self, group_id: str) -> ClassicGroup | None:
        return self.classic.group(group_id)

    def validate_classic_offset_commit(self, group_id: str, generation_id: int, member_id: str,
                                       group_instance_id: str | None, api_version: int) -> int:
        """The error code of Kafka's member checks for an OffsetCommit to a classic group, 0 when it may be stored.

        Kafka checks generation and member whatever the version (v0-1 carry -1 / "" when the client has none, which
        is the "simple" consumer's case), so ``api_version`` changes nothing; it is taken for the interface's sake."""
        return self.classic.validate_offset_commit(group_id, generation_id, member_id, group_instance_id)

    def validate_classic_txn_offset_commit(self, group_id: str, generation_id: int, member_id: str,
                                           group_instance_id: str | None) -> int:
        """TxnOffsetCommit's variant: a missing group is created whatever the generation; no member needed when empty."""
        return self.classic.validate_offset_commit(group_id, generation_id, member_id, group_instance_id,
                                                   is_transactional=True)

    # -- consumer groups (KIP-848; shim/groups/consumer.py) -----------------------------------------------

    @property
    def consumer(self) -> ConsumerGroupManager:
        """The consumer-protocol half of the coordinator, over the same ``groups`` map."""
        manager = self.__dict__.get("_consumer")
        if manager is None:
            manager = self.__dict__["_consumer"] = ConsumerGroupManager(self.groups, self.settings, self.clock, self.scheduler)
        return manager

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group of that id (its expired members fenced first), or None (absent or classic)."""
        return self.consumer.group(group_id)

    def validate_consumer_offset_commit(self, group_id: str, member_id: str, member_epoch: int, api_version: int = 9) -> int:
        """OffsetCommit against a consumer group (ConsumerGroup.validateOffsetCommit): 0 when it may go on, else
        UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, or UNSUPPORTED_VERSION for a consumer-protocol member below v9."""
        group = self.consumer_group(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        return self.consumer.validate_offset_commit(group, member_id, member_epoch, api_version)

    def validate_consumer_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        """OffsetFetch v9 with a member id/epoch against a consumer group (ConsumerGroup.validateOffsetFetch)."""
        group = self.consumer_group(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        return self.consumer.validate_offset_fetch(group, member_id, member_epoch)

    def release_empty_consumer_group(self, group_id: str) -> bool:
        """A JoinGroup (classic protocol) for the id of an *empty* consumer group: Kafka 3.9's new coordinator deletes
        that group and goes on with a classic one (maybeDeleteEmptyConsumerGroup). True when it was dropped. For a
        non-empty consumer group 3.9 takes the JoinGroup into the consumer group as a classic-protocol member,
        which kafka-shim does not do (see README)."""
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup) and group.is_empty():
            del self.groups[group_id]
            return True
        return False

    def consumer_groups(self) -> list[ConsumerGroup]:
        """Every consumer group, its expired members fenced first (for ListGroups-like views of all groups)."""
        self.consumer.expire_all()
        return [group for group in self.groups.values() if isinstance(group, ConsumerGroup)]
