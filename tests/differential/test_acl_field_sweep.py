"""Issue 18: every field of CreateAcls, DescribeAcls and DeleteAcls, malformed and unusual values, v0-v3, against Kafka 3.9.

Each value class of each field is one deterministic case (the closing list of what Kafka does with each is in the
README's ACL-API row and the findings note of issue 18). A creation case sends ``[case, kept]`` (``kept`` a plain valid
ACL, which shows whether a bad creation fails alone or takes the request with it) to both brokers and compares:

1. the CreateAcls answers, field by field (or that both closed the connection);
2. what each then stores: Kafka's DescribeAcls of everything against kafka-shim's authorizer (``Peers.settle``), and
   both brokers' DescribeAcls answers of everything, at v3 and at the case's version;
3. a DeleteAcls at the case's version whose filter names the case's every field, and what is left after it.

Filter cases put a stock of unusual ACLs on both brokers, then send DescribeAcls and DeleteAcls filters with each
value class of each filter field. Values no encoder writes (longer than 32767 bytes, not UTF-8, null in a
non-nullable field, negative lengths) go on the wire through tests/support/raw_strings.py. A hypothesis run mixes
the classes into batches; a last test takes some cases through kafka-shim's durable ACL store (a restart with
``log.dirs``) and compares ``kafka-shim acls --list`` with Kafka's ``kafka-acls.sh --list``.

Set SWEEP_FINDINGS=<file> to have each creation case's Kafka answer and what Kafka stored appended to that file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shim.protocol.messages import CreateAclsRequest, DeleteAclsRequest
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.differential.test_acls_cli import canonical as cli_canonical
from tests.differential.test_acls_cli import kafka_acls
from tests.support.acl_order import canonical, mask_not_authorized
from tests.support.acl_peers import (
    ALLOW,
    ANONYMOUS_MAY_ALTER,
    ANY,
    CLUSTER,
    CREATE_ACLS,
    DELETE_ACLS,
    DENY,
    DESCRIBE_ACLS,
    GROUP,
    LITERAL,
    MATCH,
    PREFIXED,
    TOPIC,
    TRANSACTIONAL_ID,
    USER,
    WRITE,
    Peers,
    acl,
    binding_of,
    delete,
    describe,
    secured_config,
)
from tests.support.cli_helpers import run_acls
from tests.support.compare import assert_same
from tests.support.raw_strings import MARKER, RawString, raw_frame
from tests.support.wire import Answer, exchange_both

DELEGATION_TOKEN = 6
VERSIONS = range(4)
KEPT = acl(name="sweep-kept", principal="User:kept")

# -- the value classes ----------------------------------------------------------------------------------------------------
LONG_1K = "a" * 1019
PRINCIPALS = {
    "empty": "", "no-colon": "alice", "unknown-type": "Foo:bar", "empty-type": ":x", "empty-name": "User:", "colon-only": ":",
    "two-colons": "User:a:b", "leading-space": " User:alice", "space-after-colon": "User: alice", "inner-space": "User:al ice",
    "trailing-space": "User:alice ", "lower-case-type": "user:alice", "user-wildcard": "User:*", "group-wildcard": "Group:*",
    "non-ascii": "User:ünïcødé", "emoji": "User:😀", "non-bmp": "User:𠜎𠜱", "bmp-above-surrogates": "User:\uff21\ufffd",
    "control-chars": "User:a\tb\nc", "nul": "User:a\x00b", "long-1k": "User:" + LONG_1K,
    "long-32767": "User:" + "a" * 32762, "long-32767-two-byte": "User:" + "é" * 16381,
}
HOSTS = {
    "empty": "", "star": "*", "not-an-ip": "not-an-ip", "bad-ipv4": "999.1.1.1", "ipv4": "10.0.0.1", "ipv6-short": "::1",
    "ipv6-full": "0:0:0:0:0:0:0:1", "ipv6-bracketed": "[::1]", "ipv6-scoped": "fe80:0:0:0:0:0:0:1%eth0", "hostname": "localhost",
    "cidr": "10.0.0.0/8", "star-suffix": "10.0.0.*", "padded": " 10.0.0.1", "non-ascii": "hôst", "long-1k": "h" * 1024,
    "long-32767": "h" * 32767,
}
NAMES = {
    "empty": "", "star": "*", "two-stars": "**", "looks-prefixed": "foo*", "star-inside": "a*b", "question-mark": "?",
    "dot": ".", "space": " ", "padded": " foo", "slash": "a/b", "illegal-topic": "bad name!", "kafka-cluster": "kafka-cluster",
    "non-ascii": "tøpïc", "emoji": "😀", "non-bmp-then-ascii": "𠜎x", "control-chars": "a\nb", "nul": "a\x00b",
    "long-1k": "t" * 1024, "long-32767": "t" * 32767, "long-32767-three-byte": "€" * 10922 + "t",
}
# Raw wire values, per field kind: ``principal``/``host``/``name`` are filled in.
RAW = {
    "over-32767": lambda prefix: RawString("over-32767", prefix + b"a" * (32768 - len(prefix))),
    "invalid-utf8": lambda prefix: RawString("invalid-utf8", prefix + b"al\xffi\xc3(ce\xed\xa0\x80\xf0\x9f\x98"),
    "null": lambda prefix: RawString("null"),
    "negative-length": lambda prefix: RawString("negative-length", length=-2),
}
RAW_PREFIX = {"principal": b"User:", "host": b"", "name": b""}

# Enum codes: UNKNOWN (0), ANY (1), MATCH (2, pattern type), the defined ones, the next undefined one, and other bytes.
ENUM_CODES = {
    "rtype": [0, 1, 2, 3, 4, 5, 6, 7, 8, 99, 127, -1, -128],
    "pattern": [0, 1, 2, 3, 4, 5, 99, 127, -1, -128],
    "operation": [0, 1, *range(2, 15), 15, 99, 127, -1, -128],
    "permission": [0, 1, 2, 3, 4, 99, 127, -1, -128],
}
# A valid name for each resource type, so that a type case fails (or not) because of its type alone.
NAME_FOR_TYPE = {CLUSTER: "kafka-cluster"}
# Names per resource type beyond TOPIC's (CLUSTER's one valid name, USER principals as names, every type's "*").
TYPED_NAMES = [
    (CLUSTER, "kafka-cluster"), (CLUSTER, "Kafka-Cluster"), (CLUSTER, "kafka-cluster "), (CLUSTER, "*"), (CLUSTER, ""),
    (GROUP, "*"), (GROUP, "😀"), (TRANSACTIONAL_ID, "*"), (TRANSACTIONAL_ID, ""), (DELEGATION_TOKEN, "tok"), (DELEGATION_TOKEN, "*"),
    (USER, "User:alice"), (USER, "alice"), (USER, "*"), (USER, "User:*"),
]

# -- findings ---------------------------------------------------------------------------------------------------------------
FINDINGS: list[str] = []


@pytest.fixture(scope="module", autouse=True)
def findings() -> Iterator[None]:
    yield
    target = os.environ.get("SWEEP_FINDINGS")
    if target and FINDINGS:
        with open(target, "a", encoding="utf-8") as out:
            out.write("\n".join(FINDINGS) + "\n")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:24]}...({len(str(value))} chars)"


def _summary(answer: Answer) -> str:
    if answer.closed:
        return "connection closed"
    return "; ".join(f"{r.error_code} {_short(r.error_message)}" for r in answer.body.results)


def _note(field: str, value_class: str, version: int, kafka: Answer, stored: list[tuple], differs: bool = False) -> None:
    others = [r for r in stored if r != KEPT_ROW and r[3] != ANONYMOUS_MAY_ALTER.principal]
    what = ", ".join(f"{_short(r[1])}/{_short(r[3])}/{_short(r[4])} op {r[5]}" for r in others) or "nothing"
    same = "kafka-shim DIFFERS" if differs else "kafka-shim same"
    FINDINGS.append(f"| {field} | {value_class} | v{version} | {_summary(kafka)} | stored: {what} | {same} |")


def _note_filter(api: str, version: int, change: dict, kafka: Answer) -> None:
    """Kafka's answer to one filter over the stock: its error, and how many stock ACLs it matched."""
    if kafka.closed:
        answer = "connection closed"
    elif api == "DescribeAcls":
        answer = f"{kafka.body.error_code}, {sum(len(r.acls) for r in kafka.body.resources)} ACLs"
    else:
        r = kafka.body.filter_results[0]
        answer = f"{r.error_code} {_short(r.error_message)}, {len(r.matching_acls)} ACLs"
    FINDINGS.append(f"| {api} filter | {', '.join(f'{k}={_short(v)}' for k, v in change.items())} | v{version} | {answer} | kafka-shim same |")


