"""TLS contexts built from Kafka's ``ssl.*`` keys: PEM key and trust stores (KIP-651), client authentication, protocols.

A listener's value for a key is ``listener.name.<listener lower-case>.<key>`` when set, else ``<key>`` (Kafka's
per-listener override). Only PEM stores can be loaded; JKS and PKCS12 stores (Kafka's default type is JKS) get an
error that says how to convert them. Errors are ConfigErrors naming the key (and file) and what to do.
"""

from __future__ import annotations

import os
import secrets
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from kafka_shim.shim.config.broker_config import ConfigError
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.security.tls.ciphers import apply_cipher_suites
from kafka_shim.shim.security.tls.pem import check_key_matches, load_certificates, load_private_key, looks_like_pem

log = get_logger("kafka_shim.tls")

PEM = "PEM"
CLIENT_AUTH_VALUES = ("required", "requested", "none")
_VERIFY_MODES = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
# Java knows these but its java.security disables them, so a handshake can never use them.
_JAVA_DISABLED_PROTOCOLS = {"TLSv1", "TLSv1.1", "SSLv3", "SSLv2Hello"}
_DEFAULT_ENABLED_PROTOCOLS = "TLSv1.2,TLSv1.3"
_DEFAULT_PROTOCOL = "TLSv1.3"


def listener_prefix(listener_name: str) -> str:
    """Kafka's ListenerName.configPrefix(): the name is lower-cased."""
    return f"listener.name.{listener_name.lower()}."


@dataclass(frozen=True)
class Settings:
    """Kafka keys as one listener (or a client, with no listener) sees them."""

    props: Mapping[str, str]
    listener_name: str | None = None

    def lookup(self, key: str) -> tuple[str, str] | None:
        """(the key as written, its value), the listener-prefixed key first; None when neither is set."""
        if self.listener_name is not None:
            prefixed = listener_prefix(self.listener_name) + key
            if prefixed in self.props:
                return prefixed, self.props[prefixed]
        if key in self.props:
            return key, self.props[key]
        return None

    def get(self, key: str) -> str | None:
        """The value, or None when unset; an empty value counts as unset, like a Kafka key left out."""
        found = self.lookup(key)
        if found is None:
            return None
        return found[1].strip() or None

    def name(self, key: str) -> str:
        """How to tell a person which key to set: the one written; else prefixed if this listener has prefixed keys."""
        found = self.lookup(key)
        if found:
            return found[0]
        if self.listener_name is None:
            return key
        prefix = listener_prefix(self.listener_name)
        return prefix + key if any(k.startswith(prefix) for k in self.props) else key


def ssl_client_auth(listener_name: str, props: Mapping[str, str], security_protocol: str = "SSL") -> str:
    """``none``, ``requested`` or ``required``, as Kafka decides it for this listener.

    On SASL_SSL listeners only the listener-prefixed key counts (KIP-684): a broker-wide ``ssl.client.auth`` applies to
    SSL listeners only, and Kafka warns when it is set to something else than none.
    """
    settings = Settings(props, listener_name)
    prefixed = listener_prefix(listener_name) + "ssl.client.auth"
    if security_protocol == "SASL_SSL" and prefixed not in props:
        broker_wide = props.get("ssl.client.auth")
        if broker_wide is not None and broker_wide != "none":
            log.warning(
                "ssl_client_auth_not_applied", listener=listener_name, key="ssl.client.auth", value=broker_wide,
                hint=f"ssl.client.auth applies to SSL listeners only; set {prefixed} to enable it on this SASL_SSL listener",
            )
        return "none"
    found = settings.lookup("ssl.client.auth")
    if found is None:
        return "none"
    key, value = found
    if value not in CLIENT_AUTH_VALUES:
        raise ConfigError(f"Invalid value {value} for configuration {key}: String must be one of: {', '.join(CLIENT_AUTH_VALUES)}")
    return value


