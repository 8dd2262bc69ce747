"""kafkajs 2.2.4 (Node.js) creates, describes and deletes ACLs over SASL_PLAINTEXT, and gets Kafka's answers.

Every scenario runs as three users: admin (a super user), alice (only ALLOW DESCRIBE on the cluster: she may
describe ACLs but not create or delete them) and bob (nothing: CLUSTER_AUTHORIZATION_FAILED for all three calls).
Each runs against kafka-shim and, under the `oracle` marker, against a real Apache Kafka 3.9 with the same users,
so the expectations below are Kafka's own. kafkajs speaks CreateAcls/DescribeAcls/DeleteAcls v1 and has every
pattern type: LITERAL and PREFIXED in bindings, ANY and MATCH in filters.

Node.js and kafkajs come from scripts/ensure-node and `npm ci` in tests/kafkajs (scripts/test runs both).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.acl_targets import Binding, Target, both_targets
from tests.support.sasl_setup import USERS

pytestmark = pytest.mark.clients

ROOT = Path(__file__).resolve().parents[2]
KAFKAJS_DIR = ROOT / "tests" / "kafkajs"
PROGRAM = KAFKAJS_DIR / "acls.js"
# kafkajs's names for the SASL mechanisms; each user logs in with a different one so all three are exercised.
MECHANISM_OF = {"admin": "scram-sha-512", "alice": "plain", "bob": "scram-sha-256"}
ACTORS = ["admin", "alice", "bob"]
CLUSTER_AUTHORIZATION_FAILED = {"type": "CLUSTER_AUTHORIZATION_FAILED", "code": 31}



def acl(binding: Binding) -> dict:
    rtype, name, pattern, principal, host, operation, permission = binding
    return {"resourceType": rtype, "resourceName": name, "resourcePatternType": pattern, "principal": principal,
            "host": host, "operation": operation, "permissionType": permission}


def acl_filter(rtype: str = "ANY", name: str | None = None, pattern: str = "ANY", principal: str | None = None,
               host: str | None = None, operation: str = "ANY", permission: str = "ANY") -> dict:
    out = {"resourceType": rtype, "resourcePatternType": pattern, "operation": operation, "permissionType": permission}
    # Absent keys reach the wire as null strings: a wildcard for that field.
    for key, value in (("resourceName", name), ("principal", principal), ("host", host)):
        if value is not None:
            out[key] = value
    return out


# -- driving kafkajs ---------------------------------------------------------------------------
def run_kafkajs(bootstrap: str, user: str, steps: list[dict], mechanism: str | None = None) -> list[dict]:
    """Run tests/kafkajs/acls.js as `user` over SASL_PLAINTEXT; one result dict per step ({"ok", "value"|"error"})."""
    node = shutil.which("node")
    if node is None or not (KAFKAJS_DIR / "node_modules" / "kafkajs").is_dir():
        pytest.fail("kafkajs is not installed: run scripts/test (or scripts/ensure-node && npm ci --prefix tests/kafkajs)",
                    pytrace=False)
    request = {"brokers": [bootstrap], "steps": steps,
               "sasl": {"mechanism": mechanism or MECHANISM_OF[user], "username": user, "password": USERS[user]}}
    proc = subprocess.run([node, str(PROGRAM)], input=json.dumps(request), capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        pytest.fail(f"kafkajs as {user} failed (exit {proc.returncode}): {proc.stderr.strip()[-3000:]}", pytrace=False)
    results = json.loads(proc.stdout)["results"]
    assert len(results) == len(steps)
    return results


def error_of(result: dict) -> dict:
    """The part of a failed call a test compares: Kafka's error name and code as kafkajs reports them."""
    assert not result["ok"], f"expected an error, kafkajs returned {result.get('value')!r}"
    return {"type": result["error"]["type"], "code": result["error"]["code"]}


def described(result: dict) -> list[Binding]:
    """DescribeAcls' answer flattened to bindings (sorted; duplicates kept, so a doubled binding fails a test)."""
    assert result["ok"], f"describeAcls failed: {result['error']}"
    resources = result["value"]["resources"]
    keys = [(r["resourceType"], r["resourceName"], r["resourcePatternType"]) for r in resources]
    assert len(keys) == len(set(keys)), f"Kafka groups DescribeAcls results by resource; got {keys} with repeats"
    return sorted((r["resourceType"], r["resourceName"], r["resourcePatternType"], a["principal"], a["host"], a["operation"],
                   a["permissionType"]) for r in resources for a in r["acls"])


