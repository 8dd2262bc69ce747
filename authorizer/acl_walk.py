"""Kafka 3.9's own ACL walk, for ACLs whose principal has no colon.

Kafka 3.9 stores an ACL whose principal is ``alice`` or ``""`` (CreateAcls checks no principal before KAFKA-18051),
but cannot evaluate it: StandardAcl.kafkaPrincipal throws IllegalStateException when an authorization reaches such
an ACL, and the default Authorizer.authorizeByResourceType (KIP-679) throws IllegalArgumentException from
SecurityUtils.parseKafkaPrincipal. The exception escapes the API handler and the whole request gets its error
answer with UNKNOWN_SERVER_ERROR, which is what a client of a real 3.9 broker sees.

Whether a decision reaches such an ACL depends on the order Kafka visits ACLs in: a matching DENY met first ends the
walk before it. So while a resource type holds one of them, its ACLs are kept here in Kafka's order
(StandardAcl.compareTo: resource name reversed, then pattern type, operation, principal, host, permission; strings by
UTF-16 code unit) and each decision on that type replays Kafka's walk (StandardAuthorizerData.checkSection) to see
whether it throws. The decision itself still comes from the index; the walk only decides whether there is one.
Without such ACLs (always, in practice) nothing here runs.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections.abc import Iterable

from kafka_shim.authorizer.index import expand_allow, expand_deny
from kafka_shim.authorizer.model import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
)

_LITERAL = int(PatternType.LITERAL)
_ALL = int(AclOperation.ALL)
_ALLOW = int(AclPermissionType.ALLOW)
_DENY = int(AclPermissionType.DENY)
_END = 0x10000  # sorts after every inverted code unit: a name sorts after the longer names it starts


class UnparseableAclPrincipal(RuntimeError):
    """An authorization reached a stored ACL whose principal Kafka cannot parse; Kafka fails the whole request."""

    def __init__(self, binding: AclBinding, *, by_resource_type: bool = False) -> None:
        principal = binding.entry.principal
        if by_resource_type:  # SecurityUtils.parseKafkaPrincipal's message
            message = f"expected a string in format principalType:principalName but got {principal}"
        else:  # StandardAcl.kafkaPrincipal's message
            message = (f"Could not parse principal from `{principal}` (no colon is present separating the principal type "
                       "from the principal name)")
        super().__init__(message)
        self.binding = binding


def unparseable(principal: str) -> bool:
    """Whether Kafka's authorizer fails on an ACL with this principal (no colon; the empty string has none)."""
    return ":" not in principal


_NATIVE_UTF16 = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"


def _units(text: str) -> tuple[int, ...]:
    """UTF-16 code units: Java compares and indexes strings by them."""
    # native byte order, so memoryview reads the units without a Python step per unit (the audit asks this per
    # matching ACL of every new action)
    return tuple(memoryview(text.encode(_NATIVE_UTF16, "surrogatepass")).cast("H"))


def _reversed_name(units: tuple[int, ...]) -> tuple[int, ...]:
    return (*(0xFFFF - u for u in units), _END)


_WILDCARD_UNITS = _units(WILDCARD_RESOURCE)


