"""Field-by-field comparison of two brokers' answers, after normalising what may legitimately differ."""

from __future__ import annotations

import fnmatch
import re
from typing import Any

from tests.support.wire import Answer

NORMALISED = "<normalised>"

# Fields that differ between any two brokers without meaning anything: identities and timing.
ALWAYS = ("throttle_time_ms",)


def _plain(value: Any) -> Any:
    return value.to_dict() if hasattr(value, "to_dict") else value


# Kafka's authorization errors quote the request's connection ("Request Request(processor=5,
# connectionId=127.0.0.1:9092-127.0.0.1:50000-3, session=...@1320797c, ...) is not authorized."): mask that part.
_CONNECTION_DETAILS = re.compile(r"Request\(processor=.*?envelope=[^)]*\)")


def normalise(tree: Any, patterns: tuple[str, ...], path: str = "") -> Any:
    """Replace values at dotted paths matching ``patterns`` (``*`` matches one list index or key)."""
    if any(fnmatch.fnmatchcase(path, p) for p in patterns):
        return NORMALISED
    if isinstance(tree, str) and path.rsplit(".", 1)[-1] == "error_message":
        return _CONNECTION_DETAILS.sub("Request(<connection>)", tree)
    if isinstance(tree, dict):
        return {k: normalise(v, patterns, f"{path}.{k}" if path else k) for k, v in tree.items()}
    if isinstance(tree, list):
        return [normalise(v, patterns, f"{path}.{i}" if path else str(i)) for i, v in enumerate(tree)]
    return tree


def field_diff(oracle: Any, shim: Any, path: str = "") -> list[str]:
    """Every place the two trees differ, as readable lines."""
    if isinstance(oracle, dict) and isinstance(shim, dict):
        lines = []
        for key in list(oracle) + [k for k in shim if k not in oracle]:
            sub = f"{path}.{key}" if path else key
            if key not in shim:
                lines.append(f"{sub}: only Kafka has it ({oracle[key]!r})")
            elif key not in oracle:
                lines.append(f"{sub}: only kafka-shim has it ({shim[key]!r})")
            else:
                lines += field_diff(oracle[key], shim[key], sub)
        return lines
    if isinstance(oracle, list) and isinstance(shim, list):
        lines = []
        if len(oracle) != len(shim):
            lines.append(f"{path}: Kafka has {len(oracle)} entries, kafka-shim {len(shim)}")
        for i, (a, b) in enumerate(zip(oracle, shim, strict=False)):
            lines += field_diff(a, b, f"{path}.{i}")
        return lines
    return [] if oracle == shim else [f"{path or '<root>'}: Kafka {oracle!r} != kafka-shim {shim!r}"]


def differences(oracle: Answer, shim: Answer, ignore: tuple[str, ...] = ()) -> list[str]:
    if oracle.closed or shim.closed:
        if oracle.closed == shim.closed:
            return []
        closer, answerer = ("Kafka", shim) if oracle.closed else ("kafka-shim", oracle)
        return [f"{closer} closed the connection; the other answered {answerer.body!r}"]
    patterns = ALWAYS + ignore
    diff = field_diff(normalise(_plain(oracle.body), patterns), normalise(_plain(shim.body), patterns))
    if oracle.correlation_id != shim.correlation_id:
        diff.insert(0, f"correlation id: Kafka {oracle.correlation_id} != kafka-shim {shim.correlation_id}")
    return diff


def assert_same(oracle: Answer, shim: Answer, ignore: tuple[str, ...] = (), what: str = "") -> None:
    diff = differences(oracle, shim, ignore)
    if diff:
        title = f"Kafka and kafka-shim disagree{' on ' + what if what else ''}:"
        raise AssertionError("\n  ".join([title, *diff]))
