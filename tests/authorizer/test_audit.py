"""The audit log (fact sheet §9): StandardAuthorizer's line format, levels and when lines are written."""

from __future__ import annotations

import io
import logging

import pytest
import structlog
from structlog.testing import capture_logs

from kafka_shim.authorizer import (
    AccessControlEntry,
    AclBinding,
    Authorizer,
    Decision,
    ResourcePattern,
    format_decision,
)
from kafka_shim.authorizer.audit import rule_text
from kafka_shim.authorizer.engine import MATCHING_ACL_UNRESOLVED
from kafka_shim.authorizer.model import AclOperation as Op
from kafka_shim.authorizer.model import AclPermissionType as Perm
from kafka_shim.authorizer.model import PatternType as Pat
from kafka_shim.authorizer.model import ResourceType as RT

LOGGER = "kafka.authorizer.logger"
ALICE, BOB, ADMIN = "User:alice", "User:bob", "User:admin"


def acl(name, op, perm, *, rtype=RT.TOPIC, pattern=Pat.LITERAL, principal=ALICE, host="*") -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, host, op, perm))


def make(*bindings, allow_everyone=False) -> Authorizer:
    az = Authorizer(super_users=ADMIN, allow_everyone_if_no_acl_found=allow_everyone)
    assert all(r.error is None for r in az.create_acls(list(bindings)))
    return az


def lines(entries) -> list[tuple[str, str]]:
    for e in entries:
        assert e.get("logger") == LOGGER, e
    return [(e["log_level"], e["event"]) for e in entries]


@pytest.fixture
def logs():
    """structlog's capture: the Authorizer (and its AuditLog) must be built inside, as the tests do."""
    with capture_logs() as entries:
        yield entries


# -- line format ---------------------------------------------------------------------------------

def test_denial_default_deny_info_line(logs) -> None:
    az = make()
    assert not az.authorize(ALICE, "10.1.2.3", Op.WRITE, RT.TOPIC, "payments", request="Produce")
    assert lines(logs) == [("info", "Principal = User:alice is Denied operation = WRITE from host = 10.1.2.3 on resource = "
                                    "Topic:LITERAL:payments for request = Produce with resourceRefCount = 1 based on rule DefaultDeny")]


def test_denial_by_matching_prefixed_deny_acl(logs) -> None:
    az = make(acl("pay", Op.READ, Perm.DENY, pattern=Pat.PREFIXED, principal="User:*"), acl("payments", Op.READ, Perm.ALLOW))
    assert not az.authorize(ALICE, "10.1.2.3", Op.READ, RT.TOPIC, "payments", request="Fetch", resource_ref_count=2)
    assert lines(logs) == [("info",
        "Principal = User:alice is Denied operation = READ from host = 10.1.2.3 on resource = Topic:LITERAL:payments "
        "for request = Fetch with resourceRefCount = 2 based on rule MatchingAcl(acl=StandardAcl(resourceType=TOPIC, "
        "resourceName=pay, patternType=PREFIXED, principal=User:*, host=*, operation=READ, permissionType=DENY))")]


def test_grant_by_matching_acl_debug_line(logs) -> None:
    az = make(acl("billing", Op.READ, Perm.ALLOW, rtype=RT.GROUP, principal=BOB))
    assert az.authorize(BOB, "10.1.2.4", Op.DESCRIBE, RT.GROUP, "billing", request="DescribeGroups")
    assert lines(logs) == [("debug",
        "Principal = User:bob is Allowed operation = DESCRIBE from host = 10.1.2.4 on resource = Group:LITERAL:billing "
        "for request = DescribeGroups with resourceRefCount = 1 based on rule MatchingAcl(acl=StandardAcl(resourceType=GROUP, "
        "resourceName=billing, patternType=LITERAL, principal=User:bob, host=*, operation=READ, permissionType=ALLOW))")]


