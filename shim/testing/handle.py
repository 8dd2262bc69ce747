"""KafkaShim: what a test gets from the ``kafka_shim`` fixture — a running in-process broker, its users, client
configurations for confluent-kafka, kafka-python and aiokafka, and helpers for topics and ACLs.

The helpers change the broker's state directly, on its event loop, through the same code its admin APIs use
(``TopicAdmin.create_topics`` validates names and configs as CreateTopics does; ACLs go through the authorizer's
``create_acls``), so what they create is visible to every client at once and refused with Kafka's reasons.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from kafka_shim.authorizer import AclBinding
from kafka_shim.authorizer.acl_file import acl_entries, load_acl_file
from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from kafka_shim.shim.testing.faults import FaultControl
from kafka_shim.shim.testing.oauth import aiokafka_token_provider, kafka_python_token_provider
from kafka_shim.shim.testing.options import OAUTHBEARER, ShimOptions, thaw
from kafka_shim.shim.testing.received import ReceivedControl


class TopicCreationError(RuntimeError):
    """A topic the helper could not create; ``error_code`` is Kafka's (e.g. 36 TOPIC_ALREADY_EXISTS)."""

    def __init__(self, name: str, error_code: int, message: str | None) -> None:
        self.error_code = error_code
        super().__init__(f"cannot create topic {name!r}: {ErrorCode(error_code).name} ({error_code})"
                         + (f": {message}" if message else ""))


class KafkaShim:
    """A running kafka-shim for one test configuration (``ShimOptions``). ``reset()`` empties it without a restart."""

    def __init__(self, options: ShimOptions | None = None) -> None:
        self.options = options or ShimOptions()
        self._tls_dir: tempfile.TemporaryDirectory | None = None
        self.tls = None
        props = self.options.properties()
        if self.options.tls:
            from kafka_shim.shim.testing.tls import TlsFiles

            self._tls_dir = tempfile.TemporaryDirectory(prefix="kafka-shim-tls-")
            self.tls = TlsFiles.generate(Path(self._tls_dir.name))
            props |= self.tls.server_properties(self.options.listener)
        preload = _preloaded_acls(self.options)
        # No handler warm-up: each handler is imported by its API's first request instead, which costs a suite
        # the few it uses rather than all 80 in every worker process.
        self.embedded = EmbeddedBroker(BrokerConfig.from_properties(props), preload_acls=preload, warm_up=False)

    # -- life ---------------------------------------------------------------------------------------------------------
    def start(self) -> KafkaShim:
        self.embedded.start()
        self.embedded.received.start()  # a test can always ask what was received (the reset keeps recording on)
        # The first consumer group of a fresh Kafka waits ~1 s for __consumer_offsets to be made; a test should not.
        self.embedded.call(lambda: self.embedded.broker.create_internal_topics(["__consumer_offsets", "__transaction_state"]))
        return self

    def stop(self) -> None:
        self.embedded.stop()
        if self._tls_dir is not None:
            self._tls_dir.cleanup()
            self._tls_dir = None

    def reset(self) -> None:
        """Topics, records, groups, offsets, producer ids, ACLs, SCRAM users, faults and the record of received
        requests back to this configuration's start; every client connection is closed. The listener keeps its port."""
        self.embedded.reset()

    def __enter__(self) -> KafkaShim:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what clients need --------------------------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return self.embedded.bootstrap_servers

    @property
    def users(self) -> dict[str, str]:
        """SASL users and their passwords (on PLAIN and both SCRAM mechanisms); empty without a SASL listener."""
        return dict(self.options.users) if self.options.sasl else {}

    def _credentials(self, user: str | None) -> tuple[str, str] | None:
        if not self.options.sasl:
            if user is not None:
                raise ValueError(f"user={user!r}: this broker's listener is {self.options.listener}, which has no users; "
                                 "ask for listener='SASL_PLAINTEXT' or 'SASL_SSL' in the kafka_shim marker")
            return None
        name = user or self.options.users[0][0]
        users = self.users
        if self.options.mechanism == OAUTHBEARER:
            return name, ""  # the token names the principal: anyone
        if name not in users:
            raise ValueError(f"user={name!r} is not one of this broker's users ({', '.join(users)}); "
                             "add it with the marker's users={...}")
        return name, users[name]

    def confluent_config(self, user: str | None = None, **extra: Any) -> dict[str, Any]:
        """confluent-kafka (librdkafka) settings for this broker, as ``user`` (the first user by default)."""
        config: dict[str, Any] = {"bootstrap.servers": self.bootstrap_servers, "security.protocol": self.options.listener}
        credentials = self._credentials(user)
        if credentials is not None and self.options.mechanism == OAUTHBEARER:
            # librdkafka makes the unsecured JWT itself, naming the principal.
            config |= {"sasl.mechanism": OAUTHBEARER, "enable.sasl.oauthbearer.unsecure.jwt": True,
                       "sasl.oauthbearer.config": f"principal={credentials[0]}"}
        elif credentials is not None:
            config |= {"sasl.mechanism": self.options.mechanism, "sasl.username": credentials[0],
                       "sasl.password": credentials[1]}
        if self.tls is not None:
            config |= {"ssl.ca.location": str(self.tls.ca_file), "ssl.endpoint.identification.algorithm": "https"}
        return config | extra

    def kafka_python_config(self, user: str | None = None, **extra: Any) -> dict[str, Any]:
        """kafka-python keyword arguments (KafkaProducer, KafkaConsumer, KafkaAdminClient) for this broker."""
        config = self._python_client_config(user, kafka_python_token_provider)
        if self.tls is not None:
            config |= {"ssl_cafile": str(self.tls.ca_file), "ssl_check_hostname": True}
        return config | extra

    def aiokafka_config(self, user: str | None = None, **extra: Any) -> dict[str, Any]:
        """aiokafka keyword arguments (AIOKafkaProducer, AIOKafkaConsumer) for this broker."""
        config = self._python_client_config(user, aiokafka_token_provider)
        if self.tls is not None:
            import ssl

            config["ssl_context"] = ssl.create_default_context(cafile=str(self.tls.ca_file))
        return config | extra

    def _python_client_config(self, user: str | None, token_provider: Callable[[str], Any]) -> dict[str, Any]:
        """The option names kafka-python and aiokafka share (their TLS options and OAUTHBEARER token providers
        differ)."""
        config: dict[str, Any] = {"bootstrap_servers": self.bootstrap_servers, "security_protocol": self.options.listener}
        credentials = self._credentials(user)
        if credentials is not None and self.options.mechanism == OAUTHBEARER:
            config |= {"sasl_mechanism": OAUTHBEARER, "sasl_oauth_token_provider": token_provider(credentials[0])}
        elif credentials is not None:
            config |= {"sasl_mechanism": self.options.mechanism, "sasl_plain_username": credentials[0],
                       "sasl_plain_password": credentials[1]}
        return config

    @property
    def faults(self) -> FaultControl:
        """Injected faults for this test (dropped by the reset before the next): see shim.testing.faults."""
        return self.embedded.faults

    @property
    def received(self) -> ReceivedControl:
        """The decoded requests this test's clients sent, each with its principal: see shim.testing.received."""
        return self.embedded.received

    # -- state --------------------------------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None,
                     replication_factor: int = -1) -> None:
        """Create a topic as CreateTopics would (Kafka's name and config checks); TopicCreationError if refused.
        ``replication_factor`` -1 is the broker's ``default.replication.factor``; above 1 needs ``brokers``."""
        self.create_topics({name: partitions}, config, replication_factor)

    def create_topics(self, topics: Mapping[str, int] | Iterable[str], config: Mapping[str, str] | None = None,
                      replication_factor: int = -1) -> None:
        """Several topics at once: ``{"orders": 3, "audit": 1}`` or names (one partition each)."""
        counts = dict(topics) if isinstance(topics, Mapping) else dict.fromkeys(topics, 1)
        self.embedded.call(_create_topics, self.embedded.broker, counts, dict(config or {}), replication_factor)

    def topics(self) -> list[str]:
        """The topics that exist now (internal ones included), sorted."""
        return self.embedded.call(lambda: sorted(self.embedded.broker.state.topics))

    def create_acls(self, *acls: Mapping[str, Any] | AclBinding | Iterable[Mapping[str, Any] | AclBinding]) -> None:
        """Add ACLs: entries in the ``--acls`` file format (``{"resource_type": "topic", "resource_name": "orders",
        "principal": "User:alice", "operations": ["Read"]}``) or AclBinding objects, as arguments or in a list. Needs
        an authorizer (marker ``authorizer=True``); a rejected ACL raises ValueError with Kafka's reason."""
        if len(acls) == 1 and isinstance(acls[0], list | tuple):
            acls = tuple(acls[0])
        bindings = [a for a in acls if isinstance(a, AclBinding)]
        bindings += acl_entries([dict(a) for a in acls if not isinstance(a, AclBinding)], "create_acls")
        self.embedded.call(_create_acls, self.embedded.broker, bindings)

    def acls(self) -> list[AclBinding]:
        return self.embedded.call(lambda: _authorizer(self.embedded.broker).acls())


