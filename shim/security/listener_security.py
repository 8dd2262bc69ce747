"""Per listener: its TLS context, how a TLS client is named, and which SASL mechanisms it offers.

Built once at start-up from server.properties keys (Kafka's names, with ``listener.name.<l>.`` overrides), so
that a connection only asks its listener's ``ListenerSecurity`` and never reads configuration itself.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_shim.authorizer.model import ANONYMOUS
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.javacompat.java_hash import hash_set_order

if TYPE_CHECKING:
    from kafka_shim.shim.config.broker_config import BrokerConfig, Listener
    from kafka_shim.shim.security.sasl.mechanism import Mechanism

log = get_logger("kafka_shim.listeners")

SSL_PROTOCOLS = {"SSL", "SASL_SSL"}
SASL_PROTOCOLS = {"SASL_PLAINTEXT", "SASL_SSL"}


@dataclass
class ListenerSecurity:
    listener: Listener
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: Any = None  # shim.ssl_principal.SslPrincipalMapper on SSL listeners
    sasl_mechanisms: list[str] = field(default_factory=list)
    reauth_ms: int = 0
    reauth_ms_by_mechanism: dict[str, int] = field(default_factory=dict)  # listener.name.<l>.<mechanism>.*
    mechanism_factory: Callable[[str, bool], Mechanism] | None = None
    authentication_error: type[BaseException] | tuple[type[BaseException], ...] = ()

    def tls_principal(self, ssl_object: Any) -> str:
        """``User:<mapped DN>`` for a client certificate, ``User:ANONYMOUS`` without one (Kafka's rule)."""
        if ssl_object is None or self.principal_mapper is None:
            return ANONYMOUS
        from kafka_shim.shim.security.tls.principal import tls_principal

        return tls_principal(ssl_object, self.principal_mapper)

    def new_mechanism(self, name: str, reauthenticating: bool = False) -> Mechanism:
        assert self.mechanism_factory is not None
        return self.mechanism_factory(name, reauthenticating)

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
        from kafka_shim.shim.security.sasl.settings import SaslSettings

        sasl_settings = SaslSettings.from_properties(props, names)
        for warning in sasl_settings.warnings:
            log.warning("sasl_config_warning", detail=warning)
    for listener in config.listeners:
        security = ListenerSecurity(listener)
        if listener.security_protocol in SSL_PROTOCOLS:
            from kafka_shim.shim.security.tls.context import listener_ssl_context
            from kafka_shim.shim.security.tls.principal import listener_principal_mapper

            security.ssl_context = listener_ssl_context(listener.name, props, listener.security_protocol)
            security.principal_mapper = listener_principal_mapper(listener.name, props)
        if listener.security_protocol in SASL_PROTOCOLS:
            from kafka_shim.shim.security.sasl import SaslAuthenticationError, create_server

            assert sasl_settings is not None
            # Kafka lists the mechanisms in SaslHandshake answers from new ArrayList<>(new HashSet<>(list)): clients
            # see them in hash-bucket order, not configuration order; reproduced so the bytes match.
            security.sasl_mechanisms = hash_set_order(sasl_settings.enabled_mechanisms(listener.name))
            security.reauth_ms = sasl_settings.reauth_ms(listener.name)
            security.reauth_ms_by_mechanism = {m: sasl_settings.reauth_ms(listener.name, m)
                                               for m in security.sasl_mechanisms}
            security.authentication_error = SaslAuthenticationError
            security.mechanism_factory = (
                lambda mechanism, reauthenticating, name=listener.name: create_server(
                    mechanism, name, sasl_settings, scram_store, reauthentication=reauthenticating
                )
            )
        result[listener.name] = security
    return result

