"""ACL files for ``kafka-shim serve --acls FILE``: the format, its mistakes, and the broker started with one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
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
from kafka_shim.shim.tools.acl_file import AclFileError, load_acl_file
from tests.support.cli_helpers import blocks, run_acls

ROOT = Path(__file__).resolve().parents[3]
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def binding(rtype: ResourceType, name: str, principal: str, op: AclOperation, *, pattern: PatternType = PatternType.LITERAL,
            host: str = "*", permission: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, host, op, permission))


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


YAML = """\
acls:
  - resource_type: Topic
    resource_name: payments
    pattern_type: PREFIXED
    principals: [User:alice, User:bob]
    operations: [read, Describe]
  - resource_type: transactional-id
    resource_name: tx
    principal: User:bob
    hosts: [10.0.0.1]
    operation: WRITE
    permission: Deny
  - resource_type: cluster
    principal: User:bob
    operation: idempotent_write
"""

EXPECTED = [
    binding(ResourceType.TOPIC, "payments", "User:alice", AclOperation.READ, pattern=PatternType.PREFIXED),
    binding(ResourceType.TOPIC, "payments", "User:alice", AclOperation.DESCRIBE, pattern=PatternType.PREFIXED),
    binding(ResourceType.TOPIC, "payments", "User:bob", AclOperation.READ, pattern=PatternType.PREFIXED),
    binding(ResourceType.TOPIC, "payments", "User:bob", AclOperation.DESCRIBE, pattern=PatternType.PREFIXED),
    binding(ResourceType.TRANSACTIONAL_ID, "tx", "User:bob", AclOperation.WRITE, host="10.0.0.1", permission=AclPermissionType.DENY),
    binding(ResourceType.CLUSTER, "kafka-cluster", "User:bob", AclOperation.IDEMPOTENT_WRITE),
]


def test_yaml_with_kafka_names_in_any_case(tmp_path: Path) -> None:
    assert load_acl_file(write(tmp_path, "acls.yaml", YAML)) == EXPECTED


def test_json_and_a_bare_list_mean_the_same(tmp_path: Path) -> None:
    import yaml

    entries = yaml.safe_load(YAML)["acls"]
    assert load_acl_file(write(tmp_path, "acls.json", json.dumps({"acls": entries}))) == EXPECTED
    assert load_acl_file(write(tmp_path, "bare.json", json.dumps(entries))) == EXPECTED
    assert load_acl_file(write(tmp_path, "bare.yml", yaml.safe_dump(entries))) == EXPECTED


def test_empty_file_means_no_acls(tmp_path: Path) -> None:
    assert load_acl_file(write(tmp_path, "empty.yaml", "# nothing yet\n")) == []
    assert load_acl_file(write(tmp_path, "empty2.yaml", "acls:\n")) == []


def test_the_example_file_loads() -> None:
    bindings = load_acl_file(ROOT / "examples" / "acls.yaml")
    assert len(bindings) == 11
    assert binding(ResourceType.TOPIC, "*", "User:*", AclOperation.DELETE, host="10.1.0.11",
                   permission=AclPermissionType.DENY) in bindings


def test_every_problem_is_reported_with_its_entry_line_and_a_fix(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", """\
acls:
  - resource_type: topc
    resource_name: a
    principal: User:a
    operation: Read
  - resource_type: group
    resource_name: g
    principal: alice
    operation: Write
  - resource_type: topic
    resource_name: ""
    principal: User:a
    operation: Read
    pattern_type: match
  - resource_type: topic
    resource: b
    principal: User:a
    operation: reed
  - resource_type: cluster
    resource_name: my-cluster
    principal: User:a
    operation: ClusterAction
  - resource_type: topic
    resource_name: 2024
    principal: User:a
