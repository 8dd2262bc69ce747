"""The client workload the replay tests capture: confluent-kafka (PLAIN) as admin creates a topic and alice's ACLs,
alice produces idempotently (confluent-kafka, PLAIN) and consumes in a group with kafka-python (SCRAM-SHA-256), then
commits and leaves, then a confluent-kafka consumer reads the partition by assignment (Fetch by topic id):
InitProducerId, member ids, topic ids and fetch sessions for the replay to re-map."""

from __future__ import annotations

import time

from tests.support.sasl_setup import USERS

TIMEOUT = 30
TOPIC, GROUP = "payments", "billing"


def plain(user: str) -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": user,
            "sasl.password": USERS[user]}


def acl(principal: str, resource_type, name: str, operation, permission=None):
    from confluent_kafka.admin import AclBinding, AclPermissionType, ResourcePatternType

    return AclBinding(resource_type, name, ResourcePatternType.LITERAL, principal, "*", operation,
                      permission or AclPermissionType.ALLOW)


def alice_acls(topic: str, group: str) -> list:
    from confluent_kafka.admin import AclOperation, ResourceType

    return [acl("User:alice", ResourceType.TOPIC, topic, AclOperation.WRITE),
            acl("User:alice", ResourceType.TOPIC, topic, AclOperation.READ),
            acl("User:alice", ResourceType.GROUP, group, AclOperation.READ)]


def run_workload(bootstrap: str, topic: str, group: str, *, create_acls: bool = True) -> list[bytes]:
    """What the clients do; returns what the group consumer read."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka import KafkaConsumer

    admin = AdminClient({"bootstrap.servers": bootstrap, **plain("admin")})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(timeout=TIMEOUT)
    if create_acls:
        for future in admin.create_acls(alice_acls(topic, group)).values():
            future.result(timeout=TIMEOUT)
    producer = Producer({"bootstrap.servers": bootstrap, **plain("alice"), "enable.idempotence": True, "acks": "all"})
    for i in range(3):
        producer.produce(topic, f"m{i}".encode())
    assert producer.flush(TIMEOUT) == 0
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="alice",
                             sasl_plain_password=USERS["alice"], group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=TIMEOUT * 1000)
    values = [record.value for _, record in zip(range(3), consumer, strict=False)]
    consumer.commit()
    consumer.close()
    # librdkafka fetches by topic id (Fetch v13+): the replay must re-map the id the recreated topic got.
    assigned = Consumer({"bootstrap.servers": bootstrap, **plain("alice"), "group.id": group, "enable.auto.commit": False})
    assigned.assign([TopicPartition(topic, 0, 0)])
    again = []
    deadline = time.monotonic() + TIMEOUT
    while len(again) < 3 and time.monotonic() < deadline:
        message = assigned.poll(1.0)
        if message is not None and message.error() is None:
            again.append(message.value())
    assigned.close()
    assert again == values, again
    return values