KEPT_ROW = (KEPT.resource_type, KEPT.resource_name, KEPT.resource_pattern_type, KEPT.principal, KEPT.host, KEPT.operation,
            KEPT.permission_type)


# -- one creation case ------------------------------------------------------------------------------------------------------
def _compare(kafka: Answer, shim: Answer, what: str) -> None:
    for answer in (kafka, shim):
        mask_not_authorized(canonical(answer))
    assert_same(kafka, shim, what=what)


def _everything(peers: Peers, version: int, what: str) -> None:
    """What each broker now stores: Kafka's rows against kafka-shim's, and both DescribeAcls answers of everything."""
    peers.settle()
    peers.same(DESCRIBE_ACLS, 3, describe(), what=f"DescribeAcls v3 of everything after {what}")
    if version != 3:
        flt = describe(pattern=LITERAL) if version == 0 else describe()
        peers.same(DESCRIBE_ACLS, version, flt, what=f"DescribeAcls v{version} of everything after {what}")


def _exact_filter(c, version: int):
    pattern = LITERAL if version == 0 else c.resource_pattern_type
    return delete(c.resource_type, c.resource_name, pattern, c.principal, c.host, c.operation, c.permission_type)


def sweep_creation(peers: Peers, version: int, creation, field: str, value_class: str) -> None:
    what = f"CreateAcls v{version} with {field} {value_class}"
    kafka, shim = peers.both(CREATE_ACLS, version, CreateAclsRequest(creations=[creation, KEPT]))
    try:
        _compare(kafka, shim, what)
        _everything(peers, version, what)
    except AssertionError:
        _note(field, value_class, version, kafka, [], differs=True)
        raise
    _note(field, value_class, version, kafka, peers._kafka_rows())
    peers.same(DELETE_ACLS, version, DeleteAclsRequest(filters=[_exact_filter(creation, version)]),
               what=f"DeleteAcls v{version} of the ACL of {what}")
    _everything(peers, version, f"DeleteAcls v{version} of {field} {value_class}")


