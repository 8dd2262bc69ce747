"""A broker's listeners as Kafka 3.9 checks them when a dynamic alteration rebuilds its KafkaConfig.

``listeners``, ``advertised.listeners`` and ``listener.security.protocol.map`` are per-broker dynamic keys, and
Kafka rebuilds its whole KafkaConfig from the altered properties before it accepts them: each listener list is
parsed (SocketServerConfigs.listenerListToEndPoints), then KafkaConfig.validateValues requires its KRaft listener
rules, then DynamicListenerConfig refuses any change to the advertised broker endpoints, which a KRaft broker
cannot re-register. The messages are Kafka's: a parse error wrapped as "Error creating broker listeners from ...",
a failed Scala ``require`` prefixed with "requirement failed: ".

kafka-shim's own server.properties needs none of KRaft's controller keys, so a rule the current configuration
already breaks (a static config Kafka would not have started with) is not applied to an alteration either.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass

from kafka_shim.shim.cluster.configs.broker_configs import BROKER_CONFIGS, CLUSTER_LEVEL_LISTENER_KEYS, DYNAMIC_SECURITY_CONFIGS
from kafka_shim.shim.cluster.configs.definition import ConfigValueError, parse_and_validate, parse_csv_map, parse_type
from kafka_shim.shim.javacompat.hash_orders import java_hash_map_order
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.javacompat.scala_set import scala_set_order
from kafka_shim.shim.javacompat.strings import java_trim

# SocketServerConfigs.URI_PARSE_REGEXP, matched whole; Java's '.' stops at any line terminator.
_ENDPOINT = re.compile(r"([^\n\r\u0085\u2028\u2029]*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")
_CSV = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")
_SASL_OR_SSL = ("SSL", "SASL_SSL", "SASL_PLAINTEXT")
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_INT_MAX = 2**31 - 1


class ListenerConfigError(Exception):
    """A listener rule Kafka's broker enforces; ``message`` is what Kafka answers (INVALID_REQUEST)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Endpoint:
    name: str  # ListenerName.normalised: upper case
    host: str | None  # an empty host binds every address and is kept as null
    port: int
    protocol: str


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ListenerConfigError("requirement failed: " + message)


def _get(props: Mapping[str, str], name: str) -> str | None:
    raw = props.get(name, BROKER_CONFIGS[name].default)
    return None if raw is None else java_trim(raw)


def _csv_list(text: str) -> list[str]:
    """Csv.parseCsvList: split on commas with the whitespace around them, empty entries dropped."""
    return [entry for entry in _CSV.split(text) if entry] if text else []


def security_protocol_map(props: Mapping[str, str]) -> dict[str, str]:
    """KafkaConfig.effectiveListenerSecurityProtocolMap: the configured map (Csv.parseCsvMap, names upper-cased,
    protocols checked in its HashMap's order); when none is configured, KRaft maps the controller listeners to
    PLAINTEXT unless some listener uses SSL or SASL."""
    try:
        pairs = parse_csv_map("listener.security.protocol.map", _get(props, "listener.security.protocol.map") or "")
    except ConfigValueError as error:
        raise ListenerConfigError(error.message) from None
    mapping: dict[str, str] = {}
    for name in java_hash_map_order(pairs, java_string_hash):
        protocol = pairs[name]
        if protocol.upper() not in _PROTOCOLS:
            raise ListenerConfigError(f"Invalid security protocol `{protocol}` defined in listener.security.protocol.map")
        mapping[name.upper()] = protocol.upper()
    if "listener.security.protocol.map" not in props:
        controllers = _controller_names(props)
        listener_names = []
        for entry in _csv_list(_get(props, "listeners") or ""):
            if ":" not in entry:
                raise ListenerConfigError(f"Unable to parse a listener name from {entry}")
            listener_names.append(entry.partition(":")[0].upper())
        if not any(name in _SASL_OR_SSL for name in [*controllers, *listener_names]):
            mapping.update({name: "PLAINTEXT" for name in controllers if name != "PLAINTEXT"})
    return mapping