def test_super_user_rule(logs) -> None:
    az = make(acl("*", Op.ALL, Perm.DENY, principal="User:*"))
    assert az.authorize(ADMIN, "127.0.0.1", Op.ALTER, RT.CLUSTER, "kafka-cluster", request="CreateAcls")
    assert lines(logs) == [("debug", "Principal = User:admin is Allowed operation = ALTER from host = 127.0.0.1 on resource = "
                                     "Cluster:LITERAL:kafka-cluster for request = CreateAcls with resourceRefCount = 1 "
                                     "based on rule SuperUser")]


def test_default_allow_rule(logs) -> None:
    az = make(allow_everyone=True)
    assert az.authorize(ALICE, "0:0:0:0:0:0:0:1", Op.IDEMPOTENT_WRITE, RT.CLUSTER, "kafka-cluster", request="InitProducerId")
    assert lines(logs) == [("debug", "Principal = User:alice is Allowed operation = IDEMPOTENT_WRITE from host = 0:0:0:0:0:0:0:1 "
                                     "on resource = Cluster:LITERAL:kafka-cluster for request = InitProducerId with "
                                     "resourceRefCount = 1 based on rule DefaultAllow")]


def test_default_deny_rule_when_acls_exist_but_none_match(logs) -> None:
    az = make(acl("payments", Op.READ, Perm.ALLOW, principal=BOB), allow_everyone=True)
    assert not az.authorize(ALICE, "10.1.2.3", Op.READ, RT.TOPIC, "payments", request="Fetch")
    assert lines(logs)[0][1].endswith("based on rule DefaultDeny")


def test_deny_acl_named_when_allow_and_deny_both_match(logs) -> None:
    az = make(acl("tx", Op.WRITE, Perm.ALLOW, rtype=RT.TRANSACTIONAL_ID), acl("*", Op.ALL, Perm.DENY, rtype=RT.TRANSACTIONAL_ID))
    assert not az.authorize(ALICE, "10.0.0.1", Op.WRITE, RT.TRANSACTIONAL_ID, "tx", request="EndTxn")
    assert lines(logs) == [("info", "Principal = User:alice is Denied operation = WRITE from host = 10.0.0.1 on resource = "
                                    "TransactionalId:LITERAL:tx for request = EndTxn with resourceRefCount = 1 based on rule "
                                    "MatchingAcl(acl=StandardAcl(resourceType=TRANSACTIONAL_ID, resourceName=*, patternType=LITERAL, "
                                    "principal=User:alice, host=*, operation=ALL, permissionType=DENY))")]


@pytest.mark.parametrize(("rtype", "name", "shown"), [
    (RT.TOPIC, "t", "Topic:LITERAL:t"), (RT.GROUP, "g", "Group:LITERAL:g"), (RT.CLUSTER, "kafka-cluster", "Cluster:LITERAL:kafka-cluster"),
    (RT.TRANSACTIONAL_ID, "x", "TransactionalId:LITERAL:x"), (RT.DELEGATION_TOKEN, "tok", "DelegationToken:LITERAL:tok"),
    (RT.USER, "User:bob", "User:LITERAL:User:bob"), (RT.GROUP, "", "Group:LITERAL:"),
])
def test_resource_type_pascal_case_and_pattern_literal(logs, rtype, name, shown) -> None:
    make().authorize(ALICE, "1.2.3.4", Op.DESCRIBE_CONFIGS, rtype, name, request="DescribeConfigs")
    [(_, line)] = lines(logs)
    assert f" operation = DESCRIBE_CONFIGS from host = 1.2.3.4 on resource = {shown} for request = DescribeConfigs " in line


def test_format_decision_matches_logged_line(logs) -> None:
    make().authorize(ALICE, "1.2.3.4", Op.CREATE, RT.TOPIC, "t", request="CreateTopics", resource_ref_count=3)
    expected = format_decision(Decision(ALICE, "1.2.3.4", int(Op.CREATE), int(RT.TOPIC), "t", False, "DefaultDeny", "CreateTopics", 3))
    assert lines(logs) == [("info", expected)]
    assert "\n" not in expected


