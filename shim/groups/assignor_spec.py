"""What an assignor is given and gives back, and how it fails (shared by shim.groups.assignors and its builders)."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
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
    # In Kafka's iteration order (its TopicIds view over the member's HashSet of topic names): where two topic ids
    # fall in one bucket of the assignors' hash sets and maps, that order decides which comes first.
    subscribed_topic_ids: Collection[uuid.UUID] = ()
    assignment: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)
