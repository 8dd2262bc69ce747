"""Fault rules: what the next matching requests get instead of their normal answer (kfake's ControlKey/KeepControl).

A rule names an API key and an action — answer an error code (the API's whole-request error answer, Kafka's
``getErrorResponse``: every partition, topic or group slot carries the code), delay the request before it is handled,
close the connection instead of answering, or throttle (answer normally with ``throttle_time_ms`` set, then read
nothing more from the connection for that long, as Kafka mutes a throttled channel, KIP-219) — and optionally narrows which requests it takes: one naming a topic,
one naming a group, one from a principal. It applies to the next ``count`` matching requests (``None``: until
removed), each with probability ``fraction``. Rules are tried in the order added; the first that takes a request
decides it. Partition faults (``partition_faults``) hold for a time instead: a leaderless partition, a stalled fetch.
The set also carries the record of received requests (``received``), which dispatch fills through the same hook.
Plain Python, used on the broker's event loop (``FaultSet`` is not thread-safe: EmbeddedBroker calls it through the
loop).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any

from kafka_shim.authorizer.model import ResourceType
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.framing import api_name
from kafka_shim.shim.faults.errors import FaultError
from kafka_shim.shim.faults.partition_faults import PartitionFaults
from kafka_shim.shim.faults.received import Received, ReceivedLog, api_key_of, requested_names

ACTIONS = ("error", "delay", "close", "throttle")


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
    throttle_ms: int = 0
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
        if self.action == "throttle" and self.throttle_ms <= 0:
            raise FaultError("a throttle fault needs throttle_ms > 0")
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
                "throttle_ms": self.throttle_ms or None, "fraction": self.fraction, "topic": self.topic,
                "group": self.group, "principal": self.principal, "taken": self.taken}


@dataclass
class FaultSet:
    """The rules of one broker. ``take`` is asked by request dispatch for every decoded request while any is set."""

    rules: list[FaultRule] = field(default_factory=list)
    random: random.Random = field(default_factory=random.Random)
    partition_faults: PartitionFaults = field(default_factory=PartitionFaults)
    received: ReceivedLog = field(default_factory=ReceivedLog)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    # Whether dispatch must call ``take`` (a rule is set, or requests are recorded): read on every request.
    armed: bool = False
    # The broker, for the control file's broker_down faults (stop_node / start_node); None in hand-built services.
    nodes: Any = None

    def add(self, rule: FaultRule) -> FaultRule:
        rule.rule_id = next(self._ids)
        self.rules.append(rule)
        self._rearm()
        return rule

    def remove(self, rule_id: int) -> bool:
        """Remove a rule or a partition fault by its id (a leaderless partition gets its leader back)."""
        before = len(self.rules)
        self.rules = [r for r in self.rules if r.rule_id != rule_id]
        self._rearm()
        return len(self.rules) != before or self.partition_faults.remove(rule_id)

    def clear(self) -> None:
        """Every rule and partition fault gone (leaders back); the record of received requests is kept."""
        self.rules.clear()
        self.partition_faults.clear()
        self._rearm()

    def record(self, on: bool) -> None:
        self.received.recording = on
        self._rearm()

    def hold(self, kind: str, topic: str, partition: int | None = None, duration_ms: int | None = None):
        """A partition fault (``partition_faults``): "leaderless" or "stall_fetch", for ``duration_ms`` or until
        removed; every partition of the topic when ``partition`` is None. FaultError for an unknown topic."""
        return self.partition_faults.add(kind, topic, partition, duration_ms, next(self._ids))

    def _names_match(self, rule: FaultRule, api_key: int, version: int, request: Any) -> bool:
        """Whether the request names the rule's topic / group (the names Kafka would authorize it on)."""
        name_of = self.received.topic_name_of
        return ((rule.topic is None or rule.topic in requested_names(api_key, version, request, ResourceType.TOPIC, name_of))
                and (rule.group is None or rule.group in requested_names(api_key, version, request, ResourceType.GROUP, name_of)))

    def _rearm(self) -> None:
        self.armed = bool(self.rules) or self.received.recording

    def take(self, api_key: int, version: int, request: Any, principal: str, ctx: Any = None) -> FaultRule | None:
        """The rule that takes this request (counted as taken, and dropped once exhausted), or None. Records the
        request first when recording (``ctx``: the RequestContext, for its client id, listener and address)."""
        if self.received.recording and ctx is not None:
            header = ctx.header
            self.received.add(Received(api_name(api_key), api_key, version,
                                       header.correlation_id, header.client_id, principal, ctx.listener.name,
                                       ctx.client_host, request, ctx.node_id, ctx.request_size))
        for rule in self.rules:
            if rule.api_key != api_key or (rule.principal is not None and rule.principal != principal):
                continue
            if (rule.topic is not None or rule.group is not None) and not self._names_match(rule, api_key, version, request):
                continue
            if rule.fraction < 1 and self.random.random() >= rule.fraction:
                continue
            rule.taken += 1
            if rule.exhausted:
                self.rules.remove(rule)
                self._rearm()
            return rule
        return None


def _api_key(value: int | str) -> int:
    try:
        return api_key_of(value)
    except ValueError as exc:
        raise FaultError(str(exc)) from None


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
