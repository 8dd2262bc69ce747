"""``kafka-shim acls`` against Kafka's own kafka-acls.sh (kafka.admin.AclCommand 3.9), on the same broker.

Each scenario runs with both tools, in turn, against the same broker (a real Kafka 3.9, then kafka-shim), as the
super user admin over SASL_PLAINTEXT, and compares what they print.

What is compared byte for byte, and what as sets: kafka-acls.sh keeps ACLs in Scala immutable sets and maps. Up
to four elements those keep insertion order, so a resource's ACL lines come in the broker's order, and a listing
of one resource with up to four ACLs is compared byte for byte. Beyond four, and for the order of the resource
blocks, Scala uses hash order over Java hash codes that include enum identity hash codes, which change from one
JVM to the next: there only the blocks and their lines are compared, as sets. The "Adding ACLs" lines come from a
hash set whatever their number, so they are compared as sets too.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.cli_helpers import Result, client_config, run_acls
from tests.support.peers import REAL_KAFKA, RealKafka
from tests.support.sasl_setup import listener_address, sasl_properties

ACL_COMMAND = "kafka.admin.AclCommand"


@dataclass(frozen=True)
class Target:
    name: str
    bootstrap: str
    command_config: Path

    @property
    def admin(self) -> list[str]:
        return ["--bootstrap-server", self.bootstrap, "--command-config", str(self.command_config)]


@pytest.fixture(scope="module", params=["kafka", "kafka-shim"])
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    if request.param == "kafka":
        oracle: RealKafka = request.getfixturevalue("oracle")
        host, port = oracle.sasl
        yield Target("kafka", f"{host}:{port}", oracle.dir / "admin.properties")
        return
    with EmbeddedBroker(BrokerConfig.from_properties(sasl_properties())) as broker:
        host, port = listener_address(broker.broker, "SASL_PLAINTEXT")
        yield Target("kafka-shim", f"{host}:{port}", client_config(tmp_path_factory.mktemp("acls"), "admin", "admin-secret"))


def kafka_acls(*args: str, stdin: str = "") -> Result:
    """Kafka's tool: it prints everything, errors included, on stdout (usage mistakes on stderr)."""
    proc = subprocess.run([sys.executable, str(REAL_KAFKA), "run", ACL_COMMAND, *args], input=stdin, capture_output=True,
                          text=True, timeout=180)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def both(target: Target, *args: str, stdin: str = "") -> tuple[Result, Result]:
    return kafka_acls(*target.admin, *args, stdin=stdin), run_acls(*target.admin, *args, stdin=stdin)


Block = tuple[str, tuple[str, ...]]


def canonical(output: str) -> list[Block]:
    """The output with Kafka's hash orders removed (see the module's docstring); other orders kept."""
    blocks: list[Block] = []
    for block in output.split(" \n\n"):
        if not block:
            continue
        head, sep, body = block.partition(": \n ")
        assert sep, f"not kafka-acls.sh's layout: {block!r}"
        lines = tuple(body.split("\n"))
        if head.startswith("Adding ACLs") or len(lines) > 4:
            lines = tuple(sorted(lines))
        blocks.append((head.lstrip("\n"), lines))
    return sorted(blocks)


def assert_same_output(kafka: Result, shim: Result) -> None:
    assert (shim.code, kafka.code) == (0, 0), (kafka, shim)
    assert shim.err == "", shim.err
    assert canonical(shim.out) == canonical(kafka.out)
    blocks = canonical(kafka.out)
    if len(blocks) <= 1 and not kafka.out.startswith("Adding") and all(len(lines) <= 4 for _, lines in blocks):
        assert shim.out == kafka.out  # byte for byte where Kafka's own order is deterministic


def acl_count(target: Target, *list_args: str) -> int:
    result = run_acls(*target.admin, "--list", *list_args)
    assert result.code == 0, result
    return result.out.count("\t(")


def wait_for_count(target: Target, list_args: tuple[str, ...], expected: int, timeout: float = 20.0) -> None:
    """Kafka applies ACL changes to its metadata image asynchronously: wait until the broker serves them."""
    deadline = time.monotonic() + timeout
    while (count := acl_count(target, *list_args)) != expected:
        assert time.monotonic() < deadline, f"{target.name} lists {count} ACLs for {list_args}, expected {expected}"
        time.sleep(0.05)