def deleted(result: dict) -> list[list[Binding]]:
    """DeleteAcls' answer: per filter, the bindings it matched (each must carry error 0)."""
    assert result["ok"], f"deleteAcls failed: {result['error']}"
    out = []
    for response in result["value"]["filterResponses"]:
        assert response["errorCode"] == 0, response
        assert all(m["errorCode"] == 0 for m in response["matchingAcls"]), response
        out.append(sorted((m["resourceType"], m["resourceName"], m["resourcePatternType"], m["principal"], m["host"],
                           m["operation"], m["permissionType"]) for m in response["matchingAcls"]))
    return out


# -- the two brokers ---------------------------------------------------------------------------
def create(bindings: list[Binding]) -> dict:
    return {"call": "createAcls", "args": {"acl": [acl(b) for b in bindings]}}


def describe(filter_: dict) -> dict:
    return {"call": "describeAcls", "args": filter_}


def delete(filters: list[dict]) -> dict:
    return {"call": "deleteAcls", "args": {"filters": filters}}


def _list_as_admin(bootstrap: str, principal: str) -> list[Binding]:
    return described(run_kafkajs(bootstrap, "admin", [describe(acl_filter(principal=principal))])[0])


def _create_as_admin(bootstrap: str, bindings: list[Binding]) -> None:
    result = run_kafkajs(bootstrap, "admin", [create(bindings)])[0]
    assert result["ok"], result


@pytest.fixture(scope="module", params=["kafka-shim", pytest.param("apache-kafka", marks=pytest.mark.oracle)])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    yield from both_targets(request, _create_as_admin, _list_as_admin, "kafkajs-acls-")


@pytest.fixture
def principal() -> str:
    """A principal no other test uses, so each scenario sees only its own ACLs."""
    return f"User:kjs-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def name() -> str:
    """A resource name no other test uses."""
    return f"kjs-{uuid.uuid4().hex[:10]}"


# -- CreateAcls --------------------------------------------------------------------------------
def every_kind(principal: str, name: str) -> list[Binding]:
    """Bindings of every resource type kafkajs can create, LITERAL and PREFIXED, ALLOW and DENY, any and one host."""
    return [
        ("TOPIC", name, "LITERAL", principal, "*", "READ", "ALLOW"),
        ("TOPIC", name, "LITERAL", principal, "10.0.0.1", "WRITE", "DENY"),
        ("TOPIC", name, "PREFIXED", principal, "*", "ALL", "ALLOW"),
        ("TOPIC", "*", "LITERAL", principal, "*", "DESCRIBE", "ALLOW"),
        ("GROUP", name, "PREFIXED", principal, "*", "READ", "ALLOW"),
        ("CLUSTER", "kafka-cluster", "LITERAL", principal, "*", "IDEMPOTENT_WRITE", "ALLOW"),
        ("TRANSACTIONAL_ID", name, "LITERAL", principal, "*", "WRITE", "DENY"),
        ("DELEGATION_TOKEN", name, "LITERAL", principal, "*", "DESCRIBE", "ALLOW"),
    ]


@pytest.mark.parametrize("actor", ACTORS)
def test_create_acls(target: Target, actor: str, principal: str, name: str) -> None:
    bindings = every_kind(principal, name)
    result = run_kafkajs(target.bootstrap, actor, [create(bindings)])[0]
    if actor == "admin":
        assert result == {"ok": True, "value": True}
        assert target.settled_view(principal, bindings) == sorted(bindings)
    else:
        assert error_of(result) == CLUSTER_AUTHORIZATION_FAILED
        assert target.view(principal) == []


def _with(binding: Binding, **changes: str) -> Binding:
    fields = ["rtype", "name", "pattern", "principal", "host", "operation", "permission"]
    values = dict(zip(fields, binding, strict=True)) | changes
    return tuple(values[f] for f in fields)  # type: ignore[return-value]


# (id, what to create given a valid binding, Kafka's error for admin or None, what is stored afterwards)
INVALID_CREATIONS = [
    # Checked per creation: the valid one is stored, the other gets INVALID_REQUEST.
    ("cluster-not-named-kafka-cluster", lambda ok: [ok, _with(ok, rtype="CLUSTER", name="other")],
     {"type": "INVALID_REQUEST", "code": 42}, lambda ok: [ok]),
    ("empty-resource-name", lambda ok: [ok, _with(ok, name="")], {"type": "INVALID_REQUEST", "code": 42}, lambda ok: [ok]),
    # Filter-only values cannot build a binding: Kafka fails the whole request (UNKNOWN_SERVER_ERROR) and stores nothing.
    ("match-pattern", lambda ok: [ok, _with(ok, pattern="MATCH")], {"type": "UNKNOWN", "code": -1}, lambda ok: []),
    ("any-pattern", lambda ok: [ok, _with(ok, pattern="ANY")], {"type": "UNKNOWN", "code": -1}, lambda ok: []),
    ("any-resource-type", lambda ok: [ok, _with(ok, rtype="ANY")], {"type": "UNKNOWN", "code": -1}, lambda ok: []),
    ("any-operation", lambda ok: [ok, _with(ok, operation="ANY")], {"type": "UNKNOWN", "code": -1}, lambda ok: []),
    ("any-permission", lambda ok: [ok, _with(ok, permission="ANY")], {"type": "UNKNOWN", "code": -1}, lambda ok: []),
    # ACLs are a set: a duplicate is a success and is stored once.
    ("duplicate", lambda ok: [ok, ok], None, lambda ok: [ok]),
]