def _cases(values: dict[str, str], patterns: tuple[int, ...] = (LITERAL,)) -> list:
    out = []
    for label, value in values.items():
        for pattern in patterns:
            for version in VERSIONS:
                if version == 0 and pattern != LITERAL:
                    continue  # v0 has no pattern type field: LITERAL only
                tag = label if patterns == (LITERAL,) else f"{label}-{'prefixed' if pattern == PREFIXED else 'literal'}"
                out.append(pytest.param(label, value, pattern, version, id=f"{tag}-v{version}"))
    return out


@pytest.mark.parametrize(("label", "principal", "pattern", "version"), _cases(PRINCIPALS))
def test_principal(acl_admin: Peers, label: str, principal: str, pattern: int, version: int) -> None:
    sweep_creation(acl_admin, version, acl(name="sweep-principal", principal=principal), "principal", label)


@pytest.mark.parametrize(("label", "host", "pattern", "version"), _cases(HOSTS))
def test_host(acl_admin: Peers, label: str, host: str, pattern: int, version: int) -> None:
    sweep_creation(acl_admin, version, acl(name="sweep-host", host=host), "host", label)


@pytest.mark.parametrize(("label", "name", "pattern", "version"), _cases(NAMES, (LITERAL, PREFIXED)))
def test_resource_name(acl_admin: Peers, label: str, name: str, pattern: int, version: int) -> None:
    sweep_creation(acl_admin, version, acl(name=name, pattern=pattern), "resource name", f"{label} {'PREFIXED' if pattern == PREFIXED else 'LITERAL'}")


