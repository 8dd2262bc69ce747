"""One named test per rule of the fact sheet (/work/shared/kafka-authz-semantics.md) §1, §2, §3, §4, §5, §7.2-§7.4."""

from __future__ import annotations

import pytest

from kafka_shim.authorizer import (
    MATCH_ANY,
    SUPPORTED_BITS,
    SUPPORTED_OPERATIONS,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    Authorizer,
    InvalidAclError,
    ResourcePattern,
    ResourcePatternFilter,
    parse_principal,
    parse_super_users,
    validate_new_acl,
)
from kafka_shim.authorizer.model import AclOperation as Op
from kafka_shim.authorizer.model import AclPermissionType as Perm
from kafka_shim.authorizer.model import PatternType as Pat
from kafka_shim.authorizer.model import ResourceType as RT

ALICE, BOB, ADMIN = "User:alice", "User:bob", "User:admin"
HOST, OTHER_HOST = "127.0.0.1", "10.0.0.1"
LIT, PRE = Pat.LITERAL, Pat.PREFIXED
ALLOW, DENY = Perm.ALLOW, Perm.DENY
ALL_CONCRETE_OPS = [op for op in Op if op not in (Op.ANY, Op.UNKNOWN)]


def acl(name="foo", op=Op.READ, perm=ALLOW, *, rtype=RT.TOPIC, pattern=LIT, principal=ALICE, host="*") -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, host, op, perm))


def make(*bindings: AclBinding, super_users=ADMIN, allow_everyone=False) -> Authorizer:
    az = Authorizer(super_users=super_users, allow_everyone_if_no_acl_found=allow_everyone)
    results = az.create_acls(list(bindings))
    assert all(r.error is None for r in results), results
    return az


def ok(az, op, name="foo", principal=ALICE, host=HOST, rtype=RT.TOPIC) -> bool:
    return az.authorize(principal, host, op, rtype, name)


def by_type(az, op, rtype=RT.TOPIC, principal=ALICE, host=HOST) -> bool:
    return az.authorize_by_resource_type(principal, host, op, rtype)


def bits(*ops) -> int:
    return sum(1 << int(op) for op in ops)


def fltr(rtype=RT.ANY, name=None, pattern=Pat.ANY, principal=None, host=None, op=Op.ANY, perm=Perm.ANY) -> AclBindingFilter:
    return AclBindingFilter(ResourcePatternFilter(rtype, name, pattern), AccessControlEntryFilter(principal, host, op, perm))


# ======================================================================================
# §3 authorize()
# ======================================================================================

def test_super_user_allowed_even_with_deny() -> None:
    az = make(acl("foo", Op.ALL, DENY, principal=ADMIN), acl("*", Op.ALL, DENY, principal="User:*"),
              acl("kafka-cluster", Op.ALL, DENY, rtype=RT.CLUSTER, principal="User:*"))
    for op in ALL_CONCRETE_OPS:
        assert ok(az, op, principal=ADMIN)
        assert ok(az, op, "kafka-cluster", principal=ADMIN, rtype=RT.CLUSTER)
    assert not ok(az, Op.READ)


def test_super_user_allowed_without_any_acl_and_without_allow_everyone() -> None:
    az = make()
    assert ok(az, Op.WRITE, "anything", principal=ADMIN)
    assert not ok(az, Op.WRITE, "anything")


def test_super_user_is_exact_type_and_name_match() -> None:
    az = make(super_users="User:admin")
    assert not ok(az, Op.READ, principal="User:Admin")
    assert not ok(az, Op.READ, principal="Group:admin")
    assert not ok(az, Op.READ, principal="User:admin2")


def test_literal_acl_applies_to_exact_name_only() -> None:
    az = make(acl("ab", Op.READ))
    assert ok(az, Op.READ, "ab")
    assert not ok(az, Op.READ, "abc")
    assert not ok(az, Op.READ, "a")


def test_literal_star_applies_to_every_name_but_those_starting_with_star() -> None:
    # Kafka 3.9's walk treats "*" as a literal ACL on a proper prefix of "*x" and skips it (the judge agrees:
    # tests/differential/test_acl_walk.py).
    az = make(acl("*", Op.READ))
    for name in ("foo", "bar", "*", "", "x*"):
        assert ok(az, Op.READ, name)
    for name in ("*x", "**"):
        assert not ok(az, Op.READ, name)
    assert make(acl("*", Op.READ), allow_everyone=True).authorized_operations(ALICE, HOST, RT.TOPIC, "*x") == SUPPORTED_BITS[RT.TOPIC]


def test_prefixed_acl_applies_to_names_starting_with_prefix_including_equal() -> None:
    az = make(acl("fo", Op.READ, pattern=PRE))
    assert ok(az, Op.READ, "fo")
    assert ok(az, Op.READ, "foo")
    assert ok(az, Op.READ, "fox-1")
    assert not ok(az, Op.READ, "f")
    assert not ok(az, Op.READ, "afo")


def test_acl_on_other_resource_type_does_not_apply() -> None:
    az = make(acl("foo", Op.READ, rtype=RT.GROUP), acl("*", Op.READ, rtype=RT.TRANSACTIONAL_ID))
    assert not ok(az, Op.READ, "foo", rtype=RT.TOPIC)
    assert ok(az, Op.READ, "foo", rtype=RT.GROUP)


def test_wildcard_principal_matches_any_type() -> None:
    az = make(acl("foo", Op.READ, principal="User:*"))
    for principal in (ALICE, BOB, "Group:x", "User:", "ServiceAccount:svc", "User:*", "User:ANONYMOUS"):
        assert ok(az, Op.READ, principal=principal), principal


def test_group_star_is_not_a_wildcard() -> None:
    az = make(acl("foo", Op.READ, principal="Group:*"))
    assert not ok(az, Op.READ, principal="Group:x")
    assert not ok(az, Op.READ, principal=ALICE)
    assert ok(az, Op.READ, principal="Group:*")


def test_principal_split_at_first_colon() -> None:
    az = make(acl("foo", Op.READ, principal="User:a:b"), acl("bar", Op.READ, principal="User:"))
    assert ok(az, Op.READ, "foo", principal="User:a:b")
    assert not ok(az, Op.READ, "foo", principal="User:a")
    assert ok(az, Op.READ, "bar", principal="User:")
    assert not ok(az, Op.READ, "bar", principal=ALICE)


def test_host_wildcard_matches_any_host() -> None:
    az = make(acl("foo", Op.READ, host="*"))
    for host in (HOST, OTHER_HOST, "0:0:0:0:0:0:0:1"):
        assert ok(az, Op.READ, host=host)


