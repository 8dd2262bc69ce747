"""Property tests: the indexed Authorizer must answer exactly as the naive reference (reference.py).

Small alphabets make literal names, prefixes, "*" and "hardcode" (the KIP-679 probe name) collide often.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kafka_shim.authorizer import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    Authorizer,
    InvalidAclError,
    ResourcePattern,
    ResourcePatternFilter,
    UnparseableAclPrincipal,
)
from kafka_shim.authorizer.model import AclOperation as Op
from kafka_shim.authorizer.model import AclPermissionType as Perm
from kafka_shim.authorizer.model import PatternType as Pat
from kafka_shim.authorizer.model import ResourceType as RT
from tests.support.reference_authorizer import KafkaThrows, ReferenceAuthorizer

NAMES = ["", "a", "ab", "abc", "b", "*", "*a", "h", "hard", "hardcode", "kafka-cluster", "A"]
REQUEST_NAMES = [*NAMES, "abcd", "*ab", "hardcoded", "User:alice"]
ACL_PRINCIPALS = ["User:alice", "User:bob", "User:*", "Group:x", "Group:*", "User:", "User:admin", "alice", "User:a:b"]
SESSION_PRINCIPALS = ["User:alice", "User:bob", "User:*", "Group:x", "Group:*", "User:", "User:admin", "User:Alice", "User:a:b"]
ACL_HOSTS = ["*", "*", "127.0.0.1", "0:0:0:0:0:0:0:1", "10.0.0.1", "::1"]
SESSION_HOSTS = ["127.0.0.1", "0:0:0:0:0:0:0:1", "10.0.0.1", "::1"]
CONCRETE_TYPES = [RT.TOPIC, RT.GROUP, RT.CLUSTER, RT.TRANSACTIONAL_ID, RT.DELEGATION_TOKEN, RT.USER]
STORABLE_OPS = [op for op in Op if op not in (Op.ANY, Op.UNKNOWN)]
SUPER_USER_SETS = [(), ("User:admin",), ("User:admin", "User:*"), ("Group:x", "User:admin")]


@st.composite
def palettes(draw) -> dict:
    """A few resource types, names, principals, hosts and operations for one example, so ACLs and questions collide."""
    pick = lambda values, most: draw(st.lists(st.sampled_from(values), min_size=1, max_size=most, unique=True))  # noqa: E731
    # (principals: User:* half the time, as its ACLs concern every session principal)
    return {
        "types": pick([*CONCRETE_TYPES, RT.TOPIC, RT.TOPIC], 2),
        "names": pick(NAMES, 4),
        "principals": pick(ACL_PRINCIPALS, 2) + (["User:*"] if draw(st.booleans()) else []),
        "hosts": pick(ACL_HOSTS, 2),
        "ops": pick([*STORABLE_OPS, Op.ALL, Op.READ, Op.WRITE, Op.DESCRIBE], 2),
    }


def often(draw, palette_values, all_values):
    """Mostly from the palette, sometimes from everything."""
    return draw(st.sampled_from(palette_values)) if draw(st.integers(0, 9)) else draw(st.sampled_from(all_values))


def weighted(draw, *choices):
    """choices: (percent, values) pairs; the last one takes the remainder."""
    roll = draw(st.integers(0, 99))
    for percent, values in choices:
        if roll < percent:
            return draw(st.sampled_from(values))
        roll -= percent
    return draw(st.sampled_from(choices[-1][1]))


@st.composite
def bindings(draw, palette=None) -> AclBinding:
    if palette is None:
        palette = draw(palettes())
    rtype = RT.UNKNOWN if draw(st.integers(0, 30)) == 0 else often(draw, palette["types"], CONCRETE_TYPES)
    if rtype == RT.CLUSTER and draw(st.integers(0, 5)):
        name = "kafka-cluster"
    else:
        name = often(draw, palette["names"], [*NAMES, "User:alice"])
    pattern = draw(st.sampled_from([Pat.LITERAL, Pat.PREFIXED] * 10 + [Pat.UNKNOWN]))
    principal = often(draw, palette["principals"], ACL_PRINCIPALS)
    host = often(draw, palette["hosts"], ACL_HOSTS)
    op = Op.UNKNOWN if draw(st.integers(0, 30)) == 0 else often(draw, palette["ops"], STORABLE_OPS)
    perm = draw(st.sampled_from([Perm.ALLOW] * 6 + [Perm.DENY] * 5 + [Perm.UNKNOWN]))
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, host, op, perm))


def session_principals(palette) -> list[str]:
    found = [p if ":" in p else f"User:{p}" for p in palette["principals"]]
    return [*found, "User:admin"]


def session_hosts(palette) -> list[str]:
    found = [h for h in palette["hosts"] if h != "*"]
    return found or SESSION_HOSTS


@st.composite
def requests(draw, palette) -> tuple:
    rtype = often(draw, palette["types"], CONCRETE_TYPES)
    if rtype == RT.CLUSTER and draw(st.integers(0, 3)):
        name = "kafka-cluster"
    else:
        name = often(draw, palette["names"], REQUEST_NAMES) + draw(st.sampled_from(["", "", "", "b", "c", "*"]))
    principal = often(draw, session_principals(palette), SESSION_PRINCIPALS)
    host = often(draw, session_hosts(palette), SESSION_HOSTS)
    op = often(draw, [*palette["ops"], Op.DESCRIBE, Op.DESCRIBE_CONFIGS], list(Op))
    return principal, host, op, rtype, name


@st.composite
def filters(draw, palette=None) -> AclBindingFilter:
    """Mostly wide on the entry side (so several filters of one request hit the same ACLs), narrow on the resource side."""
    if palette is None:
        palette = draw(palettes())
    rtype = weighted(draw, (40, [RT.ANY]), (40, palette["types"]), (16, CONCRETE_TYPES), (4, [RT.UNKNOWN]))
    extended = [n + suffix for n in palette["names"] for suffix in ("b", "c", "*")]
    name = weighted(draw, (30, [None]), (45, palette["names"]), (15, extended), (10, [*NAMES, "abcd", "*ab", "hardcodes"]))
    pattern = weighted(draw, (97, [Pat.ANY, Pat.MATCH, Pat.LITERAL, Pat.PREFIXED]), (3, [Pat.UNKNOWN]))
    principal = weighted(draw, (60, [None]), (30, palette["principals"]), (10, ACL_PRINCIPALS))
    host = weighted(draw, (70, [None]), (25, palette["hosts"]), (5, ACL_HOSTS))
    op = weighted(draw, (65, [Op.ANY]), (25, palette["ops"]), (10, list(Op)))
    perm = weighted(draw, (65, [Perm.ANY]), (33, [Perm.ALLOW, Perm.DENY]), (2, [Perm.UNKNOWN]))
    return AclBindingFilter(ResourcePatternFilter(rtype, name, pattern), AccessControlEntryFilter(principal, host, op, perm))


@st.composite
def scenarios(draw, max_acls=14) -> tuple:
    palette = draw(palettes())
    acls = draw(st.lists(bindings(palette), max_size=max_acls))
    return palette, acls


class Recorder:
    """Stands in for AuditLog: keeps every Decision the engine logs."""

    denials = True
    grants = True
    every_decision = False  # Kafka 3.9's rule: only the decisions a request asks to log

    def __init__(self) -> None:
        self.decisions: list = []

    def log(self, decision) -> None:
        self.decisions.append(decision)


def build(acls, super_users, allow_everyone):
    recorder = Recorder()
    az = Authorizer(super_users="; ".join(super_users) + " ;", allow_everyone_if_no_acl_found=allow_everyone, audit=recorder)
    ref = ReferenceAuthorizer(super_users, allow_everyone)
    check_create(az, ref, acls)
    return az, ref, recorder


def check_create(az, ref, acls) -> None:
    results = az.create_acls(list(acls))
    oks = ref.create(acls)
    assert len(results) == len(acls)
    for binding, result, ok in zip(acls, results, oks, strict=True):
        assert (result.error is None) == ok, (binding, result)
        if not ok:
            assert isinstance(result.error, InvalidAclError)
    check_same_store(az, ref)


def check_same_store(az, ref) -> None:
    stored = az.acls()
    assert len(stored) == len(set(stored)), "an ACL is stored twice"
    assert set(stored) == set(ref.acls)
    assert len(stored) == len(ref.acls)


def outcome(ask, *args):
    """An answer, or "throws" where Kafka 3.9's authorizer throws (an ACL whose principal has no colon, on its walk)."""
    try:
        return ask(*args)
    except (UnparseableAclPrincipal, KafkaThrows):
        return "throws"


