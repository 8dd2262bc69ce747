"""CreateAcls with many ACLs at once, as a broker's start or an audit's ACL set makes them: each stored once and
answered in order, whoever else creates the same ACLs at the same time."""

from __future__ import annotations

import threading

from kafka_shim.authorizer import (
    MATCH_ANY,
    AccessControlEntry,
    AclBinding,
    Authorizer,
    InvalidAclError,
    ResourcePattern,
)
from kafka_shim.authorizer.model import AclOperation as Op
from kafka_shim.authorizer.model import AclPermissionType as Perm
from kafka_shim.authorizer.model import PatternType as Pat
from kafka_shim.authorizer.model import ResourceType as RT


def _bindings(n: int) -> list[AclBinding]:
    return [AclBinding(ResourcePattern(RT.TOPIC, f"team{i % 50}.svc{i}"[: 8 + i % 9], Pat.PREFIXED if i % 3 else Pat.LITERAL),
                       AccessControlEntry(f"User:app-{i % 200}", "*" if i % 4 else f"10.0.{i % 7}.1", Op.READ, Perm.ALLOW))
            for i in range(n)]


def test_the_same_acls_created_from_two_threads_are_stored_once() -> None:
    az = Authorizer()
    bindings = list(dict.fromkeys(_bindings(20_000)))
    start = threading.Barrier(2)
    results: list[list] = []

    def create() -> None:
        start.wait()
        results.append(az.create_acls(bindings))

    threads = [threading.Thread(target=create) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(results) == 2 and all(r.error is None for batch in results for r in batch)
    assert len(az.index) == len(bindings)
    assert sorted(map(str, az.describe_acls(MATCH_ANY))) == sorted(map(str, bindings))
    deleted = az.delete_acls([MATCH_ANY])[0].deleted
    assert len(deleted) == len(bindings)
    assert az.acls() == []
    assert not az.authorize("User:app-1", "10.0.1.1", Op.READ, RT.TOPIC, "team1.svc1")


def test_a_batch_is_answered_in_order_with_duplicates_and_invalid_acls() -> None:
    az = Authorizer()
    good = _bindings(3)
    empty_name = AclBinding(ResourcePattern(RT.TOPIC, "", Pat.LITERAL), AccessControlEntry("User:a", "*", Op.READ, Perm.ALLOW))
    cluster = AclBinding(ResourcePattern(RT.CLUSTER, "c", Pat.LITERAL), AccessControlEntry("User:a", "*", Op.ALTER, Perm.ALLOW))
    results = az.create_acls([good[0], empty_name, good[1], good[0], cluster, good[2]])
    errors = [None if r.error is None else (type(r.error), str(r.error)) for r in results]
    assert errors == [None, (InvalidAclError, "Invalid empty resource name"), None, None,
                      (InvalidAclError, "The only valid name for the CLUSTER resource is kafka-cluster"), None]
    assert sorted(map(str, az.acls())) == sorted(map(str, good))
    assert all(r.error is None for r in az.create_acls(good))  # again: succeed, no copies
    assert len(az.index) == 3