def test_host_exact_text_match_no_dns() -> None:
    az = make(acl("foo", Op.READ, host="127.0.0.1"), acl("v6", Op.READ, host="0:0:0:0:0:0:0:1"),
              acl("named", Op.READ, host="localhost"), acl("net", Op.READ, host="10.0.0.0/8"))
    assert ok(az, Op.READ, "foo", host="127.0.0.1")
    assert not ok(az, Op.READ, "foo", host="10.0.0.1")
    assert ok(az, Op.READ, "v6", host="0:0:0:0:0:0:0:1")
    assert not ok(az, Op.READ, "v6", host="::1")  # no address normalisation: text comparison
    assert not ok(az, Op.READ, "named", host="127.0.0.1")  # no DNS
    assert not ok(az, Op.READ, "net", host="10.0.0.1")  # no CIDR


def test_all_matches_every_operation_allow_and_deny() -> None:
    az = make(acl("foo", Op.ALL, ALLOW), acl("bar", Op.ALL, ALLOW), acl("bar", Op.ALL, DENY))
    for op in ALL_CONCRETE_OPS:
        assert ok(az, op, "foo"), op
        assert not ok(az, op, "bar"), op


def test_allow_all_on_cluster_grants_every_cluster_operation() -> None:
    az = make(acl("kafka-cluster", Op.ALL, rtype=RT.CLUSTER))
    for op in (Op.IDEMPOTENT_WRITE, Op.CLUSTER_ACTION, Op.CREATE_TOKENS, Op.CREATE, Op.ALTER, Op.DESCRIBE_CONFIGS):
        assert ok(az, op, "kafka-cluster", rtype=RT.CLUSTER), op


def test_deny_all_on_cluster_blocks_every_cluster_operation() -> None:
    az = make(acl("kafka-cluster", Op.ALL, DENY, rtype=RT.CLUSTER),
              *[acl("kafka-cluster", op, rtype=RT.CLUSTER) for op in ALL_CONCRETE_OPS if op != Op.ALL])
    for op in ALL_CONCRETE_OPS:
        assert not ok(az, op, "kafka-cluster", rtype=RT.CLUSTER), op


def test_allow_implies_describe_from_read_write_delete_alter() -> None:
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE):
        assert ok(make(acl("foo", op)), Op.DESCRIBE), op


def test_alter_configs_implies_describe_configs() -> None:
    assert ok(make(acl("foo", Op.ALTER_CONFIGS)), Op.DESCRIBE_CONFIGS)
    assert ok(make(acl("foo", Op.DESCRIBE_CONFIGS)), Op.DESCRIBE_CONFIGS)


def test_create_does_not_imply_describe() -> None:
    az = make(acl("foo", Op.CREATE))
    assert not ok(az, Op.DESCRIBE)
    assert ok(az, Op.CREATE)


def test_alter_configs_does_not_imply_alter_or_describe() -> None:
    az = make(acl("foo", Op.ALTER_CONFIGS))
    assert not ok(az, Op.ALTER)
    assert not ok(az, Op.DESCRIBE)


def test_describe_configs_implied_only_by_alter_configs() -> None:
    for op in (Op.ALTER, Op.READ, Op.WRITE, Op.DESCRIBE, Op.CREATE, Op.DELETE):
        assert not ok(make(acl("foo", op)), Op.DESCRIBE_CONFIGS), op


def test_nothing_implies_read_write_create_or_other_operations() -> None:
    for held in ALL_CONCRETE_OPS:
        if held == Op.ALL:
            continue
        az = make(acl("foo", held))
        for wanted in ALL_CONCRETE_OPS:
            if wanted in (held, Op.DESCRIBE, Op.DESCRIBE_CONFIGS):
                continue
            assert not ok(az, wanted), (held, wanted)


def test_request_for_all_is_matched_only_by_all() -> None:
    assert not ok(make(acl("foo", Op.READ), acl("foo", Op.WRITE)), Op.ALL)
    assert ok(make(acl("foo", Op.ALL)), Op.ALL)


def test_deny_read_does_not_deny_describe() -> None:
    az = make(acl("foo", Op.READ, DENY), acl("foo", Op.WRITE, ALLOW))
    assert ok(az, Op.DESCRIBE)
    assert not ok(az, Op.READ)


def test_deny_alter_configs_does_not_deny_describe_configs() -> None:
    az = make(acl("foo", Op.ALTER_CONFIGS, DENY), acl("foo", Op.DESCRIBE_CONFIGS, ALLOW))
    assert ok(az, Op.DESCRIBE_CONFIGS)
    assert not ok(az, Op.ALTER_CONFIGS)


def test_deny_describe_denies_describe_despite_implying_allow() -> None:
    az = make(acl("foo", Op.READ, ALLOW), acl("foo", Op.DESCRIBE, DENY))
    assert not ok(az, Op.DESCRIBE)
    assert ok(az, Op.READ)


@pytest.mark.parametrize("deny", [
    acl("foo", Op.READ, DENY),
    acl("*", Op.READ, DENY),
    acl("f", Op.READ, DENY, pattern=PRE),
    acl("foo", Op.READ, DENY, pattern=PRE),
    acl("foo", Op.READ, DENY, principal="User:*"),
    acl("foo", Op.ALL, DENY, host=HOST),
], ids=["literal", "wildcard", "short-prefix", "full-prefix", "user-star", "all-on-host"])
def test_deny_beats_allow_from_any_source(deny) -> None:
    az = make(acl("foo", Op.READ, ALLOW), acl("*", Op.ALL, ALLOW), acl("fo", Op.READ, ALLOW, pattern=PRE), deny)
    assert not ok(az, Op.READ)


def test_prefixed_deny_on_shorter_prefix_denies_despite_longer_allow() -> None:
    az = make(acl("alpha", Op.READ, ALLOW, pattern=PRE), acl("alp", Op.READ, DENY, pattern=PRE))
    assert not ok(az, Op.READ, "alpha")
    assert not ok(az, Op.READ, "alphabet")


def test_no_longest_prefix_wins_longer_deny_beats_shorter_allow() -> None:
    az = make(acl("al", Op.READ, ALLOW, pattern=PRE), acl("alpha", Op.READ, DENY, pattern=PRE))
    assert ok(az, Op.READ, "alp")
    assert not ok(az, Op.READ, "alphabet")


def test_default_deny_without_allow_everyone() -> None:
    assert not ok(make(), Op.READ)


def test_acls_for_others_give_default_deny() -> None:
    az = make(acl("foo", Op.READ, principal=BOB), acl("foo", Op.WRITE, host=OTHER_HOST))
    assert not ok(az, Op.READ)
    assert not ok(az, Op.WRITE)


def test_allow_everyone_only_when_no_acl_applies() -> None:
    az = make(acl("foo", Op.READ), allow_everyone=True)
    assert ok(az, Op.WRITE, "bar", principal=BOB)  # no ACL on bar at all
    assert not ok(az, Op.WRITE, "foo")  # alice has READ on foo, not WRITE: DefaultDeny, not DefaultAllow
    assert not ok(az, Op.READ, "foo", principal=BOB)


