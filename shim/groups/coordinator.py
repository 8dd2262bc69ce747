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

from kafka_shim.shim.groups.settings import GroupSettings


class GroupCoordinator:
    def __init__(self, settings: GroupSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.clock = clock
        # group id -> its group (classic or consumer protocol).
        self.groups: dict[str, Any] = {}

    def close(self) -> None:
        """Stop the timers; called once when the broker stops."""
