"""ACL sets unlike bench/authorizer.py's default mix, for `bench/authorizer.py --shape NAME` (issue 15).

The default mix spreads 1,000 principals over shared team names, so each principal holds few patterns on any one
resource type. Real clusters also look like these, and each stresses a different part of the index:

* own-prefixes: every principal owns its topics (`team42.svc12345`): ~30 PREFIXED and ~60 LITERAL patterns of its
  own, plus 10% LITERAL "*" ACLs. A first ask walks one principal's long prefix list.
* few-principals: 10 principals hold every ACL (10k each at 100k): huge per-principal tables.
* wildcard-principals: 40% of the ACLs are for User:*, so every decision visits a second, large table.
* many-hosts: 70% of the ACLs name one of 1,000 client hosts instead of "*".

Each returns ACL tuples as bench/authorizer.py uses them: (type, pattern, name, principal, host, operation, permission).
"""

from __future__ import annotations

import random
from collections import Counter

TOPIC, LITERAL, PREFIXED = 2, 3, 4
ALLOW, DENY = 3, 2
ALL, READ, WRITE, DESCRIBE = 2, 3, 4, 8
TOPIC_OPERATIONS = (READ, WRITE, DESCRIBE, 5, 6, 7, 10, 11)
WILDCARD_PRINCIPAL = "User:*"
SHAPES = ("mixed", "own-prefixes", "few-principals", "wildcard-principals", "many-hosts")
_TEAMS = 100


def _topic(rng: random.Random, team: int) -> str:
    return f"team{team}.svc{rng.randrange(100_000)}"


def _operation(rng: random.Random) -> int:
    r = rng.random()
    return ALL if r < 0.05 else rng.choice(TOPIC_OPERATIONS)


def _permission(rng: random.Random) -> int:
    return DENY if rng.random() < 0.05 else ALLOW


def draw(shape: str, n: int, rng: random.Random, principals: list[str], hosts: list[str]) -> tuple[list[tuple], Counter[str]]:
    """``n`` distinct ACLs of the shape, and how many of each kind."""
    if shape == "few-principals":
        principals = principals[:10]
    many_hosts = [f"10.{100 + i // 250}.{(i // 50) % 5}.{i % 50 + 1}" for i in range(1000)] if shape == "many-hosts" else hosts
    team_of = {p: i % _TEAMS for i, p in enumerate(principals)}
    seen: set[tuple] = set()
    acls: list[tuple] = []
    kinds: Counter[str] = Counter()
    while len(acls) < n:
        principal = principals[rng.randrange(len(principals))]
        r = rng.random()
        host = "*"
        if shape == "many-hosts" and rng.random() < 0.7:
            host = many_hosts[rng.randrange(len(many_hosts))]
        if r < 0.10:
            kind, pattern, name = "resource *", LITERAL, "*"
        else:
            if shape == "wildcard-principals" and rng.random() < 0.4 / 0.9:
                kind, principal = "principal User:*", WILDCARD_PRINCIPAL
            else:
                kind = "own"
            team = team_of.get(principal, rng.randrange(_TEAMS))
            if rng.random() < 1 / 3:
                pattern, name = PREFIXED, _topic(rng, team)[: rng.randrange(8, 14)]  # team42.svc, team42.svc1234...
            else:
                pattern, name = LITERAL, _topic(rng, team)
            kind += " prefixed" if pattern == PREFIXED else " literal"
        acl = (TOPIC, pattern, name, principal, host, _operation(rng), _permission(rng))
        if acl in seen:
            continue
        seen.add(acl)
        acls.append(acl)
        kinds[kind] += 1
    return acls, kinds
