"""The fault control file: faults for a broker running as a process or a container, from a test in any language.

``kafka.shim.faults.file=PATH`` makes the broker watch PATH (its modification time, every ``POLL_S``). The file is
JSON, the rules the broker should have, replacing all earlier ones each time it changes::

    {"faults": [
        {"api": "Produce", "action": "error", "error_code": "NOT_LEADER_OR_FOLLOWER", "count": 3, "topic": "orders"},
        {"api": "Fetch", "action": "delay", "delay_ms": 2000, "count": null},
        {"api": "Metadata", "action": "close", "principal": "User:alice"},
        {"kind": "leaderless", "topic": "orders", "partition": 0, "duration_ms": 5000},
        {"kind": "stall_fetch", "topic": "orders"}
    ]}

Keys are ``FaultRule``'s (``api`` or ``api_key``: a name or a number; ``error_code``: a name or a number), or for a
partition fault ``kind`` ("leaderless" or "stall_fetch"), ``topic``, optional ``partition`` and ``duration_ms``
(timed from when the file is applied). An empty list, an empty file or a deleted file removes every fault. A file that cannot be read or holds a mistake is logged
(``fault_file_rejected``, saying what is wrong) and the rules stay as they were: the broker never stops for it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, NamedTuple

from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.faults.errors import FaultError
from kafka_shim.shim.faults.partition_faults import KINDS
from kafka_shim.shim.faults.rules import FaultRule, FaultSet

log = get_logger("kafka_shim.faults")

KEY = "kafka.shim.faults.file"
POLL_S = 0.25
_FIELDS = set(FaultRule.__dataclass_fields__) - {"rule_id", "taken", "api_key"}
_HOLD_FIELDS = {"kind", "topic", "partition", "duration_ms"}


class PartitionHold(NamedTuple):
    kind: str
    topic: str
    partition: int | None
    duration_ms: int | None


def parse_rules(text: str, source: str) -> list[FaultRule | PartitionHold]:
    """The rules and partition faults a control file holds; FaultError naming the entry and the mistake."""
    if not text.strip():
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FaultError(f"{source}: not JSON ({exc.msg} at line {exc.lineno}); write {{\"faults\": [...]}}") from None
    entries = data.get("faults") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise FaultError(f"{source}: expected {{\"faults\": [...]}} or a list of rules")
    rules = []
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise FaultError(f"{source}: fault {number} is {type(entry).__name__}, not an object")
        where = f"{source}: fault {number}"
        if entry.get("kind") == "broker_down":
            rules.append(_broker_down(entry, where))
        else:
            rules.append(_hold(entry, where) if "kind" in entry else _rule(entry, where))
    return rules


class BrokerDown(NamedTuple):
    node: int


def _broker_down(entry: dict[str, Any], where: str) -> BrokerDown:
    unknown = sorted(set(entry) - {"kind", "node"})
    node = entry.get("node")
    if unknown:
        raise FaultError(f"{where}: unknown key(s) {', '.join(unknown)}; a broker_down fault has kind and node")
    if not isinstance(node, int) or isinstance(node, bool):
        raise FaultError(f"{where}: a broker_down fault needs \"node\", the node id of a broker of the cluster")
    return BrokerDown(node)


def _hold(entry: dict[str, Any], where: str) -> PartitionHold:
    unknown = sorted(set(entry) - _HOLD_FIELDS)
    if unknown:
        raise FaultError(f"{where}: unknown key(s) {', '.join(unknown)}; a partition fault has {', '.join(sorted(_HOLD_FIELDS))}")
    kind, topic = entry["kind"], entry.get("topic")
    if kind not in KINDS:
        raise FaultError(f"{where}: kind={kind!r}; use one of {', '.join(KINDS)}")
    if not isinstance(topic, str) or not topic:
        raise FaultError(f"{where}: a {kind} fault needs \"topic\"")
    partition, duration = entry.get("partition"), entry.get("duration_ms")
    for name, value in (("partition", partition), ("duration_ms", duration)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise FaultError(f"{where}: {name} is {value!r}; write a whole number or null")
    return PartitionHold(kind, topic, partition, duration)


def _rule(entry: dict[str, Any], where: str) -> FaultRule:
    values = dict(entry)
    api = values.pop("api", values.pop("api_key", None))
    if api is None:
        raise FaultError(f"{where}: needs \"api\" (e.g. \"Produce\" or 0)")
    unknown = sorted(set(values) - _FIELDS)
    if unknown:
        raise FaultError(f"{where}: unknown key(s) {', '.join(unknown)}; known: api, {', '.join(sorted(_FIELDS))}")
    try:
        return FaultRule(api_key=api, **values)
    except FaultError as exc:
        raise FaultError(f"{where}: {exc}") from None
    except TypeError as exc:
        raise FaultError(f"{where}: {exc}") from None


async def watch(path: Path, faults: FaultSet, poll_s: float = POLL_S) -> None:
    """Apply the file whenever it changes, until cancelled (a broker task)."""
    seen: tuple[int, int] | None = None
    while True:
        try:
            stat = path.stat()
            current: tuple[int, int] | None = (stat.st_mtime_ns, stat.st_size)
        except FileNotFoundError:
            current = None
        except OSError as exc:
            log.error("fault_file_rejected", path=str(path), reason=f"cannot read it: {exc.strerror or exc}")
            current = seen
        if current != seen:
            seen = current
            wanted_down = _apply(path, faults, present=current is not None)
            if wanted_down is not None and faults.nodes is not None:
                await _apply_nodes(path, faults.nodes, wanted_down)
        await asyncio.sleep(poll_s)


def _apply(path: Path, faults: FaultSet, *, present: bool) -> set[int] | None:
    """Replace the rules with the file's; the nodes it wants down (None: the file was refused, nothing changes)."""
    try:
        rules = parse_rules(path.read_text(encoding="utf-8"), str(path)) if present else []
    except (FaultError, OSError, UnicodeDecodeError) as exc:
        log.error("fault_file_rejected", path=str(path), reason=str(exc), hint="the earlier rules stay in force")
        return None
    faults.clear()
    down = set()
    for rule in rules:
        if isinstance(rule, BrokerDown):
            down.add(rule.node)
        elif isinstance(rule, PartitionHold):
            try:
                faults.hold(*rule)
            except FaultError as exc:  # a topic that does not exist (yet): the other faults still apply
                log.error("fault_file_rejected", path=str(path), reason=str(exc), hint="this partition fault is skipped")
        else:
            faults.add(rule)
    log.info("fault_file_applied", path=str(path), faults=[rule.describe() for rule in faults.rules]
             + faults.partition_faults.describe(), brokers_down=sorted(down))
    return down


async def _apply_nodes(path: Path, nodes: Any, wanted_down: set[int]) -> None:
    """Stop the nodes the file lists as down and start the others that are (a cluster in one process)."""
    for node in sorted(set(nodes.state.node_ids) - wanted_down):
        if node in nodes.state.down:
            await nodes.start_node(node)
    for node in sorted(wanted_down):
        try:
            await nodes.stop_node(node)
        except FaultError as exc:
            log.error("fault_file_rejected", path=str(path), reason=str(exc), hint="this broker_down fault is skipped")
