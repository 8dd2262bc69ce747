"""Authorizer benchmark: kafka-shim's authorizer vs a naive linear scan vs Kafka 3.9's own StandardAuthorizer.

Reproduce (from the repository root):

    .venv/bin/python bench/authorizer.py                       # full: 1k, 10k, 100k, 1M ACLs (~4 min on 2 cores)
    .venv/bin/python bench/authorizer.py --quick               # smoke: 1k and 10k, shorter passes (~30 s)
    .venv/bin/python bench/authorizer.py --sizes 1k,100k --json /tmp/authorizer.json
    .venv/bin/python bench/authorizer.py --profile 100k        # cProfile of load and of the three calls, no timings

Needs a JDK (17) and Maven for the Kafka side: `scripts/real-kafka classpath` compiles
tests/oracle/src/main/java/kafkashim/oracle/AuthorizerBench.java and prints the classpath (cached after the
first run). `--no-kafka` skips it.

Workload (deterministic: `--seed`, default 679). For each ACL count N:

* ACLs, all distinct (a drawn duplicate is dropped and a whole new ACL drawn):
  - 60% LITERAL on a named resource, 30% PREFIXED, 10% "wildcard", which here means: half (5%) the LITERAL
    resource name "*" with an ordinary principal (CLUSTER excluded: its only valid name is kafka-cluster),
    half (5%) the principal User:* on an ordinary LITERAL (2/3) or PREFIXED (1/3) resource.
  - principals: 1000 (User:app-0000 .. User:app-0999); super user User:admin (no ACLs, 1% of requests).
  - resource types: TOPIC 85%, GROUP 10%, TRANSACTIONAL_ID 4%, CLUSTER 1% (kafka-cluster, LITERAL or PREFIXED).
  - names look like team-17.orders-v2 (topics), team-17.orders-app3 (groups), team-17.orders-txn1
    (transactional ids); ~N/4 topics, N/40 groups, N/100 transactional ids; the number of teams grows with N.
    Prefixes: team-17.orders (35%), team-17. (25%), team-17 (10%: also matches team-170...), or a full
    resource name (30%: also matches team-17.orders-v2x...).
  - hosts: 85% "*", 15% one of 32 client IPs; operations: 75% one the type supports, 10% ALL, 15% any;
    10% DENY.
  Consequence worth knowing: the resource-"*" share grows with N while the principals stay 1000, so at 1M the
  TOPIC resource "*" holds ~20k ACLs (~20 per principal; drawn duplicates are redrawn, which is why it is not
  5% x 85%), and every TOPIC request matches all of them. Kafka scans every ACL of a matching resource; the
  workload lines print the largest resource. `--wildcard-share 0.01` shows the same comparison with few "*".
* Requests (principal, host, operation, type, name): 1% super user, 3% principals with no ACLs of their own;
  half derived from a random stored ACL (its principal, name, prefix + a suffix, or any name for "*"; its
  operation or another one the type supports; its host or another), half random (40% an existing literal
  name, 30% a name under an existing prefix, 30% a name nothing names). Operations are always ones the
  type supports. authorized_operations uses the same stream without the operation.
* by-resource-type keys (principal, host, operation, type), all distinct, principals varying.

Measured in one run, per N:

* ours: kafka-shim's Authorizer (authorizer/), structlog at WARNING so no audit line is built.
  load = create_acls of the whole set in batches of --load-batch (the AclBinding objects are built first, not
  timed). Separately, --whole-load-sizes (1k, 2k, 4k) are each loaded with ONE create_acls call, to check that a
  single large batch costs O(n) like small batches (it grows as n^x; FAIL above x = 1.5).
  Memory per ACL, bindings included (the name and principal strings are shared with the generator's tuples and
  not counted), divided by N: up to --tracemalloc-max (100k) tracemalloc's traced bytes after a second, traced
  load; above it "~ (RSS)", the resident-set growth over the timed load (both are in --json at 100k, to compare).
  The engine memoises until the next ACL change: authorize and authorized_operations per (principal, host, type,
  name), by_resource_type per (principal, host, op, type). So every call kind is measured "cold" (the first pass
  over its stream after a change: each pass starts after a create+delete of a dummy User:* ACL, which empties every
  memo, so each distinct key is computed once) and "warm" (the same stream again, answered from the memo); median of --repeat pairs.
  by_resource_type includes Kafka's preliminary authorize of "hardcode" in both.
  Diagnostic: authorize cold again with the request stream sorted by (principal, type, name, host): the same
  distinct questions, computed once each, but consecutive ones touch the same principal's tables. The gap to the
  request-order figure is time spent waiting for memory (at 1M ACLs the index is hundreds of MB, far beyond the caches).
* naive: a linear scan over every ACL, written below straight from Kafka's rules (authorized_operations =
  one scan per supported operation, as Kafka's AuthHelper does; by_resource_type = Kafka's default
  Authorizer.authorizeByResourceType). Run for --naive-seconds per call kind on the start of each stream, only
  up to --naive-max ACLs; nothing is extrapolated.
* kafka: org.apache.kafka.metadata.authorizer.StandardAuthorizer 3.9.0 in a JVM (java -Xmx2g, default server
  JIT, G1), on the same ACLs and streams (TSV files), after a JIT warm-up (the check pass, then 1 s per call kind
  cycling its stream), each call kind timed for --kafka-seconds; see AuthorizerBench.java. load =
  loadSnapshot; memory = heap delta after System.gc() (the same strings-excluded basis). authorize uses
  Action(logIfAllowed=true, logIfDenied=true) as the broker does (Kafka formats the audit line of every denial
  even when the logger drops it; the no-log figure is printed too); Kafka's by_resource_type has no cache.

Rates are calls per CPU-second of the measuring process (ours, naive: the one Python thread; kafka: the whole JVM,
GC and JIT threads included), so other processes on a shared machine do not inflate them; wall-clock rates and
load times are in --json ("wall"), and the load averages are printed before and after. Load times are CPU seconds too.

Correctness: Kafka's answers (as many requests as its check pass reached) are compared with ours one by one:
the authorize ALLOWED counts must be equal, every authorized_operations bitfield and by-resource-type answer
too; the naive scan is compared with ours on its sample. Any mismatch is printed with examples and the ACLs that
apply.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import logging
import math
import os
import platform
import pstats
import random
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import authorizer_shapes  # noqa: E402

from kafka_shim.authorizer import (  # noqa: E402
    SUPPORTED_OPERATIONS,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AuditLog,
    Authorizer,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

# ------------------------------------------------------------------------------------------ constants

TOPIC, GROUP, CLUSTER, TXN = int(ResourceType.TOPIC), int(ResourceType.GROUP), int(ResourceType.CLUSTER), int(ResourceType.TRANSACTIONAL_ID)
LITERAL, PREFIXED = int(PatternType.LITERAL), int(PatternType.PREFIXED)
ALLOW, DENY = int(AclPermissionType.ALLOW), int(AclPermissionType.DENY)
ALL, READ, WRITE, DELETE, ALTER = (int(AclOperation.ALL), int(AclOperation.READ), int(AclOperation.WRITE), int(AclOperation.DELETE),
                                   int(AclOperation.ALTER))
DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS = int(AclOperation.DESCRIBE), int(AclOperation.DESCRIBE_CONFIGS), int(AclOperation.ALTER_CONFIGS)
CONCRETE_OPS = tuple(range(ALL, int(AclOperation.DESCRIBE_TOKENS) + 1))  # ALL .. DESCRIBE_TOKENS: what an ACL may name
SUPPORTED: dict[int, tuple[int, ...]] = {int(t): tuple(sorted(int(o) for o in ops)) for t, ops in SUPPORTED_OPERATIONS.items()}
TYPE_NAMES = {TOPIC: "TOPIC", GROUP: "GROUP", CLUSTER: "CLUSTER", TXN: "TRANSACTIONAL_ID"}

SUPER_USER = "User:admin"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"
N_PRINCIPALS = 1000
N_HOSTS = 32
DOMAINS = ("orders", "payments", "clicks", "users", "inventory", "audit", "metrics", "events", "billing", "shipments",
           "search", "fraud", "ledger", "profiles", "sessions", "alerts", "catalog", "pricing", "reviews", "logs")
ACL_TYPE_WEIGHTS = ((TOPIC, 0.85), (GROUP, 0.10), (TXN, 0.04), (CLUSTER, 0.01))
REQUEST_TYPE_WEIGHTS = ((TOPIC, 0.80), (GROUP, 0.10), (TXN, 0.05), (CLUSTER, 0.05))
PREFIX_SUFFIXES = ("", "x", "-v7", "0.orders-v1", ".audit-v2", "-dlq", "1", ".events-app2", "-txn9")

# A raw ACL, as the TSV and the naive scan see it: (resource type, pattern type, name, principal, host, operation, permission)
Acl = tuple[int, int, str, str, str, int, int]
Request = tuple[str, str, int, int, str]  # principal, host, operation, resource type, name
ByTypeKey = tuple[str, str, int, int]  # principal, host, operation, resource type


def parse_size(text: str) -> int:
    text = text.strip().lower().replace("_", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def size_label(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1_000 and n % 1_000 == 0:
        return f"{n // 1_000}k"
    return str(n)


# ------------------------------------------------------------------------------------------ workload


@dataclass
class Workload:
    n: int
    acls: list[Acl]
    requests: list[Request]
    by_type: list[ByTypeKey]
    stats: dict[str, Any] = field(default_factory=dict)


class Names:
    """The resource-name universe for one N, with shared string objects (so memory figures do not count copies)."""

    def __init__(self, n_acls: int) -> None:
        n_topics = max(200, n_acls // 4)
        self.teams = max(8, round(math.sqrt(n_topics / 4)))
        self.counts = {TOPIC: n_topics, GROUP: max(50, n_acls // 40), TXN: max(20, n_acls // 100)}
        self._cache: dict[str, str] = {}

    def share(self, s: str) -> str:
        return self._cache.setdefault(s, s)

    def parts(self, rtype: int, i: int) -> tuple[int, str, int]:
        per_round = self.teams * len(DOMAINS)
        return i % self.teams, DOMAINS[(i // self.teams) % len(DOMAINS)], i // per_round

    def name(self, rtype: int, i: int) -> str:
        team, domain, k = self.parts(rtype, i)
        if rtype == TOPIC:
            return self.share(f"team-{team}.{domain}-v{k}")
        if rtype == GROUP:
            return self.share(f"team-{team}.{domain}-app{k}")
        return self.share(f"team-{team}.{domain}-txn{k}")

    def literal(self, rng: random.Random, rtype: int) -> str:
        if rtype == CLUSTER:
            return CLUSTER_NAME
        return self.name(rtype, rng.randrange(self.counts[rtype]))

    def prefix(self, rng: random.Random, rtype: int) -> str:
        if rtype == CLUSTER:
            return CLUSTER_NAME
        i = rng.randrange(self.counts[rtype])
        team, domain, _ = self.parts(rtype, i)
        r = rng.random()
        if r < 0.35:
            return self.share(f"team-{team}.{domain}")
        if r < 0.60:
            return self.share(f"team-{team}.")
        if r < 0.70:
            return self.share(f"team-{team}")
        return self.name(rtype, i)

    def miss(self, rng: random.Random, rtype: int) -> str:
        if rtype == CLUSTER:
            return CLUSTER_NAME
        r = rng.random()
        if r < 0.4:
            return f"other-{rng.randrange(1000)}.{rng.choice(DOMAINS)}-v{rng.randrange(9)}"
        if r < 0.8:
            return f"team-{self.teams + rng.randrange(10_000)}.{rng.choice(DOMAINS)}-v0"  # a team no ACL names
        return f"team-{rng.randrange(self.teams)}.{rng.choice(DOMAINS)}-zz{rng.randrange(100)}"  # a known team, unknown name


def weighted(rng: random.Random, weights: Sequence[tuple[int, float]]) -> int:
    r = rng.random()
    for value, w in weights:
        if r < w:
            return value
        r -= w
    return weights[-1][0]


def acl_operation(rng: random.Random, rtype: int) -> int:
    r = rng.random()
    if r < 0.75:
        return rng.choice(SUPPORTED[rtype])
    if r < 0.85:
        return ALL
    return rng.choice(CONCRETE_OPS)


def generate(n: int, n_requests: int, n_by_type: int, seed: int, wildcard_share: float = 0.10, shape: str = "mixed") -> Workload:
    rng = random.Random(f"{seed}/{n}/{wildcard_share}" if wildcard_share != 0.10 else f"{seed}/{n}")
    if shape != "mixed":
        rng = random.Random(f"{seed}/{n}/{shape}")
    literal_share = (1 - wildcard_share) * 2 / 3  # literal : prefixed stays 60 : 30
    named_share = 1 - wildcard_share
    names = Names(n)
    principals = [f"User:app-{i:04d}" for i in range(N_PRINCIPALS)]
    hosts = [f"10.{20 + i // 8}.{i % 8}.{11 + 3 * i}" for i in range(N_HOSTS)]
    if shape != "mixed":
        acls, categories = authorizer_shapes.draw(shape, n, rng, principals, hosts)
        drawn = n
    else:
        seen: set[Acl] = set()
        acls: list[Acl] = []
        categories: Counter[str] = Counter()
        drawn = 0
        while len(acls) < n:
            drawn += 1
            r = rng.random()
            category = ("literal" if r < literal_share else "prefixed" if r < named_share
                        else "resource *" if r < named_share + wildcard_share / 2 else "principal User:*")
            rtype = weighted(rng, ACL_TYPE_WEIGHTS)
            principal = principals[rng.randrange(N_PRINCIPALS)]
            if category == "resource *":
                while rtype == CLUSTER:
                    rtype = weighted(rng, ACL_TYPE_WEIGHTS)
                pattern, name = LITERAL, "*"
            else:
                if category == "principal User:*":
                    principal = WILDCARD_PRINCIPAL
                    pattern = LITERAL if rng.random() < 2 / 3 else PREFIXED
                else:
                    pattern = LITERAL if category == "literal" else PREFIXED
                name = names.literal(rng, rtype) if pattern == LITERAL else names.prefix(rng, rtype)
            host = "*" if rng.random() < 0.85 else hosts[rng.randrange(N_HOSTS)]
            acl = (rtype, pattern, name, principal, host, acl_operation(rng, rtype), DENY if rng.random() < 0.10 else ALLOW)
            if acl in seen:
                continue
            seen.add(acl)
            acls.append(acl)
            categories[category] += 1
        del seen

    literal_names: dict[int, list[str]] = {t: [] for t in TYPE_NAMES}
    prefixes: dict[int, list[str]] = {t: [] for t in TYPE_NAMES}
    known: set[tuple[int, int, str]] = set()
    per_resource: Counter[tuple[int, int, str]] = Counter()
    for rtype, pattern, name, *_ in acls:
        key = (rtype, pattern, name)
        per_resource[key] += 1
        if key not in known and name != "*":
            known.add(key)
            (literal_names if pattern == LITERAL else prefixes)[rtype].append(name)

    guests = [f"User:guest-{i}" for i in range(50)]
    requests: list[Request] = []
    for _ in range(n_requests):
        u = rng.random()
        principal = SUPER_USER if u < 0.01 else guests[rng.randrange(len(guests))] if u < 0.04 else ""
        if rng.random() < 0.5:
            rtype, pattern, name, who, acl_host, op, _perm = acls[rng.randrange(n)]
            if pattern == PREFIXED:
                name = name if rtype == CLUSTER else name + rng.choice(PREFIX_SUFFIXES)
            elif name == "*":
                pool = literal_names[rtype]
                name = pool[rng.randrange(len(pool))] if pool and rng.random() < 0.7 else names.miss(rng, rtype)
            if not principal:
                principal = who if who != WILDCARD_PRINCIPAL else principals[rng.randrange(N_PRINCIPALS)]
            if rng.random() >= 0.5 or op not in SUPPORTED[rtype]:
                op = rng.choice(SUPPORTED[rtype])
            host = acl_host if acl_host != "*" and rng.random() < 0.7 else hosts[rng.randrange(N_HOSTS)]
        else:
            rtype = weighted(rng, REQUEST_TYPE_WEIGHTS)
            principal = principal or principals[rng.randrange(N_PRINCIPALS)]
            r = rng.random()
            if r < 0.4 and literal_names[rtype]:
                name = rng.choice(literal_names[rtype])
            elif r < 0.7 and prefixes[rtype]:
                name = rng.choice(prefixes[rtype])
                name = name if rtype == CLUSTER else name + rng.choice(PREFIX_SUFFIXES)
            else:
                name = names.miss(rng, rtype)
            op = rng.choice(SUPPORTED[rtype])
            host = hosts[rng.randrange(N_HOSTS)]
        requests.append((principal, host, op, rtype, name))

    by_type_seen: set[ByTypeKey] = set()
    by_type: list[ByTypeKey] = []
    while len(by_type) < n_by_type:
        u = rng.random()
        principal = SUPER_USER if u < 0.01 else guests[rng.randrange(len(guests))] if u < 0.05 else principals[rng.randrange(N_PRINCIPALS)]
        rtype = weighted(rng, REQUEST_TYPE_WEIGHTS)
        key = (principal, hosts[rng.randrange(N_HOSTS)], rng.choice(SUPPORTED[rtype]), rtype)
        if key not in by_type_seen:
            by_type_seen.add(key)
            by_type.append(key)

    (big_type, big_pattern, big_name), big_count = per_resource.most_common(1)[0]
    stats = {
        "acls_drawn": drawn,
        "categories": dict(categories),
        "types": {TYPE_NAMES[t]: c for t, c in sorted(Counter(a[0] for a in acls).items())},
        "deny_share": sum(a[6] == DENY for a in acls) / n,
        "specific_host_share": sum(a[4] != "*" for a in acls) / n,
        "distinct_literal_names": sum(len(v) for v in literal_names.values()),
        "distinct_prefixes": sum(len(v) for v in prefixes.values()),
        "largest_resource": {"type": TYPE_NAMES[big_type], "pattern": "LITERAL" if big_pattern == LITERAL else "PREFIXED",
                             "name": big_name, "acls": big_count},
        "teams": names.teams,
        "topic_prefix_lengths": len({len(p) for p in prefixes[TOPIC]}),
        "distinct_request_resources": len({(p, h, t, name) for p, h, _op, t, name in requests}),
    }
    return Workload(n, acls, requests, by_type, stats)


def write_tsv(w: Workload, directory: Path) -> dict[str, Path]:
    paths = {"acls": directory / "acls.tsv", "requests": directory / "requests.tsv", "by_type": directory / "bytype.tsv"}
    with open(paths["acls"], "w", encoding="utf-8") as f:
        f.writelines(f"{t}\t{p}\t{name}\t{who}\t{host}\t{op}\t{perm}\n" for t, p, name, who, host, op, perm in w.acls)
    with open(paths["requests"], "w", encoding="utf-8") as f:
        f.writelines(f"{who}\t{host}\t{op}\t{t}\t{name}\n" for who, host, op, t, name in w.requests)
    with open(paths["by_type"], "w", encoding="utf-8") as f:
        f.writelines(f"{who}\t{host}\t{op}\t{t}\n" for who, host, op, t in w.by_type)
    return paths


# ------------------------------------------------------------------------------------------ naive baseline


class NaiveAuthorizer:
    """Kafka's rules applied by scanning every ACL on every call: the obviously-correct reference, not a contender."""

    def __init__(self, acls: list[Acl], super_users: frozenset[str], allow_everyone: bool = False) -> None:
        self.acls = acls
        self.super_users = super_users
        self.allow_everyone = allow_everyone

    def authorize(self, principal: str, host: str, op: int, rtype: int, name: str) -> bool:
        if principal in self.super_users:
            return True
        matched = allowed = False
        for a_type, a_pattern, a_name, a_principal, a_host, a_op, a_perm in self.acls:
            if a_type != rtype:
                continue
            if a_pattern == LITERAL:
                if a_name != name and a_name != "*":
                    continue
            elif not name.startswith(a_name):
                continue
            matched = True  # an ACL on this resource exists: no default-allow any more
            if (a_principal != principal and a_principal != WILDCARD_PRINCIPAL) or (a_host != "*" and a_host != host):
                continue
            if a_perm == DENY:
                if a_op == op or a_op == ALL:
                    return False  # any matching DENY wins
            elif (a_op == op or a_op == ALL or (op == DESCRIBE and a_op in (READ, WRITE, DELETE, ALTER))
                  or (op == DESCRIBE_CONFIGS and a_op == ALTER_CONFIGS)):
                allowed = True
        return allowed or (not matched and self.allow_everyone)

    def authorized_operations(self, principal: str, host: str, rtype: int, name: str) -> int:
        bits = 0
        for op in SUPPORTED[rtype]:  # Kafka's AuthHelper.authorizedOperations: one authorize per supported operation
            if self.authorize(principal, host, op, rtype, name):
                bits |= 1 << op
        return bits

    def authorize_by_resource_type(self, principal: str, host: str, op: int, rtype: int) -> bool:
        """Kafka 3.9's default Authorizer.authorizeByResourceType, line by line."""
        if self.authorize(principal, host, op, rtype, "hardcode"):
            return True
        deny_literal: set[str] = set()
        deny_prefix: set[str] = set()
        allow_literal: set[str] = set()
        allow_prefix: set[str] = set()
        wildcard_allow = False
        for a_type, a_pattern, a_name, a_principal, a_host, a_op, a_perm in self.acls:
            if a_type != rtype or (a_host != host and a_host != "*"):
                continue
            if (a_principal != principal and a_principal != WILDCARD_PRINCIPAL) or (a_op != op and a_op != ALL):
                continue
            if a_perm == DENY:
                if a_pattern == LITERAL and a_name == "*":
                    return False
                (deny_literal if a_pattern == LITERAL else deny_prefix).add(a_name)
            elif a_pattern == LITERAL and a_name == "*":
                wildcard_allow = True
            else:
                (allow_literal if a_pattern == LITERAL else allow_prefix).add(a_name)
        if wildcard_allow:
            return True
        for kind, names in ((LITERAL, allow_literal), (PREFIXED, allow_prefix)):
            for allowed in names:
                if kind == LITERAL and allowed in deny_literal:
                    continue
                if not any(allowed[:i] in deny_prefix for i in range(1, len(allowed) + 1)):
                    return True
        return False

    def applying(self, principal: str, host: str, rtype: int, name: str) -> list[Acl]:
        """The ACLs on this resource for this principal and host (for mismatch reports)."""
        return [a for a in self.acls if a[0] == rtype
                and ((a[1] == LITERAL and a[2] in (name, "*")) or (a[1] == PREFIXED and name.startswith(a[2])))
                and a[3] in (principal, WILDCARD_PRINCIPAL) and a[4] in ("*", host)]