@pytest.mark.parametrize("actor", ACTORS)
@pytest.mark.parametrize(("make", "error", "stored"), [pytest.param(*case[1:], id=case[0]) for case in INVALID_CREATIONS])
def test_create_acls_rejects_what_kafka_rejects(target: Target, actor: str, principal: str, name: str, make, error, stored) -> None:
    ok: Binding = ("TOPIC", name, "PREFIXED", principal, "*", "WRITE", "ALLOW")
    result = run_kafkajs(target.bootstrap, actor, [create(make(ok))])[0]
    if actor != "admin":  # authorization comes before any validation
        assert error_of(result) == CLUSTER_AUTHORIZATION_FAILED
        assert target.view(principal) == []
        return
    if error is None:
        assert result == {"ok": True, "value": True}
    else:
        assert error_of(result) == error
    assert target.settled_view(principal, stored(ok)) == sorted(stored(ok))


# -- DescribeAcls ------------------------------------------------------------------------------
def catalogue(principal: str, name: str) -> dict[str, Binding]:
    """ACLs around one topic name, to tell the pattern types apart."""
    return {
        "literal": ("TOPIC", name, "LITERAL", principal, "*", "READ", "ALLOW"),
        "literal-deny-host": ("TOPIC", name, "LITERAL", principal, "10.0.0.1", "WRITE", "DENY"),
        "shorter-prefix": ("TOPIC", name[:-2], "PREFIXED", principal, "*", "DESCRIBE", "ALLOW"),
        "prefixed": ("TOPIC", name, "PREFIXED", principal, "*", "ALL", "ALLOW"),
        "longer-literal": ("TOPIC", f"{name}-eu", "LITERAL", principal, "*", "READ", "ALLOW"),
        "longer-prefix": ("TOPIC", f"{name}-", "PREFIXED", principal, "*", "READ", "ALLOW"),
        "wildcard": ("TOPIC", "*", "LITERAL", principal, "*", "DESCRIBE", "ALLOW"),
        "group": ("GROUP", name, "LITERAL", principal, "*", "READ", "ALLOW"),
        "transactional-id": ("TRANSACTIONAL_ID", name, "PREFIXED", principal, "*", "WRITE", "ALLOW"),
        "cluster": ("CLUSTER", "kafka-cluster", "LITERAL", principal, "*", "IDEMPOTENT_WRITE", "ALLOW"),
    }


def describe_cases(principal: str, name: str) -> dict[str, tuple[dict, set[str]]]:
    """Filter -> the catalogue entries Kafka returns for it (ResourcePatternFilter / AccessControlEntryFilter rules)."""
    every = set(catalogue(principal, name))
    return {
        "LITERAL name": (acl_filter("TOPIC", name, "LITERAL"), {"literal", "literal-deny-host"}),
        "PREFIXED name": (acl_filter("TOPIC", name, "PREFIXED"), {"prefixed"}),
        "ANY name": (acl_filter("TOPIC", name, "ANY"), {"literal", "literal-deny-host", "prefixed"}),
        "ANY type, ANY name": (acl_filter("ANY", name, "ANY"), {"literal", "literal-deny-host", "prefixed", "group",
                                                                 "transactional-id"}),
        # MATCH: what applies to the name: itself, the literal '*', and every prefix of it.
        "MATCH name": (acl_filter("TOPIC", name, "MATCH", principal), {"literal", "literal-deny-host", "shorter-prefix",
                                                                         "prefixed", "wildcard"}),
        "MATCH longer name": (acl_filter("TOPIC", f"{name}-eu", "MATCH", principal),
                              {"longer-literal", "longer-prefix", "prefixed", "shorter-prefix", "wildcard"}),
        "ANY type, MATCH name": (acl_filter("ANY", name, "MATCH", principal),
                                 {"literal", "literal-deny-host", "shorter-prefix", "prefixed", "wildcard", "group",
                                  "transactional-id"}),
        "MATCH, any name": (acl_filter("ANY", None, "MATCH", principal), every),
        "LITERAL '*' is not a wildcard in a filter": (acl_filter("TOPIC", "*", "LITERAL", principal), {"wildcard"}),
        "PREFIXED filter takes names exactly": (acl_filter("TOPIC", name[:-2], "PREFIXED", principal), {"shorter-prefix"}),
        "principal": (acl_filter(principal=principal), every),
        "operation": (acl_filter(principal=principal, operation="READ"), {"literal", "longer-literal", "longer-prefix", "group"}),
        "permission": (acl_filter(principal=principal, permission="DENY"), {"literal-deny-host"}),
        "host": (acl_filter(principal=principal, host="10.0.0.1"), {"literal-deny-host"}),
        "cluster": (acl_filter("CLUSTER", None, "ANY", principal), {"cluster"}),
        "nothing": (acl_filter("TOPIC", f"{name}-none", "LITERAL"), set()),
    }


