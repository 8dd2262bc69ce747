"""ACLs to preload at start-up (``kafka-shim serve --acls FILE``): a YAML or JSON list of entries.

One entry per resource and permission, naming everything kafka-acls.sh would be told::

    acls:
      - resource_type: topic            # topic, group, cluster, transactional_id, delegation_token, user
        resource_name: payments         # not needed for cluster (it is always kafka-cluster)
        pattern_type: prefixed          # literal (the default) or prefixed
        principal: User:alice           # or principals: [User:alice, User:bob]
        host: "*"                       # the default; or hosts: [10.0.0.1, 10.0.0.2]
        operations: [Read, Describe]    # or operation: Read
        permission: allow               # allow (the default) or deny

Names are Kafka's, in any case: ``IdempotentWrite``, ``IDEMPOTENT_WRITE`` and ``idempotent-write`` are the same
operation. The top level is either that mapping or the bare list. Every problem in the file is reported at once,
each with the entry's number (and line, in YAML) and what to write instead.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from kafka_shim.authorizer import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    validate_new_acl,
)

KEYS = ("resource_type", "resource_name", "pattern_type", "principal", "principals", "host", "hosts",
        "operation", "operations", "permission")
RESOURCE_TYPES = ("topic", "group", "cluster", "transactional_id", "delegation_token", "user")


class AclFileError(ValueError):
    """The file cannot be used; ``problems`` lists each mistake, the message all of them."""

    def __init__(self, path: str | Path, problems: list[str]) -> None:
        self.path = str(path)
        self.problems = problems
        super().__init__(f"{path}: " + "\n  ".join(problems) if len(problems) == 1 else
                         f"{path} has {len(problems)} problems:\n  " + "\n  ".join(problems))


def load_acl_file(path: str | Path) -> list[AclBinding]:
    """The bindings the file describes, in file order; AclFileError naming every problem."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise AclFileError(path, [f"cannot read the file: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError:
        raise AclFileError(path, ["the file is not UTF-8 text; write it as YAML or JSON"]) from None
    data, lines = _parse(path, text)
    return acl_entries(_entries(path, data), path, lines)


def acl_entries(entries: list[Any], source: str | Path = "ACL entries", lines: list[int] | None = None) -> list[AclBinding]:
    """The bindings of entries in the file's format (dicts with the keys above), in order; AclFileError naming every
    problem, each by its entry's number (and line, when ``lines`` gives them) in ``source``."""
    bindings: list[AclBinding] = []
    problems: list[str] = []
    for index, entry in enumerate(entries):
        line = lines[index] if lines and index < len(lines) else None
        where = f"entry {index + 1}" + (f" (line {line})" if line else "")
        found, errors = _entry(entry)
        problems += [f"{where}: {e}" for e in errors]
        bindings += found
    if problems:
        raise AclFileError(source, problems)
    return bindings