def _typed_cases() -> list:
    return [pytest.param(rtype, name, pattern, version,
                         id=f"type{rtype}-{name or 'empty'}-{'prefixed' if pattern == PREFIXED else 'literal'}-v{version}")
            for rtype, name in TYPED_NAMES for pattern in (LITERAL, PREFIXED) for version in VERSIONS
            if version > 0 or pattern == LITERAL]  # v0 has no pattern type field


@pytest.mark.parametrize(("rtype", "name", "pattern", "version"), _typed_cases())
def test_resource_name_per_type(acl_admin: Peers, rtype: int, name: str, pattern: int, version: int) -> None:
    operation = 2  # ALL: Kafka does not check an operation against the resource type
    sweep_creation(acl_admin, version, acl(rtype=rtype, name=name, pattern=pattern, operation=operation), "resource name per type",
                   f"type {rtype} {name!r} {'PREFIXED' if pattern == PREFIXED else 'LITERAL'}")


def _enum_cases() -> list:
    out = []
    for field, codes in ENUM_CODES.items():
        for code in codes:
            for version in VERSIONS:
                if field == "pattern" and version == 0:
                    continue  # no such field at v0 (test_v0_has_no_pattern_type covers it)
                out.append(pytest.param(field, code, version, id=f"{field}{code}-v{version}"))
    return out


@pytest.mark.parametrize(("field", "code", "version"), _enum_cases())
def test_enum_code_in_creation(acl_admin: Peers, field: str, code: int, version: int) -> None:
    change: dict = {field: code}
    if field == "rtype":
        change["name"] = NAME_FOR_TYPE.get(code, "sweep-type")
    sweep_creation(acl_admin, version, acl(**change), field, f"code {code}")


@pytest.mark.parametrize("version", VERSIONS)
def test_v0_has_no_pattern_type(acl_admin: Peers, version: int) -> None:
    """The default pattern type (LITERAL) at every version, the only one v0 can say, with a literal "*"."""
    sweep_creation(acl_admin, version, acl(name="*"), "pattern (absent at v0)", "default LITERAL")


# -- raw wire values in a creation ------------------------------------------------------------------------------------------
def _raw_cases() -> list:
    out = []
    for field in ("principal", "host", "name"):
        for label in RAW:
            for version in VERSIONS:
                if RAW[label](RAW_PREFIX[field]).encoded(version >= 2) is None:
                    continue  # this encoding cannot express it (no >32767 int16 length; no negative compact length)
                out.append(pytest.param(field, label, version, id=f"{field}-{label}-v{version}"))
    return out


def _raw_both(peers: Peers, api_key: int, version: int, body, raw: RawString) -> tuple[Answer, Answer]:
    peers._cid += 1
    frame = raw_frame(api_key, version, peers._cid, body, raw)
    assert frame is not None
    return exchange_both(peers.oracle.plaintext, peers.shim_address, frame, api_key, version)


@pytest.mark.parametrize(("field", "label", "version"), _raw_cases())
def test_raw_value_in_creation(acl_admin: Peers, field: str, label: str, version: int) -> None:
    raw = RAW[label](RAW_PREFIX[field])
    creation = acl(name=MARKER if field == "name" else "sweep-raw", principal=MARKER if field == "principal" else "User:raw",
                   host=MARKER if field == "host" else "*")
    what = f"CreateAcls v{version} with a {label} {field}"
    kafka, shim = _raw_both(acl_admin, CREATE_ACLS, version, CreateAclsRequest(creations=[creation, KEPT]), raw)
    _compare(kafka, shim, what)
    _everything(acl_admin, version, what)
    _note(field, f"raw {label}", version, kafka, acl_admin._kafka_rows())
    kafka, shim = _raw_both(acl_admin, DELETE_ACLS, version, DeleteAclsRequest(filters=[_exact_filter(creation, version)]), raw)
    _compare(kafka, shim, f"DeleteAcls v{version} with a {label} {field} filter")
    _everything(acl_admin, version, f"DeleteAcls v{version} with a {label} {field}")


