"""ACL sets for the audit: the --acls file, kafka-acls.sh --list output (as kafka-shim acls --list prints it, Kafka's
AclCommand layout) and a live broker listed through ``kafka-shim acls`` in a subprocess."""

from __future__ import annotations

import pytest

from kafka_shim.authorizer import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from kafka_shim.shim.tools.acls.output import format_listing
from kafka_shim.traces.audit.acl_sets import AclSetError, load_acl_set, parse_listing
from kafka_shim.traces.audit.tables import acl_key
from tests.support.sasl_setup import listener_address, sasl_properties

BINDINGS = [
    AclBinding(ResourcePattern(ResourceType.TOPIC, "team42.", PatternType.PREFIXED),
               AccessControlEntry("User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW)),
    AclBinding(ResourcePattern(ResourceType.TOPIC, "team42.", PatternType.PREFIXED),
               AccessControlEntry("User:bob", "10.0.0.1", AclOperation.READ, AclPermissionType.DENY)),
    AclBinding(ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL),
               AccessControlEntry("User:alice", "*", AclOperation.IDEMPOTENT_WRITE, AclPermissionType.ALLOW)),
    AclBinding(ResourcePattern(ResourceType.GROUP, "g, with comma", PatternType.LITERAL),
               AccessControlEntry("User:carol", "*", AclOperation.READ, AclPermissionType.ALLOW)),
]


def test_listing_round_trips_through_kafka_acls_output(tmp_path):
    listing = tmp_path / "acls.txt"
    listing.write_text(format_listing(BINDINGS, []), encoding="utf-8")
    assert load_acl_set(str(listing)) == BINDINGS
    by_principal = format_listing(BINDINGS, ["User:alice"])
    assert parse_listing(by_principal) == [BINDINGS[0], BINDINGS[2]]


def test_an_entry_line_repeated_under_other_resources_binds_to_each():
    entry = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    patterns = [ResourcePattern(ResourceType.TOPIC, "a", PatternType.LITERAL),
                ResourcePattern(ResourceType.GROUP, "a", PatternType.PREFIXED),
                ResourcePattern(ResourceType.TOPIC, "b", PatternType.LITERAL)]
    expected = [AclBinding(p, entry) for p in patterns]
    listing = format_listing(expected, [])
    assert parse_listing(listing) == expected
    line = next(line for line in listing.splitlines() if "principal=User:alice" in line)
    assert parse_listing(listing + line + "\n") == expected  # the last resource's entry again: one binding
    bad = line.replace("READ", "REED")
    with pytest.raises(AclSetError, match=r":11: operation REED"):
        parse_listing(listing + line + "\n" + bad + "\n")


def test_acl_key_is_the_agreed_text():
    assert acl_key(BINDINGS[0]) == "TOPIC:PREFIXED:team42.|User:alice|*|WRITE|ALLOW"


def test_acl_file_is_detected(tmp_path):
    path = tmp_path / "acls.yaml"
    path.write_text("acls:\n  - {resource_type: cluster, principal: User:alice, operation: IdempotentWrite}\n", encoding="utf-8")
    assert load_acl_set(str(path)) == [BINDINGS[2]]


def test_a_bad_listing_line_is_named(tmp_path):
    text = format_listing(BINDINGS[:1], []).replace("operation=WRITE", "operation=WRITTEN")
    path = tmp_path / "acls.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AclSetError, match=r"acls.txt:2: operation WRITTEN"):
        load_acl_set(str(path))
    path.write_text(format_listing(BINDINGS[:1], []) + "garbage here\n", encoding="utf-8")
    with pytest.raises(AclSetError, match=r"acls.txt:4: not part of kafka-acls.sh --list output: 'garbage here'"):
        load_acl_set(str(path))


def test_a_bad_acl_file_entry_is_named(tmp_path):
    path = tmp_path / "acls.yaml"
    path.write_text("acls:\n  - {resource_type: topic, resource_name: t, principal: User:a, operation: Fly}\n", encoding="utf-8")
    with pytest.raises(AclSetError, match="Fly"):
        load_acl_set(str(path))


@pytest.mark.clients
def test_live_broker_acls_through_kafka_shim_acls(tmp_path):
    with EmbeddedBroker(BrokerConfig.from_properties(sasl_properties())) as broker:
        results = broker.call(broker.broker.authorizer.create_acls, BINDINGS)
        assert all(r.error is None for r in results)
        host, port = listener_address(broker.broker, "SASL_PLAINTEXT")
        config = tmp_path / "admin.properties"
        config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                          "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" "
                          "password=\"admin-secret\";\n", encoding="utf-8")
        listed = load_acl_set(f"broker:{host}:{port}", str(config))
    assert sorted(map(acl_key, listed)) == sorted(map(acl_key, BINDINGS))


def test_unreachable_broker_says_so():
    with pytest.raises(AclSetError, match=r"broker:127.0.0.1:1: listing its ACLs failed"):
        load_acl_set("broker:127.0.0.1:1", timeout_s=120)
