"""Fault rules: what the next matching requests get instead of their normal answer (kfake's ControlKey/KeepControl).

A rule names an API key and an action — answer an error code (the API's whole-request error answer, Kafka's
``getErrorResponse``: every partition, topic or group slot carries the code), delay the request before it is handled,
or close the connection instead of answering — and optionally narrows which requests it takes: one naming a topic,
one naming a group, one from a principal. It applies to the next ``count`` matching requests (``None``: until
removed), each with probability ``fraction``. Rules are tried in the order added; the first that takes a request
decides it. Plain Python, used on the broker's event loop (``FaultSet`` is not thread-safe: EmbeddedBroker calls it
through the loop).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any

from kafka_shim.authorizer.api_checks import requirements
from kafka_shim.authorizer.model import ResourceType
from kafka_shim.protocol.codes import ApiKey, ErrorCode

ACTIONS = ("error", "delay", "close")


class FaultError(ValueError):
    """A rule that cannot be applied; the message says what to write instead."""


@dataclass
class FaultRule:
    api_key: int
    action: str = "error"
    error_code: int = 0
    delay_ms: int = 0
    count: int | None = 1  # how many matching requests it takes; None: every one until removed
    fraction: float = 1.0  # the probability that a matching request is taken
    topic: str | None = None
    group: str | None = None
    principal: str | None = None
    rule_id: int = 0  # assigned when added
    taken: int = 0  # requests it has taken so far

    def __post_init__(self) -> None:
        self.api_key = _api_key(self.api_key)
        if self.action not in ACTIONS:
            raise FaultError(f"action={self.action!r}: use one of {', '.join(ACTIONS)}")
        if self.action == "error":
            self.error_code = _error_code(self.error_code)
            if self.error_code == ErrorCode.NONE:
                raise FaultError("an error fault needs error_code, e.g. NOT_LEADER_OR_FOLLOWER or 6")
        if self.action == "delay" and self.delay_ms <= 0:
            raise FaultError("a delay fault needs delay_ms > 0")
        if self.count is not None and self.count < 1:
            raise FaultError(f"count={self.count}: at least 1, or None for every matching request")
        if not 0 < self.fraction <= 1:
            raise FaultError(f"fraction={self.fraction}: between 0 (excluded) and 1")

    @property
    def exhausted(self) -> bool:
        return self.count is not None and self.taken >= self.count

    def describe(self) -> dict[str, Any]:
        return {"id": self.rule_id, "api": ApiKey(self.api_key).name, "action": self.action,
                "error_code": self.error_code or None, "delay_ms": self.delay_ms or None, "count": self.count,
                "fraction": self.fraction, "topic": self.topic, "group": self.group, "principal": self.principal,
                "taken": self.taken}


@dataclass
class FaultSet:
    """The rules of one broker. ``take`` is asked by request dispatch for every decoded request while any is set."""

    rules: list[FaultRule] = field(default_factory=list)
    random: random.Random = field(default_factory=random.Random)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    @property
    def armed(self) -> bool:
        return bool(self.rules)

    def add(self, rule: FaultRule) -> FaultRule:
        rule.rule_id = next(self._ids)
        self.rules.append(rule)
        return rule

    def remove(self, rule_id: int) -> bool:
        before = len(self.rules)
        self.rules = [r for r in self.rules if r.rule_id != rule_id]
        return len(self.rules) != before

    def clear(self) -> None:
        self.rules.clear()

    def take(self, api_key: int, version: int, request: Any, principal: str) -> FaultRule | None:
        """The rule that takes this request (counted as taken, and dropped once exhausted), or None."""
        for rule in self.rules:
            if rule.api_key != api_key or (rule.principal is not None and rule.principal != principal):
                continue
            if (rule.topic is not None or rule.group is not None) and not _names_match(rule, api_key, version, request):
                continue
            if rule.fraction < 1 and self.random.random() >= rule.fraction:
                continue
            rule.taken += 1
            if rule.exhausted:
                self.rules.remove(rule)
            return rule
        return None


def _names_match(rule: FaultRule, api_key: int, version: int, request: Any) -> bool:
    """Whether the request names the rule's topic / group (the names Kafka would authorize it on)."""
    try:
        asked = requirements(api_key, version, request)
    except KeyError:
        return False
    topics = {r.name for r in asked if r.resource_type == ResourceType.TOPIC}
    groups = {r.name for r in asked if r.resource_type == ResourceType.GROUP}
    return (rule.topic is None or rule.topic in topics) and (rule.group is None or rule.group in groups)


def _api_key(value: int | str) -> int:
    if isinstance(value, str):
        name = value.strip().upper().replace("-", "_")
        by_camel = {key.name.replace("_", ""): key for key in ApiKey}
        key = ApiKey.__members__.get(name) or by_camel.get(name.replace("_", ""))
        if key is None:
            raise FaultError(f"api={value!r} is not a Kafka API; use a name such as Produce, Fetch, Metadata or a key number")
        return int(key)
    try:
        return int(ApiKey(value))
    except ValueError:
        raise FaultError(f"api key {value} is not a Kafka API key") from None


def _error_code(value: int | str) -> int:
    if isinstance(value, str):
        name = value.strip().upper().replace("-", "_")
        if name not in ErrorCode.__members__:
            raise FaultError(f"error_code={value!r} is not one of Kafka's error names (e.g. NOT_LEADER_OR_FOLLOWER)")
        return int(ErrorCode[name])
    try:
        return int(ErrorCode(value))
    except ValueError:
        raise FaultError(f"error code {value} is not one of Kafka's") from None
