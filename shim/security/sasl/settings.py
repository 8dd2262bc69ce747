"""SASL settings per listener, read from Kafka's own server.properties keys.

- Mechanisms: ``listener.name.<listener>.sasl.enabled.mechanisms``, else ``sasl.enabled.mechanisms``, else Kafka's
  default GSSAPI (which kafka-shim cannot serve, so a SASL listener left with it is a configuration error).
- Users: ``listener.name.<listener>.<mechanism>.sasl.jaas.config`` (listener and mechanism in lower case, Kafka's
  ListenerName.saslMechanismConfigPrefix). PLAIN users are the ``user_<name>="<password>"`` options of a
  PlainLoginModule entry, as in Kafka. For SCRAM, Kafka keeps credentials in its metadata log; kafka-shim also
  reads ``user_<name>`` options of the ScramLoginModule entry and derives salted credentials from them at start-up.
- Re-authentication (KIP-368): ``connections.max.reauth.ms`` (0, the default, is off), overridable per listener
  (``listener.name.<listener>.connections.max.reauth.ms``) and per listener and mechanism
  (``listener.name.<listener>.<mechanism>.connections.max.reauth.ms``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_shim.shim.config.broker_config import ConfigError
from kafka_shim.shim.security.sasl.jaas import JaasEntry, parse_jaas_config
from kafka_shim.shim.security.sasl.oauthbearer import LOGIN_MODULE as OAUTHBEARER_LOGIN_MODULE
from kafka_shim.shim.security.sasl.oauthbearer import MECHANISM as OAUTHBEARER
from kafka_shim.shim.security.sasl.scram_math import MECHANISMS as SCRAM_MECHANISMS
from kafka_shim.shim.security.sasl.unsecured_jws import UnsecuredValidatorOptions

if TYPE_CHECKING:
    from kafka_shim.shim.security.sasl.secured_jwt import SecuredValidatorOptions

PLAIN = "PLAIN"
SUPPORTED_MECHANISMS = (PLAIN, *SCRAM_MECHANISMS, OAUTHBEARER)
KAFKA_DEFAULT_MECHANISMS = "GSSAPI"
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
LOGIN_MODULES = {PLAIN: PLAIN_LOGIN_MODULE, **{m: SCRAM_LOGIN_MODULE for m in SCRAM_MECHANISMS},
                 OAUTHBEARER: OAUTHBEARER_LOGIN_MODULE}
# Kafka's default server callback handler for OAUTHBEARER.
UNSECURED_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"
SERVER_CALLBACK_KEY = "sasl.server.callback.handler.class"
# Kafka 3.9's secured validator (KIP-768), under its name and the deprecated one.
SECURED_VALIDATORS = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
                      "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler")
USER_PREFIX = "user_"
REAUTH_KEY = "connections.max.reauth.ms"
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
_UNSUPPORTED = {
    "GSSAPI": "Kerberos (GSSAPI) is not supported by kafka-shim",
}


def listener_prefix(listener: str) -> str:
    return f"listener.name.{listener.lower()}."


def mechanism_prefix(listener: str, mechanism: str) -> str:
    return f"{listener_prefix(listener)}{mechanism.lower()}."


@dataclass(frozen=True)
class ListenerSasl:
    """One SASL listener: its mechanisms in configured order, its users, its re-authentication intervals."""

    listener: str
    mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] = field(repr=False)  # name -> password
    scram_users: Mapping[str, Mapping[str, str]] = field(repr=False)  # mechanism -> name -> password
    reauth_ms: Mapping[str, int] = field(default_factory=dict)  # mechanism -> connections.max.reauth.ms
    listener_reauth_ms: int = 0  # the listener's own (or the global) connections.max.reauth.ms
    oauthbearer: UnsecuredValidatorOptions | SecuredValidatorOptions | None = None  # OAUTHBEARER's validator, when on


@dataclass(frozen=True)
class SaslSettings:
    listeners: Mapping[str, ListenerSasl]
    connections_max_reauth_ms: int = 0
    warnings: tuple[str, ...] = ()  # things Kafka also only warns about; the broker logs them at start-up

    @classmethod
    def from_properties(cls, props: Mapping[str, str], listener_names: list[str]) -> SaslSettings:
        """Settings for the SASL listeners among ``listener_names``; ConfigError when Kafka's keys are wrong.

        A listener whose security protocol (``listener.security.protocol.map``) is not SASL_PLAINTEXT or SASL_SSL is
        left out; a name the map does not mention is taken as a SASL listener.
        """
        global_reauth = _reauth(props, REAUTH_KEY, 0)
        warnings = []
        if props.get("sasl.jaas.config", "").strip():
            warnings.append("sasl.jaas.config is ignored on a broker (as Kafka ignores it): write "
                            "listener.name.<listener>.<mechanism>.sasl.jaas.config instead")
        protocols = _protocol_map(props.get("listener.security.protocol.map", ""))
        listeners = {}
        for name in listener_names:
            if protocols.get(name.upper(), SASL_PROTOCOLS[0]) in SASL_PROTOCOLS:
                listeners[name.upper()] = _listener(props, name.upper(), global_reauth)
        _check_scram_passwords_agree(listeners.values())
        return cls(listeners, global_reauth, tuple(warnings))

    def listener(self, name: str) -> ListenerSasl:
        try:
            return self.listeners[name.upper()]
        except KeyError:
            raise KeyError(f"listener {name} has no SASL settings") from None

    def enabled_mechanisms(self, listener: str) -> list[str]:
        return list(self.listener(listener).mechanisms)

    def reauth_ms(self, listener: str, mechanism: str | None = None) -> int:
        """connections.max.reauth.ms for this listener, and mechanism if given (0: sessions never expire)."""
        lst = self.listener(listener)
        if mechanism is None:
            return lst.listener_reauth_ms
        return lst.reauth_ms.get(mechanism, lst.listener_reauth_ms)

    def plain_password(self, listener: str, user: str) -> str | None:
        return self.listener(listener).plain_users.get(user)

    def scram_users(self) -> list[tuple[str, str, str]]:
        """(user, mechanism, password) from every listener's SCRAM JAAS, each once, in configuration order."""
        seen: dict[tuple[str, str], str] = {}
        for lst in self.listeners.values():
            for mechanism, users in lst.scram_users.items():
                for user, password in users.items():
                    seen.setdefault((user, mechanism), password)
        return [(user, mechanism, password) for (user, mechanism), password in seen.items()]