# Broken UTF-8, where Java's String constructor and Python's "replace" count U+FFFD differently (protocol/java_utf8.py).
BROKEN_UTF8 = [b"\xff", b"\xc3(", b"\xc0\x80", b"\xe2\x82", b"\xe2\x82x", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xed\xa0\x80\xed\xb0\x80",
               b"\xed\xa0", b"\xed\xa0x", b"\xf0\x9f\x98", b"\xf0\x9f\x98x", b"\xf0\x9fx", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80",
               b"\xf8\x88\x80\x80\x80", b"\x80\xbf", b"\xef\xbf\xbe", b"\xf0\x80\x80\x80"]


@pytest.mark.parametrize("at_end", [False, True], ids=["inside", "at-the-end"])
def test_broken_utf8_stored_as_java_decodes_it(acl_admin: Peers, at_end: bool) -> None:
    """Each broken sequence in a principal (followed by text, or ending it): both store the same string."""
    for index, broken in enumerate(BROKEN_UTF8):
        raw = RawString("broken", b"User:" + broken + (b"" if at_end else b"|x"))
        kafka, shim = _raw_both(acl_admin, CREATE_ACLS, 3, CreateAclsRequest(creations=[acl(name=f"utf8-{index}", principal=MARKER)]), raw)
        _compare(kafka, shim, f"CreateAcls with the principal bytes {raw.data!r}")
    _everything(acl_admin, 3, "CreateAcls of broken UTF-8 principals")


# -- filters: DescribeAcls and DeleteAcls -----------------------------------------------------------------------------------
STOCK = [
    acl(name="foo"), acl(name="*"), acl(name="f", pattern=PREFIXED), acl(name="*", pattern=PREFIXED), acl(name="foo*"),
    acl(name="fo", pattern=PREFIXED, principal="User:bob", operation=WRITE, permission=DENY),
    acl(name="foo", principal="User:"), acl(name="foo", principal="Foo:bar"), acl(name="foo", principal=":x"),
    acl(name="foo", host=""), acl(name="foo", host="::1"), acl(name="foo", host="0:0:0:0:0:0:0:1"),
    acl(name="tøpïc", principal="User:😀"), acl(name="😀", pattern=PREFIXED), acl(name="𠜎x", pattern=PREFIXED),
    acl(name="t" * 1024), acl(rtype=GROUP, name="*", pattern=PREFIXED, principal="User:*"), acl(rtype=USER, name="User:alice", operation=14),
    acl(rtype=CLUSTER, name="kafka-cluster", principal="Group:*", operation=2), acl(rtype=DELEGATION_TOKEN, name="tok", operation=8),
]

FILTER_VALUES = {
    "name": [None, "", "*", "foo", "foo*", "f", "fo", "fooo", "tøpïc", "😀x", "𠜎xyz", "\ud840", "t" * 1024, "t" * 1025, "kafka-cluster"],
    "principal": [None, "", "User:", "User:*", "Foo:bar", ":x", "alice", "User:😀", "User:bob", "Group:*", "user:bob"],
    "host": [None, "", "*", "::1", "0:0:0:0:0:0:0:1", "[::1]", "127.0.0.1"],
    "rtype": [0, 1, 2, 3, 4, 5, 6, 7, 8, 99, -1],
    "pattern": [0, 1, 2, 3, 4, 5, 99, -1],
    "operation": [0, 1, 2, 3, 4, 8, 14, 15, 99, -1],
    "permission": [0, 1, 2, 3, 4, 99, -1],
}
NAME_PATTERNS = [ANY, MATCH, LITERAL, PREFIXED]


