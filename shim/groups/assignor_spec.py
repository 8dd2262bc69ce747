"""What an assignor is given and gives back, and how it fails (shared by shim.groups.assignors and its builders)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

Assignment = dict[uuid.UUID, frozenset[int]]


class AssignorError(Exception):
    """Kafka's PartitionAssignorException: the coordinator answers UNKNOWN_SERVER_ERROR with its text."""


@dataclass(frozen=True)
class MemberSpec:
    """What an assignor sees of a member: its subscription (as topic ids) and its current target assignment."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    subscribed_topic_ids: frozenset[uuid.UUID] = frozenset()
    assignment: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)