def _parse(path: str | Path, text: str) -> tuple[Any, list[int]]:
    """The data, and each entry's 1-based line when the file is YAML."""
    if str(path).lower().endswith(".json"):
        try:
            return json.loads(text), []
        except json.JSONDecodeError as exc:
            raise AclFileError(path, [f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"]) from None
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise AclFileError(path, [f"not valid YAML{where}: {problem}"]) from None
    return data, _entry_lines(node)


def _entry_lines(node: Any) -> list[int]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        node = next((v for k, v in node.value if getattr(k, "value", None) == "acls"), None)
    if isinstance(node, yaml.SequenceNode):
        return [item.start_mark.line + 1 for item in node.value]
    return []


def _entries(path: str | Path, data: Any) -> list[Any]:
    if data is None:
        return []
    if isinstance(data, dict):
        unknown = [k for k in data if k != "acls"]
        if unknown:
            raise AclFileError(path, [f"the top level has {', '.join(map(repr, unknown))}; it holds only 'acls:' "
                                      f"(a list of entries), or is that list itself"])
        data = data.get("acls")
        if data is None:
            return []
    if not isinstance(data, list):
        raise AclFileError(path, ["the file must hold a list of ACL entries (or 'acls:' with that list); "
                                  "see examples/acls.yaml"])
    return data


def _entry(entry: Any) -> tuple[list[AclBinding], list[str]]:
    if not isinstance(entry, dict):
        return [], [f"is {type(entry).__name__} {entry!r}; each entry is a mapping such as "
                    "{resource_type: topic, resource_name: payments, principal: User:alice, operation: Read}"]
    errors: list[str] = []
    for key in entry:
        if key not in KEYS:
            close = difflib.get_close_matches(str(key), KEYS, n=1)
            hint = f"did you mean {close[0]}?" if close else f"the keys are {', '.join(KEYS)}"
            errors.append(f"unknown key {key!r}; {hint}")
    rtype = _resource_type(entry, errors)
    name = _resource_name(entry, rtype, errors)
    ptype = _pattern_type(entry, errors)
    principals = _strings(entry, "principal", "principals", errors, required=True)
    hosts = _strings(entry, "host", "hosts", errors, required=False) or ["*"]
    operations = _operations(entry, rtype, errors)
    permission = _permission(entry, errors)
    for principal in principals:
        if ":" not in principal:
            errors.append(f"principal {principal!r} has no ':'; write the type too, e.g. User:{principal or 'alice'}")
    if errors:
        return [], errors
    bindings = []
    for principal in principals:
        for op in operations:
            for host in hosts:
                binding = AclBinding(ResourcePattern(rtype, name, ptype), AccessControlEntry(principal, host, op, permission))
                problem = validate_new_acl(binding)
                if problem is not None:
                    errors.append(f"{problem} (a broker would refuse this ACL)")
                    return [], errors
                bindings.append(binding)
    return bindings, errors


def _text(entry: dict, key: str, errors: list[str]) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        errors.append(f"{key} is {value!r} ({type(value).__name__}); write it as text, in quotes: {key}: \"{value}\"")
        return None
    return value


def _kafka_name(text: str) -> str:
    return text.strip().upper().replace("-", "_")


def _resource_type(entry: dict, errors: list[str]) -> ResourceType | None:
    text = _text(entry, "resource_type", errors)
    if text is None:
        if "resource_type" not in entry:
            errors.append(f"resource_type is missing; use one of {', '.join(RESOURCE_TYPES)}")
        return None
    rtype = ResourceType.from_string(_kafka_name(text))
    if rtype in (ResourceType.UNKNOWN, ResourceType.ANY):
        errors.append(f"resource_type {text!r} is not a Kafka resource type; use one of {', '.join(RESOURCE_TYPES)}")
        return None
    return rtype


def _resource_name(entry: dict, rtype: ResourceType | None, errors: list[str]) -> str:
    name = _text(entry, "resource_name", errors)
    if rtype == ResourceType.CLUSTER:
        if name is not None and name != CLUSTER_NAME:
            errors.append(f"resource_name {name!r}: the cluster resource is always named {CLUSTER_NAME}; leave resource_name out")
        return CLUSTER_NAME
    if name is None and "resource_name" not in entry:
        errors.append("resource_name is missing; name the resource ('*' means every resource of this type)")
    elif name == "":
        errors.append("resource_name is empty; name the resource ('*' means every resource of this type)")
    return name or ""


def _pattern_type(entry: dict, errors: list[str]) -> PatternType:
    text = _text(entry, "pattern_type", errors)
    if text is None:
        return PatternType.LITERAL
    ptype = PatternType.from_string(_kafka_name(text))
    if ptype in (PatternType.ANY, PatternType.MATCH):
        errors.append(f"pattern_type {text!r} is a filter for listing, not a pattern an ACL can have; use literal or prefixed")
    elif not ptype.is_specific:
        errors.append(f"pattern_type {text!r} is not literal or prefixed")
    return ptype if ptype.is_specific else PatternType.LITERAL


def _strings(entry: dict, one: str, many: str, errors: list[str], required: bool) -> list[str]:
    if one in entry and many in entry:
        errors.append(f"has both {one} and {many}; use one of them")
        return []
    if many in entry:
        values = entry[many]
        if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
            errors.append(f"{many} must be a non-empty list of text, e.g. {many}: [{_example(one)}]")
            return []
        return list(dict.fromkeys(values))
    value = _text(entry, one, errors)
    if value is None:
        if required and one not in entry:
            errors.append(f"{one} is missing, e.g. {one}: {_example(one)}")
        return []
    return [value]


def _example(key: str) -> str:
    return {"principal": "User:alice", "host": '"*"', "operation": "Read"}.get(key, "...")


def _operations(entry: dict, rtype: ResourceType | None, errors: list[str]) -> list[AclOperation]:
    names = _strings(entry, "operation", "operations", errors, required=True)
    valid = SUPPORTED_OPERATIONS.get(rtype, frozenset()) | {AclOperation.ALL} if rtype is not None else None
    ops = []
    for text in names:
        op = AclOperation.from_string(_kafka_name(text))
        if op in (AclOperation.UNKNOWN, AclOperation.ANY):
            errors.append(f"operation {text!r} is not an ACL operation; use one of {_op_names(AclOperation)}")
        elif valid is not None and op not in valid:
            errors.append(f"operation {text!r} does not apply to a {rtype.name.lower()}; use one of {_op_names(valid)}")
        else:
            ops.append(op)
    return list(dict.fromkeys(ops))


def _op_names(ops) -> str:
    return ", ".join(op.display_name for op in sorted(ops) if op not in (AclOperation.UNKNOWN, AclOperation.ANY))


def _permission(entry: dict, errors: list[str]) -> AclPermissionType:
    text = _text(entry, "permission", errors)
    if text is None:
        return AclPermissionType.ALLOW
    perm = AclPermissionType.from_string(_kafka_name(text))
    if perm not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        errors.append(f"permission {text!r} is not allow or deny")
        return AclPermissionType.ALLOW
    return perm