# -- when lines are written ----------------------------------------------------------------------

def test_log_if_denied_false_suppresses_info_line(logs) -> None:
    az = make()
    assert not az.authorize(ALICE, "1.2.3.4", Op.DESCRIBE, RT.TOPIC, "t", request="Metadata", log_if_denied=False)
    assert logs == []
    # the allowed side still logs (logIfAllowed is independent)
    assert make(allow_everyone=True).authorize(ALICE, "1.2.3.4", Op.DESCRIBE, RT.TOPIC, "t", request="Metadata", log_if_denied=False)
    assert [level for level, _ in lines(logs)] == ["debug"]


def test_log_if_allowed_false_suppresses_debug_line(logs) -> None:
    az = make(allow_everyone=True)
    assert az.authorize(ALICE, "1.2.3.4", Op.DESCRIBE, RT.TOPIC, "t", request="Metadata", log_if_allowed=False)
    assert logs == []
    assert not make().authorize(ALICE, "1.2.3.4", Op.DESCRIBE, RT.TOPIC, "t", request="Metadata", log_if_allowed=False)
    assert [level for level, _ in lines(logs)] == ["info"]


def test_one_line_per_decision(logs) -> None:
    az = make(acl("t", Op.READ, Perm.ALLOW), acl("*", Op.READ, Perm.ALLOW), acl("t", Op.ALL, Perm.ALLOW, pattern=Pat.PREFIXED))
    az.authorize(ALICE, "1.2.3.4", Op.READ, RT.TOPIC, "t", request="Fetch")
    az.authorize(BOB, "1.2.3.4", Op.READ, RT.TOPIC, "t", request="Fetch")
    assert [level for level, _ in lines(logs)] == ["debug", "info"]


def test_authorized_operations_logs_nothing(logs) -> None:
    az = make(acl("t", Op.READ, Perm.ALLOW), acl("t", Op.WRITE, Perm.DENY))
    assert az.authorized_operations(ALICE, "1.2.3.4", RT.TOPIC, "t") == (1 << Op.READ) | (1 << Op.DESCRIBE)
    assert az.authorized_operations(BOB, "1.2.3.4", RT.TOPIC, "t") == 0
    assert az.authorized_operations(ADMIN, "1.2.3.4", RT.TOPIC, "t") == 3576
    assert make(allow_everyone=True).authorized_operations(ALICE, "1.2.3.4", RT.CLUSTER, "kafka-cluster") == 8096
    assert logs == []


def test_by_type_probe_logged_when_allowed(logs) -> None:
    az = make()
    assert az.authorize_by_resource_type(ADMIN, "10.0.0.1", Op.WRITE, RT.TOPIC)
    [(level, line)] = lines(logs)
    assert level == "debug"
    assert line.startswith("Principal = User:admin is Allowed operation = WRITE from host = 10.0.0.1 on resource = "
                           "Topic:LITERAL:hardcode for request = ")
    assert line.endswith(" with resourceRefCount = 0 based on rule SuperUser")


def test_by_type_probe_allowed_by_acl_logged(logs) -> None:
    az = make(acl("h", Op.WRITE, Perm.ALLOW, pattern=Pat.PREFIXED))
    assert az.authorize_by_resource_type(ALICE, "10.0.0.1", Op.WRITE, RT.TOPIC)
    [(level, line)] = lines(logs)
    assert level == "debug"
    assert " on resource = Topic:LITERAL:hardcode " in line and " with resourceRefCount = 0 " in line
    assert line.endswith("based on rule MatchingAcl(acl=StandardAcl(resourceType=TOPIC, resourceName=h, patternType=PREFIXED, "
                         "principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW))")


def test_by_type_probe_not_logged_when_denied(logs) -> None:
    az = make(acl("foo", Op.WRITE, Perm.ALLOW))
    assert az.authorize_by_resource_type(ALICE, "10.0.0.1", Op.WRITE, RT.TOPIC)  # allowed by the scan, probe denied
    assert not az.authorize_by_resource_type(BOB, "10.0.0.1", Op.WRITE, RT.TOPIC)  # denied altogether
    assert logs == []


