"""The ACL index: decisions cost the same with 1k ACLs or 1M.

Per resource type, ACLs live in buckets keyed by their exact name (one map for
LITERAL, one for PREFIXED), and inside a bucket by principal string. A decision
looks up the literal name, the literal ``*`` and each prefix of the name whose
length some PREFIXED ACL has, then only the session principal's and ``User:*``'s
entries there. Nothing scans ACLs on unrelated resources or principals.

For authorize_by_resource_type, each (resource type, principal, host, operation)
keeps a summary of the names it allows and denies, so "any topic?" is answered
from the few ACLs that could matter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from authorizer.model import (
    WILDCARD_RESOURCE,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

ALLOW = int(AclPermissionType.ALLOW)
DENY = int(AclPermissionType.DENY)


@dataclass(slots=True)
class Rule:
    """One stored ACL, flattened for the hot path."""

    host: str
    operation: int
    permission: int
    binding: AclBinding


_DESCRIBE_IMPLIERS = (1 << AclOperation.READ) | (1 << AclOperation.WRITE) | (1 << AclOperation.DELETE) | (1 << AclOperation.ALTER)
_ALL_BIT = 1 << AclOperation.ALL


def expand_allow(bits: int) -> int:
    """Operation bits an ALLOW of ``bits`` grants: ALL grants everything; some grant DESCRIBE(_CONFIGS) too."""
    if bits & _ALL_BIT:
        return -1
    if bits & _DESCRIBE_IMPLIERS:
        bits |= 1 << AclOperation.DESCRIBE
    if bits & (1 << AclOperation.ALTER_CONFIGS):
        bits |= 1 << AclOperation.DESCRIBE_CONFIGS
    return bits


def expand_deny(bits: int) -> int:
    """A DENY implies nothing, except that DENY ALL denies every operation."""
    return -1 if bits & _ALL_BIT else bits


class HostGrants:
    """One principal's ACLs on one bucket from one host, as operation bits (with counts, for removal)."""

    __slots__ = ("allow", "allow_counts", "deny", "deny_counts")

    def __init__(self) -> None:
        self.allow = 0  # expanded: the operations these ALLOWs grant
        self.deny = 0  # expanded: the operations these DENYs deny
        self.allow_counts: dict[int, int] = {}
        self.deny_counts: dict[int, int] = {}

    def change(self, operation: int, permission: int, delta: int) -> None:
        counts = self.deny_counts if permission == DENY else self.allow_counts
        count = counts.get(operation, 0) + delta
        if count:
            counts[operation] = count
        else:
            counts.pop(operation, None)
        raw = 0
        for op in counts:
            raw |= 1 << op
        if permission == DENY:
            self.deny = expand_deny(raw)
        else:
            self.allow = expand_allow(raw)

    def empty(self) -> bool:
        return not self.allow_counts and not self.deny_counts


class NameTable:
    """Values keyed by an ACL's (pattern type, name), found again from a concrete resource name."""

    __slots__ = ("lengths", "literal", "prefix_lengths", "prefixed")

    def __init__(self) -> None:
        self.literal: dict[str, Any] = {}
        self.prefixed: dict[str, Any] = {}
        self.prefix_lengths: dict[int, int] = {}  # length -> number of PREFIXED keys of that length
        self.lengths: list[int] = []  # the lengths above, ascending: a lookup probes only these

    def __bool__(self) -> bool:
        return bool(self.literal or self.prefixed)

    def get(self, pattern_type: PatternType, name: str) -> Any:
        return (self.literal if pattern_type == PatternType.LITERAL else self.prefixed).get(name)

    def setdefault(self, pattern_type: PatternType, name: str, factory: Callable[[], Any]) -> Any:
        table = self.literal if pattern_type == PatternType.LITERAL else self.prefixed
        value = table.get(name)
        if value is None:
            value = table[name] = factory()
            if table is self.prefixed:
                count = self.prefix_lengths.get(len(name), 0) + 1
                self.prefix_lengths[len(name)] = count
                if count == 1:
                    self.lengths = sorted(self.prefix_lengths)
        return value

    def pop(self, pattern_type: PatternType, name: str) -> None:
        if pattern_type == PatternType.LITERAL:
            del self.literal[name]
            return
        del self.prefixed[name]
        self.prefix_lengths[len(name)] -= 1
        if not self.prefix_lengths[len(name)]:
            del self.prefix_lengths[len(name)]
            self.lengths = sorted(self.prefix_lengths)

    def matching(self, name: str) -> list[Any]:
        """The values of every ACL that applies to a concrete name: itself, literal '*', its prefixes."""
        found = []
        literal = self.literal
        value = literal.get(name)
        if value is not None:
            found.append(value)
        if name != WILDCARD_RESOURCE:
            value = literal.get(WILDCARD_RESOURCE)
            if value is not None:
                found.append(value)
        if self.lengths:
            prefixed = self.prefixed
            size = len(name)
            for length in self.lengths:
                if length > size:
                    break
                value = prefixed.get(name[:length])
                if value is not None:
                    found.append(value)
        return found

    def any_matching(self, name: str) -> bool:
        literal = self.literal
        if name in literal or WILDCARD_RESOURCE in literal:
            return True
        prefixed = self.prefixed
        size = len(name)
        for length in self.lengths:
            if length > size:
                break
            if name[:length] in prefixed:
                return True
        return False


