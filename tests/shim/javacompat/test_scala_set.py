"""The Scala Set order behind Kafka's Metadata topic order, against orders recorded from Apache Kafka 3.9."""

from __future__ import annotations

import uuid

import pytest

from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.javacompat.scala_set import kafka_uuid_hash, scala_set_order

# (request order, Kafka 3.9's answer order), recorded from Metadata v9 against a real broker.
RECORDED = [
    (["a", "b", "c", "d", "e"], ["e", "a", "b", "c", "d"]),
    (["orders", "payments", "audit", "users", "clicks", "events", "logs"], ["payments", "users", "clicks", "orders", "audit", "logs", "events"]),
    ([f"topic-{i}" for i in range(12)],
     ["topic-1", "topic-5", "topic-9", "topic-2", "topic-6", "topic-8", "topic-10", "topic-3", "topic-0", "topic-11", "topic-7", "topic-4"]),
    (["Zeta", "alpha", "Beta", "gamma", "delta", "alpha"], ["alpha", "gamma", "Zeta", "delta", "Beta"]),
    (["d", "c", "d", "b"], ["d", "c", "b"]),  # up to four distinct: insertion order
]


@pytest.mark.parametrize(("given", "kafka"), RECORDED)
def test_topic_name_order(given, kafka) -> None:
    assert scala_set_order(given, java_string_hash) == kafka


def test_topic_id_order() -> None:
    # Metadata v12 by unknown ids, recorded from Kafka 3.9.
    ids = ["db5b5fab-8f4d-3e27-dda1-494c73cf256d", "73ab4876-7734-d7c1-c7fd-e805ec99108d", "309d6b79-965e-da32-dae4-45508201e2bd",
           "79cb9e86-830c-71c2-cdcc-69292f45e678", "2fa91425-cb00-8853-9d2c-67eda13ffe79", "244caf9c-4dab-b481-7253-edc618187993",
           "e3eff9c0-cf44-dd3f-89e7-d15f17362f25"]
    kafka = ["73ab4876-7734-d7c1-c7fd-e805ec99108d", "db5b5fab-8f4d-3e27-dda1-494c73cf256d", "e3eff9c0-cf44-dd3f-89e7-d15f17362f25",
             "244caf9c-4dab-b481-7253-edc618187993", "309d6b79-965e-da32-dae4-45508201e2bd", "79cb9e86-830c-71c2-cdcc-69292f45e678",
             "2fa91425-cb00-8853-9d2c-67eda13ffe79"]
    assert [str(i) for i in scala_set_order([uuid.UUID(i) for i in ids], kafka_uuid_hash)] == kafka


def test_equal_hashes_keep_insertion_order() -> None:
    # "Aa" and "BB" share Java's hash code; in a collision node Kafka keeps insertion order.
    names = ["BB", "x1", "Aa", "x2", "x3"]
    ordered = scala_set_order(names, java_string_hash)
    assert sorted(ordered) == sorted(names)
    assert ordered.index("BB") < ordered.index("Aa")