@pytest.mark.parametrize("actor", ACTORS)
def test_describe_acls(target: Target, actor: str, principal: str, name: str) -> None:
    acls = catalogue(principal, name)
    target.store(list(acls.values()))
    cases = describe_cases(principal, name)
    results = run_kafkajs(target.bootstrap, actor, [describe(f) for f, _ in cases.values()])
    if actor == "bob":
        assert {case: error_of(r) for case, r in zip(cases, results, strict=True)} == dict.fromkeys(cases, CLUSTER_AUTHORIZATION_FAILED)
        return
    got = {case: described(r) for case, r in zip(cases, results, strict=True)}
    assert got == {case: sorted(acls[k] for k in keys) for case, (_, keys) in cases.items()}


@pytest.mark.parametrize("mechanism", ["plain", "scram-sha-256", "scram-sha-512"])
def test_describe_acls_with_every_mechanism(target: Target, mechanism: str, principal: str, name: str) -> None:
    acls = catalogue(principal, name)
    target.store([acls["literal"]])
    for user in ("admin", "alice"):
        result = run_kafkajs(target.bootstrap, user, [describe(acl_filter(principal=principal))], mechanism)[0]
        assert described(result) == [acls["literal"]], user
    assert error_of(run_kafkajs(target.bootstrap, "bob", [describe(acl_filter())], mechanism)[0]) == CLUSTER_AUTHORIZATION_FAILED


# -- DeleteAcls --------------------------------------------------------------------------------
@pytest.mark.parametrize("actor", ACTORS)
def test_delete_acls(target: Target, actor: str, principal: str, name: str) -> None:
    acls = catalogue(principal, name)
    target.store(list(acls.values()))
    filters = {
        "LITERAL": (acl_filter("TOPIC", name, "LITERAL", principal), {"literal", "literal-deny-host"}),
        # Overlaps the LITERAL filter: Kafka matches every filter against the ACLs as they were before the request,
        # so the two literal ACLs are listed under both filters (and deleted once).
        "MATCH": (acl_filter("TOPIC", name, "MATCH", principal), {"literal", "literal-deny-host", "shorter-prefix", "prefixed",
                                                                   "wildcard"}),
        "PREFIXED, READ": (acl_filter("ANY", None, "PREFIXED", principal, operation="READ"), {"longer-prefix"}),
        "ANY, nothing there": (acl_filter("GROUP", f"{name}-none", "ANY", principal), set()),
    }
    result = run_kafkajs(target.bootstrap, actor, [delete([f for f, _ in filters.values()])])[0]
    if actor != "admin":
        assert error_of(result) == CLUSTER_AUTHORIZATION_FAILED
        assert target.view(principal) == sorted(acls.values())
        return
    assert deleted(result) == [sorted(acls[k] for k in keys) for _, keys in filters.values()]
    left = sorted(acls[k] for k in acls.keys() - set().union(*(keys for _, keys in filters.values())))
    assert target.settled_view(principal, left) == left


@pytest.mark.parametrize("actor", ACTORS)
def test_delete_everything_of_a_principal(target: Target, actor: str, principal: str, name: str) -> None:
    acls = catalogue(principal, name)
    target.store(list(acls.values()))
    result = run_kafkajs(target.bootstrap, actor, [delete([acl_filter(principal=principal)])])[0]
    if actor != "admin":
        assert error_of(result) == CLUSTER_AUTHORIZATION_FAILED
        assert target.view(principal) == sorted(acls.values())
        return
    assert deleted(result) == [sorted(acls.values())]
    assert target.settled_view(principal, []) == []
