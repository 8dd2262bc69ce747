"""ACL usage: what each ACL of a set did for the traffic of a trace (the audit's ``acl_usage/`` output).

Kafka has no counterpart: Kafka 3.9's StandardAuthorizer only says, per decision, which ACL decided it (its audit
log's ``MatchingAcl(...)`` rule). This module turns the audit's ``actions`` table (one row per distinct question
asked of the authorizer, see tables.py) into one row per ACL of set A, with these columns:

    acl                  the ACL's text key (tables.acl_key)
    resource_type, pattern_type, resource_name, principal, host, operation, permission
    decided_requests     requests this ACL decided under A (sum of ``requests`` of actions whose ``acl_a`` it is)
    decided_actions      distinct actions it decided
    allowed_requests     requests of actions A allowed that this ALLOW would have allowed on its own
    allowed_actions      distinct such actions
    sole_requests        requests of actions A allowed that no other ALLOW of A would have allowed
    used                 it decided or (ALLOW) would have allowed at least one request A allowed
    redundant            an ALLOW that allowed something, and every such action is allowed by another ALLOW too
                         (each one is removable alone; two ACLs covering each other are both flagged)
    shadowed             an ALLOW that a DENY of A always overrides: same principal or User:*, same host or '*',
                         a pattern that covers it and an operation that denies everything it grants; it never decides
    detached             its principal, or its resource name / prefix, never appears in the trace
    unnecessary_idempotent_write
                         a CLUSTER IDEMPOTENT_WRITE ALLOW whose principal may WRITE some topic: since Kafka 2.8
                         (KIP-679) that alone lets an idempotent producer start
    usage_class          one word: shadowed, detached, never_used, unnecessary_idempotent_write, redundant or used
                         (the first that applies, in that order)

``allowed_by(actions, acls)`` gives the other side: the actions table with an ``allowed_by`` column listing, per
action, every ALLOW that on its own would allow it.

Which ACLs would allow an action comes from the authorizer's own index (authorizer/index.py): the session principal's
and ``User:*``'s tables, ``NameTable.matching(name, decision=True)`` (literal name, literal ``*`` unless the name
starts with ``*`` as Kafka 3.9's walk has it, every matching prefix), the host, and ``expand_allow`` for the implied
operations (DESCRIBE by READ/WRITE/DELETE/ALTER, DESCRIBE_CONFIGS by ALTER_CONFIGS, everything by ALL). Actions of
kind ``by_resource_type`` (KIP-679's "may it do this on any resource of the type?") count every ALLOW of the
principal (or User:*) and host on that type with that operation or ALL, as Kafka's authorizeByResourceType reads them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from kafka_shim.authorizer import (
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclOperation,
    AclPermissionType,
    AuditLog,
    Authorizer,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_shim.authorizer.index import AclIndex, Grants, NameTable, expand_allow, expand_deny, wildcard_applies
from kafka_shim.authorizer.model import WILDCARD_HOST
from kafka_shim.traces.audit.tables import KIND_BY_RESOURCE_TYPE, acl_key

USAGE_SCHEMA = pa.schema([
    ("acl", pa.string()), ("resource_type", pa.string()), ("pattern_type", pa.string()), ("resource_name", pa.string()),
    ("principal", pa.string()), ("host", pa.string()), ("operation", pa.string()), ("permission", pa.string()),
    ("decided_requests", pa.int64()), ("decided_actions", pa.int64()),
    ("allowed_requests", pa.int64()), ("allowed_actions", pa.int64()), ("sole_requests", pa.int64()),
    ("used", pa.bool_()), ("redundant", pa.bool_()), ("shadowed", pa.bool_()), ("detached", pa.bool_()),
    ("unnecessary_idempotent_write", pa.bool_()), ("usage_class", pa.string()),
])

USAGE_CLASSES = ("shadowed", "detached", "never_used", "unnecessary_idempotent_write", "redundant", "used")
_ALLOW = AclPermissionType.ALLOW
_DENY = AclPermissionType.DENY


@dataclass(frozen=True, slots=True)
class Action:
    """One row of the ``actions`` table, as plain values."""

    principal: str
    host: str
    operation: AclOperation
    resource_type: ResourceType
    resource_name: str
    requests: int
    allowed_a: bool
    rule_a: str | None
    acl_a: str | None
    kind: str


def actions_of(table: pa.Table) -> Iterator[Action]:
    """The ``actions`` table's rows (unknown operation or type names come out as UNKNOWN, which nothing matches)."""
    n = table.num_rows
    cols = {name: table.column(name).to_pylist() if name in table.column_names else [None] * n
            for name in ("principal", "host", "operation", "resource_type", "resource_name", "requests", "allowed_a",
                         "rule_a", "acl_a", "kind")}
    operations = {text: AclOperation.from_string(text or "") for text in set(cols["operation"])}
    types = {text: ResourceType.from_string(text or "") for text in set(cols["resource_type"])}
    for i in range(n):
        yield Action(
            principal=cols["principal"][i], host=cols["host"][i], operation=operations[cols["operation"][i]],
            resource_type=types[cols["resource_type"][i]], resource_name=cols["resource_name"][i] or "",
            requests=int(cols["requests"][i] or 0), allowed_a=bool(cols["allowed_a"][i]), rule_a=cols["rule_a"][i],
            acl_a=cols["acl_a"][i], kind=cols["kind"][i] or "authorize")