def _preloaded_acls(options: ShimOptions) -> list[AclBinding]:
    if options.acls is None:
        return []
    if isinstance(options.acls, str):
        return load_acl_file(options.acls)
    return acl_entries([thaw(entry) for entry in options.acls], "the kafka_shim marker's acls")


def _create_topics(broker: Any, counts: dict[str, int], config: dict[str, str], replication_factor: int = -1) -> None:
    from kafka_shim.shim.partitions.topic_admin import NewTopic, TopicAdmin

    services = broker.services
    admin = TopicAdmin(services.partitions, num_partitions=services.config.num_partitions,
                       default_replication_factor=services.config.default_replication_factor,
                       broker_configs=services.broker_configs)
    results = admin.create_topics([NewTopic(name, count, replication_factor, configs=tuple(config.items()))
                                   for name, count in counts.items()],
                                  validate_only=False)
    for result in results:
        if result.error:
            raise TopicCreationError(result.name, result.error, result.message)


def _authorizer(broker: Any) -> Any:
    if broker.authorizer is None:
        raise RuntimeError("this broker has no authorizer; ask for one with @pytest.mark.kafka_shim(authorizer=True)")
    return broker.authorizer


def _create_acls(broker: Any, bindings: list[AclBinding]) -> None:
    failed = [r for r in _authorizer(broker).create_acls(bindings) if r.error is not None]
    if failed:
        raise ValueError(f"{len(failed)} ACL(s) rejected; the first: {failed[0].error}")
