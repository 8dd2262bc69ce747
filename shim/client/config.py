"""Kafka's client security properties (a ``--command-config`` file), read into what a connection needs.

Kafka's keys are read: ``security.protocol``, ``sasl.mechanism`` (Kafka's default is GSSAPI, which is not supported
here), ``sasl.jaas.config`` (``username=`` and ``password=`` of PlainLoginModule or ScramLoginModule; for OAUTHBEARER the
unsecured-token options of OAuthBearerLoginModule, as Kafka's default login callback handler reads them:
``unsecuredLoginStringClaim_sub``, ``unsecuredLoginPrincipalClaimName``, ``unsecuredLoginLifetimeSeconds``,
``unsecuredLoginListClaim_scope``) and the ``ssl.*`` keys of :func:`kafka_shim.shim.security.tls.context.client_ssl_context`.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafka_shim.shim.config.broker_config import ConfigError
from kafka_shim.shim.security.sasl.jaas import parse_jaas_config
from kafka_shim.shim.security.sasl.scram_math import MECHANISMS as SCRAM_MECHANISMS

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
OAUTHBEARER = "OAUTHBEARER"
MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS, OAUTHBEARER)
LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    OAUTHBEARER: "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}


@dataclass(frozen=True)
class ClientSecurity:
    """How to reach and authenticate to a listener: the protocol, the SASL user, the TLS context."""

    security_protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)
    # OAUTHBEARER: the unsecured token's lifetime and scope (``username`` is its principal).
    token_lifetime_s: float = 3600.0
    token_scope: tuple[str, ...] = ()

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")


def client_security(props: Mapping[str, str], source: str = "--command-config") -> ClientSecurity:
    """Read Kafka's client security keys; ConfigError naming the key and what to write instead."""
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise ConfigError(f"{source}: security.protocol={protocol} is not one of {', '.join(SECURITY_PROTOCOLS)}")
    context = None
    if protocol in ("SSL", "SASL_SSL"):
        from kafka_shim.shim.security.tls.context import client_ssl_context

        context = client_ssl_context(props)
    if not protocol.startswith("SASL_"):
        return ClientSecurity(protocol, ssl_context=context)
    mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()
    if mechanism not in MECHANISMS:
        raise ConfigError(f"{source}: sasl.mechanism={mechanism} is not supported by kafka-shim's client; "
                          f"use one of {', '.join(MECHANISMS)}")
    if mechanism == OAUTHBEARER:
        principal, lifetime, scope = _unsecured_login(props, source)
        return ClientSecurity(protocol, mechanism, principal, None, context, lifetime, scope)
    username, password = _jaas_credentials(props, mechanism, source)
    return ClientSecurity(protocol, mechanism, username, password, context)


def _unsecured_login(props: Mapping[str, str], source: str) -> tuple[str, float, tuple[str, ...]]:
    """The unsecured token Kafka's default OAUTHBEARER login (OAuthBearerUnsecuredLoginCallbackHandler) would make."""
    module = LOGIN_MODULES[OAUTHBEARER]
    example = f'sasl.jaas.config={module} required unsecuredLoginStringClaim_sub="alice";'
    if props.get("sasl.login.callback.handler.class", "").strip():
        raise ConfigError(f"{source}: sasl.login.callback.handler.class is set; kafka-shim's client makes only the "
                          f"unsecured tokens of Kafka's default login; remove it and write {example}")
    value = props.get("sasl.jaas.config", "").strip()
    if not value:
        raise ConfigError(f"{source}: sasl.mechanism=OAUTHBEARER needs the token's principal; add {example}")
    entry = parse_jaas_config(value)[0]
    if entry.login_module != module:
        raise ConfigError(f"{source}: sasl.jaas.config uses {entry.login_module}, but sasl.mechanism=OAUTHBEARER "
                          f"needs {module}; write {example}")
    claim = (entry.options.get("unsecuredLoginPrincipalClaimName") or "").strip() or "sub"
    principal = (entry.options.get(f"unsecuredLoginStringClaim_{claim}") or "").strip()
    if claim != "sub":
        raise ConfigError(f"{source}: unsecuredLoginPrincipalClaimName={claim}: kafka-shim's client puts the principal in "
                          f"the sub claim only; remove the option and write {example}")
    if not principal:
        raise ConfigError(f"{source}: sasl.jaas.config names no principal (unsecuredLoginStringClaim_sub); write {example}")
    lifetime = entry.options.get("unsecuredLoginLifetimeSeconds", "3600")
    try:
        lifetime_s = float(int(lifetime))
    except ValueError:
        raise ConfigError(f"{source}: unsecuredLoginLifetimeSeconds={lifetime!r} is not a whole number of seconds") from None
    scope_option = entry.options.get("unsecuredLoginListClaim_scope", "")
    # Kafka's list claims: the first character separates the items that follow.
    scope = tuple(item for item in scope_option[1:].split(scope_option[0]) if item) if scope_option else ()
    return principal, lifetime_s, scope


def _jaas_credentials(props: Mapping[str, str], mechanism: str, source: str) -> tuple[str, str]:
    module = LOGIN_MODULES[mechanism]
    example = f'sasl.jaas.config={module} required username="alice" password="alice-secret";'
    value = props.get("sasl.jaas.config", "").strip()
    if not value:
        raise ConfigError(f"{source}: sasl.mechanism={mechanism} needs the user's credentials; add {example}")
    entries = parse_jaas_config(value)
    entry = entries[0]
    if entry.login_module != module:
        raise ConfigError(f"{source}: sasl.jaas.config uses {entry.login_module}, but sasl.mechanism={mechanism} "
                          f"needs {module}; write {example}")
    username, password = entry.options.get("username"), entry.options.get("password")
    if username is None or password is None:
        raise ConfigError(f"{source}: sasl.jaas.config has no username= or password=; write {example}")
    return username, password
