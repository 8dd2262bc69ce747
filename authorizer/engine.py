"""Kafka's StandardAuthorizer semantics over an index (see authorizer.index).

    az = Authorizer(super_users={"User:admin"}, allow_everyone_if_no_acl_found=False)
    az.create_acls([...])                 # one CreateResult per binding, in order
    az.delete_acls([filters])             # one FilterResult per filter (bindings it deleted)
    az.describe_acls(filter)              # bindings
    az.authorize(principal, host, operation, resource_type, name) -> bool
    az.authorized_operations(principal, host, resource_type, name) -> int   # KIP-430 bitfield
    az.authorize_by_resource_type(principal, host, operation, resource_type) -> bool   # KIP-679
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from kafka_shim.authorizer.acl_walk import KafkaOrder, unparseable, walk_position
from kafka_shim.authorizer.audit import AuditLog, Decision, rule_text
from kafka_shim.authorizer.index import ALLOW, APPLICABLE, DENY, AclIndex, Grants, Rule, TypeIndex, expand_allow, expand_deny
from kafka_shim.authorizer.model import (
    SUPPORTED_BITS,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    PatternType,
    ResourceType,
    parse_principal,
    validate_new_acl,
)
from kafka_shim.authorizer.store import AclStore, MemoryStore

_ALL = int(AclOperation.ALL)
_CACHE_LIMIT = 200_000  # memoised answers kept before the memo is dropped and rebuilt
_RULE_TEXTS_LIMIT = 100_000  # decision_rule_text's memo, dropped and rebuilt past this
_HARDCODE = "hardcode"  # the name Kafka's authorizeByResourceType probes with
# ``authorize``'s rule when an ACL decided and the audit log did not ask which one (``last_rule``).
MATCHING_ACL_UNRESOLVED = "MatchingAcl"


class InvalidAclError(ValueError):
    """An ACL or filter Kafka answers with INVALID_REQUEST (42); the message is Kafka's."""


class AclStoreError(RuntimeError):
    """The durable store failed; nothing of the batch was applied."""


@dataclass(frozen=True, slots=True)
class CreateResult:
    error: Exception | None = None


_CREATED = CreateResult()  # one shared success (frozen): a bulk load makes one per ACL


@dataclass(frozen=True, slots=True)
class FilterResult:
    deleted: list[AclBinding] = field(default_factory=list)
    error: Exception | None = None


@contextmanager
def _bulk(count: int) -> Iterator[None]:
    """Pause the cyclic GC while indexing many ACLs: it would rescan the growing index again and again."""
    if count < 10_000 or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def parse_super_users(value: str | Iterable[str] | None) -> frozenset[str]:
    """Kafka's super.users: ';'-separated principals, each trimmed; each must parse."""
    if value is None:
        return frozenset()
    items = value.split(";") if isinstance(value, str) else list(value)
    users = set()
    for item in items:
        item = item.strip()
        if item:
            parse_principal(item)
            users.add(item)
    return frozenset(users)


