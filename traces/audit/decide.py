"""Deciding the audit's questions under an ACL set, as Kafka 3.9's StandardAuthorizer would.

``Decider`` wraps ``kafka_shim.authorizer.Authorizer`` (built once per process or Spark partition from the ACL
list) and answers each distinct action: ``authorize`` (rule text as Kafka's authorizer log writes it, and the
deciding ACL's ``acl_key``), ``authorize_by_resource_type`` (KIP-679) for ``by_resource_type``.

``flow`` then replays, per request, what the broker does with the answers: a shortcut allowed makes the check's
per-name questions unasked; a GATE denied leaves its bitfield at 0 without asking the bits; the first
AUTHORIZE_OR_THROW denial ends the request, so later checks are not asked (Kafka's KafkaApis returns there).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa

from kafka_shim.authorizer import AclBinding, Authorizer
from kafka_shim.authorizer.audit import AuditLog, rule_text
from kafka_shim.authorizer.model import AclOperation, ResourceType
from kafka_shim.traces.audit.tables import KIND_BY_RESOURCE_TYPE, KIND_SHORTCUT, acl_key

ANSWER = pa.schema([pa.field("allowed", pa.bool_()), pa.field("rule", pa.string()), pa.field("acl", pa.string())])


class _Silent(AuditLog):
    """The audit never writes Kafka's authorizer log lines: it only asks."""

    def refresh(self) -> None:
        self.denials = self.grants = False


@dataclass(frozen=True)
class AuthorizerSettings:
    super_users: tuple[str, ...] = ()
    allow_everyone_if_no_acl_found: bool = False


@dataclass
class Decider:
    bindings: list[AclBinding]
    settings: AuthorizerSettings = field(default_factory=AuthorizerSettings)

    def __post_init__(self) -> None:
        self.authorizer = Authorizer(super_users=list(self.settings.super_users),
                                     allow_everyone_if_no_acl_found=self.settings.allow_everyone_if_no_acl_found,
                                     audit=_Silent(logger=_NullLogger()))
        self.authorizer.audit.refresh()
        self.authorizer.create_acls(list(self.bindings))

    def decide(self, principal: str, host: str, operation: str, resource_type: str, name: str | None,
               kind: str) -> tuple[bool | None, str | None, str | None]:
        """(allowed, rule text, deciding ACL key); (None, None, None) for a question without a resource name."""
        az = self.authorizer
        op, rtype = AclOperation.from_string(operation), ResourceType.from_string(resource_type)
        if principal is None or host is None:
            return None, None, None
        if kind == KIND_BY_RESOURCE_TYPE:
            try:
                allowed = az.authorize_by_resource_type(principal, host, op, rtype)
            except Exception as exc:  # Kafka throws on ACLs with an unparseable principal; recorded, not raised
                return False, f"Error({type(exc).__name__})", None
            return allowed, "SuperUser" if principal in az.super_users else None, None
        if name is None:
            return None, None, None
        try:
            allowed = az.authorize(principal, host, op, rtype, name, log_if_allowed=False, log_if_denied=False)
        except Exception as exc:  # as above
            return False, f"Error({type(exc).__name__})", None
        rule = az.decision_rule(principal, host, op, rtype, name, allowed)
        if isinstance(rule, str):
            return allowed, rule, None
        return allowed, rule_text(rule), acl_key(rule.binding)

    def answer_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Answers for a batch of actions (principal, host, operation, resource_type, resource_name, kind)."""
        cols = [batch.column(c).to_pylist() for c in ("principal", "host", "operation", "resource_type", "resource_name", "kind")]
        allowed, rules, acls = [], [], []
        for row in zip(*cols, strict=True):
            a, r, k = self.decide(*row)
            allowed.append(a)
            rules.append(r)
            acls.append(k)
        return pa.RecordBatch.from_arrays([pa.array(allowed, pa.bool_()), pa.array(rules, pa.string()),
                                           pa.array(acls, pa.string())], schema=ANSWER)


class _NullLogger:
    def isEnabledFor(self, level: int) -> bool:
        return False

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: None


ASKED, COVERED, GATED, ENDED = "asked", "covered", "gated", "ended"


def flow(check: list[str], kind: list[str], mode: list[str], gate: list[str | None], allowed: list[bool | None]) -> list[str]:
    """What the broker does with each of one request's questions (in order), given the answers: ``asked``;
    ``covered`` (its check's shortcut was allowed: granted without asking); ``gated`` (its bitfield's gate was
    denied: the bit is 0 without asking); ``ended`` (an earlier AUTHORIZE_OR_THROW denial failed the request)."""
    shortcut_granted = {check[i] for i in range(len(check)) if kind[i] == KIND_SHORTCUT and allowed[i]}
    denied_gates = {check[i] for i in range(len(check)) if mode[i] == "gate" and allowed[i] is False}
    states: list[str] = []
    ended = False
    for i in range(len(check)):
        if ended:
            states.append(ENDED)
        elif kind[i] != KIND_SHORTCUT and check[i] in shortcut_granted:
            states.append(COVERED)
        elif gate[i] is not None and gate[i] in denied_gates:
            states.append(GATED)
        else:
            states.append(ASKED)
            if mode[i] == "authorize-or-throw" and kind[i] != KIND_SHORTCUT and allowed[i] is False:
                ended = True
    return states


def effective(state: str, allowed: bool | None) -> bool | None:
    """What the client gets for the question: covered is granted, gated is a 0 bit, ended is nothing at all."""
    if state == ASKED:
        return allowed
    if state == COVERED:
        return True
    if state == GATED:
        return False
    return None


def request_states(decisions: pa.Table, suffix: str) -> list[str]:
    """``flow`` states for a decisions table sorted by (request_index, seq)."""
    idx = decisions.column("request_index").to_pylist()
    check, kind, mode, gate = (decisions.column(c).to_pylist() for c in ("check", "kind", "mode", "gate"))
    allowed = decisions.column(f"allowed_{suffix}").to_pylist()
    out: list[str] = []
    start, n = 0, len(idx)
    while start < n:
        end = start
        while end < n and idx[end] == idx[start]:
            end += 1
        out += flow(check[start:end], kind[start:end], mode[start:end], gate[start:end], allowed[start:end])
        start = end
    return out


def decide_all(bindings: Iterable[AclBinding], settings: AuthorizerSettings, actions: pa.Table) -> pa.Table:
    decider = Decider(list(bindings), settings)
    batches = [decider.answer_batch(b) for b in actions.to_batches()]
    return pa.Table.from_batches(batches, schema=ANSWER) if batches else ANSWER.empty_table()