def listener_ssl_context(listener_name: str, props: Mapping[str, str], security_protocol: str = "SSL") -> ssl.SSLContext:
    """The server-side context for an SSL or SASL_SSL listener, from Kafka's keys in ``props``."""
    settings = Settings(props, listener_name)
    where = f"listener {listener_name}"
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    keystore = _keystore(settings)
    if keystore is None:
        raise ConfigError(
            f"{where} ({security_protocol}) needs a key and certificate: set {settings.name('ssl.keystore.type')}=PEM and "
            f"{settings.name('ssl.keystore.location')} to a PEM file holding the private key and the certificate chain "
            f"(or {settings.name('ssl.keystore.key')} and {settings.name('ssl.keystore.certificate.chain')} inline)"
        )
    _load_key_and_chain(ctx, *keystore)
    client_auth = ssl_client_auth(listener_name, props, security_protocol)
    ctx.verify_mode = _VERIFY_MODES[client_auth]
    # Kafka loads a configured trust store whatever ssl.client.auth says, so a broken one stops the broker either way.
    certs = _trust_certificates(settings)
    if certs is not None or client_auth != "none":
        _load_trust(ctx, certs)
    _apply_protocols(ctx, settings, server=True)
    apply_cipher_suites(ctx, settings.get("ssl.cipher.suites"), settings.name("ssl.cipher.suites"))
    log.debug("ssl_context_built", listener=listener_name, client_auth=client_auth,
              minimum_version=ctx.minimum_version.name, maximum_version=ctx.maximum_version.name)
    return ctx


def client_ssl_context(props: Mapping[str, str]) -> ssl.SSLContext:
    """A client-side context from a Kafka client's keys (truststore; keystore for mTLS; endpoint identification)."""
    settings = Settings(props)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    # Kafka's default is https (check the host name); an empty value turns the check off.
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip()
    ctx.check_hostname = bool(algorithm)
    ctx.verify_mode = ssl.CERT_REQUIRED
    _load_trust(ctx, _trust_certificates(settings))
    keystore = _keystore(settings)
    if keystore is not None:
        _load_key_and_chain(ctx, *keystore)
    _apply_protocols(ctx, settings, server=False)
    apply_cipher_suites(ctx, settings.get("ssl.cipher.suites"), settings.name("ssl.cipher.suites"))
    return ctx


# -- stores --------------------------------------------------------------------------------------------------------


def _keystore(settings: Settings) -> tuple[PrivateKeyTypes, list[x509.Certificate]] | None:
    """The private key and certificate chain, or None when no keystore is configured."""
    store_type = settings.get("ssl.keystore.type")
    location = settings.get("ssl.keystore.location")
    inline_key = settings.get("ssl.keystore.key")
    inline_chain = settings.get("ssl.keystore.certificate.chain")
    store_password = settings.get("ssl.keystore.password")
    key_password = settings.get("ssl.key.password")
    n = settings.name
    if inline_key is not None or inline_chain is not None:
        if inline_key is None:
            raise ConfigError(f"{n('ssl.keystore.certificate.chain')} is set but {n('ssl.keystore.key')} is not; set both, or neither")
        if inline_chain is None:
            raise ConfigError(f"{n('ssl.keystore.key')} is set but {n('ssl.keystore.certificate.chain')} is not; set both, or neither")
        _require_pem_type(settings, "ssl.keystore.type", store_type, inline=n("ssl.keystore.key"))
        if location is not None:
            raise ConfigError(
                f"both {n('ssl.keystore.location')} and {n('ssl.keystore.key')} are set; keep one: the file or the inline PEM"
            )
        _reject_store_password(settings, "ssl.keystore.password", store_password, "only ssl.key.password (for an encrypted key) may be set")
        key_source, chain_source = n("ssl.keystore.key"), n("ssl.keystore.certificate.chain")
        key, _ = _private_key(inline_key, key_password, key_source, n("ssl.key.password"))
        certs = load_certificates(inline_chain, chain_source)
        check_key_matches(key, certs, key_source, chain_source)
        return key, certs
    if location is None:
        if store_password is not None:
            raise ConfigError(f"{n('ssl.keystore.password')} is set but {n('ssl.keystore.location')} is not; set the location or remove the password")
        return None
    text = _store_text(settings, "ssl.keystore.type", store_type, "ssl.keystore.location", location, keystore=True)
    _reject_store_password(settings, "ssl.keystore.password", store_password, "only ssl.key.password (for an encrypted key) may be set")
    source = f"{n('ssl.keystore.location')}={location}"
    key, _ = _private_key(text, key_password, source, n("ssl.key.password"))
    certs = load_certificates(text, source)
    check_key_matches(key, certs, source, source)
    return key, certs


