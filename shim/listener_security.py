"""Per listener: its TLS context, how a TLS client is named, and which SASL mechanisms it offers.

Built once at start-up from server.properties keys (Kafka's names, with ``listener.name.<l>.`` overrides), so
that a connection only asks its listener's ``ListenerSecurity`` and never reads configuration itself.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shim.context import ANONYMOUS

if TYPE_CHECKING:
    from shim.config import BrokerConfig, Listener
    from shim.sasl_gate import Mechanism

SSL_PROTOCOLS = {"SSL", "SASL_SSL"}
SASL_PROTOCOLS = {"SASL_PLAINTEXT", "SASL_SSL"}


@dataclass
class ListenerSecurity:
    listener: Listener
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: Any = None  # shim.ssl_principal.SslPrincipalMapper on SSL listeners
    sasl_mechanisms: list[str] = field(default_factory=list)
    reauth_ms: int = 0
    mechanism_factory: Callable[[str], Mechanism] | None = None
    authentication_error: type[BaseException] | tuple[type[BaseException], ...] = ()

    def tls_principal(self, ssl_object: Any) -> str:
        """``User:<mapped DN>`` for a client certificate, ``User:ANONYMOUS`` without one (Kafka's rule)."""
        if ssl_object is None or self.principal_mapper is None:
            return ANONYMOUS
        from shim.ssl_principal import tls_principal

        return tls_principal(ssl_object, self.principal_mapper)

    def new_mechanism(self, name: str) -> Mechanism:
        assert self.mechanism_factory is not None
        return self.mechanism_factory(name)

    def is_authentication_error(self, exc: BaseException) -> bool:
        """A refusal whose own message goes to the client (Kafka's SaslAuthenticationException); any other
        failure gets Kafka's generic "invalid credentials" text so that nothing about users leaks."""
        return isinstance(exc, self.authentication_error)


def build_listener_security(config: BrokerConfig, scram_store: Any) -> dict[str, ListenerSecurity]:
    """Every listener's security, checked now so that a mistake is a start-up error and not a failed client."""
    props = config.raw
    names = [lst.name for lst in config.listeners]
    result: dict[str, ListenerSecurity] = {}
    sasl_settings = None
    if any(lst.security_protocol in SASL_PROTOCOLS for lst in config.listeners):
        from shim.sasl.settings import SaslSettings

        sasl_settings = SaslSettings.from_properties(props, names)
    for listener in config.listeners:
        security = ListenerSecurity(listener)
        if listener.security_protocol in SSL_PROTOCOLS:
            from shim.ssl_principal import SslPrincipalMapper
            from shim.tls import listener_ssl_context

            security.ssl_context = listener_ssl_context(listener.name, props)
            rules = _listener_value(props, listener.name, "ssl.principal.mapping.rules") or "DEFAULT"
            security.principal_mapper = SslPrincipalMapper.from_rules(rules)
        if listener.security_protocol in SASL_PROTOCOLS:
            from shim.sasl import SaslAuthenticationError, create_server

            assert sasl_settings is not None
            security.sasl_mechanisms = list(sasl_settings.enabled_mechanisms(listener.name))
            security.reauth_ms = sasl_settings.reauth_ms(listener.name)
            security.authentication_error = SaslAuthenticationError
            security.mechanism_factory = (
                lambda mechanism, name=listener.name: create_server(mechanism, name, sasl_settings, scram_store)
            )
        result[listener.name] = security
    return result


def _listener_value(props: dict[str, str], listener_name: str, key: str) -> str:
    value = props.get(f"listener.name.{listener_name.lower()}.{key}")
    if value is None:
        value = props.get(key, "")
    return value.strip()