def _controller_names(props: Mapping[str, str]) -> list[str]:
    value = _get(props, "controller.listener.names") or ""
    return [name for name in value.split(",")] if value else []


def parse_endpoints(text: str, protocols: Mapping[str, str], *, distinct_ports: bool) -> list[Endpoint]:
    """CoreUtils.listenerListToEndPoints: each ``NAME://host:port``, then one listener per name and, for
    ``listeners``, one per port unless an IPv4 and an IPv6 address share it."""
    endpoints = []
    for entry in _csv_list(text):
        match = _ENDPOINT.fullmatch(entry)
        if match is None:
            raise ListenerConfigError(f"Error creating broker listeners from '{text}': Unable to parse {entry} to a broker endpoint")
        port = int(match[3])
        if not -(_INT_MAX + 1) <= port <= _INT_MAX:
            raise ListenerConfigError(f"Error creating broker listeners from '{text}': For input string: \"{match[3]}\"")
        name = match[1].upper()
        if name not in protocols:
            raise ListenerConfigError(f"Error creating broker listeners from '{text}': No security protocol defined for listener {name}")
        endpoints.append(Endpoint(name, match[2] or None, port, protocols[name]))
    _require(len({e.name for e in endpoints}) == len(endpoints), f"Each listener must have a different name, listeners: {text}")
    if distinct_ports:
        _check_ports(endpoints, text)
    return endpoints


def _check_ports(endpoints: list[Endpoint], text: str) -> None:
    by_port: dict[int, list[Endpoint]] = {}
    for endpoint in endpoints:
        if endpoint.port != 0:
            by_port.setdefault(endpoint.port, []).append(endpoint)
    for port, sharing in by_port.items():
        if len(sharing) < 2:
            continue
        with_ip = [e for e in sharing if e.host is not None and _ip_version(e.host)]
        without_ip = [e for e in sharing if e not in with_ip]
        _require(len(without_ip) < 2, f"Each listener must have a different port, listeners: {text}")
        if not with_ip:
            continue
        if len(with_ip) == 2:
            message = ("If you have two listeners on the same port then one needs to be IPv4 and the other IPv6, "
                       f"listeners: {text}, port: {port}")
            _require({_ip_version(e.host) for e in with_ip} == {4, 6}, message)
            if without_ip:
                raise ListenerConfigError(message)
        else:
            raise ListenerConfigError("Each listener must have a different port unless exactly one listener has an IPv4 "
                                      f"address and the other IPv6 address, listeners: {text}, port: {port}")


def _ip_version(host: str | None) -> int:
    """commons-validator's InetAddressValidator: 4, 6, or 0 for a host name."""
    try:
        return ipaddress.ip_address(host or "").version
    except ValueError:
        return 0


def _resolve(props: Mapping[str, str]) -> None:
    """The listener rules of KafkaConfig.validateValues, in its order."""
    protocols = security_protocol_map(props)
    controllers = _controller_names(props)
    roles = set(_csv_list(_get(props, "process.roles") or "")) or {"broker", "controller"}  # kafka-shim is KRaft

    def listeners() -> list[Endpoint]:
        return parse_endpoints(_get(props, "listeners") or "", protocols, distinct_ports=True)

    def advertised() -> list[Endpoint]:
        text = _get(props, "advertised.listeners")
        return listeners() if text is None else parse_endpoints(text, protocols, distinct_ports=False)

    def advertised_controllers() -> list[Endpoint]:
        given = [e for e in advertised() if e.name in controllers]
        bound = [e for e in listeners() if e.name in controllers]
        found = []
        for name in controllers:
            match = next((e for e in given if e.name == name.upper()), None) or next((e for e in bound if e.name == name.upper()), None)
            if match is not None:
                found.append(match)
        return found

    brokers = [e for e in advertised() if e.name not in controllers]
    broker_names = scala_set_order([e.name for e in brokers], java_string_hash)
    if "controller" in roles:
        _require(bool(advertised_controllers()), "controller.listener.names must contain at least one value appearing in the "
                                                 "'listeners' configuration when running the KRaft controller role")
        bound_names = {e.name for e in listeners()}
        _require(all(name in bound_names for name in controllers), "controller.listener.names must only contain values appearing "
                                                                  "in the 'listeners' configuration when running the KRaft controller role")
    else:
        _require(not [e for e in listeners() if e.name in controllers],
                 "controller.listener.names must not contain a value appearing in the 'listeners' configuration when running "
                 "KRaft with just the broker role")
    listener_names = scala_set_order([e.name for e in listeners()], java_string_hash)
    if "broker" in roles:
        _require(bool(broker_names), "There must be at least one broker advertised listener. Perhaps all listeners appear in "
                                     "controller.listener.names?")
        _require(_inter_broker_listener(props) in broker_names,
                 "inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options "
                 f"based on currently configured listeners are {','.join(broker_names)}")
        _require(set(broker_names) <= set(listener_names),
                 "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. "
                 f"Found {','.join(broker_names)}. The valid options based on the current configuration are {','.join(listener_names)}")
    routable = "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address."
    _require(all(e.host != "0.0.0.0" for e in brokers), routable)
    _require(all(e.host != "0.0.0.0" for e in advertised_controllers()), routable)


