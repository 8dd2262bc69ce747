"""authorizer.api_checks: the one declaration of what each API asks the authorizer, queried as a trace auditor would."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_shim.authorizer import AclOperation, ResourceType
from kafka_shim.authorizer.api_checks import DECLARATIONS, Mode, Requirement, declaration, requirements
from kafka_shim.protocol.messages import (
    CreateAclsRequest,
    CreateTopicsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    FetchRequest,
    InitProducerIdRequest,
    MetadataRequest,
    ProduceRequest,
)
from kafka_shim.protocol.schema import api_index, message_spec
from kafka_shim.shim.handlers import load_all
from tests.support.schema_strategies import message_strategy

T = MetadataRequest.MetadataRequestTopic
OP, RT = AclOperation, ResourceType


def brief(reqs: list[Requirement]) -> list[tuple]:
    return [(r.operation.name, r.resource_type.name, r.name, r.mode.value, r.error_code, r.ref_count, r.is_shortcut) for r in reqs]


def test_every_served_api_is_declared() -> None:
    served = set(load_all())
    assert served <= set(DECLARATIONS), f"served but undeclared: {sorted(served - set(DECLARATIONS))}"


def test_declared_names_match_kafkas_api_names() -> None:
    for key, decl in DECLARATIONS.items():
        assert api_index()[key][0] == decl.name + "Request", key


def test_the_package_imports_nothing_from_the_wire_or_the_broker() -> None:
    # Of protocol only the constants leaf (codes) may load; shim and traces not at all.
    code = ("import sys, kafka_shim.authorizer.api_checks;"
            "bad = sorted(m for m in sys.modules if m.startswith(('kafka_shim.shim', 'kafka_shim.traces'))"
            " or (m.startswith('kafka_shim.protocol.') and m != 'kafka_shim.protocol.codes'));"
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_metadata_explicit_topics() -> None:
    req = MetadataRequest(topics=[T(name="a"), T(name="b"), T(name="a")], allow_auto_topic_creation=False)
    assert brief(requirements(3, 9, req)) == [("DESCRIBE", "TOPIC", "a", "filter-with-error", 29, 2, False),
                                              ("DESCRIBE", "TOPIC", "b", "filter-with-error", 29, 1, False)]


def test_metadata_all_topics_is_a_silent_unlogged_filter_over_every_topic() -> None:
    (r,) = requirements(3, 12, MetadataRequest(topics=None))
    assert (r.operation, r.resource_type, r.name, r.mode, r.log_if_denied) == (OP.DESCRIBE, RT.TOPIC, None, Mode.SILENT_FILTER, False)
    assert requirements(3, 0, MetadataRequest(topics=[]))[0].mode is Mode.SILENT_FILTER  # v0: empty means all


def test_metadata_auto_creation_and_bitfields() -> None:
    req = MetadataRequest(topics=[T(name="x")], allow_auto_topic_creation=True, include_cluster_authorized_operations=True,
                          include_topic_authorized_operations=True)
    reqs = requirements(3, 10, req)
    assert brief(reqs)[:4] == [
        ("DESCRIBE", "TOPIC", "x", "filter-with-error", 29, 1, False),
        ("CREATE", "CLUSTER", "kafka-cluster", "filter-with-error", 29, 1, True),  # the shortcut, asked without an INFO denial
        ("CREATE", "TOPIC", "x", "filter-with-error", 29, 1, False),
        ("DESCRIBE", "CLUSTER", "kafka-cluster", "gate", 0, 1, False),
    ]
    assert reqs[1].log_if_denied is False
    probes = [r for r in reqs if r.mode is Mode.BITFIELD]
    assert {(r.resource_type, r.name) for r in probes} == {(RT.CLUSTER, "kafka-cluster"), (RT.TOPIC, "x")}
    assert len(probes) == 7 + 8 and not any(r.log_if_denied or r.log_if_allowed for r in probes)
    # v11 has no cluster bitfield.
    assert not [r for r in requirements(3, 11, MetadataRequest(topics=[T(name="x")], include_topic_authorized_operations=True,
                                                                     allow_auto_topic_creation=False))
                if r.resource_type is RT.CLUSTER]


def test_metadata_by_id_names_the_ids() -> None:
    tid = uuid.uuid4()
    (r,) = requirements(3, 12, MetadataRequest(topics=[T(name=None, topic_id=tid)], allow_auto_topic_creation=False))
    assert (r.name, r.resource_id, r.mode) == (None, tid, Mode.FILTER_WITH_ERROR)


@pytest.mark.parametrize(("key", "operation"), [(29, OP.DESCRIBE), (30, OP.ALTER), (31, OP.ALTER)])
def test_acl_apis(key, operation) -> None:
    decl = declaration(key)
    assert decl.no_authorizer_error == 54
    (r,) = requirements(key, 3, CreateAclsRequest(creations=[]))
    assert (r.operation, r.resource_type, r.name, r.mode, r.error_code) == (operation, RT.CLUSTER, "kafka-cluster", Mode.AUTHORIZE_OR_THROW, 31)


def test_describe_cluster_needs_nothing_unless_asked_for_operations() -> None:
    assert requirements(60, 1, DescribeClusterRequest(include_cluster_authorized_operations=False)) == []
    gate, *probes = requirements(60, 1, DescribeClusterRequest(include_cluster_authorized_operations=True))
    assert (gate.operation, gate.mode) == (OP.DESCRIBE, Mode.GATE) and len(probes) == 7


def test_create_topics_cluster_shortcut() -> None:
    req = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name="t")])
    assert brief(requirements(19, 7, req)) == [
        ("CREATE", "CLUSTER", "kafka-cluster", "filter-with-error", 29, 1, True),
        ("CREATE", "TOPIC", "t", "filter-with-error", 29, 1, False),
        ("DESCRIBE_CONFIGS", "TOPIC", "t", "gate", 29, 1, False),
    ]


def test_init_producer_id() -> None:
    assert brief(requirements(22, 4, InitProducerIdRequest(transactional_id="tx"))) == [
        ("WRITE", "TRANSACTIONAL_ID", "tx", "authorize-or-throw", 53, 1, False)]
    shortcut, any_topic = requirements(22, 4, InitProducerIdRequest(transactional_id=None))
    assert (shortcut.operation, shortcut.is_shortcut) == (OP.IDEMPOTENT_WRITE, True)
    assert (any_topic.operation, any_topic.resource_type, any_topic.any_resource, any_topic.error_code) == (OP.WRITE, RT.TOPIC, True, 31)


def test_produce_and_fetch() -> None:
    produce = ProduceRequest(transactional_id="tx", topic_data=[ProduceRequest.TopicProduceData(name="t"),
                                                                ProduceRequest.TopicProduceData(name="t")])
    assert brief(requirements(0, 9, produce)) == [("WRITE", "TRANSACTIONAL_ID", "tx", "authorize-or-throw", 53, 1, False),
                                                  ("WRITE", "TOPIC", "t", "filter-with-error", 29, 2, False)]
    follower = FetchRequest(replica_id=1, topics=[FetchRequest.FetchTopic(topic="t")])
    assert brief(requirements(1, 12, follower)) == [("CLUSTER_ACTION", "CLUSTER", "kafka-cluster", "authorize-or-throw", 29, 1, False)]
    consumer = FetchRequest(replica_id=-1, topics=[FetchRequest.FetchTopic(topic="t")])
    assert brief(requirements(1, 12, consumer)) == [("READ", "TOPIC", "t", "filter-with-error", 29, 1, False)]


def test_describe_configs_by_resource_type() -> None:
    R = DescribeConfigsRequest.DescribeConfigsResource
    req = DescribeConfigsRequest(resources=[R(resource_type=2, resource_name="t"), R(resource_type=4, resource_name="1"),
                                            R(resource_type=8, resource_name="1")])
    assert brief(requirements(32, 4, req)) == [("DESCRIBE_CONFIGS", "TOPIC", "t", "filter-with-error", 29, 1, False),
                                               ("DESCRIBE_CONFIGS", "CLUSTER", "kafka-cluster", "filter-with-error", 31, 2, False)]


def test_an_undeclared_key_is_an_error() -> None:
    with pytest.raises(KeyError, match="no declared ACL checks"):
        requirements(9999, 0, object())


def _declared_requests() -> list[tuple[int, str, int]]:
    out = []
    for key in sorted(DECLARATIONS):
        name = api_index()[key][0]
        valid = message_spec(name).valid_versions
        out += [(key, name, v) for v in range(valid.lo, valid.hi + 1)]
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), case=st.sampled_from(_declared_requests()))
def test_any_valid_request_of_any_declared_api_can_be_asked_about(data, case) -> None:
    key, name, version = case
    request = data.draw(message_strategy(name, version, unknown_tags=False))
    reqs = requirements(key, version, request)
    for r in reqs:
        assert isinstance(r.operation, AclOperation) and isinstance(r.resource_type, ResourceType)
        assert r.name is None or isinstance(r.name, str)
        assert r.ref_count >= 1
        if r.mode in (Mode.AUTHORIZE_OR_THROW, Mode.FILTER_WITH_ERROR):
            assert r.error_code in (29, 30, 31, 53, 65)
