"""server.properties parsing and Kafka's configuration keys."""

from __future__ import annotations

import pytest

from kafka_shim.shim.config.broker_config import BrokerConfig, ConfigError
from kafka_shim.shim.config.properties import parse_properties
from kafka_shim.shim.net.addresses import java_host_address


def test_java_properties_syntax() -> None:
    text = "\n".join([
        "# comment",
        "! also a comment",
        "a=1",
        "b : 2",
        "c 3",
        "d=multi \\",
        "   line",
        "e=tab\\tand\\u0041",
        "f\\=g=h",
        "empty=",
        "  spaced.key  =  value with spaces  ",
    ])
    props = parse_properties(text)
    assert props == {"a": "1", "b": "2", "c": "3", "d": "multi line", "e": "tab\tandA", "f=g": "h", "empty": "",
                     "spaced.key": "value with spaces  "}


def test_defaults_without_a_file() -> None:
    config = BrokerConfig.from_properties({})
    assert [(lst.name, lst.security_protocol, lst.host, lst.port) for lst in config.listeners] == [("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092)]
    assert config.socket_request_max_bytes == 104857600
    assert config.connections_max_idle_ms == 600000
    assert config.node_id == 1


def test_listeners_and_advertised_listeners() -> None:
    config = BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://:9092,INTERNAL://[::1]:9094",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
        "advertised.listeners": "PLAINTEXT://broker.example:19092",
        "broker.id": "5",
        "broker.rack": "r1",
    })
    assert [(lst.name, lst.host, lst.port) for lst in config.listeners] == [("PLAINTEXT", "", 9092), ("INTERNAL", "::1", 9094)]
    assert config.advertised == {"PLAINTEXT": ("broker.example", 19092), "INTERNAL": ("::1", 9094)}
    assert (config.node_id, config.rack) == (5, "r1")


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"listeners": "PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9093"}, "each listener once"),
        ({"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT", "advertised.listeners": "OTHER://h:1"}, "not in listeners"),
        ({"listeners": "PLAINTEXT://127.0.0.1:70000"}, "0-65535"),
        ({"node.id": "one"}, "node.id must be an integer"),
        ({"listener.security.protocol.map": "PLAINTEXT"}, "NAME:PROTOCOL"),
        ({"listeners": ""}, "at least one"),
    ],
)
def test_configuration_errors_say_what_to_fix(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BrokerConfig.from_properties(props)


def test_overrides_win_and_unknown_keys_are_reported() -> None:
    config = BrokerConfig.from_properties({"node.id": "1", "made.up.key": "x", "num.io.threads": "8"}, {"node.id": "9"})
    assert config.node_id == 9
    assert config.unknown_keys == ["made.up.key"]


@pytest.mark.parametrize(
    ("seen", "java"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("::1", "0:0:0:0:0:0:0:1"),
        ("::ffff:10.1.2.3", "10.1.2.3"),
        ("2001:db8::0a:1", "2001:db8:0:0:0:0:a:1"),
        ("fe80::1%eth0", "fe80:0:0:0:0:0:0:1%eth0"),
    ],
)
def test_client_addresses_render_like_java(seen: str, java: str) -> None:
    assert java_host_address(seen) == java
