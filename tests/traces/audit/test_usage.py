"""acl_usage: per ACL, the requests it decided, what it allowed, and its class (used, never used, redundant,
shadowed, detached, unnecessary IDEMPOTENT_WRITE), over actions decided by the project's authorizer."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shim.authorizer import (
    AclOperation,
    PatternType,
    ResourceType,
)
from kafka_shim.traces.audit.usage import USAGE_SCHEMA, acl_key, acl_usage, allowed_by
from tests.support.audit_actions import acl, build_actions

T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
Op = AclOperation



def by_key(table) -> dict[str, dict]:
    return {row["acl"]: row for row in table.to_pylist()}


def test_decided_requests_and_classes():
    read_prefix = acl(T, "pay.", "User:alice", Op.READ, PRE)
    read_literal = acl(T, "pay.eu", "User:alice", Op.READ)  # covered by the prefix: redundant
    describe = acl(T, "pay.", "User:alice", Op.DESCRIBE, PRE)  # implied by READ on the same prefix: redundant
    never = acl(T, "pay.us", "User:alice", Op.CREATE)  # its resource appears, never asked CREATE: never used
    detached_name = acl(T, "ghost", "User:alice", Op.READ)
    detached_user = acl(T, "pay.", "User:carol", Op.READ, PRE)
    shadow = acl(G, "g1", "User:alice", Op.READ)
    deny_group = acl(G, "g", "User:*", Op.ALL, PRE, deny=True)
    acls = [read_prefix, read_literal, describe, never, detached_name, detached_user, shadow, deny_group]
    actions = build_actions(acls, [
        ("User:alice", "10.0.0.1", Op.READ, T, "pay.eu", 7),
        ("User:alice", "10.0.0.1", Op.READ, T, "pay.us", 3),
        ("User:alice", "10.0.0.1", Op.DESCRIBE, T, "pay.us", 2),
        ("User:alice", "10.0.0.1", Op.READ, G, "g1", 5),
    ])
    usage = acl_usage(actions, acls)
    assert usage.schema == USAGE_SCHEMA
    rows = by_key(usage)
    assert len(rows) == len(acls)
    decided = {k: r["decided_requests"] for k, r in rows.items()}
    # every request was decided by exactly one ACL (the group READ by the DENY)
    assert sum(decided.values()) == 7 + 3 + 2 + 5
    assert decided[acl_key(deny_group)] == 5
    assert rows[acl_key(read_prefix)]["allowed_requests"] == 7 + 3 + 2
    assert rows[acl_key(read_prefix)]["allowed_actions"] == 3
    assert rows[acl_key(read_literal)]["allowed_requests"] == 7
    assert rows[acl_key(describe)]["allowed_requests"] == 2
    assert rows[acl_key(read_literal)]["usage_class"] == "redundant"
    assert rows[acl_key(describe)]["usage_class"] == "redundant"
    # the prefix alone allows pay.us READ: not redundant
    assert rows[acl_key(read_prefix)]["usage_class"] == "used"
    assert rows[acl_key(read_prefix)]["sole_requests"] == 3
    assert rows[acl_key(never)]["usage_class"] == "never_used"
    assert rows[acl_key(detached_name)]["usage_class"] == "detached"
    assert rows[acl_key(detached_user)]["detached"]
    assert rows[acl_key(shadow)]["usage_class"] == "shadowed"
    assert rows[acl_key(shadow)]["decided_requests"] == 0
    assert rows[acl_key(deny_group)]["usage_class"] == "used"


def test_allowed_by_lists_every_allow_of_each_action():
    prefix = acl(T, "pay.", "User:*", Op.READ, PRE)
    literal = acl(T, "pay.eu", "User:alice", Op.ALL)
    other_host = acl(T, "pay.eu", "User:alice", Op.READ, host="10.9.9.9")
    deny = acl(T, "pay.eu", "User:bob", Op.READ, deny=True)
    acls = [prefix, literal, other_host, deny]
    actions = build_actions(acls, [("User:alice", "10.0.0.1", Op.DESCRIBE, T, "pay.eu", 1),
                                   ("User:bob", "10.0.0.1", Op.READ, T, "pay.eu", 1),
                                   ("User:admin", "10.0.0.1", Op.READ, T, "pay.eu", 1)], super_users=["User:admin"])
    table = allowed_by(actions, acls, super_users=["User:admin"])
    assert table.column_names == [*actions.column_names, "allowed_by"]
    assert [set(x) for x in table.column("allowed_by").to_pylist()] == [
        {acl_key(prefix), acl_key(literal)},  # READ and ALL both imply DESCRIBE; the other host's does not apply
        {acl_key(prefix)},  # bob is denied, but the prefix would have allowed him on its own
        set(),  # a super user needs no ACL
    ]


def test_shadowing_needs_a_deny_covering_every_granted_operation_host_and_name():
    allow_read = acl(T, "t", "User:alice", Op.READ)
    deny_read = acl(T, "t", "User:alice", Op.READ, deny=True)  # DESCRIBE (implied by READ) still allowed
    allow_write = acl(T, "orders", "User:alice", Op.WRITE, host="10.0.0.9")
    deny_all_star = acl(T, "*", "User:alice", Op.ALL, deny=True)  # covers every topic, host and operation
    allow_star_named = acl(T, "*x", "User:alice", Op.WRITE)  # Kafka's walk skips literal '*' for names starting '*'
    allow_prefix = acl(T, "a.", "User:bob", Op.CREATE, PRE)
    deny_literal = acl(T, "a.", "User:bob", Op.CREATE, deny=True)  # one name only: does not shadow the prefix
    deny_other_host = acl(T, "a.", "User:bob", Op.CREATE, PRE, host="10.9.9.9", deny=True)
    acls = [allow_write, deny_all_star, allow_star_named, allow_prefix, deny_literal, deny_other_host]
    rows = by_key(acl_usage(build_actions(acls, []), acls))
    pair = [allow_read, deny_read]
    assert not by_key(acl_usage(build_actions(pair, []), pair))[acl_key(allow_read)]["shadowed"]
    # DENY WRITE alone leaves the DESCRIBE that WRITE implies: not shadowed
    partial = [allow_write, acl(T, "orders", "User:alice", Op.WRITE, deny=True)]
    assert not by_key(acl_usage(build_actions(partial, []), partial))[acl_key(allow_write)]["shadowed"]
    assert rows[acl_key(allow_write)]["shadowed"]
    assert not rows[acl_key(allow_star_named)]["shadowed"]
    assert not rows[acl_key(allow_prefix)]["shadowed"]
    assert not any(rows[acl_key(d)]["shadowed"] for d in (deny_all_star, deny_literal))


def test_wildcard_literal_allows_per_kafkas_walk():
    star = acl(T, "*", "User:alice", Op.READ)
    actions = build_actions([star], [
        ("User:alice", "h", Op.READ, T, "plain", 4),
        ("User:alice", "h", Op.READ, T, "*starred", 6),  # denied by Kafka 3.9: the wildcard does not apply
    ])
    assert actions.column("allowed_a").to_pylist() == [True, False]
    row = by_key(acl_usage(actions, [star]))[acl_key(star)]
    assert (row["allowed_requests"], row["decided_requests"], row["usage_class"]) == (4, 4, "used")


def test_idempotent_write_made_unnecessary_by_a_topic_write_kip_679():
    idem_alice = acl(C, "kafka-cluster", "User:alice", Op.IDEMPOTENT_WRITE)
    write_alice = acl(T, "orders", "User:alice", Op.WRITE)
    idem_bob = acl(C, "kafka-cluster", "User:bob", Op.IDEMPOTENT_WRITE)  # bob may write no topic: still needed
    acls = [idem_alice, write_alice, idem_bob]
    actions = build_actions(acls, [
        ("User:alice", "h", Op.IDEMPOTENT_WRITE, C, "kafka-cluster", 1),
        ("User:bob", "h", Op.IDEMPOTENT_WRITE, C, "kafka-cluster", 1),
        ("User:alice", "h", Op.WRITE, T, "orders", 9),
    ])
    rows = by_key(acl_usage(actions, acls))
    assert rows[acl_key(idem_alice)]["unnecessary_idempotent_write"]
    assert rows[acl_key(idem_alice)]["usage_class"] == "unnecessary_idempotent_write"
    assert not rows[acl_key(idem_bob)]["unnecessary_idempotent_write"]
    assert rows[acl_key(idem_bob)]["usage_class"] == "used"


def test_super_user_requests_are_nobodys_and_by_resource_type_counts_type_grants():
    write = acl(T, "orders", "User:alice", Op.WRITE)
    actions = build_actions([write], [
        ("User:admin", "h", Op.WRITE, T, "orders", 50),
        ("User:alice", "h", Op.WRITE, T, "", 2, "by_resource_type"),
    ], super_users=["User:admin"])
    row = by_key(acl_usage(actions, [write], super_users=["User:admin"]))[acl_key(write)]
    assert row["allowed_requests"] == 2
    assert row["decided_requests"] == 0


PRINCIPALS = ["User:alice", "User:bob"]
HOSTS = ["10.0.0.1", "10.0.0.2"]
OPS = [Op.READ, Op.WRITE, Op.DESCRIBE, Op.CREATE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, Op.DELETE, Op.ALTER]
acls_strategy = st.lists(st.builds(
    lambda rtype, name, pattern, principal, host, op, deny: acl(rtype, name, principal, op, pattern, host, deny),
    st.sampled_from([T, G]), st.sampled_from(["a.", "a.x", "*", "b", "*x", "ab"]), st.sampled_from([LIT, PRE]),
    st.sampled_from([*PRINCIPALS, "User:*"]), st.sampled_from(["*", *HOSTS]), st.sampled_from([*OPS, Op.ALL]),
    st.booleans()), max_size=12, unique=True)
questions_strategy = st.lists(st.tuples(
    st.sampled_from(PRINCIPALS), st.sampled_from(HOSTS), st.sampled_from(OPS), st.sampled_from([T, G]),
    st.sampled_from(["a.x", "a.y", "a.", "b.x", "*x", "*", "ab"]), st.integers(1, 5)),
    max_size=30, unique_by=lambda q: q[:5])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(acls_strategy, questions_strategy)
def test_usage_agrees_with_the_authorizers_decisions(acls, questions):
    actions = build_actions(acls, questions)
    rows = by_key(acl_usage(actions, acls))
    decided = [a for a in actions.to_pylist() if a["acl_a"]]
    assert sum(r["decided_requests"] for r in rows.values()) == sum(a["requests"] for a in decided)
    allowed_by_acl = [a for a in decided if a["allowed_a"]]
    # an ALLOW that decided a request allowed it; one that decided all a request's needs alone is not redundant
    for a in allowed_by_acl:
        assert rows[a["acl_a"]]["allowed_requests"] >= a["requests"]
        assert rows[a["acl_a"]]["used"]
    # a shadowed ALLOW never decides
    for key, row in rows.items():
        if row["shadowed"]:
            assert row["decided_requests"] == 0, key
    # every ACL allowing an action alone: removing it must make the authorizer deny that action
    for key, row in rows.items():
        if row["sole_requests"]:
            rest = [b for b in acls if acl_key(b) != key]
            again = build_actions(rest, questions)
            assert again.column("allowed_a").to_pylist() != actions.column("allowed_a").to_pylist(), key


def test_a_prefixed_star_deny_does_not_shadow_the_wildcard_allow():
    # PREFIXED '*' denies only names starting with '*'; the LITERAL '*' ALLOW still decides 'a.x' (found by hypothesis).
    acls = [acl(G, "*", "User:alice", Op.READ), acl(G, "*", "User:alice", Op.ALL, PRE, deny=True)]
    actions = build_actions(acls, [("User:alice", "10.0.0.1", Op.READ, G, "a.x", 1)])
    rows = by_key(acl_usage(actions, acls))
    wildcard = rows[acl_key(acls[0])]
    assert (wildcard["shadowed"], wildcard["decided_requests"], wildcard["usage_class"]) == (False, 1, "used")
