"""ACLs whose principal has no colon (`alice`, ``): stored as Kafka 3.9 stores them, fatal where Kafka's walk meets them.

Kafka 3.9's StandardAuthorizer parses an ACL's principal only when an authorization visits the ACL, and throws
there; a matching DENY visited first ends the walk before. tests/differential/test_unparseable_acl_principals.py
shows the same cases on a real Kafka 3.9.
"""

from __future__ import annotations

import pytest

from kafka_shim.authorizer import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    Authorizer,
    ResourcePattern,
    ResourcePatternFilter,
    UnparseableAclPrincipal,
)
from kafka_shim.authorizer.acl_walk import _units
from kafka_shim.authorizer.model import AclOperation as Op
from kafka_shim.authorizer.model import AclPermissionType as Perm
from kafka_shim.authorizer.model import PatternType as Pat
from kafka_shim.authorizer.model import ResourceType as RT
from kafka_shim.authorizer.sqlite_store import SqliteAclStore

ALICE, ADMIN, HOST = "User:alice", "User:admin", "127.0.0.1"
LIT, PRE = Pat.LITERAL, Pat.PREFIXED


def acl(name="foo", op=Op.READ, perm=Perm.ALLOW, *, rtype=RT.TOPIC, pattern=LIT, principal=ALICE, host="*") -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, host, op, perm))


def make(*bindings: AclBinding, store=None) -> Authorizer:
    az = Authorizer(super_users=ADMIN, store=store)
    assert all(r.error is None for r in az.create_acls(list(bindings)))
    return az


def throws(ask) -> bool:
    try:
        ask()
    except UnparseableAclPrincipal:
        return True
    return False


@pytest.mark.parametrize("principal", ["alice", "", "User"])
def test_stored_listed_and_deleted(principal) -> None:
    bad = acl(principal=principal)
    az = make(bad, bad)
    assert az.acls() == [bad]
    everything = AclBindingFilter(ResourcePatternFilter(RT.ANY, None, Pat.ANY), AccessControlEntryFilter(None, None, Op.ANY, Perm.ANY))
    by_principal = AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "foo", Pat.MATCH), AccessControlEntryFilter(principal, None, Op.ANY, Perm.ANY))
    assert az.describe_acls(everything) == [bad] == az.describe_acls(by_principal)
    [result] = az.delete_acls([by_principal])
    assert result.deleted == [bad] and az.acls() == []
    assert az.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "foo") is False  # the type works again once it is gone


def test_a_decision_that_visits_it_fails_for_anyone_but_super_users() -> None:
    az = make(acl(principal="bob", host="10.9.9.9"), acl("bar", principal=ALICE))
    for principal in (ALICE, "User:bob", "User:ANONYMOUS"):  # the principal is parsed before host or operation
        assert throws(lambda p=principal: az.authorize(p, HOST, Op.READ, RT.TOPIC, "foo"))
        assert throws(lambda p=principal: az.authorized_operations(p, HOST, RT.TOPIC, "foo"))
    assert az.authorize(ADMIN, HOST, Op.READ, RT.TOPIC, "foo") is True
    assert az.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "bar") is True  # its walk never reaches `bob`
    assert az.authorize(ALICE, HOST, Op.READ, RT.GROUP, "foo") is False  # another resource type
    message = "Could not parse principal from `bob` (no colon is present separating the principal type from the principal name)"
    with pytest.raises(UnparseableAclPrincipal, match=message.replace("(", r"\(").replace(")", r"\)")):
        az.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "foo")


def test_a_matching_deny_visited_first_ends_the_walk() -> None:
    # Same name: Kafka orders by operation, so DENY READ (3) comes before the bad WRITE (4) ACL.
    az = make(acl(op=Op.READ, perm=Perm.DENY), acl(op=Op.WRITE, principal="bob"))
    assert az.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "foo") is False
    assert throws(lambda: az.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "foo"))
    assert throws(lambda: az.authorize("User:carol", HOST, Op.READ, RT.TOPIC, "foo"))  # the DENY is not carol's
    # The bitfield asks every operation: WRITE's walk throws.
    assert throws(lambda: az.authorized_operations(ALICE, HOST, RT.TOPIC, "foo"))


def test_longer_prefixes_are_visited_first() -> None:
    deny_long = make(acl("fo", pattern=PRE, perm=Perm.DENY), acl("f", pattern=PRE, principal="bob"))
    assert deny_long.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "foo") is False
    assert throws(lambda: deny_long.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "fa"))
    bad_long = make(acl("fo", pattern=PRE, principal="bob"), acl("f", pattern=PRE, perm=Perm.DENY))
    assert throws(lambda: bad_long.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "foo"))
    assert bad_long.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "fa") is False


def test_wildcard_acls_come_after_the_name_and_its_prefixes() -> None:
    az = make(acl("*", principal=""), acl("foo", perm=Perm.DENY))
    assert az.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "foo") is False  # the DENY on foo ends the walk first
    assert throws(lambda: az.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "other"))
    literal_prefix = make(acl("fo", principal="bob"))  # a LITERAL ACL on a prefix does not apply, and is not parsed
    assert literal_prefix.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "foo") is False


def test_idempotent_write_by_resource_type() -> None:
    # KIP-679's scan skips ACLs of other hosts before it parses principals, and stops at a matching wildcard DENY.
    other_host = make(acl(op=Op.WRITE, principal="bob", host="10.9.9.9"), acl(op=Op.WRITE))
    assert other_host.authorize_by_resource_type(ALICE, HOST, Op.WRITE, RT.TOPIC) is True
    any_host = make(acl("zzz", op=Op.WRITE, principal="bob"), acl(op=Op.WRITE))
    assert throws(lambda: any_host.authorize_by_resource_type(ALICE, HOST, Op.WRITE, RT.TOPIC))
    # Reverse name order: "zzz" is scanned before "*", so the wildcard DENY comes too late...
    late = make(acl("zzz", op=Op.WRITE, principal="bob"), acl("*", op=Op.WRITE, perm=Perm.DENY))
    assert throws(lambda: late.authorize_by_resource_type(ALICE, HOST, Op.WRITE, RT.TOPIC))
    # ...while a bad ACL on a name sorting below "*" comes after it.
    early = make(acl("(", op=Op.WRITE, principal="bob"), acl("*", op=Op.WRITE, perm=Perm.DENY))
    assert early.authorize_by_resource_type(ALICE, HOST, Op.WRITE, RT.TOPIC) is False
    assert early.authorize_by_resource_type(ADMIN, HOST, Op.WRITE, RT.TOPIC) is True


def test_memoised_answers_do_not_hide_a_new_one() -> None:
    az = make(acl())
    assert az.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "foo") is True
    az.create_acls([acl(op=Op.ALL, principal="bob")])
    assert throws(lambda: az.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "foo"))


def test_kept_across_a_restart(tmp_path) -> None:
    bad = acl(principal="", host="::1")
    first = SqliteAclStore(tmp_path / "acls.db")
    make(bad, store=first)
    first.close()
    again = Authorizer(super_users=ADMIN, store=SqliteAclStore(tmp_path / "acls.db"))
    assert again.acls() == [bad]
    assert throws(lambda: again.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "foo"))


def test_kafkas_walk_compares_names_by_utf16_code_units() -> None:
    # Java strings: a character outside the BMP is two code units (a surrogate pair), lone surrogates pass through
    assert _units("a\u00e9\U0001F600") == (0x61, 0xE9, 0xD83D, 0xDE00)
    assert _units("\udc00x") == (0xDC00, 0x78)
    assert _units("") == ()