def _private_key(text: str, password: str | None, source: str, password_key: str) -> tuple[PrivateKeyTypes, bool]:
    key, pkcs8 = load_private_key(text, password, source, password_key)
    if not pkcs8:
        log.warning("ssl_key_not_pkcs8", source=source,
                    hint="Apache Kafka reads only PKCS#8 keys; convert with: openssl pkcs8 -topk8 -in KEY.pem -out key-pkcs8.pem")
    return key, pkcs8


def _trust_certificates(settings: Settings) -> list[x509.Certificate] | None:
    store_type = settings.get("ssl.truststore.type")
    location = settings.get("ssl.truststore.location")
    inline = settings.get("ssl.truststore.certificates")
    password = settings.get("ssl.truststore.password")
    n = settings.name
    if inline is not None:
        _require_pem_type(settings, "ssl.truststore.type", store_type, inline=n("ssl.truststore.certificates"))
        if location is not None:
            raise ConfigError(
                f"both {n('ssl.truststore.location')} and {n('ssl.truststore.certificates')} are set; keep one: the file or the inline PEM"
            )
        _reject_store_password(settings, "ssl.truststore.password", password, "PEM trust stores have no password")
        return load_certificates(inline, n("ssl.truststore.certificates"))
    if location is None:
        if password is not None:
            raise ConfigError(f"{n('ssl.truststore.password')} is set but {n('ssl.truststore.location')} is not; set the location or remove the password")
        return None
    text = _store_text(settings, "ssl.truststore.type", store_type, "ssl.truststore.location", location, keystore=False)
    _reject_store_password(settings, "ssl.truststore.password", password, "PEM trust stores have no password")
    return load_certificates(text, f"{n('ssl.truststore.location')}={location}")


def _load_trust(ctx: ssl.SSLContext, certs: list[x509.Certificate] | None) -> None:
    if certs is None:
        # Kafka falls back to the JVM's default trust store; ours is the system's.
        ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH if ctx.protocol == ssl.PROTOCOL_TLS_SERVER else ssl.Purpose.SERVER_AUTH)
        return
    ctx.load_verify_locations(cadata="".join(c.public_bytes(serialization.Encoding.PEM).decode("ascii") for c in certs))
    # Java trusts any certificate in its trust store as an anchor, not only self-signed roots.
    ctx.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN


