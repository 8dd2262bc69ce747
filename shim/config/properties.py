"""Reading Java ``.properties`` files, the format of Kafka's server.properties."""

from __future__ import annotations

import re
from pathlib import Path

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_UNICODE = re.compile(r"\\u([0-9a-fA-F]{4})")


def _unescape(text: str) -> str:
    text = _UNICODE.sub(lambda m: chr(int(m.group(1), 16)), text)
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _logical_lines(text: str) -> list[str]:
    """Join lines that end in an odd number of backslashes with the next line."""
    lines, pending = [], ""
    for raw in text.splitlines():
        line = raw.lstrip() if pending else raw
        if not pending and line.lstrip().startswith(("#", "!")):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def parse_properties(text: str) -> dict[str, str]:
    """Keys and values as Java's Properties.load reads them (later keys win)."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        line = line.lstrip()
        if not line:
            continue
        # The key ends at the first unescaped '=', ':' or whitespace.
        i, key_chars = 0, []
        while i < len(line):
            ch = line[i]
            if ch == "\\" and i + 1 < len(line):
                key_chars.append(line[i : i + 2])
                i += 2
                continue
            if ch in "=:" or ch.isspace():
                break
            key_chars.append(ch)
            i += 1
        rest = line[i:].lstrip()
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip()
        props[_unescape("".join(key_chars))] = _unescape(rest)
    return props


def load_properties(path: str | Path) -> dict[str, str]:
    return parse_properties(Path(path).read_text(encoding="utf-8"))