def test_by_type_probe_line_names_the_request(logs) -> None:
    """Kafka's probe line carries the calling API's name (ApiKeys.forId(context.requestType()).name)."""
    az = make()
    assert az.authorize_by_resource_type(ADMIN, "10.0.0.1", Op.WRITE, RT.TOPIC, request="InitProducerId")
    [(_, line)] = lines(logs)
    assert " for request = InitProducerId with resourceRefCount = 0 " in line


# -- rendered output, as Kafka's default log4j setup would show it -------------------------------

@pytest.fixture
def kafka_layout():
    """structlog rendering '%p %m (%c)' into a StringIO, at INFO (Kafka's shipped kafka-authorizer.log level)."""
    saved = structlog.get_config()
    saved["processors"] = list(saved["processors"])
    buf = io.StringIO()

    def layout(_logger, method, event):
        return f"{method.upper()} {event['event']} ({event['logger']})"

    structlog.configure(processors=[layout], wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
                        logger_factory=structlog.PrintLoggerFactory(buf), cache_logger_on_first_use=False)
    try:
        yield buf
    finally:
        structlog.configure(**saved)


def test_kafka_layout_at_info_shows_only_denials(kafka_layout) -> None:
    az = make(acl("payments", Op.READ, Perm.ALLOW))
    assert az.authorize(ALICE, "10.1.2.3", Op.READ, RT.TOPIC, "payments", request="Fetch")
    assert not az.authorize(ALICE, "10.1.2.3", Op.WRITE, RT.TOPIC, "payments", request="Produce")
    assert kafka_layout.getvalue() == (
        "INFO Principal = User:alice is Denied operation = WRITE from host = 10.1.2.3 on resource = Topic:LITERAL:payments "
        "for request = Produce with resourceRefCount = 1 based on rule DefaultDeny (kafka.authorizer.logger)\n")


def test_kafka_layout_debug_enabled_shows_grants() -> None:
    saved = structlog.get_config()
    saved["processors"] = list(saved["processors"])
    buf = io.StringIO()
    structlog.configure(processors=[lambda _l, m, e: f"{m.upper()} {e['event']} ({e['logger']})"],
                        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
                        logger_factory=structlog.PrintLoggerFactory(buf), cache_logger_on_first_use=False)
    try:
        az = make(acl("payments", Op.READ, Perm.ALLOW))
        assert az.authorize(ALICE, "10.1.2.3", Op.READ, RT.TOPIC, "payments", request="Fetch")
    finally:
        structlog.configure(**saved)
    assert buf.getvalue().startswith("DEBUG Principal = User:alice is Allowed operation = READ ")
    assert buf.getvalue().endswith("permissionType=ALLOW)) (kafka.authorizer.logger)\n")


def rule_of(az: Authorizer, op, name: str, principal: str = ALICE) -> str:
    from kafka_shim.authorizer.audit import rule_text

    allowed = az.authorize(principal, "10.0.0.1", op, RT.TOPIC, name)
    return rule_text(az.decision_rule(principal, "10.0.0.1", op, RT.TOPIC, name, allowed))