def _inter_broker_listener(props: Mapping[str, str]) -> str:
    name = _get(props, "inter.broker.listener.name")
    return (name if name is not None else _get(props, "security.inter.broker.protocol") or "PLAINTEXT").upper()


def _listeners_of(props: Mapping[str, str]) -> list[Endpoint]:
    return parse_endpoints(_get(props, "listeners") or "", security_protocol_map(props), distinct_ports=True)


def check_bound_listeners(current: Mapping[str, str], proposed: Mapping[str, str]) -> None:
    """``listeners`` (and the protocol map) parsed: KafkaConfig's constructor does it first, for
    ``early.start.listeners``, before it reads any other key."""
    try:
        _listeners_of(current)
    except ListenerConfigError:
        return
    _listeners_of(proposed)


def check_listeners(current: Mapping[str, str], proposed: Mapping[str, str]) -> None:
    """KafkaConfig.validateValues' listener rules on the proposed configuration, unless the current one breaks them."""
    try:
        _resolve(current)
    except ListenerConfigError:
        return
    _resolve(proposed)


# Listener-prefixed keys a listener may change while it runs: SslConfigs.RECONFIGURABLE_CONFIGS and the acceptor's
# connection quotas and network threads (SocketServer / DataPlaneAcceptor.ListenerReconfigurableConfigs).
_RECONFIGURABLE_PER_LISTENER = frozenset(DYNAMIC_SECURITY_CONFIGS) | CLUSTER_LEVEL_LISTENER_KEYS


def check_listener_reconfiguration(current: Mapping[str, str], proposed: Mapping[str, str]) -> None:
    """DynamicListenerConfig.validateReconfiguration, once a listener key changes: a listener kept keeps its other
    prefixed configs and its security protocol, and a KRaft broker never changes the endpoints it advertises to
    brokers (it registered them with the controller)."""
    keys = ("listeners", "advertised.listeners", "listener.security.protocol.map")
    if all(current.get(key) == proposed.get(key) for key in keys):
        return
    try:
        old_listeners, old_advertised = _listeners_of(current), _advertised_brokers(current)
    except ListenerConfigError:
        return
    new_listeners = _listeners_of(proposed)
    old_protocols = {e.name: e.protocol for e in old_listeners}
    for endpoint in new_listeners:
        if endpoint.name not in old_protocols:
            continue
        if _fixed_listener_configs(current, endpoint.name) != _fixed_listener_configs(proposed, endpoint.name):
            raise ListenerConfigError(f"Configs cannot be updated dynamically for existing listener ListenerName({endpoint.name}), "
                                      "restart broker or create a new listener for update")
        if old_protocols[endpoint.name] != endpoint.protocol:
            raise ListenerConfigError(f"Security protocol cannot be updated for existing listener ListenerName({endpoint.name})")
    if _advertised_brokers(proposed) != old_advertised:
        raise ListenerConfigError("Advertised listeners cannot be altered when using a Raft-based metadata quorum.")


