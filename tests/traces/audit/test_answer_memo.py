"""``Decider.answer_table`` answers a table of actions from the answers it already made (looked up by key in Arrow)
and decides only the new ones: whatever the tables before it asked, each row must get the answer a fresh Decider
gives that action alone, also for principals holding the key's separator."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafka_shim.authorizer import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_shim.traces.audit import decide
from kafka_shim.traces.audit.decide import AuthorizerSettings, Decider

ACLS = [
    AclBinding(ResourcePattern(ResourceType.TOPIC, "team1.", PatternType.PREFIXED),
               AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)),
    AclBinding(ResourcePattern(ResourceType.TOPIC, "team1.secret", PatternType.LITERAL),
               AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.DENY)),
    AclBinding(ResourcePattern(ResourceType.TOPIC, "*", PatternType.LITERAL),
               AccessControlEntry("User:bob", "10.0.0.2", AclOperation.DESCRIBE, AclPermissionType.ALLOW)),
    AclBinding(ResourcePattern(ResourceType.TOPIC, "x", PatternType.LITERAL),
               AccessControlEntry("User:a\x00=b", "*", AclOperation.READ, AclPermissionType.ALLOW)),
]

# (principal, host, operation, resource_type, resource_name, kind)
ACTIONS = [
    ("User:alice", "10.0.0.1", "READ", "TOPIC", "team1.orders", "authorize"),
    ("User:alice", "10.0.0.1", "READ", "TOPIC", "team1.secret", "authorize"),
    ("User:alice", "10.0.0.1", "DESCRIBE", "TOPIC", "team1.orders", "authorize"),
    ("User:bob", "10.0.0.2", "DESCRIBE", "TOPIC", "anything", "authorize"),
    ("User:bob", "10.0.0.3", "DESCRIBE", "TOPIC", "anything", "authorize"),
    ("User:bob", "10.0.0.2", "WRITE", "TOPIC", None, "by_resource_type"),
    ("User:alice", "10.0.0.1", "READ", "TOPIC", None, "authorize"),
    ("User:alice", "10.0.0.1", "READ", "TOPIC", "\x01", "authorize"),  # the stand-in of a null name, as a name
    ("User:a\x00=b", "*", "READ", "TOPIC", "x", "authorize"),
    ("User:a", "b\x00=*", "READ", "TOPIC", "x", "authorize"),  # would share a key with the row above
]


def _table(rows: list[tuple]) -> pa.Table:
    return pa.table({name: pa.array([r[i] for r in rows], pa.string()) for i, name in enumerate(decide.ACTION_COLUMNS)})


def _alone(row: tuple) -> dict:
    return Decider(ACLS, AuthorizerSettings()).answer_batch(_table([row]).to_batches()[0]).to_pylist()[0]


@pytest.mark.parametrize("order", [[0, 1, 2, 3], [3, 2, 1, 0], [1, 1, 0, 2]])
def test_each_row_gets_the_answer_of_a_fresh_decider(order: list[int]) -> None:
    expected = {row: _alone(row) for row in ACTIONS}
    assert expected[ACTIONS[0]]["allowed"] is True and expected[ACTIONS[1]]["allowed"] is False
    assert expected[ACTIONS[8]]["allowed"] is True and expected[ACTIONS[9]]["allowed"] is False
    # overlapping tables, some rows repeated within a table, asked in different orders of one Decider
    tables = [ACTIONS[:4] + ACTIONS[:2], ACTIONS[2:8], ACTIONS[5:] + ACTIONS[5:6], ACTIONS[::-1]]
    decider = Decider(ACLS, AuthorizerSettings())
    for i in order:
        answered = decider.answer_table(_table(tables[i])).to_pylist()
        assert answered == [expected[row] for row in tables[i]]


def test_the_memo_starts_again_past_its_bound(monkeypatch) -> None:
    monkeypatch.setattr(decide, "_MEMO_LIMIT", 3)
    decider = Decider(ACLS, AuthorizerSettings())
    for start in range(len(ACTIONS) - 2):
        rows = ACTIONS[start:start + 3]
        assert decider.answer_table(_table(rows)).to_pylist() == [_alone(row) for row in rows]
        assert len(decider._known_keys) <= 3