def check_request(az, ref, recorder, req) -> None:
    principal, host, op, rtype, name = req
    # authorize, and the rule the audit record names
    recorder.decisions.clear()
    got = outcome(lambda: az.authorize(principal, host, op, rtype, name, request="Metadata"))
    want = outcome(ref.decide, principal, host, op, rtype, name)
    if want == "throws" or got == "throws":
        assert got == want, (req, got, want)
        assert recorder.decisions == []  # Kafka logs nothing for a decision it could not make
    else:
        assert got == want.allowed, (req, want)
        assert len(recorder.decisions) == 1
        rule = recorder.decisions[0].rule
        if isinstance(want.rule, str):
            assert rule == want.rule, (req, rule, want)
        else:
            binding = getattr(rule, "binding", rule)
            assert binding in (want.allow_matches if want.allowed else want.deny_matches), (req, rule, want)
    # KIP-430 bitfield
    assert outcome(az.authorized_operations, principal, host, rtype, name) == outcome(ref.authorized_operations, principal, host, rtype, name), req
    # KIP-679
    if op not in (Op.ANY, Op.UNKNOWN):
        assert (outcome(az.authorize_by_resource_type, principal, host, op, rtype)
                == outcome(ref.authorize_by_resource_type, principal, host, op, rtype)), req


