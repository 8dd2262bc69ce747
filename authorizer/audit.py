"""The authorizer audit log in Kafka's own line format, through kafka-shim's library logger (library_logging.py).

    Principal = User:alice is Denied operation = READ from host = 127.0.0.1 on resource = Topic:LITERAL:payments
    for request = Fetch with resourceRefCount = 1 based on rule DefaultDeny

(one line; logger ``kafka.authorizer.logger``: through the application's structlog set-up when it has one, else the
stdlib logger of that name with Kafka's line as the message, as log4j shows it). Denials log at INFO, grants at
DEBUG, as Kafka's StandardAuthorizer does when the action asks for it; everything else Kafka logs at TRACE, which is
dropped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from kafka_shim.authorizer.library_logging import get_logger
from kafka_shim.authorizer.model import AclOperation, ResourceType

LOGGER_NAME = "kafka.authorizer.logger"


@dataclass(frozen=True, slots=True)
class Decision:
    principal: str
    host: str
    operation: int
    resource_type: int
    name: str
    allowed: bool
    rule: Any  # "SuperUser" | "DefaultAllow" | "DefaultDeny" | an index Rule
    request: str | None
    resource_ref_count: int


def rule_text(rule: Any) -> str:
    if isinstance(rule, str):
        return rule
    p, e = rule.binding.pattern, rule.binding.entry
    return (f"MatchingAcl(acl=StandardAcl(resourceType={p.resource_type.name}, resourceName={p.name}, "
            f"patternType={p.pattern_type.name}, principal={e.principal}, host={e.host}, "
            f"operation={e.operation.name}, permissionType={e.permission_type.name}))")


def format_decision(d: Decision) -> str:
    """Kafka's StandardAuthorizerData audit message (without the log4j prefix and suffix)."""
    rtype = ResourceType.from_code(d.resource_type).display_name
    return (f"Principal = {d.principal} is {'Allowed' if d.allowed else 'Denied'} "
            f"operation = {AclOperation.from_code(d.operation).name} from host = {d.host} "
            f"on resource = {rtype}:LITERAL:{d.name} for request = {d.request or 'Unknown'} "
            f"with resourceRefCount = {d.resource_ref_count} based on rule {rule_text(d.rule)}")


class AuditLog:
    """Writes decisions to ``kafka.authorizer.logger``; ``denials``/``grants`` say whether each level is on."""

    def __init__(self, logger: Any = None) -> None:
        self.logger = logger or get_logger(LOGGER_NAME, message_only=True)
        self.refresh()

    def refresh(self) -> None:
        """Re-read the logger's levels (call after reconfiguring logging: structlog or the stdlib levels)."""
        enabled = getattr(self.logger, "is_enabled_for", None)
        self.denials = enabled(logging.INFO) if enabled else True
        self.grants = enabled(logging.DEBUG) if enabled else True

    def log(self, d: Decision) -> None:
        fields = {
            "logger": LOGGER_NAME,
            "principal": d.principal,
            "decision": "Allowed" if d.allowed else "Denied",
            "operation": AclOperation.from_code(d.operation).name,
            "host": d.host,
            "resource": f"{ResourceType.from_code(d.resource_type).display_name}:LITERAL:{d.name}",
            "rule": rule_text(d.rule),
        }
        if d.allowed:
            self.logger.debug(format_decision(d), **fields)
        else:
            self.logger.info(format_decision(d), **fields)
