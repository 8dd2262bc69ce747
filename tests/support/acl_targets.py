"""The two brokers the real-client ACL tests run against: kafka-shim and a real Apache Kafka 3.9, both with the SASL
users admin (super user), alice (only ALLOW DESCRIBE on the cluster) and bob (nothing).

Each client's tests supply how the super user creates and lists ACLs with that client; the rest is shared.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_shim.authorizer import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.sasl_setup import listener_address, sasl_properties

ROOT = Path(__file__).resolve().parents[2]
# How long a write may take to show in a read. Kafka (KRaft) answers CreateAcls/DeleteAcls once the controller
# has committed them and the broker's authorizer catches up a moment later; kafka-shim must show them at once.
KAFKA_SETTLE_SECONDS = 10.0

# A binding in Kafka's enum names: (resource type, name, pattern type, principal, host, operation, permission).
Binding = tuple[str, str, str, str, str, str, str]
ALICE_MAY_DESCRIBE: Binding = ("CLUSTER", "kafka-cluster", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW")

# (bootstrap, principal) -> that principal's ACLs as the super user sees them; (bootstrap, bindings) -> create them.
ListAsAdmin = Callable[[str, str], list[Binding]]
CreateAsAdmin = Callable[[str, list[Binding]], None]


@dataclass
class Target:
    name: str
    bootstrap: str  # the SASL_PLAINTEXT listener
    store: Callable[[list[Binding]], None]  # put ACLs in place before a scenario
    settle: float  # seconds a read may poll for an earlier write to show (0: it must show at once)
    list_as_admin: ListAsAdmin

    def view(self, principal: str) -> list[Binding]:
        """Every ACL of `principal`, as the super user's DescribeAcls shows them."""
        return sorted(self.list_as_admin(self.bootstrap, principal))

    def settled_view(self, principal: str, expected: list[Binding]) -> list[Binding]:
        """The view once it equals `expected`, or the last one seen when `settle` runs out."""
        deadline = time.monotonic() + self.settle
        while True:
            seen = self.view(principal)
            if seen == sorted(expected) or time.monotonic() >= deadline:
                return seen
            time.sleep(0.1)


def authorizer_binding(b: Binding) -> AclBinding:
    rtype, name, pattern, principal, host, operation, permission = b
    return AclBinding(ResourcePattern(ResourceType[rtype], name, PatternType[pattern]),
                      AccessControlEntry(principal, host, AclOperation[operation], AclPermissionType[permission]))


def shim_target(list_as_admin: ListAsAdmin) -> Iterator[Target]:
    with EmbeddedBroker(BrokerConfig.from_properties(sasl_properties())) as broker:
        def store(bindings: list[Binding]) -> None:
            # Straight into the authorizer, so describe/delete scenarios do not depend on CreateAcls working.
            results = broker.call(broker.broker.authorizer.create_acls, [authorizer_binding(b) for b in bindings])
            assert [r.error for r in results] == [None] * len(bindings)

        store([ALICE_MAY_DESCRIBE])
        host, port = listener_address(broker.broker, "SASL_PLAINTEXT")
        yield Target("kafka-shim", f"{host}:{port}", store, 0.0, list_as_admin)


def real_kafka_target(create_as_admin: CreateAsAdmin, list_as_admin: ListAsAdmin, prefix: str) -> Iterator[Target]:
    script = ROOT / "scripts" / "real-kafka"
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    proc = subprocess.run([sys.executable, str(script), "start", "--dir", str(directory)], capture_output=True, text=True,
                          timeout=900)
    if proc.returncode != 0:
        pytest.fail(f"real Kafka did not start (scripts/real-kafka start):\n{proc.stderr[-4000:]}", pytrace=False)
    bootstrap = next(line for line in proc.stdout.split() if line.startswith("SASL_PLAINTEXT://")).split("://", 1)[1]
    target: Target

    def store(bindings: list[Binding]) -> None:
        # Kafka has no back door: CreateAcls as the super user, then wait until the broker's authorizer has them.
        create_as_admin(bootstrap, bindings)
        wanted = {p: {b for b in bindings if b[3] == p} for p in {b[3] for b in bindings}}
        deadline = time.monotonic() + KAFKA_SETTLE_SECONDS
        while not all(mine <= set(target.view(p)) for p, mine in wanted.items()):
            assert time.monotonic() < deadline, f"Kafka did not show {bindings} within {KAFKA_SETTLE_SECONDS} s"
            time.sleep(0.1)

    target = Target("apache-kafka", bootstrap, store, KAFKA_SETTLE_SECONDS, list_as_admin)
    try:
        store([ALICE_MAY_DESCRIBE])
        yield target
    finally:
        subprocess.run([sys.executable, str(script), "stop", "--dir", str(directory)], capture_output=True, timeout=120)
        shutil.rmtree(directory, ignore_errors=True)


def both_targets(request: pytest.FixtureRequest, create_as_admin: CreateAsAdmin, list_as_admin: ListAsAdmin,
                 prefix: str) -> Iterator[Target]:
    """For a module-scoped fixture parametrised with "kafka-shim" and "apache-kafka"."""
    if request.param == "kafka-shim":
        yield from shim_target(list_as_admin)
    else:
        yield from real_kafka_target(create_as_admin, list_as_admin, prefix)