def check_describe(az, ref, f) -> None:
    assert Counter(az.describe_acls(f)) == Counter(ref.describe(f)), f


def check_delete(az, ref, fs) -> None:
    got = az.delete_acls(list(fs))
    want = ref.delete(fs)
    assert len(got) == len(fs), "one FilterResult per filter"
    for f, g, w in zip(fs, got, want, strict=True):
        if w.error is not None:
            assert isinstance(g.error, InvalidAclError) and str(g.error) == w.error, (f, g)
            assert g.deleted == []
        else:
            assert g.error is None, (f, g)
            assert Counter(g.deleted) == Counter(w.deleted), f
    check_same_store(az, ref)


common = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@common
@given(scenario=scenarios(), super_users=st.sampled_from(SUPER_USER_SETS), allow_everyone=st.booleans(), data=st.data())
def test_decisions_match_reference(scenario, super_users, allow_everyone, data) -> None:
    """authorize (and the audit rule it reports), the KIP-430 bitfield and KIP-679, question by question."""
    palette, acls = scenario
    az, ref, recorder = build(acls, super_users, allow_everyone)
    for req in data.draw(st.lists(requests(palette), min_size=1, max_size=12)):
        check_request(az, ref, recorder, req)


@common
@given(scenario=scenarios(), super_users=st.sampled_from(SUPER_USER_SETS), allow_everyone=st.booleans(), data=st.data())
def test_by_resource_type_matches_reference(scenario, super_users, allow_everyone, data) -> None:
    """KIP-679 on its own, for every principal/host/operation of the palette and every resource type."""
    palette, acls = scenario
    az, ref, _ = build(acls, super_users, allow_everyone)
    principals = [*session_principals(palette), data.draw(st.sampled_from(SESSION_PRINCIPALS))]
    hosts = [*session_hosts(palette), data.draw(st.sampled_from(SESSION_HOSTS))]
    ops = [op for op in palette["ops"]] + [data.draw(st.sampled_from(STORABLE_OPS))]
    for principal in principals:
        for host in hosts:
            for op in ops:
                for rtype in CONCRETE_TYPES:
                    assert (outcome(az.authorize_by_resource_type, principal, host, op, rtype)
                            == outcome(ref.authorize_by_resource_type, principal, host, op, rtype)), (principal, host, op, rtype)


DENSE_NAMES = ["a", "ab", "abc", "b", "*", "h", "hardcode"]
dense_bindings = st.builds(
    lambda name, pattern, principal, host, op, perm: AclBinding(ResourcePattern(RT.TOPIC, name, pattern),
                                                                AccessControlEntry(principal, host, op, perm)),
    st.sampled_from(DENSE_NAMES), st.sampled_from([Pat.LITERAL, Pat.PREFIXED]), st.sampled_from(["User:alice", "User:*", "User:bob"]),
    st.sampled_from(["*", "127.0.0.1", "10.0.0.1"]), st.sampled_from([Op.WRITE, Op.WRITE, Op.ALL, Op.READ]),
    st.sampled_from([Perm.ALLOW, Perm.DENY]))


@settings(max_examples=400, deadline=None)
@given(acls=st.lists(dense_bindings, max_size=8), allow_everyone=st.booleans())
def test_by_resource_type_dense(acls, allow_everyone) -> None:
    """KIP-679 where literal/prefix allows and denies of one principal and operation pile up on a few names."""
    az, ref, _ = build(acls, ("User:admin",), allow_everyone)
    for principal in ("User:alice", "User:bob", "User:carol", "User:admin"):
        for op in (Op.WRITE, Op.READ, Op.DESCRIBE, Op.ALL):
            got = az.authorize_by_resource_type(principal, "127.0.0.1", op, RT.TOPIC)
            assert got == ref.authorize_by_resource_type(principal, "127.0.0.1", op, RT.TOPIC), (principal, op)


@common
@given(scenario=scenarios(), data=st.data())
def test_describe_matches_reference(scenario, data) -> None:
    palette, acls = scenario
    az, ref, _ = build(acls, (), False)
    for f in data.draw(st.lists(filters(palette), min_size=1, max_size=8)):
        check_describe(az, ref, f)


