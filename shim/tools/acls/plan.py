"""What the flags mean: AclCommand's getResourceFilter, getAcl, getResourceFilterToAcls and getResourceToAcls."""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from kafka_shim.authorizer import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka_shim.shim.tools.acls.errors import CommandError, UsageError

CLUSTER_FILTER = ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)
ANY_ENTRY = AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY)
WILDCARD_HOST = "*"

# AclCommand's "only supports operations" lists, in one order Kafka 3.9 printed them. Kafka's order is not fixed: it
# iterates a Java HashSet of AclOperation values, ordered by their identity hash codes, so it changes from one JVM
# run to the next (tests/differential/test_acls_cli.py compares the words, not the order).
VALID_OPERATIONS_TEXT = {
    ResourceType.TOPIC: "Read, All, AlterConfigs, DescribeConfigs, Delete, Write, Alter, Create, Describe",
    ResourceType.GROUP: "Read, Delete, Describe, All",
    ResourceType.CLUSTER: "All, AlterConfigs, DescribeConfigs, IdempotentWrite, Alter, ClusterAction, Create, Describe",
    ResourceType.TRANSACTIONAL_ID: "Write, Describe, All",
    ResourceType.DELEGATION_TOKEN: "Describe, All",
    ResourceType.USER: "DescribeTokens, CreateTokens, All",
}
NO_RESOURCE = ("You must provide at least one resource: --topic <topic> or --cluster or --group <group> "
               "or --delegation-token <Delegation Token ID>")
NO_PRINCIPAL = "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."


def resource_filters(ns: argparse.Namespace, die_if_none: bool = True) -> list[ResourcePatternFilter]:
    """The resources named by the flags, as filters with --resource-pattern-type, in flag order."""
    pt = ns.pattern_type
    found: list[ResourcePatternFilter] = []
    found += [ResourcePatternFilter(ResourceType.TOPIC, t.strip(), pt) for t in ns.topic or ()]
    # As in Kafka, --cluster (and --idempotent) count only with the literal pattern type.
    if pt == PatternType.LITERAL and (ns.cluster or ns.idempotent):
        found.append(CLUSTER_FILTER)
    found += [ResourcePatternFilter(ResourceType.GROUP, g.strip(), pt) for g in ns.group or ()]
    # Kafka trims every resource name but transactional ids.
    found += [ResourcePatternFilter(ResourceType.TRANSACTIONAL_ID, t, pt) for t in ns.transactional_id or ()]
    found += [ResourcePatternFilter(ResourceType.DELEGATION_TOKEN, d.strip(), pt) for d in ns.delegation_token or ()]
    found += [ResourcePatternFilter(ResourceType.USER, u.strip(), pt) for u in ns.user_principal or ()]
    if not found and die_if_none:
        raise UsageError(NO_RESOURCE)
    return list(dict.fromkeys(found))


def parse_principal(text: str) -> str:
    """Kafka's SecurityUtils.parseKafkaPrincipal, as text: ``Type:name``."""
    text = text.strip() if text is not None else ""
    kind, sep, name = text.partition(":")
    if not text or not sep:
        raise CommandError(f"expected a string in format principalType:principalName but got {text}")
    return f"{kind}:{name}"


def parse_operation(text: str) -> AclOperation:
    """Kafka's SecurityUtils.operation: the PascalCase name (``IdempotentWrite``) in any case, else UNKNOWN."""
    key = text.strip().upper()
    for member in AclOperation:
        if member.display_name.upper() == key:
            return member
    return AclOperation.UNKNOWN


def _principals(values: list[str] | None) -> list[str]:
    return list(dict.fromkeys(parse_principal(v) for v in values or ()))


def _hosts(hosts: list[str] | None, principals: list[str] | None) -> list[str]:
    if hosts:
        return list(dict.fromkeys(h.strip() for h in hosts))
    return [WILDCARD_HOST] if principals else []


def entries_for(ns: argparse.Namespace, operations: Iterable[AclOperation]) -> list[AccessControlEntry]:
    """Every (principal, operation, host) for ALLOW, then for DENY (AclCommand.getAcl)."""
    operations = list(dict.fromkeys(operations))
    out: list[AccessControlEntry] = []
    for principals, hosts, permission in (
        (_principals(ns.allow_principal), _hosts(ns.allow_host, ns.allow_principal), AclPermissionType.ALLOW),
        (_principals(ns.deny_principal), _hosts(ns.deny_host, ns.deny_principal), AclPermissionType.DENY),
    ):
        if not hosts or not principals:
            continue
        for principal in principals:
            for op in operations:
                for host in hosts:
                    try:
                        out.append(AccessControlEntry(principal, host, op, permission))
                    except ValueError as exc:  # operation ANY: Kafka's AccessControlEntry refuses it the same way
                        raise CommandError(str(exc)) from None
    return list(dict.fromkeys(out))


def filter_to_acls(ns: argparse.Namespace) -> dict[ResourcePatternFilter, list[AccessControlEntry]]:
    """AclCommand.getResourceFilterToAcls: --producer / --consumer expansions, else the flags as given."""
    plan: dict[ResourcePatternFilter, list[AccessControlEntry]] = {}
    if not ns.producer and not ns.consumer:
        entries = entries_for(ns, [parse_operation(op) for op in ns.operation or ["All"]])
        plan.update({f: entries for f in resource_filters(ns)})
    if ns.producer:
        filters = resource_filters(ns)
        topic_acls = entries_for(ns, (AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE))
        txn_acls = entries_for(ns, (AclOperation.WRITE, AclOperation.DESCRIBE))
        plan.update({f: topic_acls for f in filters if f.resource_type == ResourceType.TOPIC})
        plan.update({f: txn_acls for f in filters if f.resource_type == ResourceType.TRANSACTIONAL_ID})
        if ns.idempotent:
            plan[CLUSTER_FILTER] = entries_for(ns, (AclOperation.IDEMPOTENT_WRITE,))
    if ns.consumer:
        filters = resource_filters(ns)
        topic_acls = entries_for(ns, (AclOperation.READ, AclOperation.DESCRIBE))
        group_acls = entries_for(ns, (AclOperation.READ,))
        for f in filters:
            extra = topic_acls if f.resource_type == ResourceType.TOPIC else group_acls if f.resource_type == ResourceType.GROUP else None
            if extra is not None:
                plan[f] = list(dict.fromkeys([*extra, *plan.get(f, [])]))
    _validate_operations(plan)
    return plan


def _validate_operations(plan: dict[ResourcePatternFilter, list[AccessControlEntry]]) -> None:
    for f, entries in plan.items():
        valid = SUPPORTED_OPERATIONS.get(f.resource_type, frozenset()) | {AclOperation.ALL}
        if any(e.operation not in valid for e in entries):
            raise UsageError(f"ResourceType {f.resource_type.name} only supports operations {VALID_OPERATIONS_TEXT[f.resource_type]}")


def resource_to_acls(ns: argparse.Namespace) -> dict[ResourcePattern, list[AccessControlEntry]]:
    """AclCommand.getResourceToAcls: what --add creates, per resource pattern."""
    if not ns.pattern_type.is_specific:
        raise UsageError(f"A '--resource-pattern-type' value of '{ns.pattern_type.name}' is not valid when adding acls.")
    plan = {ResourcePattern(f.resource_type, f.name, f.pattern_type): entries for f, entries in filter_to_acls(ns).items()}
    if any(not entries for entries in plan.values()):
        raise UsageError(NO_PRINCIPAL)
    return plan
