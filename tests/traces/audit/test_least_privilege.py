"""least_privilege: the smallest ALLOW set deciding every action of a trace as A did, checked by deciding the
actions again with the project's authorizer (hypothesis over random ACL sets and actions)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shim.authorizer import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kafka_shim.traces.audit.least_privilege import least_privilege, verify
from tests.support.audit_actions import acl, build_actions

T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
Op = AclOperation



def shape(bindings) -> set[tuple]:
    return {(b.pattern.resource_type.name, b.pattern.pattern_type.name, b.pattern.name, b.entry.principal,
             b.entry.host, b.entry.operation.name, b.entry.permission_type.name) for b in bindings}


def test_wildcard_grant_becomes_literal_grants_for_what_was_used():
    a = [acl(T, "*", "User:*", Op.ALL), acl(G, "*", "User:*", Op.ALL)]
    actions = build_actions(a, [
        ("User:alice", "10.0.0.1", Op.READ, T, "orders", 10),
        ("User:alice", "10.0.0.1", Op.DESCRIBE, T, "orders", 4),  # implied by READ: no grant of its own
        ("User:alice", "10.0.0.1", Op.READ, G, "billing", 10),
        ("User:bob", "10.0.0.2", Op.WRITE, T, "orders", 3),
    ])
    lp = least_privilege(actions, a)
    assert shape(lp) == {
        ("TOPIC", "LITERAL", "orders", "User:alice", "*", "READ", "ALLOW"),
        ("GROUP", "LITERAL", "billing", "User:alice", "*", "READ", "ALLOW"),
        ("TOPIC", "LITERAL", "orders", "User:bob", "*", "WRITE", "ALLOW"),
    }
    assert verify(actions, lp) == []


def test_literals_merge_into_a_prefix_only_past_the_bound_and_clear_of_denied_names():
    a = [acl(T, "team.", "User:alice", Op.READ, PRE)]
    used = [("User:alice", "h", Op.READ, T, f"team.svc{i}", 1) for i in range(5)]
    actions = build_actions(a, used)
    assert shape(least_privilege(actions, a, max_prefix_merge=5)) == {
        ("TOPIC", "PREFIXED", "team.", "User:alice", "*", "READ", "ALLOW")}
    assert len(least_privilege(actions, a, max_prefix_merge=6)) == 5  # below the bound: literals
    # a name A denied alice under team. keeps the prefix out
    a_denying = [*a, acl(T, "team.secret", "User:alice", Op.READ, deny=True)]
    actions = build_actions(a_denying, [*used, ("User:alice", "h", Op.READ, T, "team.secret", 1)])
    lp = least_privilege(actions, a_denying, max_prefix_merge=5)
    assert {b.pattern.pattern_type for b in lp} == {LIT}
    assert verify(actions, lp) == []


def test_a_longer_prefix_is_preferred_and_hosts_are_kept():
    a = [acl(T, "app.", "User:alice", Op.WRITE, PRE, host="10.0.0.7")]
    names = ["app.eu.a", "app.eu.b", "app.eu.c", "app.us.a"]
    actions = build_actions(a, [("User:alice", "10.0.0.7", Op.WRITE, T, n, 1) for n in names])
    assert shape(least_privilege(actions, a, max_prefix_merge=3)) == {
        ("TOPIC", "PREFIXED", "app.eu.", "User:alice", "10.0.0.7", "WRITE", "ALLOW"),
        ("TOPIC", "LITERAL", "app.us.a", "User:alice", "10.0.0.7", "WRITE", "ALLOW"),
    }


def test_a_describe_under_a_merged_read_prefix_is_dropped():
    a = [acl(T, "team.", "User:alice", Op.ALL, PRE)]
    questions = [("User:alice", "h", Op.READ, T, f"team.s{i}", 1) for i in range(3)]
    questions.append(("User:alice", "h", Op.DESCRIBE, T, "team.other", 1))  # described, never read
    actions = build_actions(a, questions)
    assert shape(least_privilege(actions, a, max_prefix_merge=3)) == {
        ("TOPIC", "PREFIXED", "team.", "User:alice", "*", "READ", "ALLOW")}


def test_implied_operation_that_a_denied_gets_a_deny():
    a = [acl(T, "t", "User:alice", Op.READ), acl(T, "t", "User:alice", Op.DESCRIBE, deny=True)]
    actions = build_actions(a, [("User:alice", "h", Op.READ, T, "t", 1), ("User:alice", "h", Op.DESCRIBE, T, "t", 1)])
    assert actions.column("allowed_a").to_pylist() == [True, False]
    lp = least_privilege(actions, a)
    # READ alone would allow the DESCRIBE A denied: the set says DENY for exactly that action
    assert shape(lp) == {("TOPIC", "LITERAL", "t", "User:alice", "*", "READ", "ALLOW"),
                         ("TOPIC", "LITERAL", "t", "User:alice", "h", "DESCRIBE", "DENY")}
    assert verify(actions, lp) == []


def test_kip_679_question_keeps_a_topic_write():
    a = [acl(T, "orders", "User:alice", Op.WRITE)]
    actions = build_actions(a, [("User:alice", "h", Op.WRITE, T, "", 1, "by_resource_type")])
    lp = least_privilege(actions, a)
    # A named no topic for it: the question gets A's grant, for the principal and host that asked
    assert shape(lp) == {("TOPIC", "LITERAL", "orders", "User:alice", "h", "WRITE", "ALLOW")}
    assert verify(actions, lp) == []


def test_idempotent_write_is_left_out_where_a_topic_write_starts_the_producer_kip_679():
    a = [acl(T, "orders", "User:alice", Op.WRITE), acl(C, "kafka-cluster", "User:alice", Op.IDEMPOTENT_WRITE),
         acl(C, "kafka-cluster", "User:bob", Op.IDEMPOTENT_WRITE), acl(T, "logs", "User:bob", Op.READ)]
    questions = [
        # alice's idempotent InitProducerId: the shortcut allowed, so the broker never asked the KIP-679 question
        ("User:alice", "h", Op.IDEMPOTENT_WRITE, C, "kafka-cluster", 2, "shortcut"),
        ("User:alice", "h", Op.WRITE, T, "", 2, "by_resource_type"),
        ("User:alice", "h", Op.WRITE, T, "orders", 5),
        # bob's: he may write no topic, so the shortcut is what starts his producer
        ("User:bob", "h", Op.IDEMPOTENT_WRITE, C, "kafka-cluster", 1, "shortcut"),
        ("User:bob", "h", Op.WRITE, T, "", 1, "by_resource_type"),
        ("User:bob", "h", Op.READ, T, "logs", 3),
    ]
    actions = build_actions(a, questions)
    lp = least_privilege(actions, a)
    assert shape(lp) == {("TOPIC", "LITERAL", "orders", "User:alice", "*", "WRITE", "ALLOW"),
                         ("CLUSTER", "LITERAL", "kafka-cluster", "User:bob", "*", "IDEMPOTENT_WRITE", "ALLOW"),
                         ("TOPIC", "LITERAL", "logs", "User:bob", "*", "READ", "ALLOW")}
    # the set denies alice's shortcut, which no request of hers needs: not a difference
    assert verify(actions, lp) == []
    # a set without bob's grant does differ: his producer would not start
    assert [(d.principal, d.operation) for d in verify(actions, [b for b in lp if b.entry.principal != "User:bob"
                                                                 or b.pattern.resource_type != C])] == [
        ("User:bob", Op.IDEMPOTENT_WRITE)]


def test_idempotent_write_stays_where_a_client_reads_it_in_a_bitfield():
    a = [acl(T, "orders", "User:alice", Op.WRITE), acl(C, "kafka-cluster", "User:alice", Op.IDEMPOTENT_WRITE)]
    questions = [("User:alice", "h", Op.IDEMPOTENT_WRITE, C, "kafka-cluster", 1, "shortcut"),
                 ("User:alice", "h", Op.WRITE, T, "", 1, "by_resource_type"),
                 # DescribeCluster's KIP-430 cluster bits: the grant sets one a client sees
                 ("User:alice", "h", Op.IDEMPOTENT_WRITE, C, "kafka-cluster", 1, "authorized_operations")]
    actions = build_actions(a, questions)
    lp = least_privilege(actions, a)
    assert ("CLUSTER", "LITERAL", "kafka-cluster", "User:alice", "*", "IDEMPOTENT_WRITE", "ALLOW") in shape(lp)
    assert verify(actions, lp) == []


PRINCIPALS = ["User:alice", "User:bob"]
HOSTS = ["10.0.0.1", "10.0.0.2"]
# No resource named "*": an ACL on the literal name "*" is the wildcard, so neither a grant nor a DENY can single
# that one name out (Kafka refuses "*" as a topic name; a group may be called so).
NAMES = ["a.x", "a.y", "a.z", "a.", "b.x", "*x", "ab"]
OPS = [Op.READ, Op.WRITE, Op.DESCRIBE, Op.CREATE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, Op.DELETE, Op.ALTER]
ACL_OPS = [*OPS, Op.ALL]
acls_strategy = st.lists(st.builds(
    lambda rtype, name, pattern, principal, host, op, deny: acl(rtype, name, principal, op, pattern, host, deny),
    st.sampled_from([T, G]), st.sampled_from(["a.", "a.x", "*", "b", "*x", "ab"]), st.sampled_from([LIT, PRE]),
    st.sampled_from([*PRINCIPALS, "User:*"]), st.sampled_from(["*", *HOSTS]), st.sampled_from(ACL_OPS),
    st.booleans()), max_size=12)
questions_strategy = st.lists(st.tuples(
    st.sampled_from(PRINCIPALS), st.sampled_from(HOSTS), st.sampled_from(OPS), st.sampled_from([T, G]),
    st.sampled_from(NAMES), st.integers(1, 5)), max_size=30, unique_by=lambda q: q[:5])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(acls_strategy, questions_strategy, st.integers(0, 3), st.booleans())
def test_least_privilege_decides_every_action_as_a_did(a, questions, bound, allow_everyone):
    kip_679 = [(p, h, Op.WRITE, T, "", 1, "by_resource_type") for p in PRINCIPALS for h in HOSTS]
    actions = build_actions(a, [*questions, *kip_679], allow_everyone_if_no_acl=allow_everyone)
    lp = least_privilege(actions, a, max_prefix_merge=bound)
    differ = verify(actions, lp)  # the set is for allow.everyone.if.no.acl.found=false, whatever A had
    # only a KIP-679 question A answered through allow.everyone.if.no.acl.found may differ (see step 4)
    assert all(d.kind == "by_resource_type" for d in differ), differ
    if not allow_everyone:
        assert differ == []
    # nothing but what the actions need: each ALLOW of the set allows at least one action A allowed
    allowed = [q for q, ok in zip([*questions, *kip_679], actions.column("allowed_a").to_pylist(), strict=True) if ok]
    for binding in lp:
        if binding.entry.permission_type == AclPermissionType.ALLOW:
            assert any(q[0] == binding.entry.principal for q in allowed), binding
