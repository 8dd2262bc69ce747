"""Broker configuration under Kafka's own key names (server.properties)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from kafka_shim.shim.config.properties import load_properties

DEFAULT_LISTENERS = "PLAINTEXT://127.0.0.1:9092"
DEFAULT_PROTOCOL_MAP = {p: p for p in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
SUPPORTED_PROTOCOLS = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

# Keys kafka-shim reads, with Kafka's defaults. Anything else in the file is
# reported once at start-up (Kafka logs "supplied but isn't a known config").
DEFAULTS: dict[str, str] = {
    "listeners": DEFAULT_LISTENERS,
    "advertised.listeners": "",
    "listener.security.protocol.map": "",
    "node.id": "",
    "broker.id": "",
    "broker.rack": "",
    "socket.request.max.bytes": "104857600",
    "connections.max.idle.ms": "600000",
    "connection.failed.authentication.delay.ms": "100",
    "sasl.server.max.receive.size": "524288",
    "log.dirs": "",
    "log.dir": "",
    "auto.create.topics.enable": "true",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "delete.topic.enable": "true",
    "transaction.max.timeout.ms": "900000",
    "producer.id.expiration.ms": "86400000",
    "fetch.max.bytes": "57671680",
    "max.incremental.fetch.session.cache.slots": "1000",
    "process.roles": "broker,controller",
    "authorizer.class.name": "",
    "super.users": "",
    "allow.everyone.if.no.acl.found": "false",
    # kafka-shim's own: the Kafka release to present as (shim/releases; serve --kafka-version)
    "kafka.version": "3.9",
    # kafka-shim's own: how many brokers this process runs as one cluster (shim/cluster/state.py)
    "kafka.shim.brokers": "1",
}

# Kafka's authorizer classes; any of them turns kafka-shim's authorizer (StandardAuthorizer semantics) on.
AUTHORIZER_CLASSES = {
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
}
# Keys that a real server.properties usually carries and that need no action here.
KNOWN_IGNORED = {
    "controller.listener.names",
    "controller.quorum.voters",
    "controller.quorum.bootstrap.servers",
    "inter.broker.listener.name",
    "num.network.threads",
    "num.io.threads",
    "socket.send.buffer.bytes",
    "socket.receive.buffer.bytes",
    "num.recovery.threads.per.data.dir",
    "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor",
    "transaction.state.log.min.isr",
    # read from the raw properties when Metadata auto-creates the internal topics (partitions.topic_admin)
    "offsets.topic.num.partitions",
    "offsets.topic.segment.bytes",
    "transaction.state.log.num.partitions",
    "transaction.state.log.segment.bytes",
    "log.retention.hours",
    "log.segment.bytes",
    "log.retention.check.interval.ms",
    # read by the group coordinator (shim/groups/settings.py)
    "group.initial.rebalance.delay.ms",
    "group.min.session.timeout.ms",
    "group.max.session.timeout.ms",
    "group.max.size",
    "group.coordinator.rebalance.protocols",
    "offset.metadata.max.bytes",
    "offsets.retention.minutes",
    "offsets.retention.check.interval.ms",
    "group.consumer.session.timeout.ms",
    "group.consumer.min.session.timeout.ms",
    "group.consumer.max.session.timeout.ms",
    "group.consumer.heartbeat.interval.ms",
    "group.consumer.min.heartbeat.interval.ms",
    "group.consumer.max.heartbeat.interval.ms",
    "group.consumer.max.size",
    "group.consumer.assignors",
    "group.consumer.migration.policy",
    "group.coordinator.new.enable",
    # kafka-shim's own: trace capture (read by traces.capture, plugged in by the command line and EmbeddedBroker)
    "kafka.shim.capture.dir",
    "kafka.shim.capture.roll.bytes",
    "kafka.shim.capture.roll.ms",
    "kafka.shim.capture.retention.bytes",
    "kafka.shim.capture.queue.requests",
    # kafka-shim's own: the fault control file a serving broker watches (shim/faults/control_file.py)
    "kafka.shim.faults.file",
    # kafka-shim's own: the authorizer log in its own file, in Kafka's kafka-authorizer.log layout (authorizer/audit_file.py)
    "kafka.shim.authorizer.log.file",
    "kafka.shim.authorizer.log.level",
    # kafka-shim's own: the Prometheus endpoint (shim/metrics, started by the broker)
    "kafka.shim.metrics.port",
    "kafka.shim.metrics.host",
}


# Read by the listener security modules (shim/security/tls/, shim/security/sasl/), per listener or globally.
SECURITY_KEY_PREFIXES = ("listener.name.", "ssl.", "sasl.", "connections.max.reauth.ms")


MAX_BROKERS = 64


class ConfigError(ValueError):
    """A configuration a person must fix; the message says what and how."""


@dataclass(frozen=True)
class Listener:
    name: str
    security_protocol: str
    host: str  # "" binds every interface
    port: int
    node_id: int = -1  # the node of a cluster in one process that serves it (set when bound); -1: node.id


@dataclass
class BrokerConfig:
    listeners: list[Listener]
    advertised: dict[str, tuple[str, int]]  # listener name -> (host, port); port 0 = "whatever we bound"
    node_id: int
    rack: str | None
    socket_request_max_bytes: int
    connections_max_idle_ms: int
    log_dirs: list[Path]
    auto_create_topics: bool
    num_partitions: int = 1
    default_replication_factor: int = 1
    delete_topic_enable: bool = True
    fetch_max_bytes: int = 57671680  # the most one fetch answer carries, whatever the request asks
    max_incremental_fetch_session_cache_slots: int = 1000
    failed_authentication_delay_ms: int = 100
    sasl_server_max_receive_size: int = 524288  # the largest frame before SASL authentication completes; -1: no limit
    authorizer_enabled: bool = False
    super_users: str = ""
    allow_everyone_if_no_acl_found: str = "false"
    brokers: int = 1  # kafka.shim.brokers: the nodes of a cluster in one process (node.id, node.id + 1, ...)
    kafka_version: str = "3.9"  # checked against the known releases when the broker is built (shim/releases)
    raw: dict[str, str] = field(default_factory=dict)
    unknown_keys: list[str] = field(default_factory=list)

    @classmethod
    def from_properties(cls, props: dict[str, str], overrides: dict[str, str] | None = None) -> BrokerConfig:
        merged = dict(props)
        merged.update(overrides or {})
        get = lambda key: merged.get(key, DEFAULTS.get(key, "")).strip()  # noqa: E731
        protocol_map = _parse_protocol_map(get("listener.security.protocol.map"))
        listeners = [_parse_listener(item, protocol_map, "listeners") for item in _split_list(get("listeners"))]
        if not listeners:
            raise ConfigError("listeners is empty: set at least one, e.g. listeners=PLAINTEXT://127.0.0.1:9092")
        names = [lst.name for lst in listeners]
        if len(set(names)) != len(names):
            raise ConfigError(f"listeners names each listener once; got {', '.join(names)}")
        advertised: dict[str, tuple[str, int]] = {}
        for item in _split_list(get("advertised.listeners")):
            adv = _parse_listener(item, protocol_map, "advertised.listeners")
            if adv.name not in names:
                raise ConfigError(f"advertised.listeners names {adv.name}, which is not in listeners ({', '.join(names)})")
            advertised[adv.name] = (adv.host, adv.port)
        for lst in listeners:
            advertised.setdefault(lst.name, (lst.host, lst.port))
        return cls(
            listeners=listeners,
            advertised=advertised,
            node_id=_node_id(get("node.id"), get("broker.id")),
            rack=get("broker.rack") or None,
            socket_request_max_bytes=_int(get, "socket.request.max.bytes", minimum=1),
            connections_max_idle_ms=_int(get, "connections.max.idle.ms", minimum=-1),
            failed_authentication_delay_ms=_int(get, "connection.failed.authentication.delay.ms", minimum=0),
            sasl_server_max_receive_size=_int(get, "sasl.server.max.receive.size", minimum=-(2**31), maximum=2**31 - 1),
            log_dirs=[Path(p) for p in _split_list(get("log.dirs") or get("log.dir"))],
            auto_create_topics=get("auto.create.topics.enable").lower() == "true",
            num_partitions=_int(get, "num.partitions", minimum=1),
            default_replication_factor=_int(get, "default.replication.factor", minimum=1),
            delete_topic_enable=get("delete.topic.enable").lower() == "true",
            fetch_max_bytes=_int(get, "fetch.max.bytes", minimum=1024),
            max_incremental_fetch_session_cache_slots=_int(get, "max.incremental.fetch.session.cache.slots", minimum=0),
            authorizer_enabled=_authorizer_enabled(get("authorizer.class.name")),
            super_users=_super_users(get("super.users")),
            allow_everyone_if_no_acl_found=get("allow.everyone.if.no.acl.found"),
            kafka_version=get("kafka.version") or "3.9",
            brokers=_int(get, "kafka.shim.brokers", minimum=1, maximum=MAX_BROKERS),
            raw=merged,
            unknown_keys=sorted(
                k for k in merged if k not in DEFAULTS and k not in KNOWN_IGNORED and not k.startswith(SECURITY_KEY_PREFIXES)
            ),
        )

    @classmethod
    def load(cls, path: str | Path | None, overrides: dict[str, str] | None = None) -> BrokerConfig:
        props: dict[str, str] = {}
        if path is not None:
            try:
                props = load_properties(path)
            except OSError as exc:
                raise ConfigError(f"cannot read the configuration file {path}: {exc.strerror or exc}") from None
        return cls.from_properties(props, overrides)


def _split_list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _parse_protocol_map(value: str) -> dict[str, str]:
    mapping = dict(DEFAULT_PROTOCOL_MAP)
    if not value:
        return mapping
    mapping = {}
    for item in _split_list(value):
        name, sep, protocol = item.partition(":")
        if not sep or not name or protocol.upper() not in DEFAULT_PROTOCOL_MAP:
            raise ConfigError(
                f"listener.security.protocol.map entry {item!r} is not NAME:PROTOCOL with PROTOCOL one of {', '.join(DEFAULT_PROTOCOL_MAP)}"
            )
        mapping[name.upper()] = protocol.upper()
    return mapping


_LISTENER = re.compile(r"^(?P<name>[A-Za-z0-9_]+)://(?P<host>\[[^\]]*\]|[^:]*):(?P<port>-?\d+)$")


def _parse_listener(item: str, protocol_map: dict[str, str], key: str) -> Listener:
    match = _LISTENER.match(item)
    if not match:
        raise ConfigError(f"{key} entry {item!r} is not NAME://HOST:PORT (e.g. PLAINTEXT://127.0.0.1:9092)")
    name = match.group("name").upper()
    host = match.group("host").strip("[]")
    port = int(match.group("port"))
    if not 0 <= port <= 65535:
        raise ConfigError(f"{key} entry {item!r} has port {port}; use 0-65535 (0 picks a free port)")
    protocol = protocol_map.get(name)
    if protocol is None:
        raise ConfigError(f"{key} entry {item!r}: listener {name} has no security protocol; add it to listener.security.protocol.map")
    if protocol not in SUPPORTED_PROTOCOLS:
        raise ConfigError(
            f"{key} entry {item!r} uses security protocol {protocol}, which kafka-shim does not serve yet; use PLAINTEXT"
        )
    return Listener(name, protocol, host, port)


def _authorizer_enabled(class_name: str) -> bool:
    if not class_name:
        return False
    if class_name not in AUTHORIZER_CLASSES:
        raise ConfigError(
            f"authorizer.class.name={class_name} is not an authorizer kafka-shim knows; "
            f"use org.apache.kafka.metadata.authorizer.StandardAuthorizer (or leave it empty for no authorizer)"
        )
    return True


def _super_users(value: str) -> str:
    from kafka_shim.authorizer import parse_super_users

    try:
        parse_super_users(value)
    except ValueError as exc:
        raise ConfigError(f"super.users={value!r}: {exc}; write principals as User:name separated by ';'") from None
    return value


def _node_id(node_id: str, broker_id: str) -> int:
    text = node_id or broker_id or "1"
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"node.id must be an integer, got {text!r}") from None


def _int(get, key: str, minimum: int, maximum: int | None = None) -> int:
    text = get(key)
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{key} must be an integer, got {text!r}") from None
    if value < minimum:
        raise ConfigError(f"{key} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{key} must be at most {maximum}, got {value}")
    return value