""")
    with pytest.raises(AclFileError) as info:
        load_acl_file(path)
    problems = info.value.problems
    assert problems == [
        "entry 1 (line 2): resource_type 'topc' is not a Kafka resource type; use one of topic, group, cluster, "
        "transactional_id, delegation_token, user",
        "entry 2 (line 6): operation 'Write' does not apply to a group; use one of All, Read, Delete, Describe",
        "entry 2 (line 6): principal 'alice' has no ':'; write the type too, e.g. User:alice",
        "entry 3 (line 10): resource_name is empty; name the resource ('*' means every resource of this type)",
        "entry 3 (line 10): pattern_type 'match' is a filter for listing, not a pattern an ACL can have; use literal or prefixed",
        "entry 4 (line 15): unknown key 'resource'; did you mean resource_type?",
        "entry 4 (line 15): resource_name is missing; name the resource ('*' means every resource of this type)",
        "entry 4 (line 15): operation 'reed' is not an ACL operation; use one of All, Read, Write, Create, Delete, Alter, "
        "Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens",
        "entry 5 (line 19): resource_name 'my-cluster': the cluster resource is always named kafka-cluster; leave resource_name out",
        "entry 6 (line 23): resource_name is 2024 (int); write it as text, in quotes: resource_name: \"2024\"",
        "entry 6 (line 23): operation is missing, e.g. operation: Read",
    ]
    assert str(info.value).startswith(f"{path} has 11 problems:\n  entry 1 (line 2)")


def test_syntax_errors_name_the_place(tmp_path: Path) -> None:
    with pytest.raises(AclFileError, match=r"not valid YAML at line 3, column \d+"):
        load_acl_file(write(tmp_path, "broken.yaml", "acls:\n  - resource_type: topic\n  resource_name: [\n"))
    with pytest.raises(AclFileError, match="not valid JSON at line 1, column 2"):
        load_acl_file(write(tmp_path, "broken.json", "{oops"))
    with pytest.raises(AclFileError, match="must hold a list of ACL entries"):
        load_acl_file(write(tmp_path, "scalar.yaml", "just text\n"))
    with pytest.raises(AclFileError, match="cannot read the file"):
        load_acl_file(tmp_path / "missing.yaml")


# -- serve --acls, the real command ---------------------------------------------------------------------------------


def _serve(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_serve_with_acls_starts_with_them(tmp_path: Path) -> None:
    acls = write(tmp_path, "acls.yaml", YAML)
    proc = _serve("--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"authorizer.class.name={STANDARD_AUTHORIZER}",
                  "--override", "super.users=User:ANONYMOUS", "--acls", str(acls))
    try:
        address = proc.stdout.readline().strip()
        assert address.startswith("PLAINTEXT://"), proc.stderr.read() if not address else address
        result = run_acls("--bootstrap-server", address.split("://", 1)[1], "--list")
        assert (result.code, result.err) == (0, "")
        topic = "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=payments, patternType=PREFIXED)`"
        txn = "Current ACLs for resource `ResourcePattern(resourceType=TRANSACTIONAL_ID, name=tx, patternType=LITERAL)`"
        cluster = "Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`"
        assert blocks(result.out) == {
            topic: {f"(principal=User:{user}, host=*, operation={op}, permissionType=ALLOW)"
                    for user in ("alice", "bob") for op in ("READ", "DESCRIBE")},
            txn: {"(principal=User:bob, host=10.0.0.1, operation=WRITE, permissionType=DENY)"},
            cluster: {"(principal=User:bob, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW)"},
        }
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
        proc.wait()


def test_serve_with_acls_needs_an_authorizer(tmp_path: Path) -> None:
    proc = _serve("--override", "listeners=PLAINTEXT://127.0.0.1:0", "--acls", str(write(tmp_path, "a.yaml", YAML)))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "needs an authorizer: set authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer" in err


def test_serve_with_a_bad_acl_file_stops_with_every_problem(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.yaml", "- {resource_type: topic, resource_name: t, principal: alice, operation: Fly}\n")
    proc = _serve("--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"authorizer.class.name={STANDARD_AUTHORIZER}",
                  "--acls", str(bad))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert f"kafka-shim: configuration error: --acls {bad} has 2 problems:" in err
    assert "operation 'Fly' is not an ACL operation" in err and "principal 'alice' has no ':'" in err