class Grants:
    """One principal's ACLs on one exact pattern: the rules and their operation bits per host.

    Host ``*`` (most ACLs) has its bits right here; only specific hosts go through a dict.
    """

    __slots__ = ("any_host", "hosts", "rules")

    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self.any_host = HostGrants()
        self.hosts: dict[str, HostGrants] = {}

    def host(self, host: str, create: bool = False) -> HostGrants | None:
        if host == WILDCARD_RESOURCE:  # the same "*" as ACL hosts use
            return self.any_host
        grants = self.hosts.get(host)
        if grants is None and create:
            grants = self.hosts[host] = HostGrants()
        return grants


@dataclass(slots=True)
class Summary:
    """What one (principal, host, operation) may do on one resource type, for the KIP-679 question."""

    wildcard_allow: int = 0
    wildcard_deny: int = 0
    # name (or prefix length) -> how many ACLs; plain dicts, as Counter's missing-key path is slow
    allow_literal: dict[str, int] = field(default_factory=dict)
    allow_prefix: dict[str, int] = field(default_factory=dict)
    deny_literal: dict[str, int] = field(default_factory=dict)
    deny_prefix: dict[str, int] = field(default_factory=dict)
    deny_prefix_lengths: dict[int, int] = field(default_factory=dict)

    def empty(self) -> bool:
        return not (self.wildcard_allow or self.wildcard_deny or self.allow_literal or self.allow_prefix
                    or self.deny_literal or self.deny_prefix)


class TypeIndex:
    """All ACLs of one resource type.

    ``patterns`` holds every binding by its exact pattern (for DescribeAcls, and for "does any ACL at all
    apply here", which decides DefaultAllow); ``principals`` holds, per principal string, that principal's
    grants by pattern, so a decision only visits ACLs of the session principal and of ``User:*``.
    """

    __slots__ = ("patterns", "principals", "summaries")

    def __init__(self) -> None:
        self.patterns = NameTable()  # values: dict[AclBinding, None]
        self.principals: dict[str, NameTable] = {}  # values: Grants
        self.summaries: dict[tuple[str, str, int], Summary] = {}

    def add(self, binding: AclBinding) -> None:
        p, e = binding.pattern, binding.entry
        self.patterns.setdefault(p.pattern_type, p.name, dict)[binding] = None
        table = self.principals.get(e.principal)
        if table is None:
            table = self.principals[e.principal] = NameTable()
        grants = table.setdefault(p.pattern_type, p.name, Grants)
        rule = Rule(e.host, int(e.operation), int(e.permission_type), binding)
        grants.rules.append(rule)
        grants.host(e.host, create=True).change(rule.operation, rule.permission, +1)
        self._summarise(binding, +1)

    def remove(self, binding: AclBinding) -> None:
        p, e = binding.pattern, binding.entry
        bindings = self.patterns.get(p.pattern_type, p.name)
        del bindings[binding]
        if not bindings:
            self.patterns.pop(p.pattern_type, p.name)
        table = self.principals[e.principal]
        grants = table.get(p.pattern_type, p.name)
        grants.rules = [r for r in grants.rules if r.binding != binding]
        host = grants.host(e.host)
        host.change(int(e.operation), int(e.permission_type), -1)
        if host.empty() and host is not grants.any_host:
            del grants.hosts[e.host]
        if not grants.rules:
            table.pop(p.pattern_type, p.name)
            if not table:
                del self.principals[e.principal]
        self._summarise(binding, -1)

    def bindings_matching(self, name: str) -> list[AclBinding]:
        return [b for bindings in self.patterns.matching(name) for b in bindings]

    def bindings_at(self, pattern_type: PatternType, name: str) -> list[AclBinding]:
        return list(self.patterns.get(pattern_type, name) or ())

    def _summarise(self, binding: AclBinding, delta: int) -> None:
        p, e = binding.pattern, binding.entry
        key = (e.principal, e.host, int(e.operation))
        summary = self.summaries.get(key)
        if summary is None:
            summary = self.summaries[key] = Summary()
        literal = p.pattern_type == PatternType.LITERAL
        if e.permission_type == AclPermissionType.DENY:
            if literal and p.name == WILDCARD_RESOURCE:
                summary.wildcard_deny += delta
            elif literal:
                _bump(summary.deny_literal, p.name, delta)
            else:
                _bump(summary.deny_prefix, p.name, delta)
                _bump(summary.deny_prefix_lengths, len(p.name), delta)
        elif literal and p.name == WILDCARD_RESOURCE:
            summary.wildcard_allow += delta
        elif literal:
            _bump(summary.allow_literal, p.name, delta)
        else:
            _bump(summary.allow_prefix, p.name, delta)
        if summary.empty():
            del self.summaries[key]


def _bump(counter: dict, key: object, delta: int) -> None:
    value = counter.get(key, 0) + delta
    if value:
        counter[key] = value
    else:
        del counter[key]


class AclIndex:
    """Every stored ACL, by resource type; also the set of bindings (Kafka stores ACLs as a set)."""

    def __init__(self) -> None:
        self.by_type: dict[ResourceType, TypeIndex] = {}
        self.bindings: set[AclBinding] = set()

    def __len__(self) -> int:
        return len(self.bindings)

    def __contains__(self, binding: AclBinding) -> bool:
        return binding in self.bindings

    def add(self, binding: AclBinding) -> bool:
        if binding in self.bindings:
            return False
        self.bindings.add(binding)
        index = self.by_type.get(binding.pattern.resource_type)
        if index is None:
            index = self.by_type[binding.pattern.resource_type] = TypeIndex()
        index.add(binding)
        return True

    def remove(self, binding: AclBinding) -> bool:
        if binding not in self.bindings:
            return False
        self.bindings.discard(binding)
        self.by_type[binding.pattern.resource_type].remove(binding)
        return True

    def type_index(self, resource_type: ResourceType) -> TypeIndex | None:
        return self.by_type.get(resource_type)