def test_acl_for_another_principal_locks_out_with_allow_everyone() -> None:
    az = make(acl("foo", Op.READ, principal=BOB), allow_everyone=True)
    assert not ok(az, Op.READ, "foo")
    assert ok(az, Op.READ, "other")  # other topics unaffected
    assert ok(az, Op.READ, "foo", rtype=RT.GROUP)  # other resource types unaffected


@pytest.mark.parametrize("lockout", [acl("*", Op.READ, principal=BOB), acl("fo", Op.READ, principal=BOB, pattern=PRE),
                                     acl("foo", Op.READ, DENY, principal=BOB, pattern=PRE)],
                         ids=["wildcard", "prefix", "deny-prefix"])
def test_wildcard_and_prefixed_acls_count_as_acls_on_the_resource(lockout) -> None:
    az = make(lockout, allow_everyone=True)
    assert not ok(az, Op.READ, "foo")
    assert not ok(az, Op.WRITE, "foo-bar")


def test_empty_resource_name_matched_by_literal_star() -> None:
    az = make(acl("*", Op.READ, rtype=RT.GROUP))
    assert ok(az, Op.READ, "", rtype=RT.GROUP)
    assert not ok(make(acl("a", Op.READ, rtype=RT.GROUP, pattern=PRE)), Op.READ, "", rtype=RT.GROUP)


def test_empty_resource_name_authorized_like_any_other() -> None:
    assert not ok(make(), Op.READ, "", rtype=RT.GROUP)
    assert ok(make(allow_everyone=True), Op.READ, "", rtype=RT.GROUP)


def test_prefixed_star_is_not_a_wildcard() -> None:
    az = make(acl("*", Op.READ, pattern=PRE))
    assert not ok(az, Op.READ, "foo")
    assert ok(az, Op.READ, "*")
    assert ok(az, Op.READ, "*foo")


def test_literal_star_named_resource_only_via_wildcard() -> None:
    az = make(acl("*a", Op.READ))
    assert ok(az, Op.READ, "*a")
    assert not ok(az, Op.READ, "*")
    assert not ok(az, Op.READ, "xa")


def test_case_sensitive_names() -> None:
    az = make(acl("Foo", Op.READ), acl("Pre", Op.WRITE, pattern=PRE))
    assert ok(az, Op.READ, "Foo")
    assert not ok(az, Op.READ, "foo")
    assert not ok(az, Op.WRITE, "prefix")
    assert ok(az, Op.WRITE, "Prefix")


def test_case_sensitive_principals() -> None:
    az = make(acl("foo", Op.READ, principal="User:Alice"))
    assert not ok(az, Op.READ, principal="User:alice")
    assert not ok(az, Op.READ, principal="user:Alice")
    assert ok(az, Op.READ, principal="User:Alice")


def test_user_resource_named_by_principal_string() -> None:
    az = make(acl("User:bob", Op.CREATE_TOKENS, rtype=RT.USER))
    assert ok(az, Op.CREATE_TOKENS, "User:bob", rtype=RT.USER)
    assert not ok(az, Op.DESCRIBE_TOKENS, "User:bob", rtype=RT.USER)
    assert not ok(az, Op.CREATE_TOKENS, "User:carol", rtype=RT.USER)


def test_answers_follow_changes_to_own_acls() -> None:
    az = make()
    assert not ok(az, Op.READ) and az.authorized_operations(ALICE, HOST, RT.TOPIC, "foo") == 0
    az.create_acls([acl("foo", Op.READ)])
    assert ok(az, Op.READ) and az.authorized_operations(ALICE, HOST, RT.TOPIC, "foo") == 264
    az.delete_acls([fltr(principal=ALICE)])
    assert not ok(az, Op.READ) and az.authorized_operations(ALICE, HOST, RT.TOPIC, "foo") == 0


def test_answers_follow_changes_to_user_star_acls() -> None:
    az = make(acl("foo", Op.READ))
    assert ok(az, Op.READ) and by_type(az, Op.READ)
    az.create_acls([acl("f", Op.READ, DENY, pattern=PRE, principal="User:*")])
    assert not ok(az, Op.READ) and not by_type(az, Op.READ)
    assert az.authorized_operations(ALICE, HOST, RT.TOPIC, "foo") == bits(Op.DESCRIBE)
    az.delete_acls([fltr(principal="User:*")])
    assert ok(az, Op.READ) and by_type(az, Op.READ)


def test_allow_everyone_lockout_follows_another_principals_acls() -> None:
    az = make(allow_everyone=True)
    assert ok(az, Op.READ) and az.authorized_operations(ALICE, HOST, RT.TOPIC, "foo") == 3576
    az.create_acls([acl("fo", Op.WRITE, principal=BOB, pattern=PRE)])
    assert not ok(az, Op.READ) and az.authorized_operations(ALICE, HOST, RT.TOPIC, "foo") == 0
    az.delete_acls([fltr(principal=BOB)])
    assert ok(az, Op.READ) and az.authorized_operations(ALICE, HOST, RT.TOPIC, "foo") == 3576


# ======================================================================================
# §4 authorizeByResourceType (KIP-679)
# ======================================================================================

@pytest.mark.parametrize(("op", "rtype"), [(Op.ANY, RT.TOPIC), (Op.UNKNOWN, RT.TOPIC), (Op.READ, RT.ANY), (Op.READ, RT.UNKNOWN)])
def test_by_type_any_or_unknown_arguments_raise(op, rtype) -> None:
    with pytest.raises(ValueError):
        by_type(make(), op, rtype)
    with pytest.raises(ValueError):  # even for a super user: the check comes first
        by_type(make(), op, rtype, principal=ADMIN)


def test_by_type_probe_lets_super_user_through_despite_wildcard_deny() -> None:
    az = make(acl("*", Op.ALL, DENY, principal="User:*"))
    assert by_type(az, Op.WRITE, principal=ADMIN)
    assert not by_type(az, Op.WRITE)


def test_by_type_probe_allow_everyone_when_hardcode_untouched() -> None:
    az = make(acl("foo", Op.READ, principal=BOB), acl("foo", Op.WRITE, DENY, principal="User:*"), allow_everyone=True)
    assert by_type(az, Op.WRITE)  # nothing applies to "hardcode", so the probe gets DefaultAllow


def test_by_type_allow_everyone_ignored_when_acl_touches_hardcode() -> None:
    for touching in (acl("*", Op.READ, principal=BOB), acl("h", Op.READ, principal=BOB, pattern=PRE),
                     acl("hardcode", Op.READ, principal=BOB)):
        az = make(touching, allow_everyone=True)
        assert not by_type(az, Op.WRITE), touching


def test_by_type_probe_allows_via_prefix_of_hardcode() -> None:
    assert by_type(make(acl("h", Op.WRITE, pattern=PRE)), Op.WRITE)
    assert by_type(make(acl("hardcode", Op.WRITE, pattern=PRE)), Op.WRITE)


def test_by_type_probe_uses_implication() -> None:
    """The probe is a normal authorize(): ALLOW READ on literal * grants DESCRIBE there."""
    assert by_type(make(acl("*", Op.READ)), Op.DESCRIBE)