class _Silent:
    """A logger that is off: the audit's own authorizers must not write Kafka audit lines for every question."""

    def is_enabled_for(self, level: int) -> bool:
        return False

    def debug(self, *args: object, **kwargs: object) -> None:
        pass

    info = debug


def quiet_authorizer(acls: Iterable[AclBinding], super_users: Iterable[str] = (),
                     allow_everyone_if_no_acl: bool = False) -> Authorizer:
    """The project's authorizer over ``acls``, with its audit log off."""
    authorizer = Authorizer(super_users=list(super_users), allow_everyone_if_no_acl_found=allow_everyone_if_no_acl,
                            audit=AuditLog(_Silent()))
    authorizer.create_acls(list(acls))
    return authorizer


def _host_matches(acl_host: str, host: str) -> bool:
    return acl_host == WILDCARD_HOST or acl_host == host


def allowing_acls(index: AclIndex, action: Action) -> list[AclBinding]:
    """Every ALLOW of the index that on its own would allow the action (DENYs not considered)."""
    type_index = index.type_index(action.resource_type)
    if type_index is None:
        return []
    op_bit = 1 << action.operation
    principals = [action.principal] if action.principal == WILDCARD_PRINCIPAL else [action.principal, WILDCARD_PRINCIPAL]
    found: list[AclBinding] = []
    for principal in principals:
        table = type_index.principals.get(principal)
        if table is None:
            continue
        if action.kind == KIND_BY_RESOURCE_TYPE:
            entries = _all_entries(table)
            wanted = {action.operation, AclOperation.ALL}
            found += [b for g in entries for b in g.bindings
                      if b.entry.permission_type == _ALLOW and b.entry.operation in wanted
                      and _host_matches(b.entry.host, action.host)]
            continue
        for grants in table.matching(action.resource_name, decision=True):
            found += [b for b in grants.bindings
                      if b.entry.permission_type == _ALLOW and _host_matches(b.entry.host, action.host)
                      and expand_allow(1 << b.entry.operation) & op_bit]
    return found


def _all_entries(table: NameTable) -> list:
    return [*table.literal.values(), *table.prefixed.values()]


def is_shadowed(index: AclIndex, binding: AclBinding) -> bool:
    """Whether a DENY of the index overrides this ALLOW on every name, host and operation it grants."""
    if binding.entry.permission_type != _ALLOW:
        return False
    type_index = index.type_index(binding.pattern.resource_type)
    if type_index is None:
        return False
    e, p = binding.entry, binding.pattern
    granted = expand_allow(1 << e.operation)
    # principals whose DENYs reach every session this ALLOW serves: its own, and User:* (which reaches everyone)
    principals = {e.principal, WILDCARD_PRINCIPAL}
    for principal in principals:
        table = type_index.principals.get(principal)
        if table is None:
            continue
        for grants in table.matching(p.name, decision=True):
            if not _pattern_covers(table, grants, p):
                continue
            for deny in grants.bindings:
                d = deny.entry
                if d.permission_type != _DENY or d.host not in (WILDCARD_HOST, e.host):
                    continue
                if granted & ~expand_deny(1 << d.operation) == 0:  # the DENY takes every operation the ALLOW grants
                    return True
    return False


def _pattern_covers(table: NameTable, grants: Grants, allow: ResourcePattern) -> bool:
    """Whether ``grants`` (an entry that matching(allow.name, decision=True) returned) covers every name ``allow`` does."""
    if allow.pattern_type == PatternType.LITERAL and allow.name == WILDCARD_RESOURCE:
        # The wildcard ALLOW grants every name: only the wildcard DENY covers them all (a PREFIXED '*' DENY covers
        # only the names starting with '*').
        return grants is table.literal.get(WILDCARD_RESOURCE)
    if allow.pattern_type == PatternType.LITERAL:
        return True  # the entry applies to that one name
    if grants is table.literal.get(grants.name):
        # A PREFIXED ALLOW's names: a literal DENY covers one of them, the wildcard all of them (matching has left
        # the wildcard out already for a prefix starting with '*', where Kafka's walk skips it).
        return grants.name == WILDCARD_RESOURCE
    return True  # a PREFIXED DENY whose prefix starts the ALLOW's prefix