@common
@given(scenario=scenarios(), super_users=st.sampled_from(SUPER_USER_SETS), allow_everyone=st.booleans(), data=st.data())
def test_delete_matches_reference(scenario, super_users, allow_everyone, data) -> None:
    """delete_acls with random filters (one result per filter, KRaft dedupe), then every answer again."""
    palette, acls = scenario
    az, ref, recorder = build(acls, super_users, allow_everyone)
    check_delete(az, ref, data.draw(st.lists(filters(palette), min_size=1, max_size=4)))
    for req in data.draw(st.lists(requests(palette), min_size=1, max_size=8)):
        check_request(az, ref, recorder, req)
    for f in data.draw(st.lists(filters(palette), max_size=4)):
        check_describe(az, ref, f)


@common
@given(scenario=scenarios(), data=st.data())
def test_acl_matched_by_two_filters_reported_under_both_and_deleted_once(scenario, data) -> None:
    _, acls = scenario
    az, ref, _ = build(acls, (), False)
    stored = az.acls()
    if not stored:
        return
    target = data.draw(st.sampled_from(sorted(stored, key=str)))
    p, e = target.pattern, target.entry
    exact = AclBindingFilter(ResourcePatternFilter(p.resource_type, p.name, p.pattern_type),
                             AccessControlEntryFilter(e.principal, e.host, e.operation, e.permission_type))
    broad = data.draw(st.sampled_from([
        AclBindingFilter(ResourcePatternFilter(RT.ANY, None, Pat.ANY), AccessControlEntryFilter(None, None, Op.ANY, Perm.ANY)),
        AclBindingFilter(ResourcePatternFilter(p.resource_type, p.name, Pat.ANY), AccessControlEntryFilter(None, None, Op.ANY, Perm.ANY)),
        AclBindingFilter(ResourcePatternFilter(RT.ANY, p.name, Pat.MATCH), AccessControlEntryFilter(None, None, Op.ANY, Perm.ANY)),
        AclBindingFilter(ResourcePatternFilter(RT.ANY, None, Pat.ANY), AccessControlEntryFilter(e.principal, None, Op.ANY, Perm.ANY)),
    ]))
    results = az.delete_acls([exact, broad, exact])
    assert len(results) == 3
    for r in results:
        assert r.error is None
        assert r.deleted.count(target) == 1
    assert target not in az.acls()
    assert len(az.acls()) == len(stored) - len(set(results[0].deleted) | set(results[1].deleted))
    ref.delete([exact, broad, exact])
    check_same_store(az, ref)


class AuthorizerMachine(RuleBasedStateMachine):
    """Interleaved creates, deletes and questions: the index (and any answer cache) must track every change."""

    @initialize(palette=palettes(), super_users=st.sampled_from(SUPER_USER_SETS), allow_everyone=st.booleans())
    def setup(self, palette, super_users, allow_everyone) -> None:
        self.palette = palette
        self.az, self.ref, self.recorder = build([], super_users, allow_everyone)
        self.asked: list[tuple] = []  # questions already answered (and possibly memoised), asked again after every step

    @rule(data=st.data())
    def create(self, data) -> None:
        check_create(self.az, self.ref, data.draw(st.lists(bindings(self.palette), min_size=1, max_size=6)))

    @rule(data=st.data())
    def delete(self, data) -> None:
        check_delete(self.az, self.ref, data.draw(st.lists(filters(self.palette), min_size=1, max_size=3)))

    @rule(data=st.data())
    def delete_one_stored(self, data) -> None:
        if not self.ref.acls:
            return
        b = data.draw(st.sampled_from(self.ref.acls))
        p, e = b.pattern, b.entry
        check_delete(self.az, self.ref, [AclBindingFilter(ResourcePatternFilter(p.resource_type, p.name, p.pattern_type),
                                                          AccessControlEntryFilter(e.principal, e.host, e.operation, e.permission_type))])

    @rule(data=st.data())
    def ask(self, data) -> None:
        for req in data.draw(st.lists(requests(self.palette), min_size=1, max_size=5)):
            check_request(self.az, self.ref, self.recorder, req)
            if req not in self.asked:
                self.asked = [*self.asked[-29:], req]

    @rule(data=st.data())
    def describe(self, data) -> None:
        check_describe(self.az, self.ref, data.draw(filters(self.palette)))

    @invariant()
    def same_store(self) -> None:
        if hasattr(self, "az"):
            check_same_store(self.az, self.ref)

    @invariant()
    def earlier_answers_still_right(self) -> None:
        """A memoised answer must not outlive an ACL change that affects it."""
        for req in getattr(self, "asked", ()):
            check_request(self.az, self.ref, self.recorder, req)


AuthorizerMachine.TestCase.settings = settings(max_examples=80, stateful_step_count=25, deadline=None,
                                               suppress_health_check=[HealthCheck.too_slow])
TestAuthorizerMachine = AuthorizerMachine.TestCase
