"""The ACL sets an audit decides under (``--acls A``, ``--what-if B``): where they come from and how they are read.

Three sources, told apart by their text:

* an ACL file (``kafka-shim serve --acls``' YAML or JSON, ``authorizer/acl_file.py``);
* the output of ``kafka-acls.sh --list`` (Kafka's AclCommand: ``Current ACLs for resource `ResourcePattern(...)`:``
  blocks of ``(principal=..., host=..., operation=..., permissionType=...)`` lines), which ``kafka-shim acls
  --list`` prints the same;
* a live broker, ``broker:HOST:PORT``: ``kafka-shim acls --bootstrap-server HOST:PORT [--command-config F] --list``
  runs as a subprocess and its output is read as above (so the trace package never imports the broker).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from kafka_shim.authorizer import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_shim.authorizer.acl_file import AclFileError, load_acl_file

_RESOURCE = re.compile(
    r"^(?:Current|Adding) ACLs for resource `ResourcePattern\(resourceType=(?P<type>[A-Z_]+), name=(?P<name>.*), "
    r"patternType=(?P<pattern>[A-Z]+)\)`:\s*$")
_ENTRY = re.compile(
    r"^\s*\(principal=(?P<principal>.*), host=(?P<host>.*), operation=(?P<op>[A-Z_]+), "
    r"permissionType=(?P<perm>[A-Z]+)\)\s*$")
_PRINCIPAL_HEADER = re.compile(r"^ACLs for principal `.*`\s*$")
BROKER_PREFIX = "broker:"


class AclSetError(ValueError):
    """An ACL set that cannot be read; the message names the source, the line and what was expected."""


def load_acl_set(source: str, command_config: str | None = None, timeout_s: float = 120.0) -> list[AclBinding]:
    """The ACLs of ``source``: a file (ACL file or kafka-acls.sh --list output) or ``broker:HOST:PORT``."""
    if source.startswith(BROKER_PREFIX):
        return list_broker_acls(source[len(BROKER_PREFIX):], command_config, timeout_s)
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AclSetError(f"{source}: cannot read the ACL set ({exc.strerror or exc}); give an ACL file, "
                          f"kafka-acls.sh --list output or broker:HOST:PORT") from exc
    if looks_like_listing(text):
        return parse_listing(text, source)
    try:
        return load_acl_file(path)
    except AclFileError as exc:
        raise AclSetError(str(exc)) from exc


def looks_like_listing(text: str) -> bool:
    for line in text.splitlines():
        if line.strip():
            return bool(_RESOURCE.match(line.rstrip("\n")) or _PRINCIPAL_HEADER.match(line))
    return False


def parse_listing(text: str, source: str = "<listing>") -> list[AclBinding]:
    """AclCommand's ``--list`` output as bindings, in its order (duplicates kept once)."""
    bindings: dict[AclBinding, None] = {}
    # The same entry line recurs under many resources (one principal's READ on each of its topics): parsed once.
    entries: dict[str, AccessControlEntry] = {}
    pattern: ResourcePattern | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        entry = entries.get(line)
        if entry is not None:
            bindings[AclBinding(pattern, entry)] = None
            continue
        if not line.strip() or _PRINCIPAL_HEADER.match(line):
            continue
        if m := _RESOURCE.match(line):
            rtype, ptype = ResourceType.from_string(m["type"]), PatternType.from_string(m["pattern"])
            if rtype.is_unknown or rtype == ResourceType.ANY or not ptype.is_specific:
                raise AclSetError(f"{source}:{number}: resource type {m['type']} / pattern type {m['pattern']} cannot "
                                  f"be an ACL's; expected e.g. ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)")
            pattern = ResourcePattern(rtype, m["name"], ptype)
            continue
        if m := _ENTRY.match(line):
            if pattern is None:
                raise AclSetError(f"{source}:{number}: an ACL entry before any 'Current ACLs for resource' line")
            op, perm = AclOperation.from_string(m["op"]), AclPermissionType.from_string(m["perm"])
            if op.is_unknown or op == AclOperation.ANY or perm.is_unknown or perm == AclPermissionType.ANY:
                raise AclSetError(f"{source}:{number}: operation {m['op']} / permission {m['perm']} is not an ACL's; "
                                  f"expected e.g. operation=READ, permissionType=ALLOW")
            entry = entries[line] = AccessControlEntry(m["principal"], m["host"], op, perm)
            bindings[AclBinding(pattern, entry)] = None
            continue
        raise AclSetError(f"{source}:{number}: not part of kafka-acls.sh --list output: {line.strip()[:120]!r}; expected "
                          f"'Current ACLs for resource `ResourcePattern(...)`:' or '(principal=..., host=..., operation=..., "
                          f"permissionType=...)'")
    return list(bindings)


def list_broker_acls(address: str, command_config: str | None = None, timeout_s: float = 120.0) -> list[AclBinding]:
    """Every ACL of a live broker (any Kafka, or kafka-shim), through ``kafka-shim acls --list``."""
    cmd = [sys.executable, "-m", "kafka_shim.shim.tools.cli", "acls", "--bootstrap-server", address, "--list"]
    if command_config:
        cmd += ["--command-config", command_config]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise AclSetError(f"broker:{address}: listing its ACLs took over {timeout_s:.0f} s; is the broker up?") from exc
    if done.returncode != 0:
        raise AclSetError(f"broker:{address}: listing its ACLs failed (exit {done.returncode}): "
                          f"{(done.stderr or done.stdout).strip()[-500:]}")
    return parse_listing(done.stdout, f"broker:{address}")
