"""PEM keys and certificates as Kafka's PEM keys (KIP-651) carry them, checked with ``cryptography``.

Values come from a file or inline from a properties file, where people write them on one line, joined by spaces
(backslash continuations), or with escaped newlines; all of those are accepted. Every problem is a ConfigError
naming the Kafka key (and file) it came from and saying what to do.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from kafka_shim.shim.config.broker_config import ConfigError

_LABEL = r"[A-Z0-9]+(?:\s+[A-Z0-9]+)*"
_BLOCK = re.compile(rf"-{{3,}}\s*BEGIN\s+(?P<label>{_LABEL})\s*-{{3,}}(?P<body>.*?)-{{3,}}\s*END\s+(?P<end>{_LABEL})\s*-{{3,}}", re.S)
# RFC 1421 headers of traditional ("OpenSSL") encrypted keys; values never contain spaces.
_HEADER = re.compile(r"(?P<name>Proc-Type|DEK-Info)\s*:\s*(?P<value>\S+)")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")

CONVERT_KEY_HINT = "convert it with: openssl pkcs8 -topk8 -in KEY.pem -out key-pkcs8.pem (add -nocrypt to leave it unencrypted)"


@dataclass(frozen=True)
class PemBlock:
    label: str  # e.g. "CERTIFICATE", "ENCRYPTED PRIVATE KEY"
    der: bytes
    headers: dict[str, str] = field(default_factory=dict)

    def to_pem(self) -> bytes:
        """The block re-encoded canonically (64-column base64, headers kept), which every parser reads."""
        lines = [f"-----BEGIN {self.label}-----"]
        if self.headers:
            lines += [f"{name}: {value}" for name, value in self.headers.items()] + [""]
        text = base64.b64encode(self.der).decode("ascii")
        lines += [text[i : i + 64] for i in range(0, len(text), 64)]
        lines.append(f"-----END {self.label}-----")
        return ("\n".join(lines) + "\n").encode("ascii")


def looks_like_pem(text: str) -> bool:
    return _BLOCK.search(_unescape_newlines(text)) is not None


def _unescape_newlines(text: str) -> str:
    # A literal backslash-n cannot be part of PEM (base64 has no backslash), so it is an escaped newline that no
    # properties parser turned into one (environment variables, --override on a command line).
    return text.replace("\\r\\n", "\n").replace("\\n", "\n")


def parse_pem(text: str, source: str) -> list[PemBlock]:
    """Every PEM block in ``text`` (anything between blocks, such as openssl's "Bag Attributes", is ignored)."""
    blocks = []
    for match in _BLOCK.finditer(_unescape_newlines(text)):
        label = " ".join(match.group("label").split())
        if " ".join(match.group("end").split()) != label:
            raise ConfigError(f"{source}: a PEM block starts with BEGIN {label} but ends with END {match.group('end')}; fix the file")
        body = match.group("body")
        headers = {m.group("name"): m.group("value") for m in _HEADER.finditer(body)}
        body = _HEADER.sub("", body)
        if not _BASE64.fullmatch(body):
            raise ConfigError(f"{source}: the PEM block {label} holds characters that are not base64; check the value was copied whole")
        try:
            der = base64.b64decode("".join(body.split()), validate=True)
        except binascii.Error:
            raise ConfigError(f"{source}: the PEM block {label} is not valid base64 (truncated?); check the value was copied whole") from None
        blocks.append(PemBlock(label, der, headers))
    return blocks


def load_certificates(text: str, source: str) -> list[x509.Certificate]:
    """The certificates in ``text``, in order; at least one, as Kafka requires."""
    blocks = [b for b in parse_pem(text, source) if b.label == "CERTIFICATE"]
    if not blocks:
        raise ConfigError(
            f"{source} holds no PEM certificate (-----BEGIN CERTIFICATE-----); "
            "give X.509 certificates in PEM form (openssl x509 -in CERT.der -inform DER -out cert.pem converts DER)"
        )
    certs = []
    for index, block in enumerate(blocks, start=1):
        try:
            certs.append(x509.load_der_x509_certificate(block.der))
        except ValueError as exc:
            raise ConfigError(f"{source}: certificate {index} cannot be parsed ({exc}); replace it with a valid X.509 certificate") from None
    return certs


def load_private_key(text: str, password: str | None, source: str, password_key: str) -> tuple[PrivateKeyTypes, bool]:
    """The one private key in ``text``, decrypted with ``password``; and whether it was in Kafka's PKCS#8 form.

    Kafka reads PKCS#8 only ("PRIVATE KEY", or "ENCRYPTED PRIVATE KEY" with ssl.key.password); the traditional
    "RSA/EC PRIVATE KEY" forms (also encrypted ones, with Proc-Type/DEK-Info headers) are accepted here too.
    """
    blocks = [b for b in parse_pem(text, source) if b.label.endswith("PRIVATE KEY")]
    if not blocks:
        raise ConfigError(f"{source} holds no PEM private key (-----BEGIN PRIVATE KEY----- or -----BEGIN ENCRYPTED PRIVATE KEY-----)")
    if len(blocks) != 1:
        raise ConfigError(f"{source} holds {len(blocks)} private keys; Kafka expects exactly one, so keep only the server's")
    block = blocks[0]
    encrypted = block.label == "ENCRYPTED PRIVATE KEY" or "ENCRYPTED" in block.headers.get("Proc-Type", "")
    if encrypted and password is None:
        raise ConfigError(f"the private key in {source} is encrypted: set {password_key} to its password")
    if not encrypted and password is not None:
        # Kafka fails here too: with a key password it expects an encrypted PKCS#8 key.
        raise ConfigError(f"{password_key} is set but the private key in {source} is not encrypted; remove {password_key}")
    secret = password.encode("utf-8") if password is not None else None
    try:
        if block.headers:
            key = serialization.load_pem_private_key(block.to_pem(), secret)
        else:
            key = serialization.load_der_private_key(block.der, secret)
    except ValueError as exc:
        if encrypted:
            raise ConfigError(
                f"the private key in {source} cannot be decrypted with {password_key}: wrong password, or an encryption "
                f"this build cannot read ({exc}); check the password, or re-encrypt it: {CONVERT_KEY_HINT}"
            ) from None
        raise ConfigError(f"the private key in {source} cannot be parsed ({exc}); {CONVERT_KEY_HINT}") from None
    except (TypeError, UnsupportedAlgorithm) as exc:
        raise ConfigError(f"the private key in {source} cannot be loaded ({exc}); {CONVERT_KEY_HINT}") from None
    return key, block.label in ("PRIVATE KEY", "ENCRYPTED PRIVATE KEY")


def check_key_matches(key: PrivateKeyTypes, certs: list[x509.Certificate], key_source: str, chain_source: str) -> None:
    """The first certificate of the chain must be the one the key signs for."""
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    key_public = key.public_key().public_bytes(serialization.Encoding.DER, spki)
    if certs[0].public_key().public_bytes(serialization.Encoding.DER, spki) != key_public:
        others = [i for i, cert in enumerate(certs[1:], start=2) if cert.public_key().public_bytes(serialization.Encoding.DER, spki) == key_public]
        where = f"; it matches certificate {others[0]}, so put that one first" if others else ""
        raise ConfigError(
            f"the private key in {key_source} does not belong to the first certificate in {chain_source} "
            f"({certs[0].subject.rfc4514_string()}){where}; the chain must start with the certificate of this key"
        )
