"""``ssl.cipher.suites``: Java (IANA) cipher-suite names translated to OpenSSL's, best effort.

Java and OpenSSL name TLS 1.2 suites differently (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 is ECDHE-RSA-AES128-GCM-SHA256);
TLS 1.3 suites have the same names, but Python's ssl cannot narrow them, so a list with any TLS 1.3 suite enables all
three. A list without TLS 1.3 suites keeps TLS 1.3 off, as in Java, where no suite would be left for it.
"""

from __future__ import annotations

import re
import ssl

from kafka_shim.shim.config.broker_config import ConfigError
from kafka_shim.shim.config.logging import get_logger

log = get_logger("kafka_shim.tls")

TLS13_SUITES = ("TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256")
_TLS13_OTHER = ("TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256")
# Pseudo suites Java lists for protocol signalling; there is nothing to enable for them.
_SIGNALLING = {"TLS_EMPTY_RENEGOTIATION_INFO_SCSV", "TLS_FALLBACK_SCSV"}
_KEY_EXCHANGE = {
    "RSA": "",
    "ECDHE_RSA": "ECDHE-RSA-",
    "ECDHE_ECDSA": "ECDHE-ECDSA-",
    "DHE_RSA": "DHE-RSA-",
    "DHE_DSS": "DHE-DSS-",
    "DH_anon": "ADH-",
    "ECDH_anon": "AECDH-",
}
_SUITE = re.compile(r"(?:TLS|SSL)_(?P<kx>[A-Za-z]+(?:_[A-Za-z]+)?)_WITH_(?P<cipher>\w+)")
_BLOCK_CIPHER = re.compile(r"(?P<alg>AES|CAMELLIA|ARIA)_(?P<bits>128|256)_(?P<mode>GCM|CBC|CCM_8|CCM)(?:_(?P<mac>SHA|SHA256|SHA384))?")


def openssl_cipher_name(java_name: str) -> str | None:
    """OpenSSL's name for a TLS 1.2 (or older) suite named as Java names it; None when there is no rule for it."""
    match = _SUITE.fullmatch(java_name)
    if not match or match.group("kx") not in _KEY_EXCHANGE:
        return None
    kx, cipher = match.group("kx"), match.group("cipher")
    prefix = _KEY_EXCHANGE[kx]
    block = _BLOCK_CIPHER.fullmatch(cipher)
    if block:
        alg, bits, mode, mac = block.group("alg", "bits", "mode", "mac")
        if mode == "GCM" and mac in ("SHA256", "SHA384"):
            body = f"{alg}{bits}-GCM-{mac}"
        elif mode == "CBC" and mac and alg != "ARIA":
            body = f"{alg}{bits}-{mac}"
        elif mode == "CCM" and not mac and alg == "AES":
            body = f"{alg}{bits}-CCM"
        elif mode == "CCM_8" and not mac and alg == "AES":
            body = f"{alg}{bits}-CCM8"
        else:
            return None
        if kx == "ECDHE_RSA" and alg == "ARIA":
            prefix = "ECDHE-"  # OpenSSL's one irregular name
        return prefix + body
    if cipher == "CHACHA20_POLY1305_SHA256" and kx not in ("RSA", "DHE_DSS", "DH_anon", "ECDH_anon"):
        return prefix + "CHACHA20-POLY1305"
    if cipher in ("NULL_SHA", "NULL_SHA256", "NULL_MD5") and kx in ("RSA", "ECDHE_RSA", "ECDHE_ECDSA", "ECDH_anon"):
        return prefix + "NULL-" + cipher[len("NULL_") :]
    if cipher == "3DES_EDE_CBC_SHA" and kx in ("RSA", "ECDHE_RSA", "ECDHE_ECDSA"):
        return prefix + "DES-CBC3-SHA"
    return None


def apply_cipher_suites(ctx: ssl.SSLContext, value: str | None, key: str) -> None:
    """Restrict ``ctx`` to the suites listed in ``value`` (Kafka's ssl.cipher.suites); nothing when unset."""
    names = [name.strip() for name in (value or "").split(",") if name.strip()]
    if not names:
        return
    tls13 = [name for name in names if name in TLS13_SUITES or name in _TLS13_OTHER]
    untranslated = []
    translated: dict[str, str] = {}
    for name in names:
        if name in tls13 or name in _SIGNALLING:
            continue
        openssl_name = openssl_cipher_name(name)
        if openssl_name is None:
            untranslated.append(name)
        else:
            translated[name] = openssl_name
    available = _available_tls12(ctx, list(translated.values()))
    usable = [o for o in translated.values() if o in available]
    unavailable = [name for name, o in translated.items() if o not in available]
    if not usable and not tls13:
        details = []
        if untranslated:
            details.append(f"no OpenSSL equivalent known for {', '.join(untranslated)}")
        if unavailable:
            details.append(f"not available in this OpenSSL ({ssl.OPENSSL_VERSION}): {', '.join(unavailable)}")
        raise ConfigError(
            f"{key}={value}: none of these cipher suites can be enabled ({'; '.join(details)}). kafka-shim runs on OpenSSL, "
            "whose suite names differ from Java's; Java's names are translated (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 is "
            "ECDHE-RSA-AES128-GCM-SHA256 there). List suites that exist in both, or remove the key to use the defaults"
        )
    if untranslated or unavailable:
        log.warning("ssl_cipher_suites_ignored", key=key, untranslated=untranslated, unavailable=unavailable)
    if usable:
        ctx.set_ciphers(":".join(usable))
    else:
        _narrow(ctx, key, minimum=ssl.TLSVersion.TLSv1_3)
    if not tls13:
        _narrow(ctx, key, maximum=ssl.TLSVersion.TLSv1_2)
    elif sorted(tls13) != sorted(TLS13_SUITES):
        log.warning("ssl_cipher_suites_tls13_not_narrowed", key=key, listed=tls13,
                    hint="Python's ssl enables all TLS 1.3 suites whenever one is listed")


def _available_tls12(ctx: ssl.SSLContext, openssl_names: list[str]) -> set[str]:
    if not openssl_names:
        return set()
    probe = ssl.SSLContext(ctx.protocol)
    try:
        probe.set_ciphers(":".join(openssl_names))
    except ssl.SSLError:
        return set()
    return {c["name"] for c in probe.get_ciphers()} - set(TLS13_SUITES)


def _narrow(ctx: ssl.SSLContext, key: str, minimum: ssl.TLSVersion | None = None, maximum: ssl.TLSVersion | None = None) -> None:
    low = minimum or ctx.minimum_version
    high = maximum or ctx.maximum_version
    if low > high:
        need = "a TLS 1.2 suite" if minimum is not None else "a TLS 1.3 suite (TLS_AES_128_GCM_SHA256...)"
        raise ConfigError(f"{key} leaves no suite for the enabled protocols (ssl.enabled.protocols); add {need}")
    ctx.minimum_version, ctx.maximum_version = low, high