def test_the_deciding_allow_is_the_last_one_kafkas_walk_meets():
    # Kafka 3.9 logged DESCRIBE on `orders` as decided by the DESCRIBE ACL although READ and WRITE imply it
    # (tests/traces/test_audit_real_kafka.py): its walk keeps overwriting the matching ALLOW, in operation order.
    az = make(acl("orders", Op.WRITE, Perm.ALLOW), acl("orders", Op.READ, Perm.ALLOW), acl("orders", Op.DESCRIBE, Perm.ALLOW))
    assert "operation=DESCRIBE, permissionType=ALLOW" in rule_of(az, Op.DESCRIBE, "orders")
    # The LITERAL '*' section comes after the name's and its prefixes': a matching wildcard ALLOW is met last.
    az = make(acl("orders", Op.READ, Perm.ALLOW), acl("ord", Op.READ, Perm.ALLOW, pattern=Pat.PREFIXED),
              acl("*", Op.READ, Perm.ALLOW))
    assert "resourceName=*, patternType=LITERAL" in rule_of(az, Op.READ, "orders")
    # Within the name's section a longer name is met first: the prefix ACL is the later ALLOW.
    az = make(acl("orders", Op.READ, Perm.ALLOW), acl("ord", Op.READ, Perm.ALLOW, pattern=Pat.PREFIXED))
    assert "resourceName=ord, patternType=PREFIXED" in rule_of(az, Op.READ, "orders")


def test_the_deciding_deny_is_the_first_one_kafkas_walk_meets():
    az = make(acl("*", Op.READ, Perm.DENY), acl("ord", Op.ALL, Perm.DENY, pattern=Pat.PREFIXED),
              acl("orders", Op.READ, Perm.DENY, principal="User:*"))
    assert "resourceName=orders, patternType=LITERAL, principal=User:*" in rule_of(az, Op.READ, "orders")
    az = make(acl("*", Op.READ, Perm.DENY), acl("ord", Op.ALL, Perm.DENY, pattern=Pat.PREFIXED))
    assert "resourceName=ord, patternType=PREFIXED" in rule_of(az, Op.READ, "orders")


def test_the_remembered_rule_text_follows_acl_changes() -> None:
    """decision_rule_text (what a capture records per decision) is remembered, and forgotten when an ACL changes."""
    az = make(allow_everyone=True)

    def text() -> str:
        allowed = az.authorize(ALICE, "10.0.0.1", Op.READ, RT.TOPIC, "payments")
        return az.decision_rule_text(ALICE, "10.0.0.1", int(Op.READ), int(RT.TOPIC), "payments", allowed)

    assert text() == text() == "DefaultAllow"
    grant = acl("pay", Op.READ, Perm.ALLOW, pattern=Pat.PREFIXED)
    az.create_acls([grant])
    assert text() == rule_of(az, Op.READ, "payments") and "resourceName=pay, patternType=PREFIXED" in text()
    az.create_acls([acl("payments", Op.READ, Perm.DENY)])
    assert text() == rule_of(az, Op.READ, "payments") and "permissionType=DENY" in text()


def test_the_last_rule_is_what_decided_or_says_an_acl_was_not_looked_up() -> None:
    """last_rule (read by a capture instead of asking again) is exact whenever authorize knew it; when an ACL decided
    and no audit line wanted it, it says so, and decision_rule_text gives the ACL."""
    az = make(acl("pay", Op.READ, Perm.ALLOW, pattern=Pat.PREFIXED), allow_everyone=False)
    az.audit.grants = False
    assert az.authorize(ADMIN, "10.0.0.1", Op.WRITE, RT.TOPIC, "payments") and az.last_rule == "SuperUser"
    assert not az.authorize(BOB, "10.0.0.1", Op.READ, RT.TOPIC, "payments") and az.last_rule == "DefaultDeny"
    assert az.authorize(ALICE, "10.0.0.1", Op.READ, RT.TOPIC, "payments") and az.last_rule == MATCHING_ACL_UNRESOLVED
    assert "resourceName=pay, patternType=PREFIXED" in az.decision_rule_text(
        ALICE, "10.0.0.1", int(Op.READ), int(RT.TOPIC), "payments", True)
    az.audit.grants = True
    assert az.authorize(ALICE, "10.0.0.1", Op.READ, RT.TOPIC, "payments")
    assert rule_text(az.last_rule) == rule_of(az, Op.READ, "payments")
    open_az = make(allow_everyone=True)
    assert open_az.authorize(BOB, "10.0.0.1", Op.READ, RT.TOPIC, "payments") and open_az.last_rule == "DefaultAllow"