class Authorizer:
    def __init__(
        self,
        super_users: str | Iterable[str] | None = None,
        allow_everyone_if_no_acl_found: bool | str = False,
        store: AclStore | None = None,
        audit: AuditLog | None = None,
    ) -> None:
        self.super_users = parse_super_users(super_users)
        if isinstance(allow_everyone_if_no_acl_found, str):
            allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found.strip().lower() == "true"
        self.allow_everyone = bool(allow_everyone_if_no_acl_found)
        self.store = store or MemoryStore()
        self.audit = audit or AuditLog()
        self.index = AclIndex()
        self.generation = 0  # bumped on every change; callers may cache answers per generation
        self._lock = threading.Lock()  # mutations come from one loop, but the store may be shared with tools
        # Memoised answers, per session principal, valid until an ACL that could change them changes.
        self._by_type_cache: dict[str, dict[tuple[str, int, int], bool]] = {}
        self._bits_cache: dict[str, dict[tuple[str, int, str], tuple[int, int, bool]]] = {}
        self._memo_size = 0
        self._rule_texts: dict[tuple[str, str, int, int, str, bool], str] = {}  # decision_rule_text's, this generation
        self._rule_texts_generation = 0
        # What decided the last ``authorize``, as far as it knew without more work: "SuperUser", "DefaultAllow",
        # "DefaultDeny", the matching ACL's Rule (when the audit log wanted it), or MATCHING_ACL_UNRESOLVED (an ACL decided,
        # not looked up). Recording decisions reads it instead of asking again (``decision_rule_text``).
        self.last_rule: Rule | str = "DefaultDeny"
        # Resource types holding ACLs whose principal Kafka cannot parse (see acl_walk), and their ACLs in Kafka's order.
        self._unparseable: dict[int, int] = {}
        self._kafka_orders: dict[int, KafkaOrder] = {}
        stored = self.store.load()
        with _bulk(len(stored)):
            for binding in stored:
                self.index.add(binding)
        self._count_unparseable(stored, 1)

    # -- ACL management ------------------------------------------------------------------
    def create_acls(self, bindings: list[AclBinding]) -> list[CreateResult]:
        """Store new ACLs. The batch is durable before this returns; duplicates succeed without a copy."""
        with _bulk(len(bindings)):
            return self._create(bindings)

    def _create(self, bindings: list[AclBinding]) -> list[CreateResult]:
        results: list[CreateResult] = []
        valid: dict[AclBinding, None] = {}  # ordered and de-duplicated
        for binding in bindings:
            reason = validate_new_acl(binding)
            if reason is not None:
                results.append(CreateResult(InvalidAclError(reason)))
                continue
            results.append(_CREATED)
            valid[binding] = None
        if not valid:
            return results
        with self._lock:  # found absent and added under one hold: another thread's create cannot add it in between
            index = self.index
            new = [binding for binding in valid if binding not in index]
            if not new:
                return results
            try:
                self.store.apply(created=new, deleted=[])
            except Exception as exc:
                failure = AclStoreError(f"could not store ACLs: {exc}")
                return [r if r.error else CreateResult(failure) for r in results]
            add = index.add_absent
            for binding in new:
                add(binding)
            self._count_unparseable(new, 1)
            self._changed(new)
        return results

    def delete_acls(self, filters: list[AclBindingFilter]) -> list[FilterResult]:
        """Delete the ACLs each filter matches, each filter seeing the ACLs as they were before the request."""
        results: list[FilterResult] = []
        doomed: dict[AclBinding, None] = {}
        for f in filters:
            if f.pattern_filter.resource_type.is_unknown or f.pattern_filter.pattern_type.is_unknown:
                results.append(FilterResult(error=InvalidAclError("Unknown patternFilter.")))
                continue
            if f.entry_filter.operation.is_unknown or f.entry_filter.permission_type.is_unknown:
                results.append(FilterResult(error=InvalidAclError("Unknown entryFilter.")))
                continue
            matched = self.describe_acls(f)
            results.append(FilterResult(deleted=matched))
            for binding in matched:
                doomed[binding] = None
        if doomed:
            with self._lock:
                try:
                    self.store.apply(created=[], deleted=list(doomed))
                except Exception as exc:
                    failure = AclStoreError(f"could not delete ACLs: {exc}")
                    return [FilterResult(error=r.error or failure) for r in results]
                for binding in doomed:
                    self.index.remove(binding)
                self._count_unparseable(doomed, -1)
                self._changed(doomed)
        return results

    def describe_acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        if binding_filter.is_unknown:
            return []
        pf = binding_filter.pattern_filter
        if pf.name is not None and pf.resource_type != ResourceType.ANY and pf.pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
            index = self.index.type_index(pf.resource_type)
            candidates = [] if index is None else index.bindings_at(pf.pattern_type, pf.name)
        elif pf.name is not None and pf.resource_type != ResourceType.ANY and pf.pattern_type == PatternType.MATCH:
            index = self.index.type_index(pf.resource_type)
            candidates = [] if index is None else index.bindings_matching(pf.name)
        else:
            candidates = self.index
        return [b for b in candidates if binding_filter.matches(b)]

    def acls(self) -> list[AclBinding]:
        return list(self.index)

    def _count_unparseable(self, bindings: Iterable[AclBinding], delta: int) -> None:
        for b in bindings:
            if unparseable(b.entry.principal):
                rtype = int(b.pattern.resource_type)
                count = self._unparseable.get(rtype, 0) + delta
                if count:
                    self._unparseable[rtype] = count
                else:
                    self._unparseable.pop(rtype, None)

    def _kafka_order(self, resource_type: int) -> KafkaOrder | None:
        """The type's ACLs in Kafka's order while it holds an unparseable principal (else None: nothing to replay)."""
        if resource_type not in self._unparseable:
            return None
        order = self._kafka_orders.get(resource_type)
        if order is None:
            order = self._kafka_orders[resource_type] = KafkaOrder(b for b in self.index if b.pattern.resource_type == resource_type)
        return order

    def _changed(self, bindings: Iterable[AclBinding]) -> None:
        """Forget the memoised answers these ACL changes could affect."""
        self.generation += 1
        if self._kafka_orders:
            for b in bindings:
                self._kafka_orders.pop(int(b.pattern.resource_type), None)
        principals = {b.entry.principal for b in bindings}
        # With allow.everyone.if.no.acl.found, any ACL can turn another principal's DefaultAllow into a
        # deny; and a User:* ACL concerns every principal. Otherwise only the ACLs' own principals change.
        if self.allow_everyone or WILDCARD_PRINCIPAL in principals:
            self._forget()
            return
        for principal in principals:
            self._memo_size -= len(self._bits_cache.pop(principal, ())) + len(self._by_type_cache.pop(principal, ()))

    def _forget(self) -> None:
        self._by_type_cache.clear()
        self._bits_cache.clear()
        self._memo_size = 0

    # -- decisions -------------------------------------------------------------------------
    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation | int,
        resource_type: ResourceType | int,
        name: str,
        *,
        request: str | None = None,
        resource_ref_count: int = 1,
        log_if_allowed: bool = True,
        log_if_denied: bool = True,
    ) -> bool:
        """Kafka's decision for one action (StandardAuthorizerData.authorize)."""
        op = int(operation)
        if principal in self.super_users:
            allowed, rule = True, "SuperUser"
        else:
            if self._unparseable and (order := self._kafka_order(int(resource_type))) is not None:
                order.check(principal, host, op, name)  # raises UnparseableAclPrincipal where Kafka throws
            memo = self._bits_cache.get(principal)
            if memo is None:
                memo = self._bits_cache[principal] = {}
            # A plain int, not the enum: tuples of str and int leave the cyclic GC's tracking, so a cold pass that
            # memoises many answers does not make the GC rescan the whole index again and again (2-3x the cost).
            key = (host, resource_type if type(resource_type) is int else int(resource_type), name)
            bits = memo.get(key)
            if bits is None:
                bits = self._compute(memo, key, principal, host, resource_type, name)
            bit = 1 << op
            audit = self.audit
            if bits >> 32 & bit:
                allowed = False
                rule = self._rule_for(principal, host, op, resource_type, name, DENY) if audit.denials else MATCHING_ACL_UNRESOLVED
            elif bits & bit:
                allowed = True
                rule = self._rule_for(principal, host, op, resource_type, name, ALLOW) if audit.grants else MATCHING_ACL_UNRESOLVED
            elif self.allow_everyone and not bits & APPLICABLE:
                allowed, rule = True, "DefaultAllow"
            else:
                allowed, rule = False, "DefaultDeny"
        self.last_rule = rule
        audit = self.audit
        # Before 2.4 (an emulated release) Kafka logged every decision, whatever the request's logging flags.
        if ((not allowed and audit.denials and (log_if_denied or audit.every_decision))
                or (allowed and audit.grants and (log_if_allowed or audit.every_decision))):
            audit.log(Decision(principal, host, op, int(resource_type), name, allowed, rule, request, resource_ref_count))
        return allowed

    def _compute(self, memo: dict, key: tuple[str, int, str], principal: str, host: str, resource_type: int, name: str) -> int:
        """The packed allowed and denied bits (index.pack) and APPLICABLE for a principal, host and resource.

        Memoised under ``key`` in the principal's ``memo`` until the ACLs change: a broker asks the same
        question for every request on a topic.
        """
        index = self.index.by_type.get(resource_type)
        bits = 0 if index is None else index.bits(principal, host, name, self.allow_everyone)
        if self._memo_size >= _CACHE_LIMIT:
            self._forget()
            memo = self._bits_cache[principal] = {}
        self._memo_size += 1
        memo[key] = bits
        return bits

    def decision_rule(self, principal: str, host: str, operation: AclOperation | int, resource_type: ResourceType | int,
                      name: str, allowed: bool) -> Rule | str:
        """What decided ``authorize``'s answer ``allowed`` for this action: "SuperUser", "DefaultAllow", "DefaultDeny"
        or the matching ACL's ``Rule`` (``audit.rule_text`` writes it as Kafka's audit log does). For recording
        decisions (trace capture); it asks the index again, so the hot path of ``authorize`` stays as it is."""
        if principal in self.super_users:
            return "SuperUser"
        op, rtype = int(operation), int(resource_type)
        if allowed:
            rule = self._rule_for(principal, host, op, rtype, name, ALLOW)
            return "DefaultAllow" if isinstance(rule, str) else rule
        return self._rule_for(principal, host, op, rtype, name, DENY)

    def decision_rule_text(self, principal: str, host: str, operation: int, resource_type: int, name: str,
                           allowed: bool) -> str:
        """``decision_rule`` as Kafka's audit log writes it, remembered until the ACLs change: trace capture records
        it for every decision, and a walk plus the text per request was a tenth of a Metadata request's time."""
        if self._rule_texts_generation != self.generation:
            self._rule_texts.clear()
            self._rule_texts_generation = self.generation
        key = (principal, host, operation, resource_type, name, allowed)
        text = self._rule_texts.get(key)
        if text is None:
            if len(self._rule_texts) >= _RULE_TEXTS_LIMIT:
                self._rule_texts.clear()
            text = self._rule_texts[key] = rule_text(self.decision_rule(principal, host, operation, resource_type, name, allowed))
        return text

    def _rule_for(self, principal: str, host: str, op: int, resource_type: int, name: str, permission: int) -> Rule | str:
        index = self.index.by_type.get(resource_type)
        return _matching_rule(_grants_for(index, principal, name), name, host, op, permission) if index is not None else "DefaultDeny"

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType | int, name: str) -> int:
        """The KIP-430 bitfield: the resource type's supported operations that authorize() would allow."""
        supported = SUPPORTED_BITS.get(resource_type, 0)
        if principal in self.super_users:
            return supported
        if self._unparseable and (order := self._kafka_order(int(resource_type))) is not None:
            # Kafka authorizes each supported operation; the first walk that meets such an ACL throws.
            for op in range(supported.bit_length()):
                if supported >> op & 1:
                    order.check(principal, host, op, name)
        memo = self._bits_cache.get(principal)
        if memo is None:
            memo = self._bits_cache[principal] = {}
        key = (host, resource_type if type(resource_type) is int else int(resource_type), name)  # see authorize
        bits = memo.get(key)
        if bits is None:
            bits = self._compute(memo, key, principal, host, resource_type, name)
        if self.allow_everyone and not bits & APPLICABLE:
            return supported
        return supported & bits & ~(bits >> 32)

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: AclOperation | int, resource_type: ResourceType | int, *, request: str | None = None
    ) -> bool:
        """KIP-679: may the principal perform the operation on at least one resource of this type?"""
        op, rtype = int(operation), int(resource_type)
        if op in (AclOperation.ANY, AclOperation.UNKNOWN) or rtype in (ResourceType.ANY, ResourceType.UNKNOWN):
            raise ValueError(f"authorize_by_resource_type needs a concrete operation and resource type, not {op}/{rtype}")
        # Kafka first authorizes the literal name "hardcode" (logged if allowed, never if denied).
        if self.authorize(principal, host, op, rtype, _HARDCODE, request=request, resource_ref_count=0, log_if_denied=False):
            return True
        if self._unparseable and (order := self._kafka_order(rtype)) is not None:
            order.check_by_resource_type(principal, host, op)  # raises UnparseableAclPrincipal where Kafka throws
        memo = self._by_type_cache.get(principal)
        if memo is None:
            memo = self._by_type_cache[principal] = {}
        key = (host, op, rtype)
        cached = memo.get(key)
        if cached is None:
            self._memo_size += 1
            if self._memo_size > _CACHE_LIMIT:
                self._forget()
                memo = self._by_type_cache[principal] = {}
            cached = memo[key] = self._any_resource_allowed(principal, host, op, rtype)
        return cached

    def _any_resource_allowed(self, principal: str, host: str, op: int, rtype: int) -> bool:
        index: TypeIndex | None = self.index.by_type.get(rtype)
        if index is None:
            return False
        principals = (principal,) if principal == WILDCARD_PRINCIPAL else (principal, WILDCARD_PRINCIPAL)
        hosts = (WILDCARD_HOST,) if host == WILDCARD_HOST else (WILDCARD_HOST, host)
        ops = (op,) if op == _ALL else (op, _ALL)
        summaries = [s for p in principals for h in hosts for o in ops if (s := index.summaries.get((p, h, o))) is not None]
        if any(s.wildcard_deny for s in summaries):
            return False
        if any(s.wildcard_allow for s in summaries):
            return True
        deny_literal = [s.deny_literal for s in summaries if s.deny_literal]
        deny_prefix = [(s.deny_prefix, sorted(s.deny_prefix_lengths)) for s in summaries if s.deny_prefix]

        def dominated(name: str) -> bool:
            for prefixes, lengths in deny_prefix:
                for length in lengths:
                    if length > len(name):
                        break
                    if name[:length] in prefixes:
                        return True
            return False

        for s in summaries:
            for name in s.allow_literal or ():
                if not any(name in d for d in deny_literal) and not dominated(name):
                    return True
            for name in s.allow_prefix or ():
                if not dominated(name):
                    return True
        return False


