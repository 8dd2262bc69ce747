"""SaslSettings from Kafka's server.properties keys."""

from __future__ import annotations

import pytest

from kafka_shim.shim.config.broker_config import ConfigError
from kafka_shim.shim.security.sasl.settings import SaslSettings

PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret";'
SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required user_alice="alice-scram";'
PREFIX = "listener.name.sasl_plaintext."


def plain_props(**extra: str) -> dict[str, str]:
    return {"sasl.enabled.mechanisms": "PLAIN", PREFIX + "plain.sasl.jaas.config": PLAIN_JAAS, **extra}


def test_plain_users_per_listener() -> None:
    s = SaslSettings.from_properties(plain_props(), ["SASL_PLAINTEXT"])
    assert s.enabled_mechanisms("SASL_PLAINTEXT") == ["PLAIN"]
    assert s.plain_password("sasl_plaintext", "alice") == "alice-secret"
    assert s.plain_password("SASL_PLAINTEXT", "mallory") is None
    assert "alice-secret" not in repr(s)  # passwords never reach a log line through repr


def test_listener_mechanisms_override_the_global_list() -> None:
    props = plain_props(**{PREFIX + "sasl.enabled.mechanisms": "SCRAM-SHA-512, PLAIN",
                           PREFIX + "scram-sha-512.sasl.jaas.config": SCRAM_JAAS})
    s = SaslSettings.from_properties(props, ["SASL_PLAINTEXT"])
    assert s.enabled_mechanisms("SASL_PLAINTEXT") == ["SCRAM-SHA-512", "PLAIN"]
    assert s.scram_users() == [("alice", "SCRAM-SHA-512", "alice-scram")]


def test_kafkas_default_gssapi_is_refused_with_the_fix() -> None:
    with pytest.raises(ConfigError) as raised:
        SaslSettings.from_properties({}, ["SASL_PLAINTEXT"])
    message = str(raised.value)
    assert "Kafka's default is GSSAPI" in message and "GSSAPI" in message
    assert "listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN" in message


def test_kerberos_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"GSSAPI\) is not supported by kafka-shim"):
        SaslSettings.from_properties(plain_props(**{"sasl.enabled.mechanisms": "PLAIN,GSSAPI"}), ["SASL_PLAINTEXT"])


def test_mechanism_names_are_case_sensitive_as_in_kafka() -> None:
    with pytest.raises(ConfigError, match="case-sensitive: PLAIN"):
        SaslSettings.from_properties(plain_props(**{"sasl.enabled.mechanisms": "plain"}), ["SASL_PLAINTEXT"])


def test_an_empty_mechanism_list_is_refused() -> None:
    with pytest.raises(ConfigError, match="lists no mechanism"):
        SaslSettings.from_properties({"sasl.enabled.mechanisms": " , "}, ["SASL_PLAINTEXT"])


def test_an_enabled_mechanism_needs_its_listener_jaas_key() -> None:
    with pytest.raises(ConfigError, match=r"listener\.name\.sasl_plaintext\.plain\.sasl\.jaas\.config is not set"):
        SaslSettings.from_properties({"sasl.enabled.mechanisms": "PLAIN"}, ["SASL_PLAINTEXT"])


def test_the_unprefixed_jaas_key_is_ignored_with_a_warning_as_kafka_does() -> None:
    s = SaslSettings.from_properties(plain_props(**{"sasl.jaas.config": PLAIN_JAAS}), ["SASL_PLAINTEXT"])
    assert any("sasl.jaas.config is ignored" in w for w in s.warnings)


def test_one_login_module_per_listener_jaas_value() -> None:
    props = plain_props(**{PREFIX + "plain.sasl.jaas.config": PLAIN_JAAS + " " + PLAIN_JAAS})
    with pytest.raises(ConfigError, match="contains 2 login modules, should be 1 module"):
        SaslSettings.from_properties(props, ["SASL_PLAINTEXT"])