def _listener(props: Mapping[str, str], listener: str, global_reauth: int) -> ListenerSasl:
    key = listener_prefix(listener) + "sasl.enabled.mechanisms"
    source = key if key in props else "sasl.enabled.mechanisms"
    raw = props.get(key, props.get("sasl.enabled.mechanisms", KAFKA_DEFAULT_MECHANISMS))
    mechanisms = tuple(dict.fromkeys(item.strip() for item in raw.split(",") if item.strip()))
    if source not in props:
        source = f"sasl.enabled.mechanisms (not set; Kafka's default is {KAFKA_DEFAULT_MECHANISMS})"
    if not mechanisms:
        raise ConfigError(f"{source} lists no mechanism for the SASL listener {listener}: "
                          f"set {key}=PLAIN (or SCRAM-SHA-256, SCRAM-SHA-512)")
    for mechanism in mechanisms:
        _check_supported(mechanism, listener, source, key)
    plain_users: dict[str, str] = {}
    scram_users: dict[str, dict[str, str]] = {}
    oauthbearer = None
    for mechanism in mechanisms:
        if mechanism == OAUTHBEARER:
            oauthbearer = _oauthbearer(props, listener)
            continue
        users = _jaas_users(props, listener, mechanism)
        if mechanism == PLAIN:
            plain_users = users
        else:
            scram_users[mechanism] = users
    listener_reauth = _reauth(props, listener_prefix(listener) + REAUTH_KEY, global_reauth)
    reauth = {m: _reauth(props, mechanism_prefix(listener, m) + REAUTH_KEY, listener_reauth) for m in mechanisms}
    return ListenerSasl(listener, mechanisms, plain_users, scram_users, reauth, listener_reauth, oauthbearer)


