"""An audit ``actions`` table (traces/audit/tables.py's columns) decided by the project's authorizer, without Spark:
the input the audit's usage, least-privilege and report tests build by hand."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from kafka_shim.authorizer import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_shim.authorizer.audit import rule_text
from kafka_shim.traces.audit.tables import ACTIONS, KIND_BY_RESOURCE_TYPE, acl_key
from kafka_shim.traces.audit.usage import quiet_authorizer

# (principal, host, operation, resource type, name, requests[, kind])
Question = tuple

START = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def acl(rtype: ResourceType, name: str, principal: str, op: AclOperation, pattern: PatternType = PatternType.LITERAL,
        host: str = "*", deny: bool = False) -> AclBinding:
    """One ACL binding, ALLOW unless ``deny``."""
    permission = AclPermissionType.DENY if deny else AclPermissionType.ALLOW
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, host, op, permission))


def build_actions(acls: list[AclBinding], questions: Iterable[Question], super_users: Iterable[str] = (),
                  allow_everyone_if_no_acl: bool = False, what_if: list[AclBinding] | None = None) -> pa.Table:
    """One row per question, decided under ``acls`` (A) and, when given, ``what_if`` (B)."""
    sets = {"a": quiet_authorizer(acls, super_users, allow_everyone_if_no_acl)}
    if what_if is not None:
        sets["b"] = quiet_authorizer(what_if, super_users, allow_everyone_if_no_acl)
    cols: dict[str, list] = {k: [] for k in ("principal", "host", "operation", "resource_type", "resource_name",
                                             "requests", "first_time", "last_time", "allowed_a", "rule_a", "acl_a",
                                             "allowed_b", "rule_b", "acl_b", "hard", "kind")}
    for i, q in enumerate(questions):
        principal, host, op, rtype, name, requests, *rest = q
        kind = rest[0] if rest else "authorize"
        cols["principal"].append(principal)
        cols["host"].append(host)
        cols["operation"].append(AclOperation(op).name)
        cols["resource_type"].append(ResourceType(rtype).name)
        cols["resource_name"].append(None if kind == KIND_BY_RESOURCE_TYPE else name)
        cols["requests"].append(requests)
        cols["first_time"].append(START + timedelta(seconds=i))
        cols["last_time"].append(START + timedelta(seconds=i + 30))
        cols["hard"].append(True)
        cols["kind"].append(kind)
        for side in ("a", "b"):
            az = sets.get(side)
            if az is None:
                cols[f"allowed_{side}"].append(None)
                cols[f"rule_{side}"].append(None)
                cols[f"acl_{side}"].append(None)
                continue
            if kind == KIND_BY_RESOURCE_TYPE:
                allowed = az.authorize_by_resource_type(principal, host, op, rtype)
                rule = "SuperUser" if principal in az.super_users else ("DefaultAllow" if allowed else "DefaultDeny")
            else:
                allowed = az.authorize(principal, host, op, rtype, name)
                rule = az.decision_rule(principal, host, op, rtype, name, allowed)
            cols[f"allowed_{side}"].append(allowed)
            cols[f"rule_{side}"].append(rule_text(rule))
            cols[f"acl_{side}"].append(None if isinstance(rule, str) else acl_key(rule.binding))
    return pa.table(cols, schema=ACTIONS)
