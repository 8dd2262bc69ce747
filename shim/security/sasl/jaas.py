"""Kafka's ``sasl.jaas.config`` values: ``<LoginModuleClass> <controlFlag> (<key>=<value>)*;``.

The grammar is Kafka's JaasConfig, which reads the text with java.io.StreamTokenizer configured so that:
bytes 0-32 are white space; every other character up to 128, and from 160 up, belongs to a word; ``=`` and
``;`` are tokens of their own; ``"`` and ``'`` quote a value (with Java's backslash escapes, and a quote that
runs to the end of the line or text if it is never closed); ``/`` starts a comment (``//``, ``/* */``, or a
lone ``/`` to the end of the line). Characters 129-159 are single-character tokens that carry no text.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from kafka_shim.shim.config.broker_config import ConfigError

EXAMPLE = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
           'user_admin="admin-secret" user_alice="alice-secret";')
CONTROL_FLAGS = ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL")


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    control_flag: str  # upper case, one of CONTROL_FLAGS
    options: dict[str, str] = field(repr=False)  # values may be passwords


class JaasSyntaxError(ConfigError):
    """A ``sasl.jaas.config`` value that Kafka's parser would refuse."""


# Token kinds besides single characters (whose kind is the character itself).
_WORD = "word"
_QUOTED = "quoted"
_EOF = "eof"

_ESCAPES = {"a": "\x07", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\x0b"}


def _is_word(ch: str) -> bool:
    code = ord(ch)
    if ch in "=;/\"'":
        return False
    return 32 < code <= 128 or code >= 160


@dataclass
class _Token:
    kind: str
    text: str | None  # Java's sval: the word or quoted text; None for single characters and EOF


def _tokens(text: str) -> Iterator[_Token]:
    """java.io.StreamTokenizer with the syntax JaasConfig sets up."""
    i, n = 0, len(text)
    while True:
        while i < n and ord(text[i]) <= 32:
            i += 1
        if i >= n:
            yield _Token(_EOF, None)
            return
        ch = text[i]
        if _is_word(ch):
            start = i
            while i < n and _is_word(text[i]):
                i += 1
            yield _Token(_WORD, text[start:i])
        elif ch in "\"'":
            value, i = _quoted(text, i + 1, ch)
            yield _Token(_QUOTED, value)
        elif ch == "/":
            if text.startswith("/*", i):
                end = text.find("*/", i + 2)
                if end < 0:
                    yield _Token(_EOF, None)  # an unterminated /* comment swallows the rest
                    return
                i = end + 2
            else:
                # "//" and a lone "/" both comment out the rest of the line. Java consumes the character after
                # the "/" before looking for the line end, so "/" right before a line break also eats the next line.
                i += 2
                while i < n and text[i] not in "\r\n":
                    i += 1
        else:
            i += 1
            yield _Token(ch, None)


def _quoted(text: str, i: int, quote: str) -> tuple[str, int]:
    """A quoted string from just after its opening quote; it ends at the quote, a line end or the text's end."""
    out: list[str] = []
    n = len(text)
    while i < n and text[i] != quote and text[i] not in "\r\n":
        ch = text[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        i += 1
        if i >= n:
            out.append("\uffff")  # Java stores (char) -1 for a backslash at the very end
            break
        esc = text[i]
        if "0" <= esc <= "7":  # octal, up to \377
            digits = esc
            i += 1
            max_len = 3 if esc <= "3" else 2
            while len(digits) < max_len and i < n and "0" <= text[i] <= "7":
                digits += text[i]
                i += 1
            out.append(chr(int(digits, 8)))
            continue
        out.append(_ESCAPES.get(esc, esc))
        i += 1
    if i < n and text[i] == quote:
        i += 1
    return "".join(out), i


def parse_jaas_config(value: str, key: str = "sasl.jaas.config") -> list[JaasEntry]:
    """Every login module entry of a ``sasl.jaas.config`` value; ``JaasSyntaxError`` (a ConfigError) if malformed."""
    tokens = _tokens(value)
    entries: list[JaasEntry] = []
    try:
        token = next(tokens)
        while token.kind != _EOF:
            entries.append(_entry(token, tokens))
            token = next(tokens)
    except _Refused as exc:
        raise JaasSyntaxError(f"{key}: {exc}; write it as: {EXAMPLE}") from None
    if not entries:
        raise JaasSyntaxError(f"{key}: Login module not specified in JAAS config; write it as: {EXAMPLE}")
    return entries


class _Refused(Exception):
    pass


def _entry(first: _Token, tokens: Iterator[_Token]) -> JaasEntry:
    module = first.text
    flag_token = next(tokens)
    if flag_token.kind == _EOF:
        raise _Refused("Login module control flag not specified in JAAS config")
    if flag_token.text is None:
        raise _Refused("Login module control flag is not available in the JAAS config")
    flag = flag_token.text.upper()
    if flag not in CONTROL_FLAGS:
        raise _Refused(f"Invalid login module control flag '{flag_token.text}' in JAAS config "
                       f"(use one of {', '.join(f.lower() for f in CONTROL_FLAGS)})")
    options: dict[str, str] = {}
    token = next(tokens)
    while token.kind not in (_EOF, ";"):
        name = token.text
        equals = next(tokens)
        if equals.kind != "=":
            raise _Refused(f"Value not specified for key '{name}' in JAAS config")
        value = next(tokens)
        if value.kind == _EOF or value.text is None:
            raise _Refused(f"Value not specified for key '{name}' in JAAS config")
        if name is None:
            raise _Refused("an option has no name before its '=' in JAAS config")
        options[name] = value.text
        token = next(tokens)
    if token.kind != ";":
        raise _Refused("JAAS config entry not terminated by semi-colon")
    if not module:
        raise _Refused("the entry does not start with a login module class name")
    return JaasEntry(module, flag, options)