class KafkaOrder:
    """One resource type's ACLs in Kafka's aclsByResource order, with the walks that visit them."""

    def __init__(self, bindings: Iterable[AclBinding]) -> None:
        rows = []
        for b in bindings:
            p, e = b.pattern, b.entry
            units = _units(p.name)
            key = (_reversed_name(units), int(p.pattern_type), int(e.operation), e.principal.encode("utf-16-be", "surrogatepass"),
                   e.host.encode("utf-16-be", "surrogatepass"), int(e.permission_type))
            rows.append((key, units, b))
        rows.sort(key=lambda row: row[0])
        self._keys = [row[0] for row in rows]
        self._rows = [(units, b) for _, units, b in rows]

    def _start(self, name_units: tuple[int, ...], pattern_type: int) -> int:
        # The exemplar Kafka seeks to: that name, then the smallest pattern type, operation, principal, host, permission.
        return bisect_left(self._keys, (_reversed_name(name_units), pattern_type, 0, b"", b"", 0))

    def check(self, principal: str, host: str, operation: int, name: str) -> None:
        """Replay StandardAuthorizerData.authorize's walk for one action; raise where Kafka would throw."""
        name_units = _units(name)
        if self._section(principal, host, operation, name_units, name_units, 0, wildcard_section=False):
            return  # a matching DENY ended the walk before the wildcard section
        self._section(principal, host, operation, name_units, _WILDCARD_UNITS, _LITERAL, wildcard_section=True)

    def _section(self, principal: str, host: str, operation: int, name_units: tuple[int, ...], exemplar: tuple[int, ...],
                 pattern_type: int, *, wildcard_section: bool) -> bool:
        """checkSection: True when it ended on a matching DENY."""
        rows, i = self._rows, self._start(exemplar, pattern_type)
        while i < len(rows):
            units, binding = rows[i]
            i += 1
            common = _matches_up_to(name_units, units)
            if common == len(units):
                if binding.pattern.pattern_type == PatternType.LITERAL and common != len(name_units):
                    continue  # a literal ACL on a prefix of the name: not applicable, keep looking for prefixed ones
            elif not (units == _WILDCARD_UNITS and binding.pattern.pattern_type == PatternType.LITERAL):
                if wildcard_section:
                    # Kafka re-seeks from a substring of "*" here, which ends the section (it finds nothing left to
                    # visit), loops, or throws StringIndexOutOfBounds for names below "*" in code-unit order, which no
                    # topic name is. Ending the section is the first case; the others are not reproduced.
                    return False
                exemplar = exemplar[:common]
                i = self._start(exemplar, pattern_type)
                continue
            if _result(binding, principal, host, operation) == _DENY:
                return True
        return False

    def check_by_resource_type(self, principal: str, host: str, operation: int) -> None:
        """Replay Authorizer.authorizeByResourceType's scan (after its "hardcode" probe); raise where Kafka would throw."""
        for _, binding in self._rows:
            e = binding.entry
            if e.host != host and e.host != WILDCARD_HOST:
                continue
            if unparseable(e.principal):
                raise UnparseableAclPrincipal(binding, by_resource_type=True)
            if e.principal != principal and e.principal != WILDCARD_PRINCIPAL:
                continue
            if int(e.operation) != operation and int(e.operation) != _ALL:
                continue
            if (e.permission_type == AclPermissionType.DENY and binding.pattern.pattern_type == PatternType.LITERAL
                    and binding.pattern.name == WILDCARD_RESOURCE):
                return  # Kafka answers DENIED here, before it reads any other ACL


def walk_position(binding: AclBinding, name: str, *, deny: bool) -> tuple:
    """Where Kafka's walk for ``name`` visits this applicable ACL, as a sort key: the section of the name and its
    prefixes in aclsByResource order, then the LITERAL '*' section. Kafka reports the first matching DENY it meets
    and, without one, the LAST matching ALLOW (MatchingRuleBuilder keeps overwriting allowAcl), so the deciding ACL
    is the min (DENY) or max (ALLOW) of this key over the ACLs that match. For the name '*' itself the literal '*'
    ACLs are met in both sections: first in the name's (where a DENY ends the walk) and last in the wildcard's."""
    p, e = binding.pattern, binding.entry
    wildcard = p.pattern_type == PatternType.LITERAL and p.name == WILDCARD_RESOURCE
    section = 1 if wildcard and (not deny or name != WILDCARD_RESOURCE) else 0
    return (section, _reversed_name(_units(p.name)), int(p.pattern_type), int(e.operation),
            e.principal.encode("utf-16-be", "surrogatepass"), e.host.encode("utf-16-be", "surrogatepass"),
            int(e.permission_type))


def _matches_up_to(name: tuple[int, ...], pattern: tuple[int, ...]) -> int:
    n = min(len(name), len(pattern))
    i = 0
    while i < n and name[i] == pattern[i]:
        i += 1
    return i


def _result(binding: AclBinding, principal: str, host: str, operation: int) -> int | None:
    """StandardAuthorizerData.findResult: ALLOW, DENY or None (the ACL does not match); raises as Kafka does."""
    e = binding.entry
    if unparseable(e.principal):
        raise UnparseableAclPrincipal(binding)
    # A parsed principal equals the session's exactly when the strings are equal (type, then name after the first ':').
    if e.principal != principal and e.principal != WILDCARD_PRINCIPAL:
        return None
    if e.host != WILDCARD_HOST and e.host != host:
        return None
    # The implied operations (ALLOW READ grants DESCRIBE...; ALL matches all) are the index's, as findResult has them.
    allow = e.permission_type == AclPermissionType.ALLOW
    granted = expand_allow(1 << e.operation) if allow else expand_deny(1 << e.operation)
    if not granted & (1 << operation):
        return None
    return _ALLOW if allow else _DENY
