"""What a test asks of its broker (the pytest plugin's ``kafka_shim`` marker), turned into Kafka's configuration keys.

One ``ShimOptions`` is one broker configuration: the plugin keeps one running broker per distinct value and resets it
between the tests that ask for it, so the options are frozen and hashable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# The listeners a test can ask for; SSL and SASL_SSL use certificates generated at start (testing.tls).
LISTENERS = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# Enabled too when a test's clients use it: unsecured JWTs (Kafka's default validator), any principal they name.
OAUTHBEARER = "OAUTHBEARER"
CLIENT_MECHANISMS = (*SASL_MECHANISMS, OAUTHBEARER)
DEFAULT_USERS = (("admin", "admin-secret"), ("alice", "alice-secret"), ("bob", "bob-secret"))
_STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


class OptionsError(ValueError):
    """The marker asks for something kafka-shim cannot set up; the message says what to write instead."""


@dataclass(frozen=True)
class ShimOptions:
    """``@pytest.mark.kafka_shim(listener=..., authorizer=..., ...)``; every field has the plain broker's default.

    - ``listener``: PLAINTEXT (default), SASL_PLAINTEXT, SSL or SASL_SSL.
    - ``users``: SASL users (name, password) on PLAIN and both SCRAM mechanisms; admin, alice and bob by default.
    - ``mechanism``: the SASL mechanism the ready client configs use (SCRAM-SHA-256 by default). OAUTHBEARER also
      enables it on the listener, validated as Kafka's default validator does (unsigned JWTs): the client configs
      then carry a token naming the user, who may be anyone (the ``users`` list is not checked).
    - ``authorizer``: turn Kafka's StandardAuthorizer on (also implied by ``super_users`` or ``acls``).
    - ``super_users``: principals that skip every check (``super.users``); User:admin by default with an authorizer.
    - ``acls``: an ACL file (the ``kafka-shim serve --acls`` format) or a list of its entries, loaded at each start.
    - ``allow_everyone_if_no_acl_found``: Kafka's ``allow.everyone.if.no.acl.found`` (false by default).
    - ``kafka_version``: the Kafka release to emulate (``kafka.version``).
    - ``brokers``: a cluster of that many nodes in one process (``kafka.shim.brokers``), node ids 1 up; the
      internal topics get replication factor min(3, brokers), so coordinators survive a stopped node.
    - ``config``: any other server.properties keys, as Kafka names them.
    """

    listener: str = "PLAINTEXT"
    users: tuple[tuple[str, str], ...] = DEFAULT_USERS
    mechanism: str = "SCRAM-SHA-256"
    authorizer: bool = False
    super_users: tuple[str, ...] | None = None
    acls: str | tuple[Any, ...] | None = None
    allow_everyone_if_no_acl_found: bool = False
    kafka_version: str | None = None
    brokers: int = 1
    config: tuple[tuple[str, str], ...] = field(default=())

    @classmethod
    def from_marker(cls, values: Mapping[str, Any]) -> ShimOptions:
        """The marker's keyword arguments, checked (a typo fails the test's setup with what is known)."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise OptionsError(f"kafka_shim marker: unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        args = dict(values)
        if "users" in args:
            users = args["users"]
            args["users"] = tuple(sorted(users.items() if isinstance(users, Mapping) else users))
        if args.get("super_users") is not None:
            args["super_users"] = tuple(args["super_users"])
        if isinstance(args.get("acls"), list | tuple):
            args["acls"] = tuple(_freeze(entry) for entry in args["acls"])
        elif args.get("acls") is not None:
            args["acls"] = str(args["acls"])
        if "config" in args:
            args["config"] = tuple(sorted((str(k), str(v)) for k, v in dict(args["config"]).items()))
        options = cls(**args)
        options.check()
        return options

    def check(self) -> None:
        if self.listener not in LISTENERS:
            raise OptionsError(f"kafka_shim marker: listener={self.listener!r}; use one of {', '.join(LISTENERS)}")
        if self.mechanism not in CLIENT_MECHANISMS:
            raise OptionsError(f"kafka_shim marker: mechanism={self.mechanism!r}; use one of {', '.join(CLIENT_MECHANISMS)}")
        if not isinstance(self.brokers, int) or not 1 <= self.brokers <= 64:
            raise OptionsError(f"kafka_shim marker: brokers={self.brokers!r}; a whole number from 1 to 64")

    @property
    def sasl(self) -> bool:
        return self.listener.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.listener.endswith("SSL")

    @property
    def authorizer_enabled(self) -> bool:
        return self.authorizer or self.super_users is not None or self.acls is not None

    def properties(self) -> dict[str, str]:
        """server.properties for this broker, listener on a free loopback port (TLS material is added by the caller)."""
        name = self.listener
        props = {
            "listeners": f"{name}://127.0.0.1:0",
            "listener.security.protocol.map": f"{name}:{name}",
            "node.id": "1",
            # As a single-node test cluster needs them: a group forms at once, internal topics fit one broker.
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.replication.factor": str(min(3, self.brokers)),
            "transaction.state.log.replication.factor": str(min(3, self.brokers)),
            "transaction.state.log.min.isr": "1",
            "kafka.shim.brokers": str(self.brokers),
        }
        if self.sasl:
            prefix = f"listener.name.{name.lower()}."
            entries = " ".join(f'user_{user}="{password}"' for user, password in self.users)
            plain = f"org.apache.kafka.common.security.plain.PlainLoginModule required {entries};"
            scram = f"org.apache.kafka.common.security.scram.ScramLoginModule required {entries};"
            mechanisms = SASL_MECHANISMS + ((OAUTHBEARER,) if self.mechanism == OAUTHBEARER else ())
            props |= {
                prefix + "sasl.enabled.mechanisms": ",".join(mechanisms),
                prefix + "plain.sasl.jaas.config": plain,
                prefix + "scram-sha-256.sasl.jaas.config": scram,
                prefix + "scram-sha-512.sasl.jaas.config": scram,
            }
            if self.mechanism == OAUTHBEARER:
                props[prefix + "oauthbearer.sasl.jaas.config"] = ("org.apache.kafka.common.security.oauthbearer."
                                                                  "OAuthBearerLoginModule required;")
        if self.authorizer_enabled:
            supers = self.super_users if self.super_users is not None else ("User:admin",)
            props |= {
                "authorizer.class.name": _STANDARD_AUTHORIZER,
                "super.users": ";".join(supers),
                "allow.everyone.if.no.acl.found": str(self.allow_everyone_if_no_acl_found).lower(),
            }
        if self.kafka_version is not None:
            props["kafka.version"] = self.kafka_version
        props.update(dict(self.config))
        return props


def _freeze(value: Any) -> Any:
    """ACL entries as hashable values (dicts become sorted item tuples), so options can key the broker pool."""
    if isinstance(value, Mapping):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """The inverse of ``_freeze`` for ACL entries: tuples of pairs back into dicts, other tuples into lists."""
    if isinstance(value, tuple) and value and all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in value):
        return {k: thaw(v) for k, v in value}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value