def test_by_type_probe_denied_when_deny_applies_to_hardcode() -> None:
    # probe denied by DENY prefix "hard", scan: literal allow "foo" is not dominated by "hard"
    az = make(acl("*", Op.WRITE), acl("hard", Op.WRITE, DENY, pattern=PRE), acl("foo", Op.WRITE))
    assert by_type(az, Op.WRITE)


def test_by_type_literal_star_deny_denies_immediately() -> None:
    az = make(acl("foo", Op.WRITE), acl("bar", Op.WRITE, pattern=PRE), acl("*", Op.WRITE, DENY))
    assert not by_type(az, Op.WRITE)


def test_by_type_literal_star_deny_beats_wildcard_allow() -> None:
    az = make(acl("*", Op.WRITE, ALLOW), acl("*", Op.ALL, DENY, principal="User:*"))
    assert not by_type(az, Op.WRITE)


def test_by_type_wildcard_allow_allows_despite_prefix_denies() -> None:
    # The probe is denied (DENY prefix "h" covers "hardcode"), the scan finds ALLOW on literal "*".
    az = make(acl("*", Op.WRITE), acl("h", Op.WRITE, DENY, pattern=PRE), acl("a", Op.WRITE, DENY, pattern=PRE))
    assert not ok(az, Op.WRITE, "hardcode")
    assert by_type(az, Op.WRITE)


def test_by_type_literal_allow_not_dominated_allows() -> None:
    assert by_type(make(acl("foo", Op.WRITE)), Op.WRITE)


def test_by_type_literal_allow_dominated_by_identical_literal_deny() -> None:
    assert not by_type(make(acl("foo", Op.WRITE), acl("foo", Op.WRITE, DENY)), Op.WRITE)


def test_by_type_literal_allow_dominated_by_shorter_or_equal_prefix_deny() -> None:
    assert not by_type(make(acl("foo", Op.WRITE), acl("fo", Op.WRITE, DENY, pattern=PRE)), Op.WRITE)
    assert not by_type(make(acl("foo", Op.WRITE), acl("foo", Op.WRITE, DENY, pattern=PRE)), Op.WRITE)
    assert not by_type(make(acl("foo", Op.WRITE), acl("f", Op.WRITE, DENY, pattern=PRE)), Op.WRITE)


def test_by_type_prefixed_allow_dominated_by_shorter_or_equal_prefix_deny() -> None:
    assert not by_type(make(acl("foo", Op.WRITE, pattern=PRE), acl("fo", Op.WRITE, DENY, pattern=PRE)), Op.WRITE)
    assert not by_type(make(acl("foo", Op.WRITE, pattern=PRE), acl("foo", Op.WRITE, DENY, pattern=PRE)), Op.WRITE)


def test_by_type_longer_prefix_deny_does_not_dominate() -> None:
    assert by_type(make(acl("fo", Op.WRITE, pattern=PRE), acl("foo", Op.WRITE, DENY, pattern=PRE)), Op.WRITE)
    assert by_type(make(acl("fo", Op.WRITE), acl("foo", Op.WRITE, DENY, pattern=PRE)), Op.WRITE)


def test_by_type_literal_deny_does_not_dominate_prefixed_allow() -> None:
    assert by_type(make(acl("foo", Op.WRITE, pattern=PRE), acl("foo", Op.WRITE, DENY)), Op.WRITE)


def test_by_type_literal_deny_does_not_dominate_other_literal() -> None:
    assert by_type(make(acl("foo", Op.WRITE), acl("fo", Op.WRITE, DENY)), Op.WRITE)


def test_by_type_one_undominated_allow_suffices() -> None:
    az = make(acl("foo", Op.WRITE), acl("fo", Op.WRITE, DENY, pattern=PRE), acl("bar", Op.WRITE, pattern=PRE))
    assert by_type(az, Op.WRITE)


def test_by_type_unrelated_denies_ignored() -> None:
    az = make(acl("foo", Op.WRITE),
              acl("f", Op.WRITE, DENY, pattern=PRE, principal=BOB),
              acl("f", Op.WRITE, DENY, pattern=PRE, host=OTHER_HOST),
              acl("f", Op.READ, DENY, pattern=PRE),
              acl("f", Op.WRITE, DENY, pattern=PRE, rtype=RT.GROUP),
              acl("*", Op.WRITE, DENY, principal=BOB),
              acl("*", Op.WRITE, DENY, rtype=RT.TRANSACTIONAL_ID))
    assert by_type(az, Op.WRITE)


def test_by_type_no_implication_in_scan_step() -> None:
    assert not by_type(make(acl("foo", Op.READ)), Op.DESCRIBE)
    assert not by_type(make(acl("foo", Op.ALTER_CONFIGS)), Op.DESCRIBE_CONFIGS)
    # ...and a DENY of an implying operation does not dominate either
    assert by_type(make(acl("foo", Op.DESCRIBE), acl("f", Op.READ, DENY, pattern=PRE)), Op.DESCRIBE)


def test_by_type_all_operation_counts_in_scan_for_allow_and_deny() -> None:
    assert by_type(make(acl("foo", Op.ALL)), Op.WRITE)
    assert not by_type(make(acl("foo", Op.WRITE), acl("f", Op.ALL, DENY, pattern=PRE)), Op.WRITE)
    assert not by_type(make(acl("foo", Op.WRITE), acl("*", Op.ALL, DENY)), Op.WRITE)


def test_by_type_scan_matches_user_star_and_host_star() -> None:
    assert by_type(make(acl("foo", Op.WRITE, principal="User:*")), Op.WRITE, principal="Group:x")
    assert by_type(make(acl("foo", Op.WRITE, host=HOST)), Op.WRITE, host=HOST)
    assert not by_type(make(acl("foo", Op.WRITE, host=HOST)), Op.WRITE, host=OTHER_HOST)
    assert not by_type(make(acl("foo", Op.WRITE, principal="Group:*")), Op.WRITE, principal="Group:x")


def test_by_type_denied_without_any_acl() -> None:
    assert not by_type(make(), Op.WRITE)


def test_by_type_other_resource_type_acl_ignored() -> None:
    assert not by_type(make(acl("foo", Op.WRITE, rtype=RT.GROUP)), Op.WRITE, RT.TOPIC)
    assert by_type(make(acl("foo", Op.WRITE, rtype=RT.TRANSACTIONAL_ID)), Op.WRITE, RT.TRANSACTIONAL_ID)


def test_by_type_answer_tracks_acl_changes() -> None:
    az = make(acl("foo", Op.WRITE))
    assert by_type(az, Op.WRITE)
    az.create_acls([acl("f", Op.WRITE, DENY, pattern=PRE)])
    assert not by_type(az, Op.WRITE)
    az.delete_acls([fltr(perm=DENY)])
    assert by_type(az, Op.WRITE)


# ======================================================================================
# §5 authorized_operations bitfields
# ======================================================================================

