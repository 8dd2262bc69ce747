"""ClassicGroup-shaped stand-ins (groups.md interface) and a minimal offsets store, for testing the group
administration APIs on plain coordinator state without the join protocol."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FakeMember:
    member_id: str
    client_id: str = "client"
    client_host: str = "/127.0.0.1"
    group_instance_id: str | None = None
    session_timeout_ms: int = 45000
    rebalance_timeout_ms: int = 300000
    protocols: list[tuple[str, bytes]] = field(default_factory=lambda: [("range", b"range-meta"), ("roundrobin", b"rr-meta")])
    assignment: bytes = b"assigned"


@dataclass
class FakeClassicGroup:
    group_id: str
    state: str = "Empty"
    protocol_type: str | None = "consumer"
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, FakeMember] = field(default_factory=dict)

    def subscribed_topics(self) -> set[str] | None:
        return None


def stable(group_id: str, *member_ids: str, protocol: str = "range") -> FakeClassicGroup:
    members = {m: FakeMember(m) for m in member_ids}
    return FakeClassicGroup(group_id, "Stable", "consumer", protocol, 1, member_ids[0] if member_ids else None, members)


class FakeOffsets:
    """OffsetStore's has_offsets / delete_group, over a dict of group -> {(topic, partition): offset}."""

    def __init__(self) -> None:
        self.committed: dict[str, dict[tuple[str, int], int]] = {}

    def has_offsets(self, group_id: str) -> bool:
        return bool(self.committed.get(group_id))

    def delete_group(self, group_id: str, *, generation: int = 0) -> int:
        return len(self.committed.pop(group_id, {}))

    def group_ids(self) -> list[str]:
        return [g for g, offsets in self.committed.items() if offsets]
