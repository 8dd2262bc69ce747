"""Kafka's text: AclCommand's println layout and the Java toString of the ACL classes, byte for byte."""

from __future__ import annotations

from collections.abc import Iterable

from kafka_shim.authorizer import AccessControlEntry, AclBinding, ResourcePattern, ResourcePatternFilter


def format_entry(e: AccessControlEntry) -> str:
    return f"(principal={e.principal}, host={e.host}, operation={e.operation.name}, permissionType={e.permission_type.name})"


def format_filter(f: ResourcePatternFilter) -> str:
    name = "<any>" if f.name is None else f.name
    return f"ResourcePattern(resourceType={f.resource_type.name}, name={name}, patternType={f.pattern_type.name})"


def _entry_lines(entries: Iterable[AccessControlEntry]) -> str:
    return "\n".join("\t" + format_entry(e) for e in entries)


def format_adding(pattern: ResourcePattern, entries: list[AccessControlEntry]) -> str:
    return f"Adding ACLs for resource `{pattern}`: \n {_entry_lines(entries)} \n\n"


def format_current(pattern: ResourcePattern, entries: list[AccessControlEntry]) -> str:
    return f"Current ACLs for resource `{pattern}`: \n {_entry_lines(entries)} \n\n"


def format_listing(bindings: list[AclBinding], principals: list[str]) -> str:
    """``--list`` output: one block per resource pattern, in the broker's order; per principal with --principal."""
    grouped: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for b in bindings:
        entries = grouped.setdefault(b.pattern, [])
        if b.entry not in entries:
            entries.append(b.entry)
    if not principals:
        return "".join(format_current(p, entries) for p, entries in grouped.items())
    out = []
    for principal in principals:
        out.append(f"ACLs for principal `{principal}`\n")
        for p, entries in grouped.items():
            mine = [e for e in entries if e.principal == principal]
            if mine:
                out.append(format_current(p, mine))
    return "".join(out)


def format_remove_question(f: ResourcePatternFilter, entries: list[AccessControlEntry]) -> str:
    """What --remove asks before deleting (without --force): all of the filter's ACLs, or the given ones."""
    if not entries:
        return f"Are you sure you want to delete all ACLs for resource filter `{format_filter(f)}`? (y/n)"
    return (f"Are you sure you want to remove ACLs: \n {_entry_lines(entries)} \n from resource filter "
            f"`{format_filter(f)}`? (y/n)")