def _filters(field: str, version: int) -> list[dict]:
    """The filter changes to try for one field: names with every pattern filter, the others with ANY."""
    out: list[dict] = []
    for value in FILTER_VALUES[field]:
        if isinstance(value, str) and "\ud840" in value:
            continue  # a lone surrogate cannot be UTF-8 encoded (the raw invalid-utf8 class covers broken bytes)
        if field == "name":
            out += [{"name": value, "pattern": p} for p in NAME_PATTERNS]
        elif field == "pattern":
            out.append({"name": "foo", "pattern": value})
        else:
            out.append({field: value})
    if version == 0:  # v0 has no pattern type field; the request says LITERAL
        out = [dict(change, pattern=LITERAL) for change in out if change.get("pattern", LITERAL) in (LITERAL, ANY)]
    return out


@pytest.fixture
def stocked(acl_admin: Peers) -> Peers:
    acl_admin.grant(*STOCK)
    return acl_admin


def _check_all(checks) -> None:
    """Run every comparison of one parametrized case and report all the differences together."""
    failures = []
    for what, check in checks:
        try:
            check()
        except AssertionError as exc:
            failures.append(f"{what}: {exc}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("field", list(FILTER_VALUES))
def test_describe_filter_field(stocked: Peers, field: str, version: int) -> None:
    base = {"pattern": LITERAL} if version == 0 else {}
    changes = _filters(field, version)
    def check(change: dict) -> None:
        kafka, _ = stocked.same(DESCRIBE_ACLS, version, describe(**{**base, **change}), what=f"DescribeAcls v{version} {change}")
        _note_filter("DescribeAcls", version, change, kafka)

    _check_all((f"DescribeAcls v{version} {change}", lambda change=change: check(change)) for change in changes)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("field", list(FILTER_VALUES))
def test_delete_filter_field(stocked: Peers, field: str, version: int) -> None:
    """One DeleteAcls per value, each against the whole stock (granted again after each that deleted something)."""
    base = {"pattern": LITERAL} if version == 0 else {}
    failures = []
    for change in _filters(field, version):
        try:
            kafka, _ = stocked.same(DELETE_ACLS, version, DeleteAclsRequest(filters=[delete(**{**base, **change})]),
                                    what=f"DeleteAcls v{version} {change}")
            _note_filter("DeleteAcls", version, change, kafka)
            stocked.settle()
            if not kafka.closed and any(r.matching_acls for r in kafka.body.filter_results):
                stocked.grant(ANONYMOUS_MAY_ALTER, *STOCK)
        except AssertionError as exc:
            failures.append(f"DeleteAcls v{version} {change}: {exc}")
            stocked.reset()
            stocked.grant(ANONYMOUS_MAY_ALTER, *STOCK)
    assert not failures, "\n".join(failures)


def _raw_filter_cases() -> list:
    out = []
    for field in ("name", "principal", "host"):
        for label in RAW:
            for version in VERSIONS:
                if RAW[label](RAW_PREFIX[field]).encoded(version >= 2) is None:
                    continue
                out.append(pytest.param(field, label, version, id=f"{field}-{label}-v{version}"))
    return out


@pytest.mark.parametrize(("field", "label", "version"), _raw_filter_cases())
def test_raw_value_in_filters(stocked: Peers, field: str, label: str, version: int) -> None:
    """Null, negative lengths, >32767 bytes and broken UTF-8 in the nullable filter strings of Describe and Delete."""
    raw = RAW[label](RAW_PREFIX[field])
    change = {field: MARKER, "pattern": LITERAL if version == 0 else ANY}
    kafka, shim = _raw_both(stocked, DESCRIBE_ACLS, version, describe(**change), raw)
    _compare(kafka, shim, f"DescribeAcls v{version} with a {label} {field} filter")
    kafka, shim = _raw_both(stocked, DELETE_ACLS, version, DeleteAclsRequest(filters=[delete(**change)]), raw)
    _compare(kafka, shim, f"DeleteAcls v{version} with a {label} {field} filter")
    _everything(stocked, version, f"DeleteAcls v{version} with a {label} {field} filter")


# -- what the authorizer then decides with such ACLs -------------------------------------------------------------------------
DESCRIBE_CONFIGS, DESCRIBE_CONFIGS_OPERATION = 32, 10
DECIDING = [  # User:ANONYMOUS's rights on topics, DESCRIBE_CONFIGS, through unusual ACLs (and ones that never apply to it)
    ("😀", PREFIXED, "User:ANONYMOUS", "*", ALLOW), ("😀x", PREFIXED, "User:ANONYMOUS", "*", DENY), ("\uff21", PREFIXED, "User:ANONYMOUS", "*", ALLOW),
    ("𠜎", PREFIXED, "User:ANONYMOUS", "*", ALLOW), ("*", PREFIXED, "User:ANONYMOUS", "*", ALLOW), ("tøpïc", LITERAL, "User:ANONYMOUS", "*", ALLOW),
    ("any-host-empty", LITERAL, "User:ANONYMOUS", "", ALLOW), ("ipv6-host", LITERAL, "User:ANONYMOUS", "::1", ALLOW),
    ("ipv6-full", LITERAL, "User:ANONYMOUS", "0:0:0:0:0:0:0:1", ALLOW), ("empty-name", LITERAL, "User:", "*", ALLOW),
    ("padded", LITERAL, " User:ANONYMOUS", "*", ALLOW), ("lower", LITERAL, "user:ANONYMOUS", "*", ALLOW),
    ("group-star", LITERAL, "Group:*", "*", ALLOW), ("user-star", LITERAL, "User:*", "*", ALLOW), ("host-ip", LITERAL, "User:ANONYMOUS", "127.0.0.1", ALLOW),
]
ASKED = ["😀", "😀x", "😀xy", "😀y", "\uff21b", "𠜎z", "*star", "star", "tøpïc", "tøpïcs", "any-host-empty", "ipv6-host", "ipv6-full",
         "empty-name", "padded", "lower", "group-star", "user-star", "host-ip", "\ud83d"]


def test_unusual_acls_decide_as_kafka(acl_admin: Peers) -> None:
    """DescribeConfigs of topics whose only ACLs are unusual ones: both authorize (or refuse, 29) the same topics."""
    from kafka_shim.protocol.messages import DescribeConfigsRequest

    acl_admin.grant(*(acl(name=n, pattern=p, principal=who, host=host, operation=DESCRIBE_CONFIGS_OPERATION, permission=perm)
                      for n, p, who, host, perm in DECIDING))
    resource = DescribeConfigsRequest.DescribeConfigsResource
    asked = [n for n in ASKED if "\ud83d" not in n]  # (a lone surrogate cannot be sent)
    for version in (0, 4):
        body = DescribeConfigsRequest(resources=[resource(resource_type=2, resource_name=n, configuration_keys=None) for n in asked])
        kafka, _ = acl_admin.same(DESCRIBE_CONFIGS, version, body, what=f"DescribeConfigs v{version} under unusual ACLs")
        assert {r.error_code for r in kafka.body.results} >= {29}, "some topics must be refused for the comparison to mean anything"


# -- random batches of the classes ------------------------------------------------------------------------------------------
def _creation_strategy():
    return st.builds(
        acl,
        rtype=st.sampled_from([TOPIC, GROUP, TRANSACTIONAL_ID, USER, DELEGATION_TOKEN, CLUSTER, 99, ANY]),
        name=st.sampled_from([v for k, v in NAMES.items() if not k.startswith("long")]),
        pattern=st.sampled_from([LITERAL, PREFIXED, LITERAL, PREFIXED, ANY, MATCH, 99]),
        principal=st.sampled_from([p for k, p in PRINCIPALS.items() if not k.startswith("long")]),
        host=st.sampled_from([h for k, h in HOSTS.items() if not k.startswith("long")]),
        operation=st.sampled_from([2, 3, 4, 8, 14, 99, ANY]),
        permission=st.sampled_from([ALLOW, DENY, ALLOW, DENY, 99, ANY]),
    )


def test_random_batches_agree(oracle, shim_secured: EmbeddedBroker) -> None:
    """Batches of up to five creations drawn from every class (valid ones among them), then a delete by principal."""
    peers = Peers(oracle, shim_secured)

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(creations=st.lists(_creation_strategy(), min_size=1, max_size=5), version=st.sampled_from([1, 2, 3]))
    def check(creations, version) -> None:
        peers.reset()
        peers.grant(ANONYMOUS_MAY_ALTER)
        peers.same(CREATE_ACLS, version, CreateAclsRequest(creations=creations), what=f"CreateAcls v{version} {creations}")
        _everything(peers, version, "a random batch")
        filters = [delete(principal=c.principal) for c in creations]
        peers.same(DELETE_ACLS, version, DeleteAclsRequest(filters=filters), what=f"DeleteAcls v{version} by principal")
        peers.settle()

    try:
        check()
    finally:
        peers.reset()


# -- the state survives: kafka-shim's durable store, and the listings of both tools -----------------------------------------
DURABLE = [
    acl(name="sweep-durable", principal="User:"), acl(name="sweep-durable", principal="Foo:bar"),
    acl(name="sweep-durable", principal="User:ünïcødé", host=""), acl(name="sweep-durable", principal="User:😀", host="::1"),
    acl(name="sweep-durable", principal="User:al ice", host="0:0:0:0:0:0:0:1", operation=WRITE, permission=DENY),
    acl(name="sweep-durable", principal="User:a\x00b", host="not-an-ip"), acl(name="sweep-durable", principal=" User:alice"),
    acl(name="sweep-durable", pattern=PREFIXED, principal="alice"), acl(name="sweep-durable", principal=""),
    acl(name="sweep-durable", principal="User:" + "a" * 32762),
]


@pytest.fixture
def durable_shim(tmp_path: Path) -> Iterator[tuple[Path, list]]:
    """kafka-shim with ``log.dirs``: its ACLs in the SQLite store. Yields the directory and a list holding the broker."""
    holder = [EmbeddedBroker(secured_config(**{"log.dirs": str(tmp_path / "data")})).start()]
    yield tmp_path / "data", holder
    holder[0].stop()


def _address(broker: EmbeddedBroker) -> tuple[str, int]:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return host, int(port)


def test_unusual_acls_survive_a_restart_and_list_as_kafka_acls_does(acl_admin: Peers, durable_shim) -> None:
    data, holder = durable_shim
    holder[0].call(lambda: holder[0].broker.authorizer.create_acls([binding_of(ANONYMOUS_MAY_ALTER)]))
    durable = Peers(acl_admin.oracle, holder[0])
    durable.same(CREATE_ACLS, 3, CreateAclsRequest(creations=DURABLE), what="CreateAcls of the durable cases")
    durable.settle()

    holder[0].stop()
    holder[0] = EmbeddedBroker(secured_config(**{"log.dirs": str(data)})).start()
    durable = Peers(acl_admin.oracle, holder[0])
    durable.settle()
    for version in VERSIONS:
        durable.same(DESCRIBE_ACLS, version, describe(pattern=LITERAL) if version == 0 else describe(),
                     what=f"DescribeAcls v{version} of everything after kafka-shim's restart")

    # Kafka's kafka-acls.sh on Kafka, kafka-shim's tool on kafka-shim (User:ANONYMOUS there may describe).
    host, port = acl_admin.oracle.sasl
    listing = ("--list", "--topic", "sweep-durable", "--resource-pattern-type", "any")
    kafka = kafka_acls("--bootstrap-server", f"{host}:{port}", "--command-config", str(acl_admin.oracle.dir / "admin.properties"), *listing)
    shim = run_acls("--bootstrap-server", holder[0].bootstrap_servers, *listing)
    assert (kafka.code, shim.code, shim.err) == (0, 0, ""), (kafka, shim)
    assert cli_canonical(shim.out) == cli_canonical(kafka.out)

    durable.same(DELETE_ACLS, 3, DeleteAclsRequest(filters=[delete(TOPIC, "sweep-durable", ANY)]),
                 what="DeleteAcls of the durable cases after the restart")
    durable.settle()
