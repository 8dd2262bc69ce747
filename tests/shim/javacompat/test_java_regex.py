"""Java regular expressions and replacement strings, against what java.util.regex answered (OpenJDK 17)."""

from __future__ import annotations

import pytest

from kafka_shim.shim.javacompat.java_regex import JavaRegexError, compile_java_regex, expand_java_replacement

# (pattern, input, Matcher.matches() as the JVM answered)
JAVA_MATCHES = [
    ("CN=(?<cn>[^,]+),O=(.*)", "CN=alice,O=Acme", True),  # a named group
    ("\\Qa.b\\E", "a.b", True),  # a quoted run
    ("\\Qa.b\\E", "axb", False),
    ("a.c", "a\rc", False),  # Java's . stops at every line terminator, not only \n
    ("a.c", "a\u2028c", False),
    ("(?s)a.c", "a\rc", True),
    ("abc$", "abc\n", False),  # matches() must consume the newline; find() would not
    ("\\p{Upper}+", "ABC", True),  # a POSIX class
    ("\\w+", "\u00e9t\u00e9", False),  # \w is ASCII-only by default
    ("(?i)abc", "ABC", True),
]


@pytest.mark.parametrize(("pattern", "text", "java"), JAVA_MATCHES, ids=[f"{p} ~ {t!r}" for p, t, _ in JAVA_MATCHES])
def test_matches_as_java(pattern: str, text: str, java: bool) -> None:
    assert (compile_java_regex(pattern).fullmatch(text) is not None) is java


def test_dollar_also_matches_before_a_final_line_terminator_as_javas_find() -> None:
    assert compile_java_regex("abc$").search("abc\n") is not None
    assert compile_java_regex("abc$").search("abc\u2028") is not None


@pytest.mark.parametrize(("pattern", "text", "replacement", "java"), [
    ("CN=(?<cn>[^,]+),O=(.*)", "CN=alice,O=Acme", "${cn}@$2", "alice@Acme"),
    ("(a)(b)", "ab", "$2\\$$1", "b$a"),  # \$ is a literal dollar
    ("(a)", "a", "$11", "a1"),  # no group 11: Java reads $1 and a literal 1
])
def test_replacements_as_javas_replace_all(pattern: str, text: str, replacement: str, java: str) -> None:
    match = compile_java_regex(pattern).fullmatch(text)
    assert match is not None
    assert expand_java_replacement(match, replacement) == java


@pytest.mark.parametrize("replacement", ["$", "$x", "${nope}", "${}", "$9", "trailing\\"])
def test_replacements_java_refuses(replacement: str) -> None:
    match = compile_java_regex("(?<cn>a)").fullmatch("a")
    assert match is not None
    with pytest.raises(JavaRegexError):
        expand_java_replacement(match, replacement)


@pytest.mark.parametrize("pattern", ["[a[b]]", "[a-z&&[^e]]", "\\Ga", "\\p{InGreek}", "(?d)a", "a\\"])
def test_what_cannot_be_followed_is_refused_not_mistranslated(pattern: str) -> None:
    with pytest.raises(JavaRegexError):
        compile_java_regex(pattern)
