"""One scripted client workload, run against a capturing kafka-shim under an ACL set, so the audit's predictions
can be checked against what the broker decides when the same workload runs under another set.

ACL set A lets alice produce to ``orders`` and see ``team42.*``; set B takes her WRITE on ``orders`` away and gives
her WRITE and CREATE on ``team42.*``, and takes bob's DESCRIBE_CONFIGS on ``payments`` away. Super user: admin.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kafka_shim.authorizer import AclBinding
from kafka_shim.authorizer.acl_file import load_acl_file
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.sasl_setup import USERS, listener_address, sasl_properties

TIMEOUT = 30
TOPICS = ("orders", "payments", "team42.events")

ACLS_A = """
acls:
  - {resource_type: topic, resource_name: orders, principal: User:alice, operations: [Write, Describe]}
  - {resource_type: topic, resource_name: team42., pattern_type: prefixed, principal: User:alice, operation: Describe}
  - {resource_type: topic, resource_name: payments, principal: User:bob, operations: [Describe, DescribeConfigs]}
"""

ACLS_B = """
acls:
  - {resource_type: topic, resource_name: orders, principal: User:alice, operation: Describe}
  - {resource_type: topic, resource_name: team42., pattern_type: prefixed, principal: User:alice, operations: [Write, Create, Describe]}
  - {resource_type: topic, resource_name: payments, principal: User:bob, operation: Describe}
"""


def sasl(user: str) -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": user,
            "sasl.password": USERS[user]}


def write_acl_file(directory: Path, name: str, text: str) -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@contextmanager
def capturing_broker(capture: Path, topics: Iterable[str], acls: list[AclBinding],
                     **properties: str) -> Iterator[str]:
    """A kafka-shim capturing into ``capture`` (SASL_PLAINTEXT users of tests/support/sasl_setup.py), the topics
    created by admin (one partition each), then the ACLs set: its bootstrap address."""
    from confluent_kafka.admin import AdminClient, NewTopic

    with EmbeddedBroker(BrokerConfig.from_properties({**sasl_properties(), **properties}), capture_dir=capture) as broker:
        host, port = listener_address(broker.broker, "SASL_PLAINTEXT")
        address = f"{host}:{port}"
        admin = AdminClient({"bootstrap.servers": address, **sasl("admin")})
        for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
            future.result(timeout=TIMEOUT)
        results = broker.call(broker.broker.authorizer.create_acls, acls)
        assert all(r.error is None for r in results), results
        yield address


def run_workload(acl_file: Path, capture: Path) -> dict[str, object]:
    """Create the topics as admin, set the ACLs, then run alice's and bob's clients; returns what they saw."""
    from confluent_kafka import Producer, TopicCollection
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    seen: dict[str, object] = {}
    with capturing_broker(capture, TOPICS, load_acl_file(acl_file)) as address:
        producer = Producer({"bootstrap.servers": address, **sasl("alice"), "enable.idempotence": True, "acks": "all",
                             "message.timeout.ms": 20000})
        delivered: list = []
        for i in range(3):
            producer.produce("orders", f"m{i}".encode(), on_delivery=lambda err, msg: delivered.append(err))
        producer.flush(TIMEOUT)
        seen["delivered"] = [None if e is None else e.code() for e in delivered]

        alice = AdminClient({"bootstrap.servers": address, **sasl("alice")})
        seen["alice_topics"] = sorted(alice.list_topics(timeout=TIMEOUT).topics)
        described = alice.describe_topics(TopicCollection(["orders", "team42.events"]), include_authorized_operations=True)
        seen["alice_ops"] = {t: _ops(f) for t, f in described.items()}

        bob = AdminClient({"bootstrap.servers": address, **sasl("bob")})
        seen["bob_payments"] = bob.list_topics(topic="payments", timeout=TIMEOUT).topics["payments"].error is None
        configs = bob.describe_configs([ConfigResource("topic", "payments")])
        seen["bob_configs"] = [_ok(f) for f in configs.values()]

        created = alice.create_topics([NewTopic("team42.new", 1, 1)])
        seen["alice_create"] = [_ok(f) for f in created.values()]
    return seen


def _ok(future) -> str:
    try:
        future.result(timeout=TIMEOUT)
    except Exception as exc:  # the client's KafkaException carries the broker's error
        return type(exc).__name__ + ":" + str(exc.args[0].name() if exc.args and hasattr(exc.args[0], "name") else exc)
    return "ok"


def _ops(future) -> object:
    try:
        return sorted(op.name for op in future.result(timeout=TIMEOUT).authorized_operations or [])
    except Exception as exc:  # a denied topic: the error name
        return str(exc.args[0].name() if exc.args and hasattr(exc.args[0], "name") else exc)


def audit_against_release(out: Path, trace: Path, acls: Path, release: str) -> tuple[dict, list[dict]]:
    """``kafka-shim audit --compare-release`` (arrow engine, super user admin): its summary and release_diff rows."""
    import pyarrow.parquet as pq

    from kafka_shim.traces.audit.cli import main

    assert main([str(trace), "--acls", str(acls), "--out", str(out), "--engine", "arrow", "--super-users", "User:admin",
                 "--no-report", "--compare-release", release]) == 0
    return json.loads((out / "summary.json").read_text()), pq.read_table(out / "release_diff").to_pylist()