def bitfield(az, rtype=RT.TOPIC, name="foo", principal=ALICE) -> int:
    return az.authorized_operations(principal, HOST, rtype, name)


def test_bitfield_describe_only_topic_256() -> None:
    assert bitfield(make(acl("foo", Op.DESCRIBE))) == 256


def test_bitfield_allow_delete_320() -> None:
    assert bitfield(make(acl("foo", Op.DELETE))) == 320


def test_bitfield_allow_read_264() -> None:
    assert bitfield(make(acl("foo", Op.READ))) == 264


def test_bitfield_alter_configs_adds_describe_configs() -> None:
    assert bitfield(make(acl("foo", Op.ALTER_CONFIGS))) == bits(Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS)


def test_bitfield_cluster_describe_and_alter_384() -> None:
    az = make(acl("kafka-cluster", Op.DESCRIBE, rtype=RT.CLUSTER), acl("kafka-cluster", Op.ALTER, rtype=RT.CLUSTER))
    assert bitfield(az, RT.CLUSTER, "kafka-cluster") == 384


def test_bitfield_group_allow_delete_is_describe_and_delete() -> None:
    assert bitfield(make(acl("g", Op.DELETE, rtype=RT.GROUP)), RT.GROUP, "g") == bits(Op.DESCRIBE, Op.DELETE)


@pytest.mark.parametrize(("rtype", "name", "full"), [
    (RT.TOPIC, "foo", 3576), (RT.GROUP, "g", 328), (RT.CLUSTER, "kafka-cluster", 8096),
    (RT.TRANSACTIONAL_ID, "tx", 272), (RT.DELEGATION_TOKEN, "tok", 256), (RT.USER, "User:bob", 24576),
])
def test_bitfield_no_acls_allow_everyone_full_set(rtype, name, full) -> None:
    assert bitfield(make(allow_everyone=True), rtype, name) == full
    assert SUPPORTED_BITS[rtype] == full


@pytest.mark.parametrize(("rtype", "name", "full"), [
    (RT.TOPIC, "foo", 3576), (RT.GROUP, "g", 328), (RT.CLUSTER, "kafka-cluster", 8096),
    (RT.TRANSACTIONAL_ID, "tx", 272), (RT.DELEGATION_TOKEN, "tok", 256), (RT.USER, "User:bob", 24576),
])
def test_bitfield_super_user_full_set(rtype, name, full) -> None:
    az = make(acl(name, Op.ALL, DENY, rtype=rtype, principal="User:*"))
    assert bitfield(az, rtype, name, principal=ADMIN) == full


def test_bitfield_no_acls_without_allow_everyone_is_zero() -> None:
    assert bitfield(make()) == 0


def test_bitfield_allow_everyone_off_for_resource_with_acls() -> None:
    assert bitfield(make(acl("foo", Op.READ, principal=BOB), allow_everyone=True)) == 0


def test_bitfield_never_sets_all_any_unknown() -> None:
    for rtype, name in [(RT.TOPIC, "foo"), (RT.CLUSTER, "kafka-cluster"), (RT.GROUP, "foo")]:
        field = bitfield(make(acl(name, Op.ALL, rtype=rtype)), rtype, name)
        assert field == SUPPORTED_BITS[rtype]
        assert field & bits(Op.ALL, Op.ANY, Op.UNKNOWN) == 0


def test_bitfield_only_supported_operations() -> None:
    # IDEMPOTENT_WRITE is not a topic operation: an ACL for it does not show up in a topic bitfield
    assert bitfield(make(acl("foo", Op.IDEMPOTENT_WRITE))) == 0
    assert bitfield(make(acl("g", Op.CREATE, rtype=RT.GROUP)), RT.GROUP, "g") == 0
    # WRITE and ALTER are not group operations (3.9), but the DESCRIBE they imply is
    assert bitfield(make(acl("g", Op.WRITE, rtype=RT.GROUP)), RT.GROUP, "g") == bits(Op.DESCRIBE)
    assert bitfield(make(acl("g", Op.ALTER, rtype=RT.GROUP)), RT.GROUP, "g") == bits(Op.DESCRIBE)


def test_bitfield_deny_removes_bits() -> None:
    az = make(acl("foo", Op.ALL), acl("foo", Op.WRITE, DENY), acl("f", Op.DESCRIBE_CONFIGS, DENY, pattern=PRE))
    assert bitfield(az) == 3576 & ~bits(Op.WRITE, Op.DESCRIBE_CONFIGS)


def test_bitfield_equals_per_operation_authorize() -> None:
    az = make(acl("foo", Op.READ), acl("*", Op.ALTER_CONFIGS), acl("fo", Op.DESCRIBE, DENY, pattern=PRE, host=OTHER_HOST),
              acl("foo", Op.READ, DENY, principal="User:*"))
    expected = sum(1 << int(op) for op in SUPPORTED_OPERATIONS[RT.TOPIC] if ok(az, op))
    assert bitfield(az) == expected == bits(Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS)


def test_supported_operation_sets_are_kafka_3_9() -> None:
    assert SUPPORTED_OPERATIONS[RT.GROUP] == {Op.READ, Op.DELETE, Op.DESCRIBE}
    assert SUPPORTED_OPERATIONS[RT.USER] == {Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS}
    assert set(SUPPORTED_OPERATIONS) == {RT.TOPIC, RT.GROUP, RT.CLUSTER, RT.TRANSACTIONAL_ID, RT.DELEGATION_TOKEN, RT.USER}


# ======================================================================================
# §7.4 filter matching
# ======================================================================================

