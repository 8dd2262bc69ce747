"""The least-privilege ACL set written for the tools people apply ACLs with (the audit's ``least_privilege/``).

``write_least_privilege(bindings, out_dir)`` writes four files into ``out_dir/least_privilege/`` (``out_dir`` being
the audit's ``--out DIR``), each the same set:

``kafka-acls.sh``
    one ``kafka-acls.sh --add`` command per ACL with Apache Kafka's AclCommand flags (``--allow-principal`` /
    ``--deny-principal``, ``--allow-host`` / ``--deny-host``, ``--operation``, ``--topic`` / ``--group`` /
    ``--cluster`` / ``--transactional-id`` / ``--delegation-token`` / ``--user-principal``,
    ``--resource-pattern-type literal|prefixed``); the broker address and admin client config come from the
    ``BOOTSTRAP_SERVER`` and ``COMMAND_CONFIG`` environment variables. ``kafka-shim acls`` takes the same commands.
``acls.yaml``
    kafka-shim's ``--acls`` file format (shim/tools/acl_file.py, examples/acls.yaml): one entry per resource,
    principal, host and permission, its operations listed.
``strimzi-kafkausers.yaml``
    one Strimzi ``KafkaUser`` per ``User:`` principal (``spec.authorization.type: simple``, ``acls`` of
    ``resource {type, name, patternType: literal|prefix}``, ``operations``, ``host``, ``type: allow|deny``), as
    multi-document YAML. Strimzi has no USER or DELEGATION_TOKEN resources, other principal types or ``User:*``,
    and takes the user name from the resource name: ACLs it cannot hold are listed in a comment at the top instead.
``kafka_acl.tf``
    one Terraform ``kafka_acl`` resource per ACL for the Mongey/kafka provider (resource_name, resource_type,
    resource_pattern_type_filter, acl_principal, acl_host, acl_operation, acl_permission_type).
"""

from __future__ import annotations

import json
import re
import shlex
from collections import defaultdict
from pathlib import Path

import yaml

from kafka_shim.authorizer import AclBinding, AclPermissionType, PatternType, ResourceType

FOLDER = "least_privilege"  # under the audit's --out DIR
FILES = ("kafka-acls.sh", "acls.yaml", "strimzi-kafkausers.yaml", "kafka_acl.tf")

# kafka-acls.sh's resource flags (AclCommand); the cluster flag takes no name
_ACLS_FLAG = {ResourceType.TOPIC: "--topic", ResourceType.GROUP: "--group", ResourceType.CLUSTER: "--cluster",
              ResourceType.TRANSACTIONAL_ID: "--transactional-id", ResourceType.DELEGATION_TOKEN: "--delegation-token",
              ResourceType.USER: "--user-principal"}
_STRIMZI_TYPE = {ResourceType.TOPIC: "topic", ResourceType.GROUP: "group", ResourceType.CLUSTER: "cluster",
                 ResourceType.TRANSACTIONAL_ID: "transactionalId"}
# Mongey/kafka reads these through sarama's ACL type names
_TERRAFORM_TYPE = {ResourceType.TOPIC: "Topic", ResourceType.GROUP: "Group", ResourceType.CLUSTER: "Cluster",
                   ResourceType.TRANSACTIONAL_ID: "TransactionalID", ResourceType.DELEGATION_TOKEN: "DelegationToken",
                   ResourceType.USER: "User"}


def write_least_privilege(bindings: list[AclBinding], out_dir: str | Path) -> list[Path]:
    """Write the four files (see the module docstring) into ``out_dir/least_privilege`` (created); their paths."""
    out = Path(out_dir) / FOLDER
    out.mkdir(parents=True, exist_ok=True)
    texts = {"kafka-acls.sh": kafka_acls_commands(bindings), "acls.yaml": acl_file(bindings),
             "strimzi-kafkausers.yaml": strimzi_kafka_users(bindings), "kafka_acl.tf": terraform(bindings)}
    paths = []
    for name in FILES:
        path = out / name
        path.write_text(texts[name], encoding="utf-8")
        paths.append(path)
    (out / "kafka-acls.sh").chmod(0o755)
    return paths


def _allow(b: AclBinding) -> bool:
    return b.entry.permission_type == AclPermissionType.ALLOW


def kafka_acls_command(b: AclBinding) -> list[str]:
    """The kafka-acls.sh arguments (after the broker options) that add this one ACL."""
    side = "allow" if _allow(b) else "deny"
    args = ["--add", f"--{side}-principal", b.entry.principal, f"--{side}-host", b.entry.host,
            "--operation", b.entry.operation.display_name, _ACLS_FLAG[b.pattern.resource_type]]
    if b.pattern.resource_type != ResourceType.CLUSTER:
        args.append(b.pattern.name)
    args += ["--resource-pattern-type", b.pattern.pattern_type.name.lower()]
    return args


def kafka_acls_commands(bindings: list[AclBinding]) -> str:
    lines = ["#!/bin/sh",
             "# The least-privilege ACLs found by kafka-shim audit, one kafka-acls.sh --add each.",
             "# Set BOOTSTRAP_SERVER (host:port) and COMMAND_CONFIG (an admin client's properties file) first.",
             "set -e"]
    for b in bindings:
        args = " ".join(shlex.quote(a) for a in kafka_acls_command(b))
        lines.append(f'kafka-acls.sh --bootstrap-server "$BOOTSTRAP_SERVER" --command-config "$COMMAND_CONFIG" {args}')
    return "\n".join(lines) + "\n"


