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

from collections import Counter
from dataclasses import dataclass, field

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


class Grants:
    """One principal's ACLs in one bucket: the rules themselves and their bits per host."""

    __slots__ = ("hosts", "rules")

    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self.hosts: dict[str, HostGrants] = {}


class Bucket:
    """The ACLs on one exact (type, pattern type, name), by principal string."""

    __slots__ = ("by_principal", "count")

    def __init__(self) -> None:
        self.by_principal: dict[str, Grants] = {}
        self.count = 0


@dataclass(slots=True)
class Summary:
    """What one (principal, host, operation) may do on one resource type, for the KIP-679 question."""

    wildcard_allow: int = 0
    wildcard_deny: int = 0
    allow_literal: Counter = field(default_factory=Counter)
    allow_prefix: Counter = field(default_factory=Counter)
    deny_literal: Counter = field(default_factory=Counter)
    deny_prefix: Counter = field(default_factory=Counter)
    deny_prefix_lengths: Counter = field(default_factory=Counter)

    def empty(self) -> bool:
        return not (self.wildcard_allow or self.wildcard_deny or self.allow_literal or self.allow_prefix
                    or self.deny_literal or self.deny_prefix)


class TypeIndex:
    """All ACLs of one resource type."""

    __slots__ = ("lengths", "literal", "prefix_lengths", "prefixed", "summaries")

    def __init__(self) -> None:
        self.literal: dict[str, Bucket] = {}
        self.prefixed: dict[str, Bucket] = {}
        self.prefix_lengths: Counter = Counter()  # length -> number of PREFIXED buckets of that length
        self.lengths: list[int] = []  # the lengths above, ascending: a decision probes only these
        self.summaries: dict[tuple[str, str, int], Summary] = {}

    def buckets_for(self, name: str) -> list[Bucket]:
        """The buckets whose ACLs apply to a concrete resource name."""
        found = []
        literal = self.literal
        bucket = literal.get(name)
        if bucket is not None:
            found.append(bucket)
        if name != WILDCARD_RESOURCE:
            bucket = literal.get(WILDCARD_RESOURCE)
            if bucket is not None:
                found.append(bucket)
        if self.lengths:
            prefixed = self.prefixed
            size = len(name)
            for length in self.lengths:
                if length > size:
                    break
                bucket = prefixed.get(name[:length])
                if bucket is not None:
                    found.append(bucket)
        return found

    def add(self, binding: AclBinding) -> Rule:
        p, e = binding.pattern, binding.entry
        table = self.literal if p.pattern_type == PatternType.LITERAL else self.prefixed
        bucket = table.get(p.name)
        if bucket is None:
            bucket = table[p.name] = Bucket()
            if table is self.prefixed:
                self.prefix_lengths[len(p.name)] += 1
                if self.prefix_lengths[len(p.name)] == 1:
                    self.lengths = sorted(self.prefix_lengths)
        rule = Rule(e.host, int(e.operation), int(e.permission_type), binding)
        grants = bucket.by_principal.get(e.principal)
        if grants is None:
            grants = bucket.by_principal[e.principal] = Grants()
        grants.rules.append(rule)
        host = grants.hosts.get(e.host)
        if host is None:
            host = grants.hosts[e.host] = HostGrants()
        host.change(rule.operation, rule.permission, +1)
        bucket.count += 1
        self._summarise(binding, +1)
        return rule

    def remove(self, binding: AclBinding) -> None:
        p, e = binding.pattern, binding.entry
        table = self.literal if p.pattern_type == PatternType.LITERAL else self.prefixed
        bucket = table[p.name]
        grants = bucket.by_principal[e.principal]
        rules = grants.rules
        for i, rule in enumerate(rules):
            if rule.binding == binding:
                del rules[i]
                break
        host = grants.hosts[e.host]
        host.change(int(e.operation), int(e.permission_type), -1)
        if host.empty():
            del grants.hosts[e.host]
        if not rules:
            del bucket.by_principal[e.principal]
        bucket.count -= 1
        if bucket.count == 0:
            del table[p.name]
            if table is self.prefixed:
                self.prefix_lengths[len(p.name)] -= 1
                if not self.prefix_lengths[len(p.name)]:
                    del self.prefix_lengths[len(p.name)]
                    self.lengths = sorted(self.prefix_lengths)
        self._summarise(binding, -1)

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


def _bump(counter: Counter, key: object, delta: int) -> None:
    value = counter[key] + delta
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