FILTER_TABLE = [
    # (filter type, name, pattern) , (ACL type, name, pattern), match?
    ((RT.TOPIC, "NAME", LIT), (RT.TOPIC, "Name", LIT), False),
    ((RT.TOPIC, "Name", Pat.ANY), (RT.TOPIC, "*", LIT), False),
    ((RT.TOPIC, "Name", Pat.MATCH), (RT.TOPIC, "*", LIT), True),
    ((RT.TOPIC, "Name-something", Pat.MATCH), (RT.TOPIC, "Name", PRE), True),
    ((RT.TOPIC, "Name-something", Pat.ANY), (RT.TOPIC, "Name", PRE), False),
    ((RT.TOPIC, "Name", PRE), (RT.TOPIC, "Name-something", PRE), False),
    ((RT.TOPIC, "Name-something", Pat.MATCH), (RT.TOPIC, "Name", LIT), False),
    ((RT.ANY, "bar-X", Pat.MATCH), (RT.TOPIC, "bar-X", LIT), True),
    ((RT.ANY, "bar-X", Pat.MATCH), (RT.TOPIC, "bar-", PRE), True),
    # more rows derived from the rules
    ((RT.TOPIC, "foo", Pat.ANY), (RT.TOPIC, "foo", LIT), True),
    ((RT.TOPIC, "foo", Pat.ANY), (RT.TOPIC, "foo", PRE), True),
    ((RT.TOPIC, "foo", Pat.ANY), (RT.TOPIC, "fo", PRE), False),
    ((RT.TOPIC, "*", LIT), (RT.TOPIC, "*", LIT), True),
    ((RT.TOPIC, "*", LIT), (RT.TOPIC, "foo", LIT), False),
    ((RT.TOPIC, "foo", LIT), (RT.TOPIC, "foo", PRE), False),
    ((RT.TOPIC, "foo", PRE), (RT.TOPIC, "foo", LIT), False),
    ((RT.TOPIC, "foo", PRE), (RT.TOPIC, "foo", PRE), True),
    ((RT.TOPIC, "foo", Pat.MATCH), (RT.TOPIC, "foo", PRE), True),
    ((RT.TOPIC, "foo", Pat.MATCH), (RT.TOPIC, "foo-x", PRE), False),
    ((RT.TOPIC, "foo", Pat.MATCH), (RT.TOPIC, "Fo", PRE), False),
    ((RT.TOPIC, "foo", Pat.MATCH), (RT.GROUP, "foo", LIT), False),
    ((RT.TOPIC, None, LIT), (RT.TOPIC, "x", LIT), True),
    ((RT.TOPIC, None, LIT), (RT.TOPIC, "x", PRE), False),
    ((RT.TOPIC, None, PRE), (RT.TOPIC, "x", PRE), True),
    ((RT.TOPIC, None, Pat.ANY), (RT.TOPIC, "x", PRE), True),
    ((RT.TOPIC, None, Pat.MATCH), (RT.TOPIC, "x", PRE), True),
    ((RT.ANY, None, Pat.ANY), (RT.USER, "User:bob", LIT), True),
]


@pytest.mark.parametrize(("f", "p", "expected"), FILTER_TABLE, ids=[f"{f[1]}:{f[2].name}~{p[1]}:{p[2].name}" for f, p, _ in FILTER_TABLE])
def test_filter_table_row(f, p, expected) -> None:
    pattern_filter = ResourcePatternFilter(*f)
    pattern = ResourcePattern(*p)
    assert pattern_filter.matches(pattern) is expected
    binding = AclBinding(pattern, AccessControlEntry(ALICE, "*", Op.READ, ALLOW))
    az = make(binding)
    found = az.describe_acls(AclBindingFilter(pattern_filter, AccessControlEntryFilter(None, None, Op.ANY, Perm.ANY)))
    assert found == ([binding] if expected else [])


def test_filter_match_finds_literal_star_and_all_prefixes() -> None:
    acls = [acl("foo"), acl("*"), acl("f", pattern=PRE), acl("fo", pattern=PRE), acl("foo", pattern=PRE),
            acl("foo-x", pattern=PRE), acl("fo"), acl("*", pattern=PRE), acl("foo", rtype=RT.GROUP)]
    az = make(*acls)
    found = az.describe_acls(fltr(RT.TOPIC, "foo", Pat.MATCH))
    assert set(found) == {acls[0], acls[1], acls[2], acls[3], acls[4]}
    assert len(found) == 5


def test_filter_any_pattern_with_name_requires_exact_name() -> None:
    acls = [acl("foo"), acl("foo", pattern=PRE), acl("*"), acl("fo", pattern=PRE)]
    assert set(make(*acls).describe_acls(fltr(RT.TOPIC, "foo", Pat.ANY))) == {acls[0], acls[1]}


def test_filter_literal_star_finds_only_literal_star() -> None:
    acls = [acl("foo"), acl("*"), acl("*", pattern=PRE)]
    assert make(*acls).describe_acls(fltr(RT.TOPIC, "*", LIT)) == [acls[1]]


def test_filter_null_fields_match_anything() -> None:
    acls = [acl("foo"), acl("bar", Op.WRITE, DENY, pattern=PRE, principal=BOB, host=HOST, rtype=RT.GROUP)]
    assert set(make(*acls).describe_acls(MATCH_ANY)) == set(acls)


def test_filter_principal_user_star_is_not_a_wildcard() -> None:
    acls = [acl("foo", principal=ALICE), acl("foo", principal="User:*"), acl("foo", principal=BOB)]
    az = make(*acls)
    assert az.describe_acls(fltr(principal="User:*")) == [acls[1]]
    assert az.describe_acls(fltr(principal=ALICE)) == [acls[0]]  # User:* ACLs are not returned for alice


def test_filter_host_exact_match() -> None:
    acls = [acl("foo", host="*"), acl("foo", host=HOST)]
    az = make(*acls)
    assert az.describe_acls(fltr(host=HOST)) == [acls[1]]
    assert az.describe_acls(fltr(host="*")) == [acls[0]]


def test_filter_operation_and_permission_exact_no_implication() -> None:
    acls = [acl("foo", Op.READ, ALLOW), acl("foo", Op.ALL, ALLOW), acl("foo", Op.DESCRIBE, DENY)]
    az = make(*acls)
    assert az.describe_acls(fltr(op=Op.DESCRIBE)) == [acls[2]]
    assert az.describe_acls(fltr(op=Op.READ)) == [acls[0]]
    assert az.describe_acls(fltr(op=Op.ALL)) == [acls[1]]
    assert set(az.describe_acls(fltr(perm=ALLOW))) == {acls[0], acls[1]}
    assert az.describe_acls(fltr(perm=DENY)) == [acls[2]]


def test_filter_resource_type_any_vs_specific() -> None:
    acls = [acl("foo"), acl("foo", rtype=RT.GROUP)]
    az = make(*acls)
    assert set(az.describe_acls(fltr(RT.ANY, "foo", LIT))) == set(acls)
    assert az.describe_acls(fltr(RT.GROUP, "foo", LIT)) == [acls[1]]


def test_filter_names_case_sensitive() -> None:
    az = make(acl("Foo"), acl("F", pattern=PRE))
    assert az.describe_acls(fltr(RT.TOPIC, "foo", Pat.MATCH)) == []
    assert len(az.describe_acls(fltr(RT.TOPIC, "Foo", Pat.MATCH))) == 2


@pytest.mark.parametrize("bad", [
    fltr(RT.UNKNOWN), fltr(pattern=Pat.UNKNOWN), fltr(op=Op.UNKNOWN), fltr(perm=Perm.UNKNOWN),
    fltr(RT.TOPIC, "foo", Pat.UNKNOWN),
], ids=["resourceType", "patternType", "operation", "permissionType", "patternType-with-name"])
def test_describe_unknown_code_filter_matches_nothing(bad) -> None:
    az = make(acl("foo"), acl("*"), acl("f", pattern=PRE))
    assert az.describe_acls(bad) == []


@pytest.mark.parametrize("stored", [LIT, PRE])
def test_pattern_filter_unknown_pattern_type_matches_nothing_in_model(stored) -> None:
    """Kafka's ResourcePatternFilter#matches: only ANY and MATCH keep other pattern types, so UNKNOWN (null name too) matches nothing."""
    binding = acl("foo", pattern=stored)
    assert not ResourcePatternFilter(RT.TOPIC, None, Pat.UNKNOWN).matches(binding.pattern)
    assert not fltr(RT.ANY, None, Pat.UNKNOWN).matches(binding)


