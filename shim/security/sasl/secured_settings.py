"""The secured OAUTHBEARER validator's settings, read with Kafka 3.9's names, defaults and checks
(AccessTokenValidatorFactory, VerificationKeyResolverFactory, ConfigurationUtils)."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable, Mapping

from kafka_shim.shim.config.broker_config import ConfigError
from kafka_shim.shim.javacompat.strings import java_trim
from kafka_shim.shim.security.sasl.jwks_source import EndpointKeys, FileKeys, JwksSourceError, open_keys
from kafka_shim.shim.security.sasl.secured_jwt import SecuredValidatorOptions

JWKS_URL = "sasl.oauthbearer.jwks.endpoint.url"
REFRESH_MS = "sasl.oauthbearer.jwks.endpoint.refresh.ms"
RETRY_BACKOFF_MS = "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms"
RETRY_BACKOFF_MAX_MS = "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms"
CLOCK_SKEW_SECONDS = "sasl.oauthbearer.clock.skew.seconds"
EXPECTED_AUDIENCE = "sasl.oauthbearer.expected.audience"
EXPECTED_ISSUER = "sasl.oauthbearer.expected.issuer"
SCOPE_CLAIM_NAME = "sasl.oauthbearer.scope.claim.name"
SUB_CLAIM_NAME = "sasl.oauthbearer.sub.claim.name"
_DEFAULTS = {REFRESH_MS: "3600000", RETRY_BACKOFF_MS: "100", RETRY_BACKOFF_MAX_MS: "10000", CLOCK_SKEW_SECONDS: "30",
             SCOPE_CLAIM_NAME: "scope", SUB_CLAIM_NAME: "sub"}

# One endpoint reader per configuration, as Kafka keeps one resolver per configuration: brokers started again in a
# process (tests) share it instead of each starting a refreshing thread.
_ENDPOINTS: dict[tuple, EndpointKeys] = {}
_ENDPOINTS_LOCK = threading.Lock()

# name -> (the key it was found under, its value or None)
Lookup = Callable[[str], tuple[str, str | None]]


def secured_options(lookup: Lookup, jaas_options: Mapping[str, str] | None = None,
                    jaas_key: str = "sasl.jaas.config") -> SecuredValidatorOptions:
    """The validator and its key source; ConfigError (naming the key) where Kafka's broker would not start.
    ``jaas_options``: the options of the listener's OAUTHBEARER JAAS entry (``jaas_key``), whose ``ssl.*`` keys
    say how an ``https`` JWKS endpoint is trusted (JaasOptionsUtils.createSSLSocketFactory)."""
    url_key, url = _string(lookup, JWKS_URL, required=True)
    assert url is not None
    refresh = _number(lookup, REFRESH_MS, minimum=0)
    backoff, backoff_max = _number(lookup, RETRY_BACKOFF_MS), _number(lookup, RETRY_BACKOFF_MAX_MS)
    try:
        source = _source(url, url_key, refresh, backoff, backoff_max, _ssl_options(jaas_options or {}), jaas_key)
    except JwksSourceError as exc:
        raise ConfigError(f"{exc}; the broker needs the keys that sign its clients' tokens") from None
    _, audience_text = lookup(EXPECTED_AUDIENCE)
    audiences = [java_trim(item) for item in (audience_text or "").split(",")]
    audiences = [item for item in audiences if item]
    return SecuredValidatorOptions(
        keys=source.keys, missing_key=source.missing_key, clock_skew_s=_number(lookup, CLOCK_SKEW_SECONDS, bits=32),
        audiences=frozenset(audiences) or None, issuer=_string(lookup, EXPECTED_ISSUER, required=False)[1],
        scope_claim=_string(lookup, SCOPE_CLAIM_NAME, required=True)[1] or "scope",
        sub_claim=_string(lookup, SUB_CLAIM_NAME, required=True)[1] or "sub")


def _ssl_options(jaas_options: Mapping[str, str]) -> dict[str, str]:
    """The JAAS entry's options a Kafka client's SSL configuration reads (ConfigDef.withClientSslSupport)."""
    return {name: value for name, value in jaas_options.items() if name.startswith("ssl.")}


def _source(url: str, key: str, refresh: int, backoff: int, backoff_max: int, ssl_options: dict[str, str],
            jaas_key: str) -> FileKeys | EndpointKeys:
    if url.lower().startswith("file:"):
        return open_keys(url, key, refresh, backoff, backoff_max)  # type: ignore[return-value]

    def context() -> ssl.SSLContext:
        # Imported here: only an https endpoint needs it.
        from kafka_shim.shim.security.tls.context import client_ssl_context

        try:
            made = client_ssl_context(ssl_options)
        except ConfigError as exc:
            raise ConfigError(f"{jaas_key} (its ssl.* options, for the https JWKS endpoint {url}): {exc}") from None
        made.check_hostname = True
        return made

    identity = (url, refresh, backoff, backoff_max, tuple(sorted(ssl_options.items())))
    with _ENDPOINTS_LOCK:
        found = _ENDPOINTS.get(identity)
        if found is None:
            found = _ENDPOINTS[identity] = open_keys(url, key, refresh, backoff, backoff_max, context)  # type: ignore[assignment]
    return found  # type: ignore[return-value]


def _string(lookup: Lookup, name: str, required: bool) -> tuple[str, str | None]:
    key, value = lookup(name)
    if value is None:
        value = _DEFAULTS.get(name)
    if value is None:
        if required:
            raise ConfigError(f"The OAuth configuration option {name} value must be non-null: set {key} (the secured "
                              "OAUTHBEARER validator needs it)")
        return key, None
    value = java_trim(value)
    if not value:
        if required:
            raise ConfigError(f"The OAuth configuration option {name} value must not contain only whitespace ({key})")
        return key, None
    return key, value


def _number(lookup: Lookup, name: str, minimum: int | None = None, bits: int = 64) -> int:
    key, text = lookup(name)
    text = java_trim(text if text is not None else _DEFAULTS[name])
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{key}={text!r} is not a whole number") from None
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ConfigError(f"{key}={text} is out of range")
    if minimum is not None and value < minimum:
        raise ConfigError(f"The OAuth configuration option {name} value must be at least {minimum} ({key})")
    return value