def _protocol_map(value: str) -> dict[str, str]:
    """listener name -> security protocol (shim.config has validated the map; Kafka's default maps each
    protocol name to itself)."""
    mapping = {p: p for p in ("PLAINTEXT", "SSL", *SASL_PROTOCOLS)}
    if value.strip():
        mapping = {}
        for item in value.split(","):
            name, _, protocol = item.strip().partition(":")
            mapping[name.strip().upper()] = protocol.strip().upper()
    return mapping


def _check_supported(mechanism: str, listener: str, source: str, key: str) -> None:
    if mechanism in SUPPORTED_MECHANISMS:
        return
    supported = ", ".join(SUPPORTED_MECHANISMS)
    why = _UNSUPPORTED.get(mechanism.upper())
    if why is None:
        close = [m for m in SUPPORTED_MECHANISMS if m.lower() == mechanism.lower()]
        why = f"{mechanism!r} is not a SASL mechanism kafka-shim knows" + (f" (mechanism names are case-sensitive: {close[0]})" if close else "")
    raise ConfigError(f"{source} enables {mechanism} on the SASL listener {listener}, but {why}; "
                      f"set {key}=PLAIN (or any of {supported})")


def _oauthbearer(props: Mapping[str, str], listener: str) -> UnsecuredValidatorOptions | SecuredValidatorOptions:
    """OAUTHBEARER on a listener: Kafka's default validator of unsecured tokens, configured by the options of the
    listener's OAuthBearerLoginModule entry, or its secured validator (KIP-768) of tokens signed with a JWKS's keys."""
    prefix = mechanism_prefix(listener, OAUTHBEARER)
    handler = (props.get(prefix + SERVER_CALLBACK_KEY) or props.get(SERVER_CALLBACK_KEY) or "").strip()
    if handler and handler != UNSECURED_VALIDATOR and handler not in SECURED_VALIDATORS:
        raise ConfigError(f"{prefix}{SERVER_CALLBACK_KEY}={handler}: kafka-shim validates OAUTHBEARER tokens as Kafka's "
                          f"{UNSECURED_VALIDATOR} (the default: unsigned JWTs, for tests) or its {SECURED_VALIDATORS[0]} "
                          "(signed JWTs, keys from sasl.oauthbearer.jwks.endpoint.url) do; name one of them")
    key = prefix + "sasl.jaas.config"
    example = f'{key}={OAUTHBEARER_LOGIN_MODULE} required unsecuredLoginStringClaim_sub="admin";'
    entry = _jaas_entry(props, listener, OAUTHBEARER, example)
    _check_broker_login(entry.options, key, example)
    if handler in SECURED_VALIDATORS:
        # Imported here: signature checking (cryptography) is not what most brokers need at start-up.
        from kafka_shim.shim.security.sasl.secured_settings import secured_options

        return secured_options(lambda name: _oauth_config(props, listener, name), entry.options, key)
    return UnsecuredValidatorOptions.from_jaas(entry.options, key)


def _oauth_config(props: Mapping[str, str], listener: str, name: str) -> tuple[str, str | None]:
    """A secured validator's setting and the key it came from: the listener's OAUTHBEARER key, the listener's, then the
    broker's (ConfigurationUtils.get on the listener's configs)."""
    for candidate in (mechanism_prefix(listener, OAUTHBEARER) + name, listener_prefix(listener) + name, name):
        if props.get(candidate) is not None:
            return candidate, props[candidate]
    return name, None