def _seen(actions: list[Action]) -> tuple[set[str], dict[ResourceType, set[str]]]:
    principals = {a.principal for a in actions}
    names: dict[ResourceType, set[str]] = defaultdict(set)
    for a in actions:
        if a.kind != KIND_BY_RESOURCE_TYPE:
            names[a.resource_type].add(a.resource_name)
    return principals, names


def _is_detached(binding: AclBinding, principals: set[str], names: dict[ResourceType, set[str]]) -> bool:
    p, e = binding.pattern, binding.entry
    if e.principal != WILDCARD_PRINCIPAL and e.principal not in principals:
        return True
    seen = names.get(p.resource_type, set())
    if p.pattern_type == PatternType.PREFIXED:
        return not any(n.startswith(p.name) for n in seen)
    if p.name == WILDCARD_RESOURCE:
        return not any(wildcard_applies(n) for n in seen)
    return p.name not in seen


def acl_usage(actions: pa.Table, acls: list[AclBinding], super_users: Iterable[str] = (),
              allow_everyone_if_no_acl: bool = False) -> pa.Table:
    """One row per ACL of ``acls`` (columns in the module docstring), in the order given, duplicates once."""
    rows = list(actions_of(actions))
    unique = list(dict.fromkeys(acls))
    authorizer = quiet_authorizer(unique, super_users, allow_everyone_if_no_acl)
    index = authorizer.index
    decided_requests: dict[str, int] = defaultdict(int)
    decided_actions: dict[str, int] = defaultdict(int)
    allowed_requests: dict[AclBinding, int] = defaultdict(int)
    allowed_actions: dict[AclBinding, int] = defaultdict(int)
    sole_requests: dict[AclBinding, int] = defaultdict(int)
    shared_only: dict[AclBinding, bool] = defaultdict(lambda: True)
    for action in rows:
        if action.acl_a:
            decided_requests[action.acl_a] += action.requests
            decided_actions[action.acl_a] += 1
        if not action.allowed_a or action.rule_a == "SuperUser":
            continue
        allowing = list(dict.fromkeys(allowing_acls(index, action)))
        for binding in allowing:
            allowed_requests[binding] += action.requests
            allowed_actions[binding] += 1
            if len(allowing) == 1:
                sole_requests[binding] += action.requests
                shared_only[binding] = False
    principals, names = _seen(rows)
    out: dict[str, list] = {field.name: [] for field in USAGE_SCHEMA}
    for binding in unique:
        key = acl_key(binding)
        p, e = binding.pattern, binding.entry
        is_allow = e.permission_type == _ALLOW
        used = decided_requests[key] > 0 or allowed_requests[binding] > 0
        redundant = is_allow and allowed_actions[binding] > 0 and shared_only[binding]
        shadowed = is_shadowed(index, binding)
        detached = _is_detached(binding, principals, names)
        unnecessary = (is_allow and p.resource_type == ResourceType.CLUSTER
                       and e.operation == AclOperation.IDEMPOTENT_WRITE
                       and authorizer.authorize_by_resource_type(e.principal, e.host, AclOperation.WRITE, ResourceType.TOPIC))
        flags = {"shadowed": shadowed, "detached": detached, "never_used": not used,
                 "unnecessary_idempotent_write": unnecessary, "redundant": redundant, "used": used}
        values = {
            "acl": key, "resource_type": p.resource_type.name, "pattern_type": p.pattern_type.name,
            "resource_name": p.name, "principal": e.principal, "host": e.host, "operation": e.operation.name,
            "permission": e.permission_type.name, "decided_requests": decided_requests[key],
            "decided_actions": decided_actions[key], "allowed_requests": allowed_requests[binding],
            "allowed_actions": allowed_actions[binding], "sole_requests": sole_requests[binding], "used": used,
            "redundant": redundant, "shadowed": shadowed, "detached": detached,
            "unnecessary_idempotent_write": unnecessary,
            "usage_class": next(name for name in USAGE_CLASSES if flags[name]),
        }
        for name, value in values.items():
            out[name].append(value)
    return pa.table(out, schema=USAGE_SCHEMA)


def allowed_by(actions: pa.Table, acls: list[AclBinding], super_users: Iterable[str] = (),
               allow_everyone_if_no_acl: bool = False) -> pa.Table:
    """The ``actions`` table with one more column, ``allowed_by`` (list of acl_key): every ALLOW of ``acls`` that on
    its own would allow the action, DENYs aside (the per-request side of acl_usage; empty for super users' actions)."""
    authorizer = quiet_authorizer(dict.fromkeys(acls), super_users, allow_everyone_if_no_acl)
    keys = [[] if a.rule_a == "SuperUser" else [acl_key(b) for b in dict.fromkeys(allowing_acls(authorizer.index, a))]
            for a in actions_of(actions)]
    return actions.append_column(pa.field("allowed_by", pa.list_(pa.string())), pa.array(keys, pa.list_(pa.string())))