def _fixed_listener_configs(props: Mapping[str, str], listener: str) -> dict[str, str]:
    prefix = f"listener.name.{listener.lower()}."
    return {name[len(prefix):]: value for name, value in props.items()
            if name.startswith(prefix) and name[len(prefix):] not in _RECONFIGURABLE_PER_LISTENER}


def _advertised_brokers(props: Mapping[str, str]) -> dict[str, Endpoint]:
    protocols = security_protocol_map(props)
    controllers = _controller_names(props)
    text = _get(props, "advertised.listeners")
    endpoints = (parse_endpoints(_get(props, "listeners") or "", protocols, distinct_ports=True) if text is None
                 else parse_endpoints(text, protocols, distinct_ports=False))
    return {e.name: e for e in endpoints if e.name not in controllers}


def listener_overrides(props: Mapping[str, str], listener: str) -> dict[str, object]:
    """AbstractConfig.valuesWithPrefixOverride(listener's prefix), the overrides only: every key under
    ``listener.name.<listener>.`` whose rest, or rest past one more prefix ("plain.sasl.jaas.config"), is a KafkaConfig
    key, parsed and validated as ConfigDef.parseValue does, keyed by that rest, in the order of KafkaConfig's originals
    (a java.util.HashMap sized for all of them). The first bad one fails as ConfigDef words it (ListenerConfigError)."""
    prefix = f"listener.name.{listener.lower()}."
    values: dict[str, object] = {}
    for key in java_hash_map_order(props, java_string_hash, initial_capacity=int(len(props) / 0.75 + 1)):
        if not key.startswith(prefix) or len(key) == len(prefix):
            continue
        rest = key[len(prefix):]
        base = rest if rest in BROKER_CONFIGS else rest[rest.find(".") + 1:]
        definition = BROKER_CONFIGS.get(base)
        if definition is not None:
            try:
                values[rest] = parse_and_validate(base, props[key], definition.type, definition.validator)
            except ConfigValueError as error:
                raise ListenerConfigError(error.message) from None
    return values


def _inter_broker_sasl_rule(props: Mapping[str, str]) -> None:
    """KafkaConfig.validateValues: with SASL between brokers, sasl.mechanism.inter.broker.protocol must be one of the
    inter-broker listener's sasl.enabled.mechanisms (its listener-prefixed value, else the broker-wide one)."""
    name = _inter_broker_listener(props)
    protocol = security_protocol_map(props).get(name) if _get(props, "inter.broker.listener.name") is not None else name
    if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
        return
    # reading that listener's values parses and validates all its overrides on the way, unwrapped (KafkaConfig's
    # constructor is not inside DynamicBrokerConfig.processReconfiguration's catch)
    listener_overrides(props, name)
    prefixed = f"listener.name.{name.lower()}.sasl.enabled.mechanisms"
    raw = props[prefixed] if prefixed in props else _get(props, "sasl.enabled.mechanisms")
    text = java_trim(raw or "")
    mechanisms = _CSV.split(text) if text else []  # ConfigDef's LIST: split(",", -1), so empty entries stay
    _require(_get(props, "sasl.mechanism.inter.broker.protocol") in mechanisms,
             "sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used for "
             "inter-broker communication")


def check_inter_broker_sasl(current: Mapping[str, str], proposed: Mapping[str, str]) -> None:
    """The inter-broker SASL mechanism rule on the proposed configuration, unless the current one breaks it."""
    try:
        _inter_broker_sasl_rule(current)
    except ListenerConfigError:
        return
    _inter_broker_sasl_rule(proposed)


# The listener reconfigurables of a broker, in the order it registers them: first the channel builder of its client
# to the controller (NodeToControllerChannelManager, built before the SocketServer; a PLAINTEXT one is not
# reconfigurable), then, for each data-plane listener, ConnectionQuotas' ListenerConnectionQuota (max.connections,
# max.connection.creation.rate), the DataPlaneAcceptor (num.network.threads, its processors) and one channel builder
# per processor (checking SSL keys only, on SSL listeners). The controller's own listeners belong to the controller's
# KafkaConfig, which an alteration of BROKER configs does not reach.
_CONNECTION_QUOTA_KEYS = ("max.connections", "max.connection.creation.rate")
_NETWORK_THREADS = "num.network.threads"


