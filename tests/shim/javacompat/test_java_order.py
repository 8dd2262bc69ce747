"""java.util.HashMap iteration order for String keys, checked against orders a real Kafka 3.9 answered with."""

from __future__ import annotations

from kafka_shim.shim.javacompat.java_hash import JavaHashMap, java_order, java_sorted, java_string_hash


def test_string_hash_code() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == (-(2**31)) & 0xFFFFFFFF  # Integer.MIN_VALUE
    assert java_string_hash("\U0001f600") == (0xD83D * 31 + 0xDE00)  # UTF-16 code units


def test_orders_kafka_answered_with() -> None:
    # AlterUserScramCredentials: the error results, inserted in this order by ScramControlManager.
    assert java_order(["nobody", "", "x1", "x2", "u1", "u2", "u4", "u5"]) == ["", "u5", "x1", "x2", "nobody", "u1", "u2", "u4"]
    assert java_order(["u3", "u6"]) == ["u6", "u3"]
    # DescribeUserScramCredentials of [alice, nobody, alice, "", bob].
    assert java_order(["alice", "nobody", "", "bob"]) == ["", "bob", "alice", "nobody"]
    # Describe everything: admin and alice share a bucket, so creation order decides between them.
    assert java_order(["admin", "alice", "bob", "u6", "u3"]) == ["u6", "bob", "admin", "alice", "u3"]


def test_the_table_grows_past_three_quarters() -> None:
    keys = [f"user-{i}" for i in range(13)]
    m: JavaHashMap[int] = JavaHashMap()
    for i, key in enumerate(keys):
        m.put(key, i)
    # 13 keys: a 32-slot table; ordered by the low five bits of the spread hash.
    spread = {k: java_string_hash(k) ^ (java_string_hash(k) >> 16) for k in keys}
    assert m.keys() == sorted(keys, key=lambda k: (spread[k] & 31, keys.index(k)))
    assert len(m) == 13 and dict(m.items())["user-3"] == 3


def test_remove_and_reinsert_goes_last_in_its_bucket() -> None:
    m: JavaHashMap[int] = JavaHashMap()
    for key in ("admin", "alice"):  # same bucket
        m.put(key, 1)
    assert m.keys() == ["admin", "alice"]
    assert m.remove("admin") == 1 and m.remove("admin") is None
    m.put("admin", 2)
    assert m.keys() == ["alice", "admin"]
    m.put("alice", 3)  # replacing a value keeps the position
    assert m.keys() == ["alice", "admin"]


def test_java_string_order_is_by_utf16_code_units() -> None:
    assert java_sorted(["b", "a", "", "B"]) == ["", "B", "a", "b"]
    assert java_sorted(["\U0001f600", "\uffff"]) == ["\U0001f600", "\uffff"]  # a surrogate sorts below U+FFFF