def test_entry_filter_unknown_fields_match_nothing_in_model() -> None:
    binding = acl("foo")
    assert not fltr(op=Op.UNKNOWN).matches(binding)
    assert not fltr(perm=Perm.UNKNOWN).matches(binding)
    assert not fltr(RT.UNKNOWN).matches(binding)
    assert not fltr(RT.TOPIC, "foo", Pat.UNKNOWN).matches(binding)


# ======================================================================================
# §7.2 CreateAcls validation, duplicates
# ======================================================================================

CLUSTER_MSG = "The only valid name for the CLUSTER resource is kafka-cluster"


@pytest.mark.parametrize(("binding", "message"), [
    (acl("other", Op.ALTER, rtype=RT.CLUSTER), CLUSTER_MSG),
    (acl("", Op.ALTER, rtype=RT.CLUSTER), CLUSTER_MSG),  # checked before the empty name
    (acl("*", Op.ALTER, rtype=RT.CLUSTER), CLUSTER_MSG),
    (acl("kafka", Op.ALTER, rtype=RT.CLUSTER, pattern=PRE), CLUSTER_MSG),
    (acl(""), "Invalid empty resource name"),
    (acl("", pattern=PRE, rtype=RT.GROUP), "Invalid empty resource name"),
    (acl("", rtype=RT.UNKNOWN), "Invalid empty resource name"),
    (acl("foo", rtype=RT.UNKNOWN), "Invalid resourceType UNKNOWN"),
    (acl("foo", pattern=Pat.UNKNOWN), "Invalid patternType UNKNOWN"),
    (acl("foo", Op.UNKNOWN), "Invalid operation UNKNOWN"),
    (acl("foo", Op.READ, Perm.UNKNOWN), "Invalid permissionType UNKNOWN"),
    (acl("foo", Op.UNKNOWN, Perm.UNKNOWN), "Invalid operation UNKNOWN"),
], ids=lambda v: str(v)[:60] if isinstance(v, str) else None)
def test_validate_new_acl_invalid_request_messages(binding, message) -> None:
    assert validate_new_acl(binding) == message
    az = make()
    [result] = az.create_acls([binding])
    assert isinstance(result.error, InvalidAclError)
    assert str(result.error) == message
    assert az.acls() == []


@pytest.mark.parametrize("binding", [
    acl("foo", principal="User:"), acl("foo", principal=":x"), acl("kafka-cluster", Op.ALL, rtype=RT.CLUSTER),
    acl("kafka-cluster", Op.ALL, rtype=RT.CLUSTER, pattern=PRE), acl("*", pattern=PRE), acl("User:bob", Op.CREATE_TOKENS, rtype=RT.USER),
    acl("foo", host="localhost"), acl("tok", Op.DESCRIBE, rtype=RT.DELEGATION_TOKEN),
])
def test_valid_acls_accepted(binding) -> None:
    assert validate_new_acl(binding) is None
    assert make(binding).acls() == [binding]


@pytest.mark.parametrize("build", [
    lambda: ResourcePattern(RT.ANY, "foo", LIT),
    lambda: ResourcePattern(RT.TOPIC, "foo", Pat.ANY),
    lambda: ResourcePattern(RT.TOPIC, "foo", Pat.MATCH),
    lambda: AccessControlEntry(ALICE, "*", Op.ANY, ALLOW),
    lambda: AccessControlEntry(ALICE, "*", Op.READ, Perm.ANY),
], ids=["type-ANY", "pattern-ANY", "pattern-MATCH", "op-ANY", "perm-ANY"])
def test_filter_only_values_refused_by_constructors(build) -> None:
    with pytest.raises(ValueError):
        build()


def test_create_results_one_per_binding_in_order() -> None:
    good1, bad, good2 = acl("a"), acl(""), acl("b", pattern=PRE)
    az = make()
    results = az.create_acls([good1, bad, good2])
    assert [r.error is None for r in results] == [True, False, True]
    assert set(az.acls()) == {good1, good2}


def test_duplicates_stored_once_and_succeed() -> None:
    az = make()
    b = acl("foo")
    results = az.create_acls([b, b, acl("foo")])
    assert [r.error for r in results] == [None, None, None]
    assert az.create_acls([b]) == [results[0]]
    assert az.acls() == [b]
    assert az.describe_acls(MATCH_ANY) == [b]
    [deleted] = az.delete_acls([MATCH_ANY])
    assert deleted.deleted == [b]
    assert az.acls() == []


# ======================================================================================
# §7.3 / §7.4 DeleteAcls
# ======================================================================================

def test_delete_dedupe_across_filters() -> None:
    a, b, c = acl("foo"), acl("foo", Op.WRITE), acl("bar")
    az = make(a, b, c)
    results = az.delete_acls([fltr(RT.TOPIC, "foo", LIT), fltr(op=Op.READ), fltr(RT.TOPIC, "nothing", LIT)])
    assert [r.error for r in results] == [None, None, None]
    assert set(results[0].deleted) == {a, b}
    assert set(results[1].deleted) == {a, c}  # a is reported under both filters...
    assert results[2].deleted == []
    assert az.acls() == []  # ...and deleted once


def test_delete_one_result_per_filter_in_order() -> None:
    a, b = acl("a"), acl("b")
    az = make(a, b)
    results = az.delete_acls([fltr(RT.TOPIC, "b", LIT), fltr(RT.TOPIC, "zzz", LIT), fltr(RT.TOPIC, "a", LIT)])
    assert [r.deleted for r in results] == [[b], [], [a]]


@pytest.mark.parametrize(("bad", "message"), [
    (fltr(RT.UNKNOWN), "Unknown patternFilter."),
    (fltr(pattern=Pat.UNKNOWN), "Unknown patternFilter."),
    (fltr(op=Op.UNKNOWN), "Unknown entryFilter."),
    (fltr(perm=Perm.UNKNOWN), "Unknown entryFilter."),
    (fltr(RT.UNKNOWN, op=Op.UNKNOWN), "Unknown patternFilter."),
], ids=["resourceType", "patternType", "operation", "permissionType", "both"])
def test_delete_unknown_code_filter_gets_invalid_request(bad, message) -> None:
    a, b = acl("a"), acl("b")
    az = make(a, b)
    results = az.delete_acls([bad, fltr(RT.TOPIC, "a", LIT)])
    assert isinstance(results[0].error, InvalidAclError)
    assert str(results[0].error) == message
    assert results[0].deleted == []
    assert results[1].error is None and results[1].deleted == [a]  # the other filter still works
    assert az.acls() == [b]


def test_deleted_acls_no_longer_authorize() -> None:
    az = make(acl("foo", Op.READ), acl("f", Op.READ, DENY, pattern=PRE, principal=BOB))
    assert ok(az, Op.READ)
    az.delete_acls([fltr(RT.TOPIC, "foo", Pat.MATCH, principal=ALICE)])
    assert not ok(az, Op.READ)
    az.delete_acls([MATCH_ANY])
    assert not ok(az, Op.READ)
    assert az.acls() == []


