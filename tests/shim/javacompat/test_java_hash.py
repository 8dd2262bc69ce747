"""String.hashCode and java.util.HashMap / HashSet iteration order for String keys, checked against values a JVM
printed (OpenJDK 17) and orders a real Kafka 3.9 answered with."""

from __future__ import annotations

import pytest

from kafka_shim.shim.javacompat.hash_orders import java_concurrent_hash_map_order, java_hash_map_order
from kafka_shim.shim.javacompat.java_hash import JavaHashMap, hash_set_order, java_order, java_string_hash


def signed(value: int) -> int:
    """The unsigned hash as the Java int it stands for."""
    return value - 2**32 if value >= 2**31 else value


# (string, "string".hashCode() as a JVM printed it)
JAVA_HASHES = [
    ("", 0),
    ("a", 97),
    ("hello", 99162322),
    ("hello world", 1794106052),  # wraps past 2**31 on the way
    ("Kafka ACLs are fun", -681344842),
    ("kafka-cluster", -1386027437),
    ("polygenelubricants", -(2**31)),  # Integer.MIN_VALUE
    ("Aa", 2112),
    ("BB", 2112),  # the classic collision with "Aa"
    ("\U0001f600", 1772899),  # one code point, two UTF-16 code units: 0xD83D * 31 + 0xDE00
]


@pytest.mark.parametrize(("text", "java"), JAVA_HASHES, ids=[repr(t) for t, _ in JAVA_HASHES])
def test_string_hash_code_matches_java(text: str, java: int) -> None:
    assert signed(java_string_hash(text)) == java
    assert 0 <= java_string_hash(text) < 2**32


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


def test_hash_set_order_matches_java() -> None:
    # new ArrayList<>(new HashSet<>(List.of(...))), as a JVM printed it: what SaslHandshake lists.
    assert hash_set_order(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]) == ["PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256"]
    assert hash_set_order(["SCRAM-SHA-512", "PLAIN", "SCRAM-SHA-256", "GSSAPI", "OAUTHBEARER"]) == [
        "SCRAM-SHA-512", "PLAIN", "GSSAPI", "SCRAM-SHA-256", "OAUTHBEARER"]
    assert hash_set_order(["PLAIN", "PLAIN"]) == ["PLAIN"]


def test_hash_set_sizes_its_table_for_the_collection_at_once() -> None:
    # Twelve names: HashSet(Collection) starts with 32 buckets, while a HashMap filled one by one stays at 16, so the
    # two orders differ. Both as a JVM printed them.
    names = [f"mech-{i}" for i in range(12)]
    assert hash_set_order(names) == [
        "mech-10", "mech-11", "mech-8", "mech-9", "mech-6", "mech-7", "mech-4", "mech-5", "mech-2", "mech-3", "mech-0", "mech-1"]
    assert java_order(names) == [
        "mech-11", "mech-8", "mech-9", "mech-6", "mech-7", "mech-4", "mech-5", "mech-2", "mech-10", "mech-3", "mech-0", "mech-1"]


def test_a_concurrent_hash_map_reverses_colliding_keys_when_it_grows() -> None:
    """Properties / ConcurrentHashMap: k365 and k354 share a bucket; the twelfth key makes the table grow, and the
    move links k365 (not the bucket's trailing run) in front of k354. Printed by a Java 17 Properties' keySet."""
    keys = ["k832", "k365", "k424", "k354", "k1", "k551", "k553", "k638", "k805", "k627", "k339", "k469", "k614"]
    assert java_concurrent_hash_map_order(keys, java_string_hash) == [
        "k638", "k627", "k805", "k1", "k354", "k365", "k551", "k553", "k424", "k832", "k469", "k339", "k614"]
    # before growing (eleven keys, 16 buckets) a bucket keeps insertion order, as a HashMap's does
    assert java_concurrent_hash_map_order(keys[:11], java_string_hash) == java_hash_map_order(keys[:11], java_string_hash)
