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

# The line each Kafka release line wrote (kafka.version emulates it; kafka-release-rules.md §1.7):
STANDARD = "standard"  # 3.3+: StandardAuthorizer (KRaft), "operation = READ ... based on rule ..."
ACL_AUTHORIZER = "acl_authorizer"  # 2.4-3.2: AclAuthorizer (ZooKeeper), "Operation = Read ... resourceRefCount = n"
SIMPLE = "simple"  # 2.0-2.3: SimpleAclAuthorizer, ends at the resource; every decision, grants DEBUG, denials INFO
SIMPLE_UNTYPED = "simple_untyped"  # 1.0-1.1: the same without a pattern type ("Topic:payments")
SIMPLE_0_11 = "simple_0_11"  # 0.11: as 1.0, denials at DEBUG too


def style_for(release: tuple[int, int]) -> str:
    """The authorizer log line of a release line (the ZooKeeper authorizer's before KRaft's was the default)."""
    if release >= (3, 3):
        return STANDARD
    if release >= (2, 4):
        return ACL_AUTHORIZER
    if release >= (2, 0):
        return SIMPLE
    return SIMPLE_UNTYPED if release >= (1, 0) else SIMPLE_0_11


def _pascal(name: str) -> str:
    """SecurityUtils.operationName / the Scala Operation objects: IDEMPOTENT_WRITE -> IdempotentWrite."""
    return "".join(part.capitalize() for part in name.split("_"))


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


def format_decision(d: Decision, style: str = STANDARD) -> str:
    """Kafka's audit message (without the log4j prefix and suffix): StandardAuthorizerData's, or an older release's
    (``style``)."""
    if style != STANDARD:
        return _older_line(d, style)
    rtype = ResourceType.from_code(d.resource_type).display_name
    return (f"Principal = {d.principal} is {'Allowed' if d.allowed else 'Denied'} "
            f"operation = {AclOperation.from_code(d.operation).name} from host = {d.host} "
            f"on resource = {rtype}:LITERAL:{d.name} for request = {d.request or 'Unknown'} "
            f"with resourceRefCount = {d.resource_ref_count} based on rule {rule_text(d.rule)}")


def _older_line(d: Decision, style: str) -> str:
    rtype = ResourceType.from_code(d.resource_type).display_name
    result = "Allowed" if d.allowed else "Denied"
    operation = _pascal(AclOperation.from_code(d.operation).name)
    resource = f"{rtype}:{d.name}" if style in (SIMPLE_UNTYPED, SIMPLE_0_11) else f"{rtype}:LITERAL:{d.name}"
    line = f"Principal = {d.principal} is {result} Operation = {operation} from host = {d.host} on resource = {resource}"
    if style == ACL_AUTHORIZER:
        line += f" for request = {d.request or 'Unknown'} with resourceRefCount = {d.resource_ref_count}"
    return line


class AuditLog:
    """Writes decisions to ``kafka.authorizer.logger``; ``denials``/``grants`` say whether each level is on.

    ``style`` is the line of the emulated release (``style_for``); before 2.4 Kafka logged every decision, whatever
    the request asked (``every_decision``), and 0.11 logged denials at DEBUG."""

    def __init__(self, logger: Any = None, style: str = STANDARD) -> None:
        self.logger = logger or get_logger(LOGGER_NAME, message_only=True)
        self.style = style
        self.every_decision = style in (SIMPLE, SIMPLE_UNTYPED, SIMPLE_0_11)
        self._denial_level = logging.DEBUG if style == SIMPLE_0_11 else logging.INFO
        self.refresh()

    def refresh(self) -> None:
        """Re-read the logger's levels (call after reconfiguring logging: structlog or the stdlib levels)."""
        enabled = getattr(self.logger, "is_enabled_for", None)
        self.denials = enabled(self._denial_level) if enabled else True
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
        line = format_decision(d, self.style)
        if d.allowed or self._denial_level == logging.DEBUG:
            self.logger.debug(line, **fields)
        else:
            self.logger.info(line, **fields)
