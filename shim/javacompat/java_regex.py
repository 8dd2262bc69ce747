"""Java regular expressions and replacement strings, as far as Python's ``re`` can follow them.

Kafka's principal mapping rules are java.util.regex patterns with Java replacement strings (``$1``, ``${name}``).
Patterns are translated where the two dialects spell the same thing differently (named groups, ``\\Q...\\E``, ``\\z``,
POSIX ``\\p{...}`` classes, Java's ``.`` and ``$`` that stop at every line terminator) and compiled with re.ASCII,
since Java's ``\\w``, ``\\d``, ``\\s``, ``\\b`` and case folding are ASCII-only by default. What has no Python
equivalent (class unions and intersections, ``\\G``, some flags) is refused with JavaRegexError.
"""

from __future__ import annotations

import re

_TERMINATORS = "\\n\\r\\u0085\\u2028\\u2029"
_DOT = f"[^{_TERMINATORS}]"
_END = f"(?=(?:\\r\\n|[{_TERMINATORS}])?\\Z)"
_END_MULTILINE = f"(?=[{_TERMINATORS}]|\\Z)"
_HSPACE = " \\t\\xa0\\u1680\\u180e\\u2000-\\u200a\\u202f\\u205f\\u3000"
_VSPACE = "\\n\\x0b\\f\\r\\x85\\u2028\\u2029"
_POSIX = {
    "Lower": "a-z",
    "Upper": "A-Z",
    "ASCII": "\\x00-\\x7f",
    "Alpha": "a-zA-Z",
    "Digit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "Punct": "!-/:-@\\[-`{-~",
    "Graph": "!-~",
    "Print": " -~",
    "Blank": " \\t",
    "Cntrl": "\\x00-\\x1f\\x7f",
    "XDigit": "0-9a-fA-F",
    "Space": " \\t\\n\\x0b\\f\\r",
}
_FLAGS = re.compile(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?\)")
_SCOPED_FLAGS = re.compile(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?:")
_PYTHON_FLAGS = {"i": "i", "m": "m", "s": "s", "x": "x", "u": ""}  # UNICODE_CASE: ASCII folding is kept (see module doc)


class JavaRegexError(ValueError):
    """A pattern or replacement Java would reject, or one this translation cannot follow."""


def compile_java_regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(_translate(pattern), re.ASCII)
    except re.error as exc:
        raise JavaRegexError(f"is not a valid regular expression: {exc}") from None


def _translate(pattern: str) -> str:
    out: list[str] = []
    # One frame per open group: its active flags (s and m change how . and $ are spelled) and the inline flag groups
    # opened in it. Java's (?i) applies to the rest of the enclosing group; Python only takes flags at the start, so it
    # becomes a scoped (?i:...) closed with the group, and closed and reopened around each | of that group.
    frames: list[tuple[set[str], list[str]]] = [(set(), [])]
    in_class = False
    groups = 0
    i = 0
    while i < len(pattern):
        c = pattern[i]
        active, scoped = frames[-1]
        if c == "\\":
            text, i, groups = _escape(pattern, i, in_class, groups)
            out.append(text)
            continue
        if in_class:
            if c == "[":
                raise JavaRegexError("nests a character class ([a[b]]), a Java union kafka-shim cannot translate")
            if pattern.startswith("&&", i):
                raise JavaRegexError("intersects character classes (&&), which kafka-shim cannot translate")
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            if pattern.startswith("^", i):
                out.append("^")
                i += 1
            continue
        flag_group = _FLAGS.match(pattern, i) if c == "(" else None
        if flag_group:
            spec = _python_flags(flag_group)
            active.update(flag_group.group(1))
            active.difference_update(flag_group.group(2) or "")
            if spec:
                out.append(f"(?{spec}:")
                scoped.append(spec)
            i = flag_group.end()
            continue
        if c == "(":
            scoped_flags = _SCOPED_FLAGS.match(pattern, i)
            frame_flags = set(active)
            if scoped_flags:
                spec = _python_flags(scoped_flags)
                frame_flags.update(scoped_flags.group(1))
                frame_flags.difference_update(scoped_flags.group(2) or "")
                out.append(f"(?{spec}:" if spec else "(?:")
                i = scoped_flags.end()
            elif pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
                out.append("(?P<")
                groups += 1
                i += 3
            else:
                if not pattern.startswith("(?", i):
                    groups += 1
                out.append(c)
                i += 1
            frames.append((frame_flags, []))
            continue
        if c == ")" and len(frames) > 1:
            out.append(")" * len(scoped) + ")")
            frames.pop()
            i += 1
            continue
        if c == "|" and scoped:
            out.append(")" * len(scoped) + "|" + "".join(f"(?{spec}:" for spec in scoped))
        elif c == "." and "s" not in active:
            out.append(_DOT)
        elif c == "$":
            out.append(_END_MULTILINE if "m" in active else _END)
        else:
            out.append(c)
        i += 1
    out.append(")" * len(frames[0][1]))
    return "".join(out)


def _python_flags(match: re.Match[str]) -> str:
    on, off = match.group(1), match.group(2) or ""
    unknown = [f for f in on + off if f not in _PYTHON_FLAGS]
    if unknown:
        raise JavaRegexError(f"uses the inline flag {unknown[0]} ({match.group(0)}), which kafka-shim cannot translate")
    on, off = "".join(_PYTHON_FLAGS[f] for f in on), "".join(_PYTHON_FLAGS[f] for f in off)
    return on + ("-" + off if off else "")


def _escape(pattern: str, i: int, in_class: bool, groups: int) -> tuple[str, int, int]:
    """One escape sequence starting at ``pattern[i]`` (a backslash): (its translation, next index, groups)."""
    if i + 1 >= len(pattern):
        raise JavaRegexError("ends with a lone backslash")
    c = pattern[i + 1]
    nxt = i + 2
    if c == "Q":
        end = pattern.find("\\E", nxt)
        literal = pattern[nxt:] if end < 0 else pattern[nxt:end]
        return "".join(_literal(ch) for ch in literal), len(pattern) if end < 0 else end + 2, groups
    if c in "pP":
        if pattern.startswith("{", nxt):
            close = pattern.find("}", nxt)
            name, nxt = pattern[nxt + 1 : close], close + 1
        else:
            name, nxt = pattern[nxt : nxt + 1], nxt + 1
        name = name.removeprefix("Is")
        if name not in _POSIX:
            raise JavaRegexError(f"uses \\{c}{{{name}}}, a property class kafka-shim cannot translate")
        return _class(_POSIX[name], negate=c == "P", in_class=in_class), nxt, groups
    if c == "h":
        return _class(_HSPACE, False, in_class), nxt, groups
    if c == "H":
        return _class(_HSPACE, True, in_class), nxt, groups
    if c == "v":
        return _class(_VSPACE, False, in_class), nxt, groups
    if c == "V":
        return _class(_VSPACE, True, in_class), nxt, groups
    if c == "R" and not in_class:
        return f"(?:\\r\\n|[{_VSPACE}])", nxt, groups
    if c == "z":
        return "\\Z", nxt, groups
    if c == "Z":
        return _END, nxt, groups
    if c == "e":
        return "\\x1b", nxt, groups
    if c == "c" and nxt < len(pattern):
        return _literal(chr(ord(pattern[nxt]) ^ 64)), nxt + 1, groups
    if c == "x" and pattern.startswith("{", nxt):
        close = pattern.find("}", nxt)
        if close < 0:
            raise JavaRegexError("has an unclosed \\x{...}")
        try:
            return _literal(chr(int(pattern[nxt + 1 : close], 16))), close + 1, groups
        except ValueError:
            raise JavaRegexError(f"has an invalid \\x{{{pattern[nxt + 1 : close]}}}") from None
    if c == "0":
        # Java's octal escape: \0n, \0nn or \0mnn with m at most 3.
        digits = ""
        while nxt < len(pattern) and len(digits) < 3 and pattern[nxt] in "01234567":
            if len(digits) == 2 and digits[0] > "3":
                break
            digits += pattern[nxt]
            nxt += 1
        if not digits:
            raise JavaRegexError("has \\0 without octal digits")
        return _literal(chr(int(digits, 8))), nxt, groups
    if c.isdigit() and not in_class:
        # Java takes more digits only while such a group exists at this point of the pattern.
        number = int(c)
        while nxt < len(pattern) and pattern[nxt].isdigit() and number * 10 + int(pattern[nxt]) <= groups:
            number = number * 10 + int(pattern[nxt])
            nxt += 1
        return f"(?:\\{number})", nxt, groups
    if c == "k" and pattern.startswith("<", nxt):
        close = pattern.find(">", nxt)
        if close < 0:
            raise JavaRegexError("has an unclosed \\k<name>")
        return f"(?P={pattern[nxt + 1 : close]})", close + 1, groups
    if c == "G":
        raise JavaRegexError("uses \\G, which kafka-shim cannot translate")
    return "\\" + c, nxt, groups


def _literal(ch: str) -> str:
    return re.escape(ch) if ch.isascii() else ch


def _class(ranges: str, negate: bool, in_class: bool) -> str:
    if in_class:
        if negate:
            raise JavaRegexError("negates a class inside a class, which kafka-shim cannot translate")
        return ranges
    return f"[{'^' if negate else ''}{ranges}]"


def expand_java_replacement(match: re.Match[str], replacement: str) -> str:
    """``replacement`` for one match as Java's Matcher.appendReplacement reads it."""
    out: list[str] = []
    group_count = match.re.groups
    i = 0
    while i < len(replacement):
        c = replacement[i]
        if c == "\\":
            if i + 1 >= len(replacement):
                raise JavaRegexError("character to be escaped is missing")
            out.append(replacement[i + 1])
            i += 2
            continue
        if c != "$":
            out.append(c)
            i += 1
            continue
        i += 1
        if i >= len(replacement):
            raise JavaRegexError("Illegal group reference: group index is missing")
        if replacement[i] == "{":
            close = i + 1
            while close < len(replacement) and (replacement[close].isascii() and replacement[close].isalnum()):
                close += 1
            name = replacement[i + 1 : close]
            if not name:
                raise JavaRegexError("named capturing group has 0 length name")
            if close >= len(replacement) or replacement[close] != "}":
                raise JavaRegexError("named capturing group is missing trailing '}'")
            if name not in match.re.groupindex:
                raise JavaRegexError(f"No group with name {{{name}}}")
            value = match.group(name)
            i = close + 1
        else:
            if not "0" <= replacement[i] <= "9":
                raise JavaRegexError("Illegal group reference")
            number = int(replacement[i])
            i += 1
            while i < len(replacement) and "0" <= replacement[i] <= "9" and number * 10 + int(replacement[i]) <= group_count:
                number = number * 10 + int(replacement[i])
                i += 1
            if number > group_count:
                raise JavaRegexError(f"No group {number}")
            value = match.group(number)
        if value is not None:
            out.append(value)
    return "".join(out)
