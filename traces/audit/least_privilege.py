"""Least privilege: the smallest ACL set that allows every action ACL set A allowed in a trace and nothing A denied.

Kafka has no counterpart (``kafka-acls.sh`` only adds and lists ACLs); the decisions it must reproduce are Kafka
3.9's StandardAuthorizer's, checked with the project's authorizer (authorizer/engine.py). Built from the audit's
``actions`` table (tables.py):

1. one literal ALLOW per (principal, host, resource, operation) that A allowed, for the principal of the session
   (a ``User:*`` grant becomes grants for the principals that used it). The host is the host of the ACL that
   decided under A (``acl_a``): a grant A limited to one host stays limited to it; ``*`` stays ``*``. Actions that
   only super users asked need nothing (super.users is configuration, not ACLs).
2. per (principal, host, resource type, operation), literal names merge into one PREFIXED pattern when the prefix
   (the name up to and including a ``.``, ``-`` or ``_``) covers at least ``max_prefix_merge`` names and no name
   that A denied this principal that operation (or one it implies) from that host falls under it. Longer prefixes
   are tried first, so a merge stays as narrow as the names allow.
3. a DESCRIBE grant is dropped where READ, WRITE, DELETE or ALTER on the same pattern grants it already, and a
   DESCRIBE_CONFIGS grant where ALTER_CONFIGS does (Kafka's implied operations), and any grant a merged prefix of
   the same principal and host (or any host) gives already, directly or implied.
4. KIP-679 questions (``kind = by_resource_type``, "may it WRITE some topic?") that A answered yes and the set does
   not yet answer yes get A's ALLOWs that answered them, for that principal and host. Under
   ``allow.everyone.if.no.acl.found`` A may answer such a question through no ACL at all (Kafka first asks about the
   name ``hardcode``; a topic no ACL names is allowed while the question says no): that is logged
   (``least_privilege_unreproducible``), not repeated, and ``verify`` lists it.
5. the set is decided again action by action; where an implied operation (READ's DESCRIBE, say, where A had a
   DENY DESCRIBE) would now allow what A denied, a literal DENY for exactly that action (its host) is added. The set
   then decides every action of the table as A did.
6. a grant asked only as a shortcut whose check is a KIP-679 question (InitProducerId's IDEMPOTENT_WRITE on the
   cluster, for an idempotent producer: ``name_free_fallbacks``) is left out where, without it, the set answers that
   question yes for every host the principal asked from: since Kafka 2.8 WRITE on some topic alone lets such a
   producer start, as acl_usage's ``unnecessary_idempotent_write`` says of A's grant. Those shortcut actions are
   then denied where A allowed them, no request's outcome changes, and ``verify`` accepts exactly that difference.
   (A broker older than 2.8 still needs the grant: an audit of the set with ``--compare-release 2.7`` flags it.)

A resource literally named ``*`` (a group may be; Kafka refuses it as a topic name) cannot be singled out: an ACL
on the literal name ``*`` is the wildcard, so its grant covers every name of the type.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import pyarrow as pa

from kafka_shim.authorizer import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    Authorizer,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_shim.authorizer.api_checks import DECLARATIONS
from kafka_shim.authorizer.index import expand_allow
from kafka_shim.authorizer.library_logging import get_logger
from kafka_shim.authorizer.model import WILDCARD_HOST
from kafka_shim.traces.audit.tables import KIND_BY_RESOURCE_TYPE, KIND_SHORTCUT
from kafka_shim.traces.audit.usage import Action, acl_key, actions_of, quiet_authorizer

DEFAULT_MAX_PREFIX_MERGE = 5  # names a prefix must cover before it replaces them (0 or less: never merge)
PREFIX_ENDS = ".-_"  # where a prefix may end: the separators people build topic and group names from
log = get_logger("kafka_shim.traces.audit.least_privilege")
_IMPLIERS = {AclOperation.DESCRIBE: (AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER),
             AclOperation.DESCRIBE_CONFIGS: (AclOperation.ALTER_CONFIGS,)}


class LeastPrivilegeError(RuntimeError):
    """The set could not be made to decide as A did (a bug: the message names the action)."""


def least_privilege(actions: pa.Table, acls: list[AclBinding], max_prefix_merge: int = DEFAULT_MAX_PREFIX_MERGE,
                    super_users: Iterable[str] = ()) -> list[AclBinding]:
    """The smallest ALLOW set (plus the DENYs step 5 needs) deciding every action as A did; stable order.

    The actions carry A's decisions, whatever ``allow.everyone.if.no.acl.found`` A ran with; the set returned is
    for a broker with it false (Kafka's default: least privilege is the opposite of allowing what no ACL names).
    """
    rows = [a for a in actions_of(actions) if a.rule_a != "SuperUser" and not a.resource_type.is_unknown
            and not a.operation.is_unknown]
    by_key = {acl_key(b): b for b in acls}
    grants: dict[tuple[str, str, ResourceType, AclOperation], set[str]] = defaultdict(set)
    for a in rows:
        if a.allowed_a and a.kind != KIND_BY_RESOURCE_TYPE:
            grants[(a.principal, _grant_host(a, by_key), a.resource_type, a.operation)].add(a.resource_name)
    denied = _denied_names(rows)
    patterns: dict[tuple[str, str, ResourceType, PatternType, str], set[AclOperation]] = defaultdict(set)
    for (principal, host, rtype, op), names in grants.items():
        for pattern_type, name in _merge(names, denied.get((principal, rtype), []), host, op, max_prefix_merge):
            patterns[(principal, host, rtype, pattern_type, name)].add(op)
    result = [_allow(principal, host, rtype, pattern_type, name, op)
              for (principal, host, rtype, pattern_type, name), ops in sorted(patterns.items(), key=_order)
              for op in sorted(_without_implied(ops))]
    settled = _settle(rows, _without_covered(result), acls, super_users)
    return _without_unneeded_shortcuts(rows, settled, super_users)


def verify(actions: pa.Table, bindings: list[AclBinding], super_users: Iterable[str] = (),
           allow_everyone_if_no_acl: bool = False) -> list[Action]:
    """The actions ``bindings`` decides differently from A (empty when it reproduces A); super users' are skipped
    (super.users is configuration, kept as it is), and so is a shortcut the set makes unneeded (step 6)."""
    authorizer = quiet_authorizer(bindings, super_users, allow_everyone_if_no_acl)
    fallbacks = name_free_fallbacks()
    return [a for a in actions_of(actions) if not a.resource_type.is_unknown and not a.operation.is_unknown
            and a.rule_a != "SuperUser" and _decide(authorizer, a) != a.allowed_a
            and not _fallback_allows(authorizer, a, fallbacks)]


def name_free_fallbacks() -> dict[tuple[AclOperation, ResourceType], tuple[AclOperation, ResourceType]]:
    """Shortcuts whose check is a KIP-679 question ("allowed on some resource of the type?", no names), by the
    shortcut's (operation, resource type): denied, the request still passes where that question is answered yes.
    Read from the API checks' declarations; a shortcut that any other check also has is left out, and so is one on
    the same resource type as its question (a grant for the shortcut could then answer the question itself)."""
    found: dict[tuple[AclOperation, ResourceType], tuple[AclOperation, ResourceType]] = {}
    others = set()
    for api in DECLARATIONS.values():
        for check in api.checks:
            if check.shortcut is None:
                continue
            key = (check.shortcut.operation, check.shortcut.resource_type)
            if check.any_resource and check.resource_type != check.shortcut.resource_type:
                found[key] = (check.operation, check.resource_type)
            else:
                others.add(key)
    return {key: fallback for key, fallback in found.items() if key not in others}


def _fallback_allows(authorizer: Authorizer, a: Action,
                     fallbacks: dict[tuple[AclOperation, ResourceType], tuple[AclOperation, ResourceType]]) -> bool:
    """Whether ``a``, a shortcut A allowed, is unneeded under the authorizer's set: its check's KIP-679 question is
    answered yes for the same principal and host (step 6)."""
    fallback = fallbacks.get((a.operation, a.resource_type)) if a.kind == KIND_SHORTCUT and a.allowed_a else None
    return fallback is not None and authorizer.authorize_by_resource_type(a.principal, a.host, *fallback)


def _without_unneeded_shortcuts(rows: list[Action], bindings: list[AclBinding],
                                super_users: Iterable[str]) -> list[AclBinding]:
    """Step 6: leave out each ALLOW that only answers shortcuts the rest of the set makes unneeded. Such a grant is on
    another resource type than the KIP-679 question its shortcut stands in for (``name_free_fallbacks``): the set
    answers that question the same with or without it, so one authorizer of the whole set decides every grant."""
    fallbacks = name_free_fallbacks()
    asked = [a for a in rows if a.allowed_a and (a.operation, a.resource_type) in fallbacks]
    if not asked:
        return bindings
    authorizer = quiet_authorizer(bindings, list(super_users))
    kept = []
    for binding in bindings:
        e, p = binding.entry, binding.pattern
        if e.permission_type == AclPermissionType.ALLOW and (e.operation, p.resource_type) in fallbacks:
            served = [a for a in asked if a.principal == e.principal and a.operation == e.operation
                      and a.resource_type == p.resource_type and e.host in (WILDCARD_HOST, a.host)]
            if (served and all(a.kind == KIND_SHORTCUT for a in served)
                    and all(_fallback_allows(authorizer, a, fallbacks) for a in served)):
                continue
        kept.append(binding)
    return kept


def _order(item: tuple) -> tuple:
    (principal, host, rtype, pattern_type, name), _ops = item
    return principal, int(rtype), name, int(pattern_type), host


def _grant_host(action: Action, by_key: dict[str, AclBinding]) -> str:
    binding = by_key.get(action.acl_a or "")
    return action.host if binding is not None and binding.entry.host != WILDCARD_HOST else WILDCARD_HOST


def _denied_names(rows: list[Action]) -> dict[tuple[str, ResourceType], list[tuple[str, str, AclOperation]]]:
    denied: dict[tuple[str, ResourceType], list[tuple[str, str, AclOperation]]] = defaultdict(list)
    for a in rows:
        if not a.allowed_a and a.kind != KIND_BY_RESOURCE_TYPE:
            denied[(a.principal, a.resource_type)].append((a.resource_name, a.host, a.operation))
    return denied


def _merge(names: set[str], denied: list[tuple[str, str, AclOperation]], host: str, op: AclOperation,
           bound: int) -> list[tuple[PatternType, str]]:
    """The names as (pattern type, name): literals, and prefixes covering ``bound`` or more of them."""
    granted = expand_allow(1 << op)
    blocked = [name for name, denied_host, denied_op in denied
               if granted & (1 << denied_op) and (host == WILDCARD_HOST or host == denied_host)]
    left = set(names)
    merged: list[tuple[PatternType, str]] = []
    if bound > 0 and len(names) >= bound:
        counts: dict[str, int] = defaultdict(int)
        for name in names:
            for i, ch in enumerate(name[:-1]):
                if ch in PREFIX_ENDS:
                    counts[name[: i + 1]] += 1
        for prefix in sorted(counts, key=lambda p: (-len(p), p)):
            covered = {n for n in left if n.startswith(prefix)}
            if len(covered) >= bound and not any(n.startswith(prefix) for n in blocked):
                merged.append((PatternType.PREFIXED, prefix))
                left -= covered
    return merged + [(PatternType.LITERAL, name) for name in sorted(left)]


def _without_implied(ops: set[AclOperation]) -> set[AclOperation]:
    return {op for op in ops if not any(i in ops for i in _IMPLIERS.get(op, ()))}


def _without_covered(bindings: list[AclBinding]) -> list[AclBinding]:
    """Drop grants another grant of the set already gives: a literal (or longer prefix) under a merged prefix of the
    same principal with the same operation, or one it implies, from the same host or any host."""
    prefixes: dict[tuple[str, ResourceType], list[AclBinding]] = defaultdict(list)
    for b in bindings:
        if b.pattern.pattern_type == PatternType.PREFIXED:
            prefixes[(b.entry.principal, b.pattern.resource_type)].append(b)

    def covered(b: AclBinding) -> bool:
        for other in prefixes.get((b.entry.principal, b.pattern.resource_type), ()):
            if (other is not b and b.pattern.name.startswith(other.pattern.name)
                    and other.entry.host in (WILDCARD_HOST, b.entry.host)
                    and expand_allow(1 << other.entry.operation) & (1 << b.entry.operation)
                    and not (b.pattern.pattern_type == PatternType.PREFIXED and b.pattern.name == other.pattern.name
                             and b.entry.operation == other.entry.operation)):
                return True
        return False

    return [b for b in bindings if not covered(b)]


def _allow(principal: str, host: str, rtype: ResourceType, pattern_type: PatternType, name: str,
           op: AclOperation, permission: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern_type), AccessControlEntry(principal, host, op, permission))


def _decide(authorizer: Authorizer, a: Action) -> bool:
    if a.kind == KIND_BY_RESOURCE_TYPE:
        return authorizer.authorize_by_resource_type(a.principal, a.host, a.operation, a.resource_type)
    return authorizer.authorize(a.principal, a.host, a.operation, a.resource_type, a.resource_name)


def _settle(rows: list[Action], result: list[AclBinding], acls: list[AclBinding],
            super_users: Iterable[str]) -> list[AclBinding]:
    """Steps 4 and 5: add A's grants for KIP-679 questions, DENYs for what implication would open, and check."""
    super_users = list(super_users)
    authorizer = quiet_authorizer(result, super_users)
    result += _deny_what_opened(rows, authorizer)
    # KIP-679 questions: A's grants for the principal and host, one at a time, each followed by the DENYs for what it
    # opened (a DENY on the granted name can take the answer back, so the next grant is tried then).
    for a in rows:
        if a.kind != KIND_BY_RESOURCE_TYPE or not a.allowed_a or _decide(authorizer, a):
            continue
        for binding in _type_grants(acls, a):
            authorizer.create_acls([binding])
            result.append(binding)
            result += _deny_what_opened(rows, authorizer)
            if _decide(authorizer, a):
                break
    for a in rows:
        if _decide(authorizer, a) == a.allowed_a:
            continue
        if a.kind == KIND_BY_RESOURCE_TYPE:
            # Every grant of A's that could answer it was tried above: A answered it through
            # allow.everyone.if.no.acl.found (its WRITE grants all DENYed, or none).
            log.warning("least_privilege_unreproducible", principal=a.principal, host=a.host,
                        operation=a.operation.name, resource_type=a.resource_type.name, allowed_under_a=a.allowed_a,
                        reason="A answered this KIP-679 question through allow.everyone.if.no.acl.found (no ACL "
                               "decided it), which a set for allow.everyone.if.no.acl.found=false cannot repeat; "
                               "check the producers of this principal with the what-if against the set")
        else:
            raise LeastPrivilegeError(
                f"the least-privilege set decides {a.principal} {a.operation.name} on {a.resource_type.name} "
                f"{a.resource_name!r} from {a.host} differently from A; please report it with the ACL set")
    return list(dict.fromkeys(result))


def _deny_what_opened(rows: list[Action], authorizer: Authorizer) -> list[AclBinding]:
    """Literal DENYs (created in the authorizer too) for every action A denied that the set now allows."""
    denies = [_allow(a.principal, a.host, a.resource_type, PatternType.LITERAL, a.resource_name, a.operation,
                     AclPermissionType.DENY)
              for a in rows if not a.allowed_a and a.kind != KIND_BY_RESOURCE_TYPE and _decide(authorizer, a)]
    if denies:
        authorizer.create_acls(denies)
    return denies


def _type_grants(acls: list[AclBinding], a: Action) -> list[AclBinding]:
    """A's ALLOWs that could answer a KIP-679 question yes, for the session principal and host alone (a User:* or
    any-host grant copied as it is would answer yes where A said no)."""
    wanted = {a.operation, AclOperation.ALL}
    found = [b for b in acls if b.pattern.resource_type == a.resource_type and b.entry.operation in wanted
             and b.entry.permission_type == AclPermissionType.ALLOW and b.entry.principal in (a.principal, "User:*")
             and b.entry.host in (WILDCARD_HOST, a.host)]
    found.sort(key=lambda b: b.entry.principal != a.principal)
    return list(dict.fromkeys(
        AclBinding(b.pattern, AccessControlEntry(a.principal, a.host, b.entry.operation, AclPermissionType.ALLOW))
        for b in found))
