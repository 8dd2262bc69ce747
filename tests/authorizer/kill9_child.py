"""Child process for test_kill9: applies numbered ACL batches to a SqliteAclStore until it is killed.

    python kill9_child.py {authorizer|store} DB START

Prints "ready" once the store is open, then the number of each batch AFTER it is acknowledged, one per line,
flushed. Batch n's content is batch(n, mode), a function of n alone, so the parent can replay batches 0..n.

mode "authorizer": through Authorizer(store=...): create_acls (1-5 bindings) or delete_acls (1-5 exact filters).
mode "store": SqliteAclStore.apply directly, each batch mixing creations and deletions.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterable

from kafka_shim.authorizer import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Authorizer,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka_shim.authorizer.sqlite_store import SqliteAclStore

_RESOURCES = [(ResourceType.TOPIC, AclOperation.READ), (ResourceType.TOPIC, AclOperation.WRITE), (ResourceType.GROUP, AclOperation.READ),
              (ResourceType.TRANSACTIONAL_ID, AclOperation.WRITE), (ResourceType.CLUSTER, AclOperation.IDEMPOTENT_WRITE),
              (ResourceType.TOPIC, AclOperation.ALL)]
_NAMES = ["orders", "paiements-é", "日志", "🦀", "x" * 300]
_PRINCIPALS = ["User:alice", "User:bob", "User:*", "Group:ops", "User:ünï"]
_HOSTS = ["*", "10.0.0.1", "::1"]


def _binding(rng: random.Random) -> AclBinding:
    rtype, op = rng.choice(_RESOURCES)
    name = "kafka-cluster" if rtype == ResourceType.CLUSTER else f"{rng.choice(_NAMES)}-{rng.randrange(40)}"
    ptype = PatternType.LITERAL if rtype == ResourceType.CLUSTER else rng.choice((PatternType.LITERAL, PatternType.PREFIXED))
    entry = AccessControlEntry(rng.choice(_PRINCIPALS), rng.choice(_HOSTS), op, rng.choice((AclPermissionType.ALLOW, AclPermissionType.DENY)))
    return AclBinding(ResourcePattern(rtype, name, ptype), entry)


def _created(seq: int) -> list[AclBinding]:
    rng = random.Random(seq * 2)
    return [_binding(rng) for _ in range(rng.randint(1, 5))]


def _earlier(seq: int, rng: random.Random, count: int) -> list[AclBinding]:
    """Bindings some recent batch created (which may since have been deleted)."""
    if seq == 0:
        return []
    picked: list[AclBinding] = []
    for _ in range(count):
        picked.append(rng.choice(_created(rng.randrange(max(0, seq - 30), seq))))
    return picked


def batch(seq: int, mode: str) -> tuple[list[AclBinding], list[AclBinding]]:
    """(created, deleted) of batch seq: deterministic in seq."""
    rng = random.Random(seq * 2 + 1)
    if mode == "authorizer":
        if seq % 3 == 2:
            return [], _earlier(seq, rng, rng.randint(1, 5))
        return _created(seq), []
    created = _created(seq)[: rng.randint(0, 5)]
    deleted = _earlier(seq, rng, rng.randint(0 if created else 1, 5))
    return created, deleted


def replay(batches: Iterable[tuple[list[AclBinding], list[AclBinding]]], state: set[AclBinding] | None = None) -> set[AclBinding]:
    """The ACLs after applying batches in order (deletions first within a batch, as the store does)."""
    state = set() if state is None else set(state)
    for created, deleted in batches:
        state.difference_update(deleted)
        state.update(created)
    return state


def _exact(binding: AclBinding) -> AclBindingFilter:
    p, e = binding.pattern, binding.entry
    return AclBindingFilter(ResourcePatternFilter(p.resource_type, p.name, p.pattern_type),
                            AccessControlEntryFilter(e.principal, e.host, e.operation, e.permission_type))


def main(mode: str, db: str, start: int) -> None:
    store = SqliteAclStore(db)
    az = Authorizer(store=store) if mode == "authorizer" else None
    print("ready", flush=True)
    seq = start
    while True:
        created, deleted = batch(seq, mode)
        if az is None:
            store.apply(created=created, deleted=deleted)
        elif created:
            errors = [r.error for r in az.create_acls(created) if r.error is not None]
            if errors:
                raise SystemExit(f"batch {seq}: create_acls failed: {errors}")
        else:
            errors = [r.error for r in az.delete_acls([_exact(b) for b in deleted]) if r.error is not None]
            if errors:
                raise SystemExit(f"batch {seq}: delete_acls failed: {errors}")
        print(seq, flush=True)  # acknowledged: store.apply returned
        seq += 1


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