def _data_plane_listeners(props: Mapping[str, str]) -> list[str]:
    """KafkaConfig.dataPlaneListeners: the names of ``listeners`` in order, without the controller listeners and the
    control plane listener."""
    controllers = {name.upper() for name in _controller_names(props)}
    control_plane = (_get(props, "control.plane.listener.name") or "").upper()
    return [e.name for e in _listeners_of(props) if e.name not in controllers and e.name != control_plane]


def _controller_client_listener(props: Mapping[str, str]) -> str | None:
    """The listener a broker reaches its controller through (the first of controller.listener.names), when its
    channel builder is reconfigurable (SASL or SSL)."""
    names = _controller_names(props)
    if not names:
        return None
    name = names[0].upper()
    return name if security_protocol_map(props).get(name, name) != "PLAINTEXT" else None


def _listener_ints(props: Mapping[str, str], overrides: Mapping[str, object]) -> dict[str, int]:
    """The listener's connection quotas and network threads: its own override, else the broker-wide value."""
    values = {}
    for name in (*_CONNECTION_QUOTA_KEYS, _NETWORK_THREADS):
        try:
            value = overrides[name] if name in overrides else parse_type(name, _get(props, name) or "", BROKER_CONFIGS[name].type)
        except ConfigValueError as error:  # KafkaConfig's constructor refuses such a broker-wide value first
            raise ListenerConfigError(error.message) from None
        values[name] = int(value)  # all three are INT keys
    return values


def check_listener_reconfigurables(current: Mapping[str, str], proposed: Mapping[str, str]) -> None:
    """DynamicBrokerConfig.processListenerReconfigurable for each listener reconfigurable, in their order, once any
    config changes: the controller listener's overrides are read (when the broker's client to it is SASL or SSL), then
    for each listener the broker serves, its overrides are read (parsed and validated: the first bad one fails, as ConfigDef
    words it), then, where the listener's own value of a key changes, ListenerConnectionQuota.validateReconfiguration
    ("Invalid max.connections 0": both at least 1) and DataPlaneAcceptor.validateReconfiguration (the network threads
    at least 1, at least half and at most double the listener's current count). ``ListenerConfigError`` carries the
    reason, which Kafka wraps as "Invalid dynamic configuration". A listener whose current overrides Kafka could not
    have started with is left alone."""
    if dict(current) == dict(proposed):
        return
    try:
        controller, listeners = _controller_client_listener(current), _data_plane_listeners(current)
    except ListenerConfigError:
        return
    if controller is not None:
        try:
            listener_overrides(current, controller)
        except ListenerConfigError:
            pass
        else:
            listener_overrides(proposed, controller)
    for listener in listeners:
        try:
            old = _listener_ints(current, listener_overrides(current, listener))
        except ListenerConfigError:
            continue
        new = _listener_ints(proposed, listener_overrides(proposed, listener))
        if any(old[name] != new[name] for name in _CONNECTION_QUOTA_KEYS):
            for name in _CONNECTION_QUOTA_KEYS:
                if new[name] <= 0:
                    raise ListenerConfigError(f"Invalid {name} {new[name]}")
        threads, current_threads = new[_NETWORK_THREADS], old[_NETWORK_THREADS]
        if threads != current_threads:
            failed = f"Dynamic thread count update validation failed for {_NETWORK_THREADS}={threads}"
            if threads <= 0:
                raise ListenerConfigError(f"{failed}, value should be at least 1")
            if threads < current_threads // 2:
                raise ListenerConfigError(f"{failed}, value should be at least half the current value {current_threads}")
            if threads > current_threads * 2:
                raise ListenerConfigError(f"{failed}, value should not be greater than double the current value {current_threads}")
