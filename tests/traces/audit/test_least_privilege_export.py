"""write_least_privilege: each of the four files gives the same ACL set back, read the way its tool reads it:
the kafka-acls.sh commands run (through ``kafka-shim acls``, the same flags) against a broker and listed back with
confluent-kafka's DescribeAcls, the --acls file through kafka-shim's loader, the Strimzi and Terraform files parsed."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

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
from kafka_shim.shim.tools.acl_file import load_acl_file
from kafka_shim.traces.audit.acl_export import FILES, write_least_privilege
from tests.support.audit_actions import acl
from tests.support.cli_helpers import client_config, run_acls
from tests.support.sasl_setup import listener_address, sasl_properties

T, G, C, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
Op = AclOperation
TIMEOUT = 60



SET = [
    acl(T, "orders", "User:alice", Op.WRITE),
    acl(T, "orders", "User:alice", Op.DESCRIBE_CONFIGS),
    acl(T, "team42.", "User:alice", Op.READ, PatternType.PREFIXED, host="10.0.0.7"),
    acl(G, "billing", "User:alice", Op.READ),
    acl(C, "kafka-cluster", "User:bob", Op.IDEMPOTENT_WRITE),
    acl(X, "tx-", "User:bob", Op.WRITE, PatternType.PREFIXED),
    acl(T, "team42.secret", "User:alice", Op.DESCRIBE, host="10.0.0.7", deny=True),
    acl(T, "it's $HOME ${x}", "User:bob", Op.READ),  # quoting in every format
]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("audit-out")
    paths = write_least_privilege(SET, out)
    assert [p.relative_to(out).as_posix() for p in paths] == [f"least_privilege/{name}" for name in FILES]
    return out / "least_privilege"


def test_acls_file_loads_back_with_kafka_shims_loader(written: Path) -> None:
    assert set(load_acl_file(written / "acls.yaml")) == set(SET)


def test_terraform_resources_name_each_acl_for_the_mongey_provider(written: Path) -> None:
    text = (written / "kafka_acl.tf").read_text()
    blocks = re.findall(r'resource "kafka_acl" "([a-z][a-z0-9_]*)" \{\n(.*?)\n\}', text, re.S)
    assert len(blocks) == len(SET) == len({label for label, _ in blocks})
    found = set()
    for _label, body in blocks:
        fields = {k: yaml.safe_load(v) for k, v in re.findall(r"^  (\w+) += (.*)$", body, re.M)}
        assert set(fields) == {"resource_name", "resource_type", "resource_pattern_type_filter", "acl_principal",
                               "acl_host", "acl_operation", "acl_permission_type"}
        # HCL escapes ${ as $${ (yaml reads the JSON-quoted string; undo the HCL escape)
        name = fields["resource_name"].replace("$${", "${")
        rtype = {"Topic": T, "Group": G, "Cluster": C, "TransactionalID": X}[fields["resource_type"]]
        found.add(AclBinding(ResourcePattern(rtype, name, PatternType[fields["resource_pattern_type_filter"].upper()]),
                             AccessControlEntry(fields["acl_principal"], fields["acl_host"],
                                                AclOperation.from_string(fields["acl_operation"]),
                                                AclPermissionType.from_string(fields["acl_permission_type"]))))
    assert found == set(SET)


def test_strimzi_kafkausers_hold_each_users_acls(written: Path) -> None:
    text = (written / "strimzi-kafkausers.yaml").read_text()
    docs = list(yaml.safe_load_all(text))
    # alice's two topic operations on orders share one entry
    alice = next(d for d in docs if d["metadata"]["name"] == "alice")["spec"]["authorization"]["acls"]
    assert sorted(next(e for e in alice if e["resource"].get("name") == "orders")["operations"]) == [
        "DescribeConfigs", "Write"]
    assert {d["metadata"]["name"] for d in docs} == {"alice", "bob"}
    found = set()
    for doc in docs:
        assert (doc["apiVersion"], doc["kind"]) == ("kafka.strimzi.io/v1beta2", "KafkaUser")
        assert doc["spec"]["authorization"]["type"] == "simple"
        for entry in doc["spec"]["authorization"]["acls"]:
            r = entry["resource"]
            rtype = {"topic": T, "group": G, "cluster": C, "transactionalId": X}[r["type"]]
            pattern = PatternType.PREFIXED if r.get("patternType") == "prefix" else PatternType.LITERAL
            for op in entry["operations"]:
                found.add(acl(rtype, r.get("name", "kafka-cluster"), f"User:{doc['metadata']['name']}",
                              AclOperation.from_string(op), pattern, entry["host"], entry["type"] == "deny"))
    assert found == set(SET)
    assert "Not expressible" not in text


def test_strimzi_lists_what_a_kafkauser_cannot_hold(tmp_path: Path) -> None:
    odd = [acl(T, "t", "User:Carol Smith", Op.READ), acl(ResourceType.USER, "x", "User:dan", Op.CREATE_TOKENS),
           acl(T, "t", "User:*", Op.READ), acl(T, "t", "Group:ops", Op.READ)]
    write_least_privilege([*odd, SET[0]], tmp_path)
    text = (tmp_path / "least_privilege" / "strimzi-kafkausers.yaml").read_text()
    comments = [line for line in text.splitlines() if line.startswith("#   ")]
    assert len(comments) == len(odd)
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(text)] == ["alice"]


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(BrokerConfig.from_properties(sasl_properties())) as running:
        yield running


def test_kafka_acls_commands_create_the_set_on_a_broker(written: Path, broker: EmbeddedBroker, tmp_path: Path) -> None:

    host, port = listener_address(broker.broker, "SASL_PLAINTEXT")
    config = client_config(tmp_path, "admin", "admin-secret", "SCRAM-SHA-512")
    env = {"BOOTSTRAP_SERVER": f"{host}:{port}", "COMMAND_CONFIG": str(config)}
    commands = [line for line in (written / "kafka-acls.sh").read_text().splitlines()
                if line.startswith("kafka-acls.sh ")]
    assert len(commands) == len(SET)
    for line in commands:
        words = shlex.split(line)[1:]  # a POSIX shell's words, without the program name
        # the two variables, expanded as the shell would (shlex leaves "$VAR" as it is)
        args = [env[w[1:]] if w in ("$BOOTSTRAP_SERVER", "$COMMAND_CONFIG") else w for w in words]
        result = run_acls(*args)
        assert result.code == 0, (line, result)

    assert _describe_all(host, port) == set(SET)


def _describe_all(host: str, port: int) -> set[AclBinding]:
    from confluent_kafka.admin import AclBindingFilter, AdminClient, ResourcePatternType
    from confluent_kafka.admin import AclOperation as CkOp
    from confluent_kafka.admin import AclPermissionType as CkPerm
    from confluent_kafka.admin import ResourceType as CkType

    admin = AdminClient({"bootstrap.servers": f"{host}:{port}", "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin", "sasl.password": "admin-secret"})
    everything = AclBindingFilter(CkType.ANY, None, ResourcePatternType.ANY, None, None, CkOp.ANY, CkPerm.ANY)
    return {acl(ResourceType[b.restype.name.replace("BROKER", "CLUSTER")], b.name, b.principal,
                AclOperation[b.operation.name], PatternType[b.resource_pattern_type.name], b.host,
                b.permission_type.name == "DENY") for b in admin.describe_acls(everything).result(timeout=TIMEOUT)}


@pytest.mark.oracle
def test_the_script_runs_with_kafkas_own_kafka_acls(written: Path, tmp_path: Path) -> None:
    """The generated file as a shell runs it, with Kafka 3.9's kafka.admin.AclCommand as kafka-acls.sh."""
    import sys

    from tests.support.peers import REAL_KAFKA

    tools = tmp_path / "bin"
    tools.mkdir()
    wrapper = tools / "kafka-acls.sh"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{REAL_KAFKA}" run kafka.admin.AclCommand "$@"\n')
    wrapper.chmod(0o755)
    with EmbeddedBroker(BrokerConfig.from_properties(sasl_properties())) as fresh:
        host, port = listener_address(fresh.broker, "SASL_PLAINTEXT")
        config = client_config(tmp_path, "admin", "admin-secret", "SCRAM-SHA-512")
        env = {"PATH": f"{tools}:/usr/bin:/bin", "BOOTSTRAP_SERVER": f"{host}:{port}", "COMMAND_CONFIG": str(config),
               "HOME": str(tmp_path)}
        run = subprocess.run(["sh", str(written / "kafka-acls.sh")], env=env, capture_output=True, text=True,
                             timeout=60 * len(SET), check=False)
        assert run.returncode == 0, (run.stdout[-3000:], run.stderr[-3000:])
        assert _describe_all(host, port) == set(SET)


@pytest.mark.skipif(shutil.which("terraform") is None, reason="needs the terraform command")
def test_terraform_reads_the_file_as_canonical_hcl(written: Path) -> None:
    """terraform fmt parses HCL (a syntax error fails it) and -check fails on anything not in canonical form; the
    Mongey/kafka provider itself is not installed here, so the attribute names are checked by the test above."""
    run = subprocess.run(["terraform", "fmt", "-check", "-diff", "-no-color", str(written / "kafka_acl.tf")],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