def acl_file(bindings: list[AclBinding]) -> str:
    """kafka-shim's --acls format: operations of the same resource, principal, host and permission in one entry."""
    grouped: dict[tuple, list[str]] = defaultdict(list)
    for b in bindings:
        p, e = b.pattern, b.entry
        key = (p.resource_type, p.name, p.pattern_type, e.principal, e.host, e.permission_type)
        grouped[key].append(e.operation.display_name)
    entries = []
    for (rtype, name, pattern_type, principal, host, permission), operations in grouped.items():
        entry = {"resource_type": rtype.name.lower()}
        if rtype != ResourceType.CLUSTER:
            entry["resource_name"] = name
        entry |= {"pattern_type": pattern_type.name.lower(), "principal": principal, "host": host,
                  "operations": operations, "permission": permission.name.lower()}
        entries.append(entry)
    header = "# The least-privilege ACLs found by kafka-shim audit:  kafka-shim serve CONFIG --acls acls.yaml\n"
    return header + yaml.safe_dump({"acls": entries}, sort_keys=False, allow_unicode=True)


def _k8s_name(user: str) -> str:
    """``user`` as a Kubernetes resource name (lower case, ``a-z0-9.-``); Strimzi takes the user name from it."""
    return re.sub(r"[^a-z0-9.-]", "-", user.lower()).strip("-.") or "user"


def strimzi_kafka_users(bindings: list[AclBinding], cluster: str = "my-cluster") -> str:
    """One KafkaUser per user; the operations of one resource, host and permission in one ``acls`` entry."""
    users: dict[str, dict[tuple, dict]] = defaultdict(dict)
    skipped: list[tuple[AclBinding, str]] = []
    for b in bindings:
        p, e = b.pattern, b.entry
        kind, _, user = e.principal.partition(":")
        if kind != "User" or user == "*":
            skipped.append((b, "a KafkaUser names one user"))
            continue
        if p.resource_type not in _STRIMZI_TYPE:
            skipped.append((b, f"Strimzi has no {p.resource_type.name} resources"))
            continue
        if _k8s_name(user) != user:
            skipped.append((b, "the user name is not a Kubernetes resource name, which Strimzi takes it from"))
            continue
        resource = {"type": _STRIMZI_TYPE[p.resource_type]}
        if p.resource_type != ResourceType.CLUSTER:
            resource |= {"name": p.name, "patternType": "prefix" if p.pattern_type == PatternType.PREFIXED else "literal"}
        key = (tuple(resource.items()), e.host, e.permission_type)
        entry = users[user].setdefault(key, {"resource": resource, "operations": [], "host": e.host,
                                             "type": "allow" if _allow(b) else "deny"})
        entry["operations"].append(e.operation.display_name)
    header = ["# The least-privilege ACLs found by kafka-shim audit, as Strimzi KafkaUser resources",
              f"# (strimzi.io/cluster: {cluster}; set spec.authentication for your listeners)."]
    if skipped:
        header.append("# Not expressible in a KafkaUser (apply them with kafka-acls.sh):")
        header += [f"#   {b}: {why}" for b, why in skipped]
    docs = [{"apiVersion": "kafka.strimzi.io/v1beta2", "kind": "KafkaUser",
             "metadata": {"name": user, "labels": {"strimzi.io/cluster": cluster}},
             "spec": {"authorization": {"type": "simple", "acls": list(entries.values())}}}
            for user, entries in users.items()]
    body = yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True) if docs else ""
    return "\n".join(header) + "\n" + body


def _tf_string(text: str) -> str:
    # HCL strings: JSON's escapes, plus ${ and %{ which would start an interpolation or directive
    return json.dumps(text, ensure_ascii=False).replace("${", "$${").replace("%{", "%%{")


def terraform(bindings: list[AclBinding]) -> str:
    blocks = ["# The least-privilege ACLs found by kafka-shim audit, for the Mongey/kafka Terraform provider."]
    names: dict[str, int] = defaultdict(int)
    for b in bindings:
        p, e = b.pattern, b.entry
        base = re.sub(r"[^A-Za-z0-9_]", "_", f"{e.principal.partition(':')[2]}_{p.resource_type.name}_{p.name}_"
                                             f"{e.operation.name}_{e.permission_type.name}").lower().strip("_")
        base = base if base[:1].isalpha() else f"acl_{base}"
        names[base] += 1
        label = base if names[base] == 1 else f"{base}_{names[base]}"
        fields = {"resource_name": p.name, "resource_type": _TERRAFORM_TYPE[p.resource_type],
                  "resource_pattern_type_filter": p.pattern_type.display_name, "acl_principal": e.principal,
                  "acl_host": e.host, "acl_operation": e.operation.display_name,
                  "acl_permission_type": e.permission_type.display_name}
        body = "\n".join(f"  {key:<28} = {_tf_string(value)}" for key, value in fields.items())
        blocks.append(f'resource "kafka_acl" "{label}" {{\n{body}\n}}')
    return "\n\n".join(blocks) + "\n"
