"""Deciding the audit's questions under an ACL set, as Kafka 3.9's StandardAuthorizer would.

``Decider`` wraps ``kafka_shim.authorizer.Authorizer`` (built once per process or Spark partition from the ACL
list) and answers each distinct action: ``authorize`` (rule text as Kafka's authorizer log writes it, and the
deciding ACL's ``acl_key``), ``authorize_by_resource_type`` (KIP-679) for ``by_resource_type``.

``flow`` then replays, per request, what the broker does with the answers: a shortcut allowed makes the check's
per-name questions unasked; a GATE denied leaves its bitfield at 0 without asking the bits; a question whose gate is
``GATE_AFTER`` + a check is asked only where that check allowed the same name (Metadata's CREATE: only for describable
topics), its shortcut only where one of them is left; the first AUTHORIZE_OR_THROW denial ends the request, so
later checks are not asked (Kafka's KafkaApis returns there).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_shim.authorizer import AclBinding, Authorizer
from kafka_shim.authorizer.audit import AuditLog, rule_text
from kafka_shim.authorizer.model import AclOperation, ResourceType
from kafka_shim.traces.audit.tables import GATE_AFTER, KIND_BY_RESOURCE_TYPE, KIND_SHORTCUT, acl_key

ANSWER = pa.schema([pa.field("allowed", pa.bool_()), pa.field("rule", pa.string()), pa.field("acl", pa.string())])


_MEMO_LIMIT = 1_000_000  # distinct actions remembered; past it the memo starts again (an audit of many more)


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
        # The ACLs never change: each distinct action is decided once, however many row groups ask it again.
        self._answers: dict[tuple, tuple[bool | None, str | None, str | None]] = {}
        # The same memo on the Arrow side (``answer_table``): keys as ``action_keys`` makes them, answers aligned.
        self._known_keys: pa.Array = pa.array([], pa.string())
        self._known_answers: pa.Table = ANSWER.empty_table()

    def decide(self, principal: str, host: str, operation: str, resource_type: str, name: str | None,
               kind: str) -> tuple[bool | None, str | None, str | None]:
        """(allowed, rule text, deciding ACL key); (None, None, None) for a question without a resource name."""
        key = (principal, host, operation, resource_type, name, kind)
        answer = self._answers.get(key)
        if answer is None:
            if len(self._answers) >= _MEMO_LIMIT:
                self._answers.clear()
            answer = self._answers[key] = self._decide(principal, host, operation, resource_type, name, kind)
        return answer

    def _decide(self, principal: str, host: str, operation: str, resource_type: str, name: str | None,
                kind: str) -> tuple[bool | None, str | None, str | None]:
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

    def answer_table(self, actions: pa.Table) -> pa.Table:
        """``answer_batch`` for a table of actions, row for row. Each row group asks mostly the actions the ones
        before it asked: those are found by key in the answers already made, so only new actions cost a Python
        call each (with one call per action and row group, answering took a tenth of the audit)."""
        if not _keyable(actions):
            answered = [self.answer_batch(batch) for batch in actions.to_batches()]
            return pa.Table.from_batches(answered, schema=ANSWER)
        keys = action_keys(actions)
        new = pc.invert(pc.is_in(keys, value_set=self._known_keys))
        if pc.any(new).as_py():
            fresh = actions.filter(new)
            if len(self._known_keys) + fresh.num_rows > _MEMO_LIMIT:
                self._known_keys, self._known_answers = pa.array([], pa.string()), ANSWER.empty_table()
                fresh = actions  # the memo starts again with this table's actions
            answered = [self.answer_batch(batch) for batch in fresh.to_batches()]
            fresh_keys = pc.unique(action_keys(fresh))  # a table may repeat an action: each is kept once
            first = pc.index_in(fresh_keys, value_set=action_keys(fresh))
            # the answers stay in chunks (take reads across them); the keys are one array, as is_in wants
            self._known_answers = pa.concat_tables(
                [self._known_answers, pa.Table.from_batches(answered, schema=ANSWER).take(first)])
            self._known_keys = pa.concat_arrays([self._known_keys, fresh_keys])
        return self._known_answers.take(pc.index_in(keys, value_set=self._known_keys))

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


ACTION_COLUMNS = ("principal", "host", "operation", "resource_type", "resource_name", "kind")


def action_keys(actions: pa.Table) -> pa.ChunkedArray:
    """One string per action (``ACTION_COLUMNS``): each field as "=" and its text, or \x01 where it is null, joined by
    NUL. Two actions share a key only if a field other than the resource name holds a NUL: see ``_keyable``."""
    fields = [pc.binary_join_element_wise("=", actions.column(c), "", null_handling="emit_null") for c in ACTION_COLUMNS]
    return pc.binary_join_element_wise(*fields, "\x00", null_handling="replace", null_replacement="\x01")


def _keyable(actions: pa.Table) -> bool:
    """Whether ``action_keys`` tells every action of the table apart: no NUL in the fields around the name (a
    principal read from a damaged trace might hold one; such tables are answered without the Arrow memo)."""
    return not any(pc.any(pc.match_substring(actions.column(c), "\x00")).as_py()
                   for c in ACTION_COLUMNS if c != "resource_name")


class _NullLogger:
    def isEnabledFor(self, level: int) -> bool:
        return False

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: None


ASKED, COVERED, GATED, ENDED = "asked", "covered", "gated", "ended"


def flow(check: list[str], kind: list[str], mode: list[str], gate: list[str | None], allowed: list[bool | None],
         names: list[str | None] | None = None) -> list[str]:
    """What the broker does with each of one request's questions (in order), given the answers: ``asked``;
    ``covered`` (its check's shortcut was allowed: granted without asking); ``gated`` (its bitfield's gate was
    denied: the bit is 0 without asking; or, gate ``GATE_AFTER`` + a check, that check denied the same name, or, for a
    shortcut, every name of its check); ``ended`` (an earlier AUTHORIZE_OR_THROW denial failed the request)."""
    n = len(check)
    names = names if names is not None else [None] * n
    denied_names = {(check[i], names[i]) for i in range(n)
                    if kind[i] != KIND_SHORTCUT and allowed[i] is False and names[i] is not None}
    after = [gate[i] is not None and gate[i].startswith(GATE_AFTER) for i in range(n)]
    name_gated = [after[i] and kind[i] != KIND_SHORTCUT and (gate[i][len(GATE_AFTER):], names[i]) in denied_names
                  for i in range(n)]
    open_checks = {check[i] for i in range(n) if after[i] and kind[i] != KIND_SHORTCUT and not name_gated[i]}
    for i in range(n):
        if after[i] and kind[i] == KIND_SHORTCUT:
            name_gated[i] = check[i] not in open_checks
    shortcut_granted = {check[i] for i in range(n) if kind[i] == KIND_SHORTCUT and allowed[i] and not name_gated[i]}
    denied_gates = {check[i] for i in range(n) if mode[i] == "gate" and allowed[i] is False}
    states: list[str] = []
    ended = False
    for i in range(n):
        if ended:
            states.append(ENDED)
        elif name_gated[i]:
            states.append(GATED)
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


def request_states(decisions: pa.Table, suffix: str) -> pa.Array:
    """``flow``'s states for every row of a decisions table (whole requests), computed with Arrow joins rather than
    request by request: covered = the (request, check) has an allowed shortcut; gated = the (request, gate) GATE
    was denied; ended = after the request's first AUTHORIZE_OR_THROW denial that no shortcut covers. Only the
    requests with such a shortcut, gate or denial are joined; every other row is asked."""
    allowed = decisions.column(f"allowed_{suffix}")
    kind, mode = decisions.column("kind"), decisions.column("mode")
    is_shortcut = pc.equal(kind, KIND_SHORTCUT)
    special = pc.or_kleene(pc.or_(pc.and_(is_shortcut, pc.fill_null(allowed, False)),
                            pc.and_(pc.or_(pc.equal(mode, "gate"), pc.equal(mode, "authorize-or-throw")), pc.equal(allowed, False))),
                     pc.fill_null(pc.starts_with(decisions.column("gate"), GATE_AFTER), False))
    involved = pc.unique(decisions.column("request_index").filter(pc.fill_null(special, False)).combine_chunks())
    codes = np.zeros(decisions.num_rows, dtype=np.int8)  # positions in _STATES: asked
    if len(involved):
        rows = np.nonzero(pc.is_in(decisions.column("request_index"), value_set=involved).to_numpy(zero_copy_only=False))[0]
        subset = decisions.take(pa.array(rows, pa.int64()))
        codes[rows] = _joined_states(subset, subset.column(f"allowed_{suffix}"))
    return _STATES.take(pa.array(codes))


_STATES = pa.array([ASKED, COVERED, GATED, ENDED], pa.string())


def _joined_states(decisions: pa.Table, allowed: pa.ChunkedArray) -> np.ndarray:
    """Positions in _STATES, row by row."""
    n = decisions.num_rows
    names = decisions.column("resource_name") if "resource_name" in decisions.column_names else pa.nulls(n, pa.string())
    base = pa.table({"_row": pa.array(np.arange(n, dtype=np.int64)),
                     "request_index": decisions.column("request_index"), "seq": decisions.column("seq"),
                     "check": decisions.column("check"), "kind": decisions.column("kind"), "mode": decisions.column("mode"),
                     "gate": decisions.column("gate"), "name": names, "allowed": allowed})
    is_shortcut = pc.equal(base.column("kind"), KIND_SHORTCUT)
    name_gated = _name_gated(base, is_shortcut)
    base = base.append_column("_name_gated", name_gated)
    granted = base.filter(pc.and_(pc.and_(is_shortcut, pc.fill_null(base.column("allowed"), False)), pc.invert(name_gated))).select(
        ["request_index", "check"]).group_by(["request_index", "check"], use_threads=False).aggregate([])
    granted = granted.append_column("covered", pa.array(np.ones(granted.num_rows, dtype=bool)))
    denied_gates = base.filter(pc.and_(pc.equal(base.column("mode"), "gate"), pc.equal(base.column("allowed"), False))).select(
        ["request_index", "check"]).group_by(["request_index", "check"], use_threads=False).aggregate([]).rename_columns(["request_index", "gate"])
    denied_gates = denied_gates.append_column("gated", pa.array(np.ones(denied_gates.num_rows, dtype=bool)))
    joined = base.join(granted, ["request_index", "check"], join_type="left outer", use_threads=False)
    joined = joined.join(denied_gates, ["request_index", "gate"], join_type="left outer", use_threads=False)
    gated_by_name = joined.column("_name_gated")
    covered = pc.and_(pc.and_(pc.invert(pc.equal(joined.column("kind"), KIND_SHORTCUT)), pc.fill_null(joined.column("covered"), False)),
                      pc.invert(gated_by_name))
    gated = pc.or_(pc.fill_null(joined.column("gated"), False), gated_by_name)
    throws = pc.and_(pc.and_(pc.equal(joined.column("mode"), "authorize-or-throw"), pc.invert(pc.equal(joined.column("kind"), KIND_SHORTCUT))),
                     pc.and_(pc.equal(joined.column("allowed"), False), pc.invert(pc.or_(covered, gated))))
    joined = joined.append_column("_covered", covered).append_column("_gated", gated)
    ends = joined.filter(pc.fill_null(throws, False)).group_by("request_index", use_threads=False).aggregate([("seq", "min")]).rename_columns(
        ["request_index", "end_seq"])
    joined = joined.join(ends, "request_index", join_type="left outer", use_threads=False).sort_by("_row")
    ended = pc.fill_null(pc.greater(joined.column("seq"), joined.column("end_seq")), False)
    state = pc.if_else(ended, 3, pc.if_else(joined.column("_name_gated"), 2,
                                            pc.if_else(joined.column("_covered"), 1, pc.if_else(joined.column("_gated"), 2, 0))))
    return state.to_numpy().astype(np.int8)


def _name_gated(base: pa.Table, is_shortcut: pa.ChunkedArray) -> pa.ChunkedArray:
    """Per row (in ``base``'s order): its gate is GATE_AFTER a check, and that check denied the same name (a shortcut:
    every per-name question of its check is so gated)."""
    after = pc.fill_null(pc.starts_with(base.column("gate"), GATE_AFTER), False)
    if not pc.any(after).as_py():
        return pa.chunked_array([np.zeros(base.num_rows, dtype=bool)])
    denied = base.filter(pc.and_(pc.and_(pc.invert(is_shortcut), pc.equal(base.column("allowed"), False)),
                                 pc.is_valid(base.column("name")))).select(["request_index", "check", "name"])
    denied = denied.group_by(["request_index", "check", "name"], use_threads=False).aggregate([]).rename_columns(["request_index", "dep", "name"])
    denied = denied.append_column("_denied", pa.array(np.ones(denied.num_rows, dtype=bool)))
    rows = base.select(["_row", "request_index", "check", "name"]).append_column(
        "dep", pc.if_else(after, pc.utf8_slice_codeunits(base.column("gate"), len(GATE_AFTER)), pa.scalar(None, pa.string())))
    rows = rows.join(denied, ["request_index", "dep", "name"], join_type="left outer", use_threads=False).sort_by("_row")
    per_name = pc.and_(pc.and_(after, pc.invert(is_shortcut)), pc.fill_null(rows.column("_denied"), False))
    open_rows = base.select(["request_index", "check"]).filter(pc.and_(pc.and_(after, pc.invert(is_shortcut)), pc.invert(per_name)))
    open_checks = open_rows.group_by(["request_index", "check"], use_threads=False).aggregate([])
    open_checks = open_checks.append_column("_open", pa.array(np.ones(open_checks.num_rows, dtype=bool)))
    shortcuts = base.select(["_row", "request_index", "check"]).join(open_checks, ["request_index", "check"], join_type="left outer",
                                                                      use_threads=False).sort_by("_row")
    closed_shortcut = pc.and_(pc.and_(after, is_shortcut), pc.invert(pc.fill_null(shortcuts.column("_open"), False)))
    return pc.or_(per_name, closed_shortcut)


def decide_all(bindings: Iterable[AclBinding], settings: AuthorizerSettings, actions: pa.Table) -> pa.Table:
    decider = Decider(list(bindings), settings)
    batches = [decider.answer_batch(b) for b in actions.to_batches()]
    return pa.Table.from_batches(batches, schema=ANSWER) if batches else ANSWER.empty_table()