# ------------------------------------------------------------------------------------------ ours

_TYPES = {int(t): t for t in ResourceType}
_PATTERNS = {int(p): p for p in PatternType}
_OPS = {int(o): o for o in AclOperation}
_PERMS = {int(p): p for p in AclPermissionType}


def to_bindings(acls: list[Acl]) -> list[AclBinding]:
    return [AclBinding(ResourcePattern(_TYPES[t], name, _PATTERNS[p]), AccessControlEntry(who, host, _OPS[op], _PERMS[perm]))
            for t, p, name, who, host, op, perm in acls]


def rss_bytes() -> int:
    """Resident set size now (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def new_authorizer(audit: AuditLog) -> Authorizer:
    return Authorizer(super_users=SUPER_USER, allow_everyone_if_no_acl_found=False, audit=audit)


def load(az: Authorizer, bindings: list[AclBinding], batch: int) -> tuple[float, float]:
    """create_acls of every binding, ``batch`` per call; (CPU seconds, wall seconds)."""
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(bindings), batch):
        results = az.create_acls(bindings[i:i + batch])
        if any(r.error for r in results):
            raise SystemExit(f"create_acls refused an ACL: {next(r.error for r in results if r.error)}")
    return time.process_time() - cpu, time.perf_counter() - wall


def bump_generation(az: Authorizer) -> None:
    """Change the ACLs and change them back, through the public API, so that every memo starts empty.

    The engine forgets memoised answers per principal; an ACL for User:* concerns every principal, so creating
    and deleting one empties them all.
    """
    before = az.generation
    binding = AclBinding(ResourcePattern(ResourceType.TOPIC, "bench-cache-reset", PatternType.LITERAL),
                         AccessControlEntry("User:*", "*", AclOperation.READ, AclPermissionType.ALLOW))
    az.create_acls([binding])
    az.delete_acls([AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "bench-cache-reset", PatternType.LITERAL),
                                     AccessControlEntryFilter("User:*", "*", AclOperation.READ, AclPermissionType.ALLOW))])
    if az.generation == before:
        raise SystemExit("the ACL generation did not change after a create and a delete: cannot measure a cold cache")


@dataclass(frozen=True)
class Rate:
    """Calls per second of wall time and per CPU-second of this process (one thread: immune to other load)."""

    wall: float
    cpu: float


def timed(body: Callable[[], int]) -> Rate:
    gc.collect(1)  # the young generations only: a full collection of ~10M objects at 1M ACLs takes seconds
    wall, cpu = time.perf_counter(), time.process_time()
    calls = body()
    return Rate(calls / (time.perf_counter() - wall), calls / (time.process_time() - cpu))


def pass_authorize(az: Authorizer, reqs: list[Request]) -> Rate:
    authorize = az.authorize

    def body() -> int:
        for principal, host, op, rtype, name in reqs:
            authorize(principal, host, op, rtype, name)
        return len(reqs)

    return timed(body)


def pass_authorized_operations(az: Authorizer, reqs: list[Request]) -> Rate:
    ops = az.authorized_operations

    def body() -> int:
        for principal, host, _op, rtype, name in reqs:
            ops(principal, host, rtype, name)
        return len(reqs)

    return timed(body)


def pass_by_type(az: Authorizer, keys: list[ByTypeKey]) -> Rate:
    by_type = az.authorize_by_resource_type

    def body() -> int:
        for principal, host, op, rtype in keys:
            by_type(principal, host, op, rtype)
        return len(keys)

    return timed(body)


def median_rate(rates: list[Rate]) -> tuple[float, float]:
    return statistics.median(r.cpu for r in rates), statistics.median(r.wall for r in rates)


@dataclass
class Settings:
    sizes: list[int]
    requests: int
    by_type_keys: int
    repeat: int
    load_batch: int
    whole_load_sizes: list[int]
    tracemalloc_max: int
    naive_max: int
    naive_seconds: float
    kafka: bool
    kafka_check_seconds: float
    kafka_warmup_seconds: float
    kafka_measure_seconds: float
    seed: int
    wildcard_share: float
    shape: str = "mixed"


def measure_ours(w: Workload, s: Settings, audit: AuditLog) -> tuple[dict[str, Any], dict[str, list[int]]]:
    out: dict[str, Any] = {"wall": {}}
    gc.collect()
    rss_before = rss_bytes()
    started = time.process_time()
    bindings = to_bindings(w.acls)
    out["build_bindings_seconds"] = time.process_time() - started
    az = new_authorizer(audit)
    out["load_seconds"], out["wall"]["load_seconds"] = load(az, bindings, s.load_batch)
    out["load_batch"] = s.load_batch
    if len(az.acls()) != w.n:
        raise SystemExit(f"the authorizer holds {len(az.acls())} ACLs after loading {w.n}")
    del bindings
    gc.collect()  # once, after the load; the timed passes then start from a collected heap
    out["rss_bytes_per_acl"] = (rss_bytes() - rss_before) / w.n

    # answers, for the correctness comparisons (untimed; also warms the interpreter's specialisations)
    answers = {
        "authorize": [int(az.authorize(*r)) for r in w.requests],
        "authorized_operations": [az.authorized_operations(p, h, t, name) for p, h, _op, t, name in w.requests],
    }
    bump_generation(az)
    answers["by_resource_type"] = [int(az.authorize_by_resource_type(*k)) for k in w.by_type]

    for key, run_pass, stream in (("authorize", pass_authorize, w.requests),
                                  ("authorized_operations", pass_authorized_operations, w.requests),
                                  ("by_resource_type", pass_by_type, w.by_type)):
        cold, warm = [], []
        for _ in range(s.repeat):
            bump_generation(az)  # empties every memo: each key of the stream is computed once in the next pass
            cold.append(run_pass(az, stream))
            warm.append(run_pass(az, stream))
        out[f"{key}_cold"], out["wall"][f"{key}_cold"] = median_rate(cold)
        out[f"{key}_warm"], out["wall"][f"{key}_warm"] = median_rate(warm)
    # Why cold costs grow with N: the same cold pass with the requests in (principal, type, name) order does the same
    # work, but each principal's tables and each name's neighbours are still in the CPU caches from the request before.
    in_order = sorted(w.requests, key=lambda r: (r[0], r[3], r[4], r[1]))
    sorted_cold = []
    for _ in range(s.repeat):
        bump_generation(az)
        sorted_cold.append(pass_authorize(az, in_order))
    out["authorize_cold_sorted"], out["wall"]["authorize_cold_sorted"] = median_rate(sorted_cold)
    out["allowed_share"] = sum(answers["authorize"]) / len(w.requests)
    del az
    gc.collect()

    if w.n <= s.tracemalloc_max:
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        bindings = to_bindings(w.acls)
        az = new_authorizer(audit)
        load(az, bindings, s.load_batch)
        del bindings
        gc.collect()
        out["tracemalloc_bytes_per_acl"] = (tracemalloc.get_traced_memory()[0] - base) / w.n
        tracemalloc.stop()
        del az
        gc.collect()
    return out, answers


def measure_naive(w: Workload, s: Settings) -> tuple[dict[str, Any], dict[str, list[int]]]:
    naive = NaiveAuthorizer(w.acls, frozenset({SUPER_USER}))
    out: dict[str, Any] = {}
    answers: dict[str, list[int]] = {}

    def run(name: str, items: Sequence[Any], call: Callable[[Any], int]) -> None:
        got: list[int] = []
        gc.collect()
        started, cpu = time.perf_counter(), time.process_time()
        deadline = started + s.naive_seconds
        for item in items:
            got.append(call(item))
            if time.perf_counter() > deadline:
                break
        out[name] = len(got) / (time.process_time() - cpu)
        out.setdefault("wall", {})[name] = len(got) / (time.perf_counter() - started)
        out[name + "_calls"] = len(got)
        answers[name] = got

    run("authorize", w.requests, lambda r: int(naive.authorize(*r)))
    run("authorized_operations", w.requests, lambda r: naive.authorized_operations(r[0], r[1], r[3], r[4]))
    run("by_resource_type", w.by_type, lambda k: int(naive.authorize_by_resource_type(*k)))
    return out, answers


# ------------------------------------------------------------------------------------------ kafka


def java_executable() -> str:
    java = os.environ.get("JAVA") or shutil.which("java")
    if not java:
        raise SystemExit("java not found (install a JDK 17, or run with --no-kafka)")
    return java


def kafka_classpath() -> str:
    started = time.perf_counter()
    r = subprocess.run([str(ROOT / "scripts" / "real-kafka"), "classpath"], stdout=subprocess.PIPE, text=True, check=False)
    if r.returncode != 0 or not r.stdout.strip():
        raise SystemExit("scripts/real-kafka classpath failed (see above); run with --no-kafka to skip Kafka")
    print(f"# Kafka classpath resolved in {time.perf_counter() - started:.1f}s (scripts/real-kafka classpath)", flush=True)
    return r.stdout.strip()


JVM_FLAGS = ["-Xmx2g", "-XX:+UseG1GC"]
LOG4J = "log4j.rootLogger=WARN, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n" \
        "log4j.appender.stderr.Target=System.err\nlog4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n" \
        "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n"


def measure_kafka(w: Workload, s: Settings, java: str, classpath: str, directory: Path) -> tuple[dict[str, Any], dict[str, list[int]]]:
    paths = write_tsv(w, directory)
    log4j = directory / "log4j.properties"
    log4j.write_text(LOG4J)
    cmd = [java, *JVM_FLAGS, f"-Dlog4j.configuration=file:{log4j}", "-cp", classpath, "kafkashim.oracle.AuthorizerBench",
           "--acls", str(paths["acls"]), "--requests", str(paths["requests"]), "--by-type", str(paths["by_type"]),
           "--super-users", SUPER_USER, "--out-dir", str(directory),
           "--check-seconds", str(s.kafka_check_seconds), "--warmup-seconds", str(s.kafka_warmup_seconds),
           "--measure-seconds", str(s.kafka_measure_seconds)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    if r.returncode != 0:
        raise SystemExit(f"AuthorizerBench failed (exit {r.returncode}); stdout: {r.stdout[-2000:]}")
    result = json.loads(r.stdout.strip().splitlines()[-1])
    answers = {}
    for kind, filename in (("authorize", "kafka-authorize.txt"), ("authorized_operations", "kafka-ops.txt"),
                           ("by_resource_type", "kafka-bytype.txt")):
        answers[kind] = [int(x) for x in (directory / filename).read_text().split()]
    m = result["measure"]
    out = {
        "load_seconds": result["load_cpu_seconds"],
        "build_acl_objects_seconds": result["build_acl_objects_cpu_seconds"],
        "memory_bytes_per_acl": result["heap_delta_bytes"] / w.n,
        "authorize": m["authorize"]["per_cpu_second"],
        "authorize_nolog": m["authorize_nolog"]["per_cpu_second"],
        "authorized_operations": m["authorized_operations"]["per_cpu_second"],
        "by_resource_type": m["by_resource_type"]["per_cpu_second"],
        "wall": {"load_seconds": result["load_seconds"], **{k: v["per_second"] for k, v in m.items()}},
        "thread_cpu_seconds": {k: v["thread_cpu_seconds"] for k, v in m.items()},
        "calls": {k: v["calls"] for k, v in m.items()},
        "check": result["check"],
        "warmup_seconds": result["warmup_seconds"],
        "java": result["java"],
    }
    return out, answers


# ------------------------------------------------------------------------------------------ comparisons


def describe_acl(a: Acl) -> str:
    t, p, name, who, host, op, perm = a
    return (f"{TYPE_NAMES[t]}:{'LITERAL' if p == LITERAL else 'PREFIXED'}:{name} {who}@{host} "
            f"{AclOperation(op).name} {AclPermissionType(perm).name}")


def compare(w: Workload, label: str, ours: dict[str, list[int]], other: dict[str, list[int]], naive: NaiveAuthorizer) -> dict[str, Any]:
    """Ours vs another implementation's answers, over the prefix of each stream the other one reached."""
    report: dict[str, Any] = {}
    for kind, other_answers in other.items():
        k = len(other_answers)
        mine = ours[kind][:k]
        bad = [i for i in range(k) if mine[i] != other_answers[i]]
        entry: dict[str, Any] = {"compared": k, "mismatches": len(bad)}
        if kind != "authorized_operations":
            entry["allowed_ours"] = sum(mine)
            entry[f"allowed_{label}"] = sum(other_answers)
        examples = []
        for i in bad[:5]:
            if kind == "by_resource_type":
                principal, host, op, rtype = w.by_type[i]
                examples.append({"key": f"{principal} from {host} {AclOperation(op).name} any {TYPE_NAMES[rtype]}",
                                 "ours": mine[i], label: other_answers[i]})
                continue
            principal, host, op, rtype, name = w.requests[i]
            what = f"{principal} from {host} " + (f"{AclOperation(op).name} " if kind == "authorize" else "") + f"{TYPE_NAMES[rtype]}:{name}"
            examples.append({"request": what, "ours": mine[i], label: other_answers[i],
                             "acls": [describe_acl(a) for a in naive.applying(principal, host, rtype, name)[:8]]})
        if examples:
            entry["examples"] = examples
        report[kind] = entry
    return report