SCENARIOS = {
    "literal": (["--topic", "cli-lit", "--operation", "Read", "--operation", "Describe", "--allow-principal", "User:alice"],
                ["--topic", "cli-lit"], 2),
    "prefixed": (["--topic", "cli-pre", "--group", "cli-pre", "--resource-pattern-type", "prefixed", "--operation", "Read",
                  "--allow-principal", "User:alice", "--deny-principal", "User:bob", "--deny-host", "10.0.0.1"],
                 ["--topic", "cli-pre", "--group", "cli-pre", "--resource-pattern-type", "prefixed"], 4),
    "producer": (["--producer", "--idempotent", "--topic", "cli-prod", "--transactional-id", "cli-tx",
                  "--allow-principal", "User:alice"],
                 ["--topic", "cli-prod", "--transactional-id", "cli-tx", "--cluster"], 6),
    "consumer": (["--consumer", "--topic", "cli-cons", "--group", "cli-cons-g", "--allow-principal", "User:bob",
                  "--allow-principal", "User:alice", "--allow-host", "10.0.0.2", "--allow-host", "10.0.0.3"],
                 ["--topic", "cli-cons", "--group", "cli-cons-g"], 12),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_add_list_remove_same_as_kafka_acls(target: Target, scenario: str) -> None:
    add_args, list_args, count = SCENARIOS[scenario]
    list_args = tuple(list_args)
    # Kafka's tool adds; both list.
    kafka_add = kafka_acls(*target.admin, "--add", *add_args)
    assert kafka_add.code == 0, kafka_add
    wait_for_count(target, list_args, count)
    assert_same_output(*both(target, "--list", *list_args))
    # kafka-shim's tool adds what Kafka's added: the same announcement, then the same listing.
    assert kafka_acls(*target.admin, "--remove", "--force", *add_args) == Result(0, "", "")
    wait_for_count(target, list_args, 0)
    shim_add = run_acls(*target.admin, "--add", *add_args)
    assert_same_output(kafka_add, shim_add)
    wait_for_count(target, list_args, count)
    assert_same_output(*both(target, "--list", *list_args))
    # kafka-shim's tool removes; neither tool lists anything after.
    assert run_acls(*target.admin, "--remove", "--force", *add_args) == Result(0, "", "")
    wait_for_count(target, list_args, 0)
    kafka_list, shim_list = both(target, "--list", *list_args)
    assert (kafka_list.out, shim_list.out) == ("", "")


def test_filters_any_and_match_and_by_principal(target: Target) -> None:
    setup = [
        ["--topic", "cli-f", "--resource-pattern-type", "prefixed", "--operation", "Write", "--allow-principal", "User:bob"],
        ["--topic", "cli-flt", "--topic", "*", "--operation", "Read", "--allow-principal", "User:alice",
         "--allow-principal", "User:bob"],
        ["--topic", "cli-flt", "--resource-pattern-type", "prefixed", "--operation", "Describe", "--allow-principal", "User:alice"],
    ]
    for args in setup:
        assert run_acls(*target.admin, "--add", *args).code == 0
    wait_for_count(target, ("--topic", "cli-flt", "--resource-pattern-type", "match"), 6)
    for list_args in (["--topic", "cli-flt", "--resource-pattern-type", "match"],
                      ["--topic", "cli-flt", "--resource-pattern-type", "any"],
                      ["--topic", "cli-flt"],
                      ["--topic", "cli-flt", "--resource-pattern-type", "match", "--principal", "User:bob"],
                      ["--topic", "*", "--principal", "User:alice"]):
        kafka, shim = both(target, "--list", *list_args)
        if "--principal" in list_args:
            head = kafka.out.split("\n", 1)[0]
            assert shim.out.split("\n", 1)[0] == head and head.startswith("ACLs for principal `User:")
            kafka, shim = Result(kafka.code, kafka.out.split("\n", 1)[1], ""), Result(shim.code, shim.out.split("\n", 1)[1], "")
        assert_same_output(kafka, shim)
    assert run_acls(*target.admin, "--remove", "--force", "--topic", "cli-flt", "--resource-pattern-type", "match").code == 0
    wait_for_count(target, ("--topic", "cli-flt", "--resource-pattern-type", "match"), 0)


def test_remove_prompts_are_kafkas(target: Target) -> None:
    add = ["--group", "cli-ask", "--operation", "Read", "--allow-principal", "User:alice"]
    assert run_acls(*target.admin, "--add", *add).code == 0
    wait_for_count(target, ("--group", "cli-ask"), 1)
    for args in (["--group", "cli-ask"], add, ["--group", "cli-ask", "--resource-pattern-type", "match"]):
        kafka, shim = both(target, "--remove", *args, stdin="n\n")
        assert (shim.code, shim.out) == (kafka.code, kafka.out)
        assert kafka.code == 0 and kafka.out.endswith("? (y/n)\n")
    kafka, shim = both(target, "--remove", *add, stdin="y\n")
    assert (shim.out, shim.code) == (kafka.out, kafka.code)
    wait_for_count(target, ("--group", "cli-ask"), 0)


@pytest.mark.parametrize("args", [
    ["--list", "--add"],
    ["--list", "--producer", "--topic", "t"],
    ["--add", "--producer", "--topic", "t", "--operation", "Read", "--allow-principal", "User:a"],
    ["--add", "--idempotent", "--topic", "t", "--allow-principal", "User:a"],
    ["--add", "--consumer", "--topic", "t", "--allow-principal", "User:a"],
    ["--add", "--topic", "t"],
    ["--add", "--allow-principal", "User:a"],
    ["--add", "--topic", "t", "--allow-principal", "User:a", "--resource-pattern-type", "match"],
    ["--add", "--group", "g", "--allow-principal", "User:a", "--operation", "Write"],
    ["--add", "--topic", "t", "--allow-principal", "User:a", "--operation", "ClusterAction"],
    ["--add", "--cluster", "--allow-principal", "User:a", "--operation", "Read"],
    ["--add", "--transactional-id", "x", "--allow-principal", "User:a", "--operation", "Read"],
    ["--add", "--user-principal", "User:x", "--allow-principal", "User:a", "--operation", "Read"],
    ["--add", "--delegation-token", "d", "--allow-principal", "User:a", "--operation", "Read"],
    ["--remove", "--principal", "User:a", "--topic", "t"],
])
def test_flag_mistakes_get_kafkas_message(args: list[str]) -> None:
    # Refused before any broker is contacted: no broker needed.
    kafka = kafka_acls("--bootstrap-server", "127.0.0.1:9", *args)
    shim = run_acls("--bootstrap-server", "127.0.0.1:9", *args)
    assert (shim.code, shim.out) == (kafka.code, kafka.out) == (1, "")
    assert _operations_as_set(shim.err.split("\n", 1)[0]) == _operations_as_set(kafka.err.split("\n", 1)[0])


def _operations_as_set(line: str) -> tuple[str, frozenset[str]]:
    """AclCommand lists a resource type's operations from a Java HashSet of enum values, whose order follows their
    identity hash codes: it changes from one JVM run to the next (seen in CI: "Read, Delete, Describe, All" and
    "Describe, Read, Delete, All"). The words must match; the order cannot."""
    head, sep, listed = line.partition(" only supports operations ")
    return (head + sep, frozenset(listed.split(", "))) if sep else (line, frozenset())


@pytest.mark.parametrize("args", [
    ["--add", "--topic", "t", "--allow-principal", "alice"],
    ["--add", "--topic", "t", "--allow-principal", "User:a", "--operation", "Any"],
])
def test_errors_while_executing_get_kafkas_message(args: list[str]) -> None:
    kafka = kafka_acls("--bootstrap-server", "127.0.0.1:9", *args)
    shim = run_acls("--bootstrap-server", "127.0.0.1:9", *args)
    assert (shim.code, kafka.code) == (1, 1)
    # Kafka prints the error and a stack trace on stdout; kafka-shim the error alone, on stderr.
    assert shim.err == kafka.out.split("\n", 1)[0] + "\n"


def test_a_user_without_rights(target: Target, tmp_path: Path) -> None:
    alice = ["--bootstrap-server", target.bootstrap, "--command-config", str(client_config(tmp_path, "alice", "alice-secret"))]
    kafka = kafka_acls(*alice, "--list")
    shim = run_acls(*alice, "--list")
    prefix = "Error while executing ACL command: org.apache.kafka.common.errors.ClusterAuthorizationException: "
    assert (kafka.code, shim.code) == (1, 1)
    assert kafka.out.startswith(prefix) and shim.err.startswith(prefix)


def test_no_authorizer(oracle_open: RealKafka) -> None:
    host, port = oracle_open.plaintext
    kafka = kafka_acls("--bootstrap-server", f"{host}:{port}", "--list")
    shim = run_acls("--bootstrap-server", f"{host}:{port}", "--list")
    assert (kafka.code, shim.code) == (1, 1)
    assert shim.err == kafka.out.split("\n", 1)[0] + "\n"
    assert "SecurityDisabledException: No Authorizer is configured" in shim.err
