"""The auditor's question: every action Kafka would ask the authorizer about for one request, in its order."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafka_shim.authorizer.api_checks.model import EVERY, ById, Check, Mode, Name, Requirement
from kafka_shim.authorizer.api_checks.table import DECLARATIONS
from kafka_shim.authorizer.model import SUPPORTED_OPERATIONS
from kafka_shim.protocol.codes import ErrorCode


def distinct_names(names: Iterable[Name]) -> list[tuple[Name, int]]:
    """(name, occurrences) in first-appearance order: Kafka checks each distinct name once with that ref count."""
    counts: dict[Name, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return list(counts.items())


def _requirement(check: Check, mode: Mode, name: Name | None, ref_count: int) -> Requirement:
    return Requirement(
        operation=check.operation, resource_type=check.resource_type,
        name=name if isinstance(name, str) else None, resource_id=name.id if isinstance(name, ById) else None,
        mode=mode, error_code=check.error_code, log_if_denied=check.log_if_denied, log_if_allowed=check.log_if_allowed,
        ref_count=ref_count, check=check.key, any_resource=check.any_resource, after=check.after,
    )


def requirements(api_key: int, version: int, request: Any) -> list[Requirement]:
    """Every action Kafka would ask the authorizer about for this request: check by check in the order Kafka asks
    them, a check's names in the order they first appear in the request (Kafka asks a filtered list of names in the
    order of the hash map it counts them in, as the broker does in shim/requests/authz.py; an auditor matches
    decisions by name, not by position).

    Conditions that depend on broker state (does the topic exist, is auto-creation on, is the requester the
    token owner) are not evaluated here; the Check notes say which, ``Check.existing`` reads what a broker's answer
    tells of it, and ``after`` (a check asked only for the names an earlier one allowed) is left to whoever has the
    answers. Bitfield probes come last (mode BITFIELD).
    An undeclared key raises KeyError.
    """
    decl = DECLARATIONS.get(api_key)
    if decl is None:
        raise KeyError(f"api key {api_key} has no declared ACL checks")
    out: list[Requirement] = []
    for check in decl.checks:
        if not check.applies_to(request, version):
            continue
        if check.shortcut is not None:
            s = check.shortcut
            out.append(Requirement(s.operation, s.resource_type, s.name, check.mode, check.error_code, s.log_if_denied,
                                   check.log_if_allowed, 1, check.key, is_shortcut=True, after=check.after))
        names = check.names(request, version)
        if names is EVERY:
            out.append(_requirement(check, check.mode, None, 1))
            continue
        out += [_requirement(check, check.mode, name, count) for name, count in distinct_names(names)]
    for bits in decl.bitfields:
        if bits.applies is not None and not bits.applies(request, version):
            continue
        names = bits.names(request, version)
        for name, _ in distinct_names(names or []):
            for op in sorted(SUPPORTED_OPERATIONS[bits.resource_type]):
                out.append(Requirement(op, bits.resource_type, name if isinstance(name, str) else None, Mode.BITFIELD, ErrorCode.NONE,
                                       log_if_denied=False, log_if_allowed=False, check=bits.gate or "bitfield",
                                       resource_id=name.id if isinstance(name, ById) else None, after=bits.after))
    return out