# ======================================================================================
# §2 configuration: super.users, allow.everyone.if.no.acl.found; principals
# ======================================================================================

def test_super_users_split_trim_skip_empty() -> None:
    assert parse_super_users(" User:a ; User:b;;  ;Group:c ") == {"User:a", "User:b", "Group:c"}
    assert parse_super_users("") == frozenset()
    assert parse_super_users(" ; ") == frozenset()
    assert parse_super_users(None) == frozenset()
    az = Authorizer(super_users=" User:a ; User:b;;")
    assert az.authorize("User:b", HOST, Op.WRITE, RT.TOPIC, "x")
    assert not az.authorize("User:c", HOST, Op.WRITE, RT.TOPIC, "x")


@pytest.mark.parametrize("value", ["User:a;bob", "nocolon", "User:a; ;x"])
def test_super_users_bad_principal_raises(value) -> None:
    with pytest.raises(ValueError):
        parse_super_users(value)
    with pytest.raises(ValueError):
        Authorizer(super_users=value)


@pytest.mark.parametrize(("value", "expected"), [
    ("TRUE", True), (" true ", True), ("True", True), ("true", True), (True, True),
    ("false", False), ("yes", False), ("1", False), ("", False), ("truee", False), ("t", False), (False, False),
])
def test_allow_everyone_parsing(value, expected) -> None:
    az = Authorizer(allow_everyone_if_no_acl_found=value)
    assert az.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "x") is expected


def test_allow_everyone_default_is_false() -> None:
    assert not Authorizer().authorize(ALICE, HOST, Op.READ, RT.TOPIC, "x")


@pytest.mark.parametrize(("text", "expected"), [
    ("User:alice", ("User", "alice")), ("User:a:b", ("User", "a:b")), ("User:", ("User", "")), (":x", ("", "x")),
])
def test_parse_principal_splits_at_first_colon(text, expected) -> None:
    assert parse_principal(text) == expected


@pytest.mark.parametrize("text", ["", "alice"])
def test_parse_principal_rejects_missing_colon(text) -> None:
    with pytest.raises(ValueError):
        parse_principal(text)


# ======================================================================================
# §1 enumerations: codes, from_code, from_string, display names
# ======================================================================================

def test_enum_wire_codes() -> None:
    assert [(op.name, int(op)) for op in Op] == [
        ("UNKNOWN", 0), ("ANY", 1), ("ALL", 2), ("READ", 3), ("WRITE", 4), ("CREATE", 5), ("DELETE", 6), ("ALTER", 7),
        ("DESCRIBE", 8), ("CLUSTER_ACTION", 9), ("DESCRIBE_CONFIGS", 10), ("ALTER_CONFIGS", 11), ("IDEMPOTENT_WRITE", 12),
        ("CREATE_TOKENS", 13), ("DESCRIBE_TOKENS", 14)]
    assert [(t.name, int(t)) for t in RT] == [("UNKNOWN", 0), ("ANY", 1), ("TOPIC", 2), ("GROUP", 3), ("CLUSTER", 4),
                                              ("TRANSACTIONAL_ID", 5), ("DELEGATION_TOKEN", 6), ("USER", 7)]
    assert [(p.name, int(p)) for p in Pat] == [("UNKNOWN", 0), ("ANY", 1), ("MATCH", 2), ("LITERAL", 3), ("PREFIXED", 4)]
    assert [(p.name, int(p)) for p in Perm] == [("UNKNOWN", 0), ("ANY", 1), ("DENY", 2), ("ALLOW", 3)]


@pytest.mark.parametrize("enum", [Op, RT, Pat, Perm])
def test_enum_from_code_unknown_is_unknown(enum) -> None:
    for code in (99, -1, 15 if enum is Op else 8, 127, 0):
        assert enum.from_code(code) is enum.UNKNOWN
    for member in enum:
        assert enum.from_code(int(member)) is member


def test_pattern_type_from_string_case_sensitive() -> None:
    assert Pat.from_string("LITERAL") is Pat.LITERAL
    assert Pat.from_string("PREFIXED") is Pat.PREFIXED
    assert Pat.from_string("MATCH") is Pat.MATCH
    assert Pat.from_string("literal") is Pat.UNKNOWN
    assert Pat.from_string("Literal") is Pat.UNKNOWN
    assert Pat.from_string("prefixed") is Pat.UNKNOWN


def test_other_enums_from_string_case_insensitive_and_pascal_case() -> None:
    assert Op.from_string("read") is Op.READ
    assert Op.from_string("Read") is Op.READ
    assert Op.from_string("IDEMPOTENT_WRITE") is Op.IDEMPOTENT_WRITE
    assert Op.from_string("idempotent_write") is Op.IDEMPOTENT_WRITE
    assert Op.from_string("IdempotentWrite") is Op.IDEMPOTENT_WRITE
    assert Op.from_string("DescribeConfigs") is Op.DESCRIBE_CONFIGS
    assert RT.from_string("topic") is RT.TOPIC
    assert RT.from_string("TransactionalId") is RT.TRANSACTIONAL_ID
    assert RT.from_string("DelegationToken") is RT.DELEGATION_TOKEN
    assert Perm.from_string("allow") is Perm.ALLOW
    assert Perm.from_string("Deny") is Perm.DENY
    assert Op.from_string("bogus") is Op.UNKNOWN
    assert RT.from_string("topics") is RT.UNKNOWN


@pytest.mark.parametrize("enum", [Op, RT, Perm])
def test_every_member_is_read_back_from_each_of_its_spellings(enum) -> None:
    for member in enum:
        for text in (member.name, member.name.lower(), member.display_name, member.display_name.upper(),
                     f" {member.display_name}\t"):
            assert enum.from_string(text) is member, text
    for text in ("", " ", "_", "READ_", "TOPICS", "all ow", "Idempotent Write"):
        assert enum.from_string(text) is enum.UNKNOWN, text


def test_display_names_pascal_case() -> None:
    assert [t.display_name for t in RT] == ["Unknown", "Any", "Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User"]
    assert Op.IDEMPOTENT_WRITE.display_name == "IdempotentWrite"
    assert Op.DESCRIBE_CONFIGS.display_name == "DescribeConfigs"
    assert Op.CLUSTER_ACTION.display_name == "ClusterAction"
    assert Op.CREATE_TOKENS.display_name == "CreateTokens"
    assert Op.READ.display_name == "Read"
    assert Perm.ALLOW.display_name == "Allow"
    assert Perm.DENY.display_name == "Deny"
    assert Pat.LITERAL.display_name == "Literal"


def test_is_specific_only_literal_and_prefixed() -> None:
    assert {p for p in Pat if p.is_specific} == {Pat.LITERAL, Pat.PREFIXED}