# ------------------------------------------------------------------------------------------ report


def fmt_rate(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def fmt_us(rate: float | None) -> str:
    return "-" if not rate else f"{1e6 / rate:,.2f}"


def cold_warm(cold: float, warm: float) -> str:
    return f"{fmt_rate(cold)} / {fmt_rate(warm)}"


def print_table(results: list[dict[str, Any]]) -> None:
    head = ("ACLs", "impl", "authorize/s cold / warm", "us/authorize cold / warm", "authorized_ops/s cold / warm",
            "by_resource_type/s cold / warm", "load CPU s", "mem B/ACL")
    rows: list[tuple[str, ...]] = [head]
    for res in results:
        n = size_label(res["n"])
        o = res["ours"]
        rows.append((n, "ours", cold_warm(o["authorize_cold"], o["authorize_warm"]),
                     f"{fmt_us(o['authorize_cold'])} / {fmt_us(o['authorize_warm'])}",
                     cold_warm(o["authorized_operations_cold"], o["authorized_operations_warm"]),
                     cold_warm(o["by_resource_type_cold"], o["by_resource_type_warm"]),
                     f"{o['load_seconds']:.2f}", f"{o['tracemalloc_bytes_per_acl']:,.0f}" if "tracemalloc_bytes_per_acl" in o
                     else f"~{o['rss_bytes_per_acl']:,.0f} (RSS)"))
        for label, impl in (("naive", "naive (n={})"), ("kafka", "kafka 3.9")):
            v = res.get(label)
            if not v:
                continue
            rows.append((n, impl.format(v.get("authorize_calls")), f"{fmt_rate(v['authorize'])} (no cache)", fmt_us(v["authorize"]),
                         f"{fmt_rate(v['authorized_operations'])} (no cache)", f"{fmt_rate(v['by_resource_type'])} (no cache)",
                         f"{v['load_seconds']:.2f}" if "load_seconds" in v else "-",
                         f"{v['memory_bytes_per_acl']:,.0f}" if "memory_bytes_per_acl" in v else "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for j, r in enumerate(rows):
        print("  ".join(c.ljust(widths[i]) if i < 2 else c.rjust(widths[i]) for i, c in enumerate(r)))
        if j == 0:
            print("  ".join("-" * x for x in widths))


def verdicts(results: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    by_n = {r["n"]: r for r in results}
    small, large = min(by_n), max(by_n)
    if small != large:
        note = "" if (small, large) == (1_000, 1_000_000) else f" (1k/1M not both measured: {size_label(small)} vs {size_label(large)})"
        for key in ("authorize", "authorized_operations", "by_resource_type"):
            for phase in ("cold", "warm"):
                ratio = by_n[small]["ours"][f"{key}_{phase}"] / by_n[large]["ours"][f"{key}_{phase}"]  # cost ratio = inverse throughput
                lines.append(f"[{'PASS' if ratio <= 1.5 else 'FAIL'}] ours: {key} ({phase}) costs {ratio:.2f}x at {size_label(large)} ACLs "
                             f"what it costs at {size_label(small)} (limit 1.5x){note}")
    if 100_000 in by_n:
        for phase in ("cold", "warm"):
            rate = by_n[100_000]["ours"][f"authorize_{phase}"]
            lines.append(f"[{'PASS' if rate >= 200_000 else 'FAIL'}] ours: {rate:,.0f} authorize/s ({phase}) at 100k ACLs on one core "
                         "(target >= 200,000)")
    else:
        lines.append("[----] ours: 200k authorize/s at 100k ACLs not checked (100k not in --sizes)")
    for r in results:
        if not r.get("kafka"):
            continue
        o, k = r["ours"], r["kafka"]
        ratios = ", ".join(f"{key} {o[key + '_cold'] / k[key]:,.2f}x / {o[key + '_warm'] / k[key]:,.2f}x"
                           for key in ("authorize", "authorized_operations", "by_resource_type"))
        lines.append(f"[info] ours/kafka throughput at {size_label(r['n'])} (ours cold / warm; >1: ours faster): {ratios}; "
                     f"authorize vs Kafka without audit-line formatting {o['authorize_cold'] / k['authorize_nolog']:,.2f}x / "
                     f"{o['authorize_warm'] / k['authorize_nolog']:,.2f}x")
    for r in results:
        for label in ("kafka", "naive"):
            cmp = r.get(f"compare_{label}")
            if not cmp:
                continue
            bad = sum(c["mismatches"] for c in cmp.values())
            parts = []
            for kind, c in cmp.items():
                extra = f", ALLOWED {c['allowed_ours']:,} ours = {c[f'allowed_{label}']:,} {label}" if "allowed_ours" in c else ""
                parts.append(f"{kind} {c['compared'] - c['mismatches']:,}/{c['compared']:,} agree{extra}")
            lines.append(f"[{'PASS' if bad == 0 else 'FAIL'}] ours vs {label} at {size_label(r['n'])}: " + "; ".join(parts))
            for kind, c in cmp.items():
                for ex in c.get("examples", []):
                    lines.append(f"       {kind} mismatch: {json.dumps(ex)}")
    return lines


def print_environment(java: str | None) -> dict[str, Any]:
    env = {
        "command": " ".join(shlex.quote(a) for a in [os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(str(ROOT)) else
                                                     sys.executable, os.path.relpath(os.path.abspath(sys.argv[0]), ROOT), *sys.argv[1:]]),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "platform": platform.platform(),
        "cpu": platform.processor() or platform.machine(),
    }
    if java:
        v = subprocess.run([java, "-version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False).stdout
        env["java"] = v.splitlines()[0] if v else "?"
        env["jvm_flags"] = " ".join(JVM_FLAGS)
    env["loadavg_start"] = os.getloadavg()
    print(f"# command: {env['command']}  (cwd {ROOT})")
    print(f"# python: {env['python']}; CPUs: {env['cpu_count']} ({env['cpus_usable']} usable); {env['platform']}; "
          f"load average {' '.join(f'{x:.2f}' for x in env['loadavg_start'])}")
    if java:
        print(f"# java: {env['java']}; flags {env['jvm_flags']}")
    return env


# ------------------------------------------------------------------------------------------ main


def run_size(n: int, s: Settings, audit: AuditLog, java: str | None, classpath: str | None, workdir: Path | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    w = generate(n, s.requests, s.by_type_keys, s.seed, s.wildcard_share, s.shape)
    st = w.stats
    print(f"\n## {size_label(n)} ACLs: generated in {time.perf_counter() - t0:.1f}s: {st['categories']}; types {st['types']}; "
          f"DENY {st['deny_share']:.1%}; specific hosts {st['specific_host_share']:.1%}; {st['distinct_literal_names']:,} literal "
          f"names, {st['distinct_prefixes']:,} prefixes ({st['topic_prefix_lengths']} distinct TOPIC prefix lengths); largest resource {st['largest_resource']['type']} "
          f"{st['largest_resource']['pattern']} {st['largest_resource']['name']!r} with {st['largest_resource']['acls']:,} ACLs; "
          f"{len(w.requests):,} requests ({st['distinct_request_resources']:,} distinct (principal, host, type, name)), "
          f"{len(w.by_type):,} by-type keys", flush=True)
    res: dict[str, Any] = {"n": n, "workload": st}
    naive_ref = NaiveAuthorizer(w.acls, frozenset({SUPER_USER}))
    kafka_answers = None
    if java and classpath:
        t = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="authorizer-bench-", dir=workdir) as d:
            res["kafka"], kafka_answers = measure_kafka(w, s, java, classpath, Path(d))
        print(f"   kafka: {time.perf_counter() - t:.1f}s (check pass reached {res['kafka']['check']['authorize']['count']:,} "
              f"requests; warm-up {res['kafka']['warmup_seconds']:.1f}s)", flush=True)
    t = time.perf_counter()
    res["ours"], ours_answers = measure_ours(w, s, audit)
    res["ours"]["allowed_share"] = round(res["ours"]["allowed_share"], 4)
    print(f"   ours: {time.perf_counter() - t:.1f}s (load {res['ours']['load_seconds']:.2f} CPU s in batches of {s.load_batch}; "
          f"{res['ours']['allowed_share']:.1%} of requests allowed)", flush=True)
    if n <= s.naive_max:
        t = time.perf_counter()
        res["naive"], naive_answers = measure_naive(w, s)
        res["compare_naive"] = compare(w, "naive", ours_answers, naive_answers, naive_ref)
        print(f"   naive: {time.perf_counter() - t:.1f}s", flush=True)
    if kafka_answers is not None:
        res["compare_kafka"] = compare(w, "kafka", ours_answers, kafka_answers, naive_ref)
    return res


def whole_load_probe(s: Settings, audit: AuditLog) -> list[dict[str, float]]:
    """One create_acls call with the first k ACLs of a workload, for each k: how the cost of one big batch grows."""
    if not s.whole_load_sizes:
        return []
    acls = generate(max(s.whole_load_sizes), 0, 0, s.seed, s.wildcard_share, s.shape).acls
    probe = []
    for k in sorted(s.whole_load_sizes):
        bindings = to_bindings(acls[:k])
        cpu, wall = load(new_authorizer(audit), bindings, k)
        batched, _ = load(new_authorizer(audit), bindings, s.load_batch)
        probe.append({"acls": k, "one_call_seconds": cpu, "batched_seconds": batched, "one_call_wall_seconds": wall})
    line = ", ".join(f"{size_label(int(p['acls']))}: {p['one_call_seconds']:.2f}s ({p['batched_seconds']:.3f}s in batches of {s.load_batch})"
                     for p in probe)
    print(f"\n## create_acls with the whole set in ONE call (CPU s): {line}", flush=True)
    return probe


def profile(n: int, s: Settings, audit: AuditLog) -> None:
    w = generate(n, s.requests, s.by_type_keys, s.seed, s.wildcard_share, s.shape)
    bindings = to_bindings(w.acls)
    az = new_authorizer(audit)
    for title, fn in (
        (f"create_acls of {n:,} ACLs in batches of {s.load_batch}", lambda: load(az, bindings, s.load_batch)),
        (f"authorize cold x {len(w.requests):,}", lambda: (bump_generation(az), pass_authorize(az, w.requests))),
        (f"authorize warm x {len(w.requests):,}", lambda: pass_authorize(az, w.requests)),
        (f"authorized_operations cold x {len(w.requests):,}", lambda: (bump_generation(az), pass_authorized_operations(az, w.requests))),
        (f"authorize_by_resource_type cold x {len(w.by_type):,}", lambda: (bump_generation(az), pass_by_type(az, w.by_type))),
    ):
        prof = cProfile.Profile()
        prof.enable()
        fn()
        prof.disable()
        print(f"\n### cProfile: {title} at {size_label(n)} ACLs (top 14 by own time)")
        pstats.Stats(prof).sort_stats("tottime").print_stats(14)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: 1k and 10k, shorter passes (< 60 s)")
    ap.add_argument("--sizes", help="comma-separated ACL counts, e.g. 1k,10k,100k,1M (default: those four; --quick: 1k,10k)")
    ap.add_argument("--json", metavar="PATH", help="write every figure to PATH as JSON")
    ap.add_argument("--seed", type=int, default=679)
    ap.add_argument("--wildcard-share", type=float, default=0.10,
                    help="share of wildcard ACLs, half resource '*' and half principal User:* (default 0.10; the rest stays 2:1 literal:prefixed)")
    ap.add_argument("--shape", choices=authorizer_shapes.SHAPES, default="mixed",
                    help="the ACL set: the default mix, or one of the shapes in bench/authorizer_shapes.py (TOPIC ACLs only)")
    ap.add_argument("--requests", type=int, help="request stream length (default 100k; --quick 20k)")
    ap.add_argument("--by-type-keys", type=int, help="distinct by-resource-type keys (default 20k; --quick 5k)")
    ap.add_argument("--repeat", type=int, help="timed passes per call kind for ours, median reported (default 3; --quick 2)")
    ap.add_argument("--load-batch", type=int, default=100, help="ACLs per create_acls call for the load figure (default 100)")
    ap.add_argument("--whole-load-sizes", help="ACL counts to load with ONE create_acls call each (default 1k,2k,4k; --quick 1k,2k)")
    ap.add_argument("--tracemalloc-max", type=parse_size, default=100_000,
                    help="memory by tracemalloc (a second, traced load) up to this many ACLs; above, the RSS delta of the timed load (100k)")
    ap.add_argument("--naive-max", type=parse_size, help="run the naive scan up to this many ACLs (default 100k; --quick 10k)")
    ap.add_argument("--naive-seconds", type=float, help="time budget per naive call kind (default 1.5; --quick 0.5)")
    ap.add_argument("--no-kafka", action="store_true", help="skip Kafka's StandardAuthorizer (no JVM)")
    ap.add_argument("--kafka-seconds", type=float, help="Kafka's timed seconds per call kind (default 2; --quick 0.7)")
    ap.add_argument("--workdir", type=Path, help="where the TSV files go (default: a temporary directory, removed afterwards)")
    ap.add_argument("--profile", type=parse_size, metavar="N", help="cProfile load and the three calls at N ACLs; print and exit")
    a = ap.parse_args(argv)

    # The audit log must be off (WARNING) before any Authorizer exists: at INFO every denial formats a line.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    audit = AuditLog()
    if audit.denials or audit.grants:
        raise SystemExit("structlog still logs audit lines at WARNING; the figures would include log formatting")

    quick = a.quick
    s = Settings(
        sizes=[parse_size(x) for x in a.sizes.split(",")] if a.sizes else ([1_000, 10_000] if quick else [1_000, 10_000, 100_000, 1_000_000]),
        requests=a.requests or (20_000 if quick else 100_000),
        by_type_keys=a.by_type_keys or (5_000 if quick else 20_000),
        repeat=a.repeat or (2 if quick else 3),
        load_batch=a.load_batch,
        whole_load_sizes=[parse_size(x) for x in (a.whole_load_sizes or ("1k,2k" if quick else "1k,2k,4k")).split(",") if x],
        tracemalloc_max=a.tracemalloc_max,
        naive_max=a.naive_max if a.naive_max is not None else (10_000 if quick else 100_000),
        naive_seconds=a.naive_seconds or (0.5 if quick else 1.5),
        kafka=not a.no_kafka and a.profile is None,
        kafka_check_seconds=1.5 if quick else 3.0,
        kafka_warmup_seconds=2.0 if quick else 4.0,
        kafka_measure_seconds=a.kafka_seconds or (0.7 if quick else 2.0),
        seed=a.seed,
        wildcard_share=a.wildcard_share,
        shape=a.shape,
    )
    if a.profile is not None:
        profile(a.profile, s, audit)
        return 0

    started = time.perf_counter()
    java = java_executable() if s.kafka else None
    env = print_environment(java)
    classpath = kafka_classpath() if java else None
    print(f"# sizes {', '.join(size_label(n) for n in s.sizes)}; {s.requests:,} requests, {s.by_type_keys:,} by-type keys; "
          f"seed {s.seed}; shape {s.shape}; wildcard share {s.wildcard_share:.0%}; ours: median of {s.repeat} passes; naive: {s.naive_seconds}s per call kind up to "
          f"{size_label(s.naive_max)} ACLs; kafka: {s.kafka_measure_seconds}s per call kind after >= {s.kafka_warmup_seconds}s warm-up",
          flush=True)
    probe = whole_load_probe(s, audit)
    results = [run_size(n, s, audit, java, classpath, a.workdir) for n in s.sizes]

    print()
    print_table(results)
    print()
    for line in verdicts(results):
        print(line)
    if len(probe) >= 2:
        a0, a1 = probe[0], probe[-1]
        growth = a1["one_call_seconds"] / a0["one_call_seconds"]
        exponent = math.log(growth) / math.log(a1["acls"] / a0["acls"])
        print(f"[{'FAIL' if exponent > 1.5 else 'PASS'}] ours: one create_acls call with {size_label(int(a1['acls']))} ACLs costs "
              f"{growth:.1f}x one with {size_label(int(a0['acls']))} ({a1['acls'] / a0['acls']:.0f}x the ACLs: grows as n^{exponent:.2f}; "
              f"{a1['one_call_seconds']:.2f}s vs {a1['batched_seconds']:.3f}s in batches of {s.load_batch})")
    for r in results:
        o = r["ours"]
        print(f"[info] ours at {size_label(r['n'])}: authorize (cold) {fmt_rate(o['authorize_cold'])}/s in request order, "
              f"{fmt_rate(o['authorize_cold_sorted'])}/s with the same requests sorted by principal, type and name (the same "
              f"work with warmer CPU caches: {o['authorize_cold'] / o['authorize_cold_sorted']:.2f}x the time)")
    for r in results:
        o = r["ours"]
        if "tracemalloc_bytes_per_acl" in o:
            print(f"[info] ours at {size_label(r['n'])}: memory per ACL {o['tracemalloc_bytes_per_acl']:,.0f} B by tracemalloc, "
                  f"{o['rss_bytes_per_acl']:,.0f} B by RSS delta")
    for r in results:
        if r.get("kafka"):
            k = r["kafka"]
            print(f"[info] kafka at {size_label(r['n'])}: authorize with logIfDenied=false {fmt_rate(k['authorize_nolog'])}/s; "
                  f"timed calls {k['calls']}")
    elapsed = time.perf_counter() - started
    maxrss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    env["loadavg_end"] = os.getloadavg()
    print(f"# total {elapsed:.0f}s; python peak RSS {maxrss_mb:,.0f} MB; load average now "
          f"{' '.join(f'{x:.2f}' for x in env['loadavg_end'])} (rates are per CPU-second; wall-clock rates in --json)")
    if a.json:
        Path(a.json).write_text(json.dumps({"environment": env, "settings": s.__dict__, "results": results, "whole_load_probe": probe,
                                            "verdicts": verdicts(results), "seconds": elapsed}, indent=2) + "\n")
        print(f"# wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