def _check_broker_login(options: Mapping[str, str], key: str, example: str) -> None:
    """Kafka's broker logs in with the listener's OAuthBearerLoginModule entry at start-up: an entry with options
    must make an unsecured token of its own (OAuthBearerUnsecuredLoginCallbackHandler), or Kafka does not start."""
    if not options:
        return  # no options: Kafka's login makes no token, and starts
    if all(name.startswith("unsecuredLoginExtension_") for name in options):
        raise ConfigError(f"{key}: Extensions provided in login context without a token; e.g. {example}")
    claim = (options.get("unsecuredLoginPrincipalClaimName") or "").strip() or "sub"
    if not (options.get(f"unsecuredLoginStringClaim_{claim}") or "").strip():
        raise ConfigError(f"{key}: No principal name in JWT claim: {claim} (Kafka's broker logs in with this entry at "
                          f"start-up and fails without unsecuredLoginStringClaim_{claim}); e.g. {example}")
    lifetime = options.get("unsecuredLoginLifetimeSeconds")
    if lifetime is not None:
        try:
            int(lifetime)
        except ValueError:
            raise ConfigError(f"{key}: unsecuredLoginLifetimeSeconds={lifetime!r} is not a whole number of seconds") from None


def _jaas_entry(props: Mapping[str, str], listener: str, mechanism: str, example: str) -> JaasEntry:
    key = mechanism_prefix(listener, mechanism) + "sasl.jaas.config"
    module = LOGIN_MODULES[mechanism]
    value = props.get(key, "").strip()
    if not value:
        raise ConfigError(f"{mechanism} is enabled on the SASL listener {listener} but {key} is not set "
                          f"(kafka-shim reads no JAAS file); set e.g. {example}")
    entries = parse_jaas_config(value, key)
    if len(entries) != 1:
        # Kafka's JaasContext.loadServerContext: a listener's JAAS property holds exactly one login module.
        raise ConfigError(f"{key}: JAAS config property contains {len(entries)} login modules, should be 1 module; "
                          f"e.g. {example}")
    entry = entries[0]
    if entry.login_module != module:
        raise ConfigError(f"{key} names the login module {entry.login_module}, but {mechanism} needs {module}; e.g. {example}")
    return entry


def _jaas_users(props: Mapping[str, str], listener: str, mechanism: str) -> dict[str, str]:
    key = mechanism_prefix(listener, mechanism) + "sasl.jaas.config"
    module = LOGIN_MODULES[mechanism]
    example = f'{key}={module} required user_admin="admin-secret";'
    entry = _jaas_entry(props, listener, mechanism, example)
    users = {}
    for option, password in entry.options.items():
        if not option.startswith(USER_PREFIX):
            continue
        name = option[len(USER_PREFIX):]
        if not name and mechanism != PLAIN:
            raise ConfigError(f"{key}: the option {option!r} names no user; write user_<name>=\"<password>\"")
        if not password and mechanism != PLAIN:
            raise ConfigError(f"{key}: user {name!r} has an empty password; SCRAM needs one to derive a credential")
        users[name] = password
    return users


def _reauth(props: Mapping[str, str], key: str, default: int) -> int:
    text = props.get(key)
    if text is None or not text.strip():
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise ConfigError(f"{key} must be an integer number of milliseconds (0 turns re-authentication off), got {text!r}") from None
    if value < 0:
        raise ConfigError(f"{key} must be 0 (off) or a positive number of milliseconds, got {value}")
    return value


def _check_scram_passwords_agree(listeners) -> None:
    # SCRAM credentials are cluster-wide in Kafka, so one user has one password per mechanism.
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    for lst in listeners:
        for mechanism, users in lst.scram_users.items():
            for user, password in users.items():
                earlier = seen.setdefault((user, mechanism), (lst.listener, password))
                if earlier[1] != password:
                    raise ConfigError(
                        f"user {user!r} has different {mechanism} passwords on the listeners {earlier[0]} and {lst.listener}; "
                        "SCRAM credentials are shared by all listeners, so give the user one password")
