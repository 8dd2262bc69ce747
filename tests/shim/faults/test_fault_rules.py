"""Fault rules as plain state (no socket): which request a rule takes, counts, fractions, matches, bad rules."""

from __future__ import annotations

import random

import pytest

from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import JoinGroupRequest, MetadataRequest, ProduceRequest
from kafka_shim.shim.faults.control_file import parse_rules
from kafka_shim.shim.faults.rules import FaultError, FaultRule, FaultSet


def _produce(*topics: str) -> ProduceRequest:
    return ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(name=t, partition_data=[])
                                                               for t in topics])


def test_a_counted_rule_takes_the_next_matching_requests_then_goes() -> None:
    faults = FaultSet()
    faults.add(FaultRule("Produce", error_code="NOT_LEADER_OR_FOLLOWER", count=2, topic="orders"))
    assert faults.take(ApiKey.METADATA, 12, MetadataRequest(topics=None), "User:a") is None  # another API
    assert faults.take(ApiKey.PRODUCE, 9, _produce("audit"), "User:a") is None  # another topic
    taken = [faults.take(ApiKey.PRODUCE, 9, _produce("audit", "orders"), "User:a") for _ in range(3)]
    assert [r is not None for r in taken] == [True, True, False]
    assert taken[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and not faults.armed


def test_principal_group_and_unlimited_rules() -> None:
    faults = FaultSet()
    rule = faults.add(FaultRule(ApiKey.JOIN_GROUP, "close", count=None, group="billing", principal="User:alice"))
    join = JoinGroupRequest(group_id="billing", session_timeout_ms=10000, member_id="", protocol_type="consumer", protocols=[])
    assert faults.take(ApiKey.JOIN_GROUP, 5, join, "User:bob") is None
    assert all(faults.take(ApiKey.JOIN_GROUP, 5, join, "User:alice") is rule for _ in range(5))
    assert rule.taken == 5 and faults.remove(rule.rule_id) and not faults.armed


def test_a_fraction_takes_about_that_share() -> None:
    faults = FaultSet(random=random.Random(7))
    faults.add(FaultRule("Metadata", "delay", delay_ms=1, count=None, fraction=0.25))
    taken = sum(faults.take(ApiKey.METADATA, 12, MetadataRequest(topics=None), "User:a") is not None for _ in range(4000))
    assert 800 < taken < 1200


@pytest.mark.parametrize("kwargs, message", [
    ({"api_key": "Produse"}, "not a Kafka API"),
    ({"api_key": "Produce"}, "needs error_code"),
    ({"api_key": "Produce", "error_code": "NOT_A_CODE"}, "error names"),
    ({"api_key": 0, "action": "explode"}, "use one of error, delay, close"),
    ({"api_key": 0, "action": "delay"}, "delay_ms > 0"),
    ({"api_key": 0, "error_code": 6, "count": 0}, "at least 1"),
    ({"api_key": 0, "error_code": 6, "fraction": 0}, "between 0"),
])
def test_bad_rules_say_what_to_write(kwargs: dict, message: str) -> None:
    with pytest.raises(FaultError, match=message):
        FaultRule(**kwargs)


def test_control_file_rules_and_mistakes() -> None:
    rules = parse_rules('{"faults": [{"api": "Fetch", "action": "delay", "delay_ms": 50, "count": null},'
                        ' {"api": 3, "error_code": 5}]}', "f.json")
    assert [(r.api_key, r.action, r.count) for r in rules] == [(ApiKey.FETCH, "delay", None), (ApiKey.METADATA, "error", 1)]
    assert parse_rules("  ", "f.json") == []
    for text, message in (("{", "not JSON"), ('{"faults": {}}', "expected"), ('[{"action": "close"}]', 'needs "api"'),
                          ('[{"api": "Fetch", "colour": 1}]', "unknown key.*colour"),
                          ('[{"api": "Fetch", "action": "delay"}]', "fault 1: a delay fault needs")):
        with pytest.raises(FaultError, match=message):
            parse_rules(text, "f.json")


def test_the_record_of_received_requests_keeps_the_newest_within_its_limits() -> None:
    from kafka_shim.shim.faults.received import Received, ReceivedLog

    log = ReceivedLog(limit=3, limit_bytes=1000)

    def entry(n: int, size: int) -> Received:
        return Received("Produce", 0, 9, n, None, "User:ANONYMOUS", "PLAINTEXT", "127.0.0.1", None, 1, size)

    for n in range(5):
        log.add(entry(n, 10))
    assert [r.correlation_id for r in log.matching()] == [2, 3, 4] and log.dropped == 2
    log.add(entry(5, 990))  # 1020 bytes with the three before it: the oldest go until 1000 fit
    assert [r.correlation_id for r in log.matching()] == [4, 5] and log.dropped == 4
    log.add(entry(6, 5000))  # one larger than the limit alone is kept, as the newest
    assert [r.correlation_id for r in log.matching()] == [6]