def _load_key_and_chain(ctx: ssl.SSLContext, key: PrivateKeyTypes, certs: list[x509.Certificate]) -> None:
    # ssl can only load a key and chain from a file: write them to a private temporary file, the key encrypted with a
    # one-time password, and delete it at once.
    password = secrets.token_urlsafe(24).encode("ascii")
    data = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(password)
    ) + b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)
    fd, path = tempfile.mkstemp(prefix="kafka-shim-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        ctx.load_cert_chain(path, password=password)
    finally:
        os.unlink(path)


def _require_pem_type(settings: Settings, type_key: str, store_type: str | None, inline: str) -> None:
    if store_type == PEM:
        return
    shown = store_type if store_type is not None else "JKS (Kafka's default)"
    raise ConfigError(f"{inline} is inline PEM, which Kafka accepts only with {settings.name(type_key)}=PEM (it is {shown}); set it to PEM")


def _reject_store_password(settings: Settings, password_key: str, password: str | None, why: str) -> None:
    if password is not None:
        raise ConfigError(f"{settings.name(password_key)} cannot be used with PEM stores ({why}); remove it")


def _store_text(settings: Settings, type_key: str, store_type: str | None, location_key: str, location: str, keystore: bool) -> str:
    """The PEM text of a store file; other store types get an error saying how to convert them."""
    shown_location = f"{settings.name(location_key)}={location}"
    data = _read_file(shown_location, location)
    text = data.decode("utf-8", errors="replace")
    is_pem = looks_like_pem(text)
    if store_type == PEM:
        if not is_pem:
            raise ConfigError(f"{shown_location} is not a PEM file (no -----BEGIN ...----- block); {_conversion_hint(location, _sniff(data), keystore)}")
        return text
    if store_type is not None and store_type.upper() == PEM:
        raise ConfigError(f"{settings.name(type_key)}={store_type}: Kafka compares the type case-sensitively; write PEM")
    if store_type is None and is_pem:
        return text  # Kafka would read it as JKS (its default type) and fail; the content is unambiguous
    detected = _sniff(data)
    if is_pem:
        raise ConfigError(f"{shown_location} is a PEM file but {settings.name(type_key)}={store_type}; set {settings.name(type_key)}=PEM")
    declared = store_type or "JKS (Kafka's default, as ssl.*.type is not set)"
    raise ConfigError(
        f"{shown_location} is a {detected or 'non-PEM'} store (type {declared}); kafka-shim reads PEM stores only. "
        f"{_conversion_hint(location, detected or store_type, keystore)}, then set {settings.name(type_key)}=PEM and "
        f"{settings.name(location_key)} to the PEM file"
    )


def _read_file(shown: str, path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise ConfigError(f"{shown}: no such file; check the path (it is read by the broker process, relative to its working directory)") from None
    except IsADirectoryError:
        raise ConfigError(f"{shown} is a directory; give the path of the PEM file") from None
    except PermissionError:
        raise ConfigError(f"{shown} cannot be read: permission denied; let the broker's user read it") from None
    except OSError as exc:
        raise ConfigError(f"{shown} cannot be read: {exc.strerror or exc}") from None


def _sniff(data: bytes) -> str | None:
    if data[:4] == b"\xfe\xed\xfe\xed":
        return "JKS"
    if data[:4] == b"\xce\xce\xce\xce":
        return "JCEKS"
    if data[:1] == b"\x30":
        return "PKCS12"
    return None


def _conversion_hint(path: str, store_type: str | None, keystore: bool) -> str:
    java_store = store_type in ("JKS", "JCEKS")
    if keystore:
        steps = []
        p12 = path
        if java_store or store_type is None:
            p12 = "keystore.p12"
            steps.append(f"keytool -importkeystore -srckeystore {path} -destkeystore keystore.p12 -deststoretype PKCS12")
        steps.append(f"openssl pkcs12 -in {p12} -out keystore.pem -nodes")
        return (
            "Convert the key store to PEM with: " + " && ".join(steps)
            + " (without -nodes the key stays encrypted: then set ssl.key.password to the PEM pass phrase)"
        )
    if java_store or store_type is None:
        return f"Export the trusted certificates to PEM with: keytool -list -rfc -keystore {path} > truststore.pem"
    return f"Export the trusted certificates to PEM with: openssl pkcs12 -in {path} -nokeys -out truststore.pem"


# -- protocols -----------------------------------------------------------------------------------------------------


def _apply_protocols(ctx: ssl.SSLContext, settings: Settings, server: bool) -> None:
    """ssl.enabled.protocols (or, when empty, what ssl.protocol enables in Java) as minimum and maximum versions."""
    enabled_key = settings.name("ssl.enabled.protocols")
    found = settings.lookup("ssl.enabled.protocols")
    listed = [p.strip() for p in (found[1] if found else _DEFAULT_ENABLED_PROTOCOLS).split(",") if p.strip()]
    if not listed:
        protocol = settings.get("ssl.protocol") or _DEFAULT_PROTOCOL
        if protocol in ("TLSv1.3", "TLS") or server:
            # Java's server engines enable TLSv1.3 and TLSv1.2 whatever the context's protocol.
            listed = ["TLSv1.2", "TLSv1.3"]
        elif protocol == "TLSv1.2":
            listed = ["TLSv1.2"]
        else:
            raise ConfigError(f"{settings.name('ssl.protocol')}={protocol} is not supported; use TLSv1.3 (Kafka's default) or TLSv1.2")
    unknown = [p for p in listed if p not in _VERSIONS and p not in _JAVA_DISABLED_PROTOCOLS]
    if unknown:
        raise ConfigError(f"{enabled_key} lists unsupported protocols {', '.join(unknown)}; use TLSv1.2 and/or TLSv1.3")
    versions = sorted(_VERSIONS[p] for p in listed if p in _VERSIONS)
    if not versions:
        raise ConfigError(
            f"{enabled_key}={','.join(listed)} leaves no usable protocol (Java disables TLSv1 and TLSv1.1); use TLSv1.2 and/or TLSv1.3"
        )
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
