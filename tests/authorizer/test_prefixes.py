"""PrefixList (authorizer/prefixes.py): which stored names start a given name, under adds and removes.

Compared with the obvious answer (every stored name s with name.startswith(s)), with chunks of two names so that
chunk splits, chunk removal and chains across chunks are exercised by a handful of names.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kafka_shim.authorizer import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    Authorizer,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka_shim.authorizer.model import AclOperation as Op
from kafka_shim.authorizer.model import AclPermissionType as Perm
from kafka_shim.authorizer.model import PatternType as Pat
from kafka_shim.authorizer.model import ResourceType as RT
from kafka_shim.authorizer.prefixes import Entry, PrefixList

# nested, equal-to-a-prefix, empty, and non-ASCII names (combining marks, CJK, an astral character, one that sorts
# between ASCII letters and them)
NAMES = ["", "a", "ab", "abc", "abd", "b", "ba", "é", "e\u0301", "e", "日", "日本", "日本語", "𝄞", "𝄞x", "~", "a~", "ab~"]
QUERIES = [*NAMES, "abcd", "abz", "bab", "日本人", "𝄞𝄞", "z", "a\u0301"]


class Node(Entry):
    """Keeps a value derived from its ancestors up to date through refresh(), as index.Grants does."""

    __slots__ = ("depth",)

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.depth = -1

    def refresh(self) -> None:
        self.depth = 0 if self.parent is None else self.parent.depth + 1


def chain(entry: Entry | None) -> list[str]:
    names = []
    while entry is not None:
        names.append(entry.name)
        entry = entry.parent
    return names


def expected(stored: set[str], name: str) -> list[str]:
    return sorted((s for s in stored if name.startswith(s)), key=len, reverse=True)


def check(plist: PrefixList, stored: set[str]) -> None:
    entries = list(plist)
    assert [e.name for e in entries] == sorted(stored)
    assert len(plist) == len(stored) and bool(plist) == bool(stored)
    for e in entries:
        proper = expected(stored - {e.name}, e.name)
        assert (e.parent.name if e.parent else None) == (proper[0] if proper else None), e.name
        assert e.depth == len(proper), e.name  # refreshed after every change, parents before children
    for q in QUERIES:
        assert chain(plist.longest(q)) == expected(stored, q), q
    assert all(names and names[0] == first for names, first in zip(plist.names, plist.firsts, strict=True))


class PrefixListMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.plist: PrefixList[Node] = PrefixList(chunk=2)
        self.nodes: dict[str, Node] = {}

    @rule(name=st.sampled_from(NAMES))
    def add(self, name: str) -> None:
        if name in self.nodes:
            with pytest.raises(ValueError):
                self.plist.add(Node(name))
            return
        self.nodes[name] = node = Node(name)
        self.plist.add(node)

    @precondition(lambda self: self.nodes)
    @rule(data=st.data())
    def remove(self, data) -> None:
        name = data.draw(st.sampled_from(sorted(self.nodes)))
        node = self.nodes.pop(name)
        self.plist.remove(node)
        assert node.parent is None
        with pytest.raises(KeyError):
            self.plist.remove(node)

    @precondition(lambda self: self.nodes)
    @rule(data=st.data())
    def refresh(self, data) -> None:
        node = self.nodes[data.draw(st.sampled_from(sorted(self.nodes)))]
        node.depth = -1
        self.plist.refresh(node)

    @invariant()
    def answers(self) -> None:
        check(self.plist, set(self.nodes))


PrefixListMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None,
                                               suppress_health_check=[HealthCheck.too_slow])
TestPrefixListMachine = PrefixListMachine.TestCase


@given(names=st.lists(st.text(alphabet="ab日𝄞é", max_size=4), unique=True), queries=st.lists(st.text(alphabet="ab日𝄞é", max_size=6)),
       chunk=st.sampled_from([1, 2, 3, 4096]), data=st.data())
def test_any_names_in_any_order(names: list[str], queries: list[str], chunk: int, data) -> None:
    plist: PrefixList[Node] = PrefixList(chunk=chunk)
    nodes = {}
    for name in names:
        nodes[name] = Node(name)
        plist.add(nodes[name])
    removed = data.draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    for name in removed:
        plist.remove(nodes[name])
    stored = set(names) - set(removed)
    check(plist, stored)
    for q in queries:
        assert chain(plist.longest(q)) == expected(stored, q)


def test_empty_list_finds_nothing() -> None:
    plist: PrefixList[Node] = PrefixList()
    assert plist.longest("") is None and plist.longest("abc") is None
    assert not plist and len(plist) == 0


def test_name_equal_to_a_stored_prefix_matches_it_and_its_ancestors() -> None:
    plist: PrefixList[Node] = PrefixList()
    for name in ("pay", "payments", "pa"):
        plist.add(Node(name))
    assert chain(plist.longest("payments")) == ["payments", "pay", "pa"]
    assert chain(plist.longest("paymentsX")) == ["payments", "pay", "pa"]
    assert chain(plist.longest("payment")) == ["pay", "pa"]
    assert chain(plist.longest("p")) == []


def test_empty_prefix_matches_every_name() -> None:
    plist: PrefixList[Node] = PrefixList()
    plist.add(Node(""))
    plist.add(Node("x"))
    assert chain(plist.longest("")) == [""]
    assert chain(plist.longest("xy")) == ["x", ""]
    assert chain(plist.longest("日本")) == [""]


def test_removing_a_middle_prefix_relinks_the_longer_ones() -> None:
    plist: PrefixList[Node] = PrefixList()
    nodes = {name: Node(name) for name in ("a", "ab", "abc", "abd")}
    for node in nodes.values():
        plist.add(node)
    assert nodes["abc"].parent is nodes["ab"] and nodes["abd"].parent is nodes["ab"]
    plist.remove(nodes["ab"])
    assert nodes["abc"].parent is nodes["a"] and nodes["abd"].parent is nodes["a"]
    assert nodes["abc"].depth == 1
    assert chain(plist.longest("abcz")) == ["abc", "a"]


# -- through the Authorizer: the per-prefix bits each PREFIXED entry derives from its shorter prefixes ---------------

ALICE, HOST, OTHER = "User:alice", "10.0.0.1", "10.0.0.2"


def pre(name: str, op: Op, perm: Perm = Perm.ALLOW, host: str = "*", principal: str = ALICE) -> AclBinding:
    return AclBinding(ResourcePattern(RT.TOPIC, name, Pat.PREFIXED), AccessControlEntry(principal, host, op, perm))


def delete(az: Authorizer, b: AclBinding) -> None:
    p, e = b.pattern, b.entry
    [result] = az.delete_acls([AclBindingFilter(ResourcePatternFilter(p.resource_type, p.name, p.pattern_type),
                                                AccessControlEntryFilter(e.principal, e.host, e.operation, e.permission_type))])
    assert result.deleted == [b]


def test_host_acl_on_a_short_prefix_applies_through_longer_ones() -> None:
    az = Authorizer()
    az.create_acls([pre("pay", Op.READ, host=HOST), pre("payments", Op.WRITE), pre("payments-eu", Op.DESCRIBE, Perm.DENY)])
    assert az.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "payments-eu-1")
    assert not az.authorize(ALICE, OTHER, Op.READ, RT.TOPIC, "payments-eu-1")
    assert az.authorize(ALICE, OTHER, Op.WRITE, RT.TOPIC, "payments-eu-1")
    assert not az.authorize(ALICE, OTHER, Op.DESCRIBE, RT.TOPIC, "payments-eu-1")  # the DENY wins over WRITE's DESCRIBE
    assert az.authorized_operations(ALICE, HOST, RT.TOPIC, "payments-us") == (1 << Op.READ) | (1 << Op.WRITE) | (1 << Op.DESCRIBE)


def test_changes_to_a_short_prefix_reach_the_longer_ones() -> None:
    az = Authorizer()
    short, long = pre("pay", Op.READ), pre("payments", Op.WRITE)
    az.create_acls([long])
    assert not az.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "payments")
    az.create_acls([short])  # added after, and below, an existing longer prefix
    assert az.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "payments")
    az.create_acls([pre("pay", Op.ALL, Perm.DENY, host=HOST)])  # a second ACL on the same short prefix
    assert not az.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "payments")
    assert az.authorize(ALICE, OTHER, Op.WRITE, RT.TOPIC, "payments")
    delete(az, pre("pay", Op.ALL, Perm.DENY, host=HOST))
    assert az.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "payments")
    delete(az, short)  # the longer prefix must stop inheriting READ
    assert not az.authorize(ALICE, HOST, Op.READ, RT.TOPIC, "payments")
    assert az.authorize(ALICE, HOST, Op.WRITE, RT.TOPIC, "payments")


def test_user_wildcard_prefixes_combine_with_the_principals_own() -> None:
    az = Authorizer()
    az.create_acls([pre("t", Op.READ, principal="User:*"), pre("topic", Op.WRITE), pre("topic-a", Op.DELETE, principal="User:*")])
    assert az.authorized_operations(ALICE, HOST, RT.TOPIC, "topic-a1") == sum(1 << op for op in (Op.READ, Op.WRITE, Op.DELETE, Op.DESCRIBE))
    assert az.authorized_operations("User:bob", HOST, RT.TOPIC, "topic-a1") == sum(1 << op for op in (Op.READ, Op.DELETE, Op.DESCRIBE))