def _grants_for(index: TypeIndex, principal: str, name: str) -> list[Grants]:
    """The session principal's and User:*'s grants on every pattern that applies to the name."""
    principals = index.principals
    table = principals.get(principal)
    found = table.matching(name, decision=True) if table is not None else []
    if principal != WILDCARD_PRINCIPAL:
        table = principals.get(WILDCARD_PRINCIPAL)
        if table is not None:
            found += table.matching(name, decision=True)
    return found


def _matching_rule(grants: list[Grants], name: str, host: str, op: int, permission: int) -> Rule | str:
    """The ACL that decided, as Kafka's authorizer names it (audit log, trace decisions): of the ACLs that match, the
    first DENY or the last ALLOW its walk meets (acl_walk.walk_position). Only looked up when it will be written."""
    matching = []
    for g in grants:
        for binding in g.bindings:
            e = binding.entry
            if e.permission_type != permission or (e.host != WILDCARD_HOST and e.host != host):
                continue
            granted = expand_allow(1 << e.operation) if permission == ALLOW else expand_deny(1 << e.operation)
            if granted & (1 << op):
                matching.append(binding)
    if not matching:
        return "DefaultDeny"
    if len(matching) == 1:
        return Rule(matching[0])
    deny = permission == DENY
    pick = min if deny else max
    return Rule(pick(matching, key=lambda b: walk_position(b, name, deny=deny)))
