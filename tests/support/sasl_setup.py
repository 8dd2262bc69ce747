"""A kafka-shim configured like the real-Kafka oracle: PLAINTEXT (anonymous) and SASL_PLAINTEXT with the users
admin, alice and bob on PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, the authorizer on and admin a super user."""

from __future__ import annotations

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


def jaas(module: str, users: dict[str, str]) -> str:
    entries = " ".join(f'user_{name}="{password}"' for name, password in users.items())
    return f"{module} required {entries};"


def sasl_properties(
    users: dict[str, str] | None = None, *, listeners: str | None = None, sasl_listeners: tuple[str, ...] = ("SASL_PLAINTEXT",)
) -> dict[str, str]:
    users = users or USERS
    plain = jaas("org.apache.kafka.common.security.plain.PlainLoginModule", users)
    scram = jaas("org.apache.kafka.common.security.scram.ScramLoginModule", users)
    props = {
        "listeners": listeners or "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL",
    }
    for listener in sasl_listeners:
        prefix = f"listener.name.{listener.lower()}."
        props |= {
            prefix + "sasl.enabled.mechanisms": ",".join(MECHANISMS),
            prefix + "plain.sasl.jaas.config": plain,
            prefix + "scram-sha-256.sasl.jaas.config": scram,
            prefix + "scram-sha-512.sasl.jaas.config": scram,
        }
    return props | {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "node.id": "1",
        "auto.create.topics.enable": "false",
    }


def listener_address(broker, name: str) -> tuple[str, int]:  # broker: shim.broker.Broker
    bound = next(b for b in broker.bound if b.listener.name == name)
    return bound.host, bound.port