def test_the_login_module_must_fit_the_mechanism() -> None:
    props = plain_props(**{PREFIX + "plain.sasl.jaas.config": SCRAM_JAAS})
    with pytest.raises(ConfigError, match=r"PLAIN needs org\.apache\.kafka\.common\.security\.plain\.PlainLoginModule"):
        SaslSettings.from_properties(props, ["SASL_PLAINTEXT"])


def test_jaas_syntax_errors_name_the_key() -> None:
    props = plain_props(**{PREFIX + "plain.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required"})
    with pytest.raises(ConfigError, match=r"^listener\.name\.sasl_plaintext\.plain\.sasl\.jaas\.config: JAAS config entry not terminated"):
        SaslSettings.from_properties(props, ["SASL_PLAINTEXT"])


def test_non_sasl_listeners_are_left_out() -> None:
    props = plain_props(**{"listener.security.protocol.map": "CLIENT:SASL_SSL,INTERNAL:PLAINTEXT",
                           "listener.name.client.plain.sasl.jaas.config": PLAIN_JAAS})
    s = SaslSettings.from_properties(props, ["CLIENT", "INTERNAL"])
    assert list(s.listeners) == ["CLIENT"]
    assert s.plain_password("client", "admin") == "admin-secret"


def test_scram_users_with_different_passwords_on_two_listeners_are_refused() -> None:
    props = {
        "sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "listener.name.a.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.b.scram-sha-256.sasl.jaas.config": SCRAM_JAAS.replace("alice-scram", "other"),
    }
    with pytest.raises(ConfigError, match="different SCRAM-SHA-256 passwords on the listeners A and B"):
        SaslSettings.from_properties(props, ["A", "B"])


def test_connections_max_reauth_ms_default_global_listener_and_mechanism() -> None:
    assert SaslSettings.from_properties(plain_props(), ["SASL_PLAINTEXT"]).reauth_ms("SASL_PLAINTEXT") == 0
    s = SaslSettings.from_properties(plain_props(**{"connections.max.reauth.ms": "60000"}), ["SASL_PLAINTEXT"])
    assert (s.connections_max_reauth_ms, s.reauth_ms("SASL_PLAINTEXT"), s.reauth_ms("SASL_PLAINTEXT", "PLAIN")) == (60000, 60000, 60000)
    s = SaslSettings.from_properties(plain_props(**{"connections.max.reauth.ms": "60000",
                                                    PREFIX + "connections.max.reauth.ms": "5000",
                                                    PREFIX + "plain.connections.max.reauth.ms": "700"}), ["SASL_PLAINTEXT"])
    assert (s.reauth_ms("SASL_PLAINTEXT"), s.reauth_ms("SASL_PLAINTEXT", "PLAIN")) == (5000, 700)


@pytest.mark.parametrize("value", ["soon", "-1", "1.5"])
def test_bad_reauth_values_are_refused(value: str) -> None:
    with pytest.raises(ConfigError, match=r"connections\.max\.reauth\.ms"):
        SaslSettings.from_properties(plain_props(**{"connections.max.reauth.ms": value}), ["SASL_PLAINTEXT"])


def test_scram_jaas_users_need_a_name_and_a_password() -> None:
    base = {"sasl.enabled.mechanisms": "SCRAM-SHA-256"}
    key = PREFIX + "scram-sha-256.sasl.jaas.config"
    with pytest.raises(ConfigError, match="names no user"):
        SaslSettings.from_properties({**base, key: 'org.apache.kafka.common.security.scram.ScramLoginModule required user_="x";'},
                                     ["SASL_PLAINTEXT"])
    with pytest.raises(ConfigError, match="empty password"):
        SaslSettings.from_properties({**base, key: 'org.apache.kafka.common.security.scram.ScramLoginModule required user_a="";'},
                                     ["SASL_PLAINTEXT"])
