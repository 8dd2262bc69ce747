"""Java's String.compareTo order (UTF-16 code units), against the order a JVM's Collections.sort gave."""

from __future__ import annotations

from kafka_shim.shim.javacompat.utf16 import java_sorted, utf16_key


def test_order_matches_java() -> None:
    # Collections.sort on OpenJDK 17 gave exactly this order.
    given = ["b", "\uffff", "\U0001f600", "a", "", "B", "\ue000", "ab"]
    assert java_sorted(given) == ["", "B", "a", "ab", "b", "\U0001f600", "\ue000", "\uffff"]


def test_a_character_beyond_the_bmp_sorts_below_u_e000_unlike_in_python() -> None:
    # Python compares code points (U+1F600 > U+FFFF); Java compares code units (0xD83D < 0xE000).
    assert sorted(["\U0001f600", "\ue000"]) == ["\ue000", "\U0001f600"]
    assert java_sorted(["\U0001f600", "\ue000"]) == ["\U0001f600", "\ue000"]
    assert java_sorted(["x\U0001f600y", "x\uffff"]) == ["x\U0001f600y", "x\uffff"]


def test_the_key_is_the_utf16_code_units() -> None:
    assert utf16_key("kafka") == "kafka"
    assert utf16_key("\u00e9t\u00e9") == "\u00e9t\u00e9"
    assert utf16_key("a\U0001f600") == "a\ud83d\ude00"
    assert [ord(c) for c in utf16_key("\U00010000\U0010ffff")] == [0xD800, 0xDC00, 0xDBFF, 0xDFFF]
