"""TLS test material, generated (never committed): a CA, a server certificate for localhost/127.0.0.1, two client
certificates, and PEM files in the forms Kafka's keys take.

``generate_tls_material(directory)`` writes everything into ``directory``; ``shared_tls_material()`` generates once per
process into a temporary directory, for tests anywhere in the suite (tests/shim/security/tls/conftest.py has a ``tls_material``
fixture). Keys are EC P-256: fast to make, and read by Java, OpenSSL (librdkafka) and Python alike.
"""

from __future__ import annotations

import atexit
import base64
import datetime
import functools
import hashlib
import ipaddress
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, padding, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers import Cipher, modes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

try:
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
except ImportError:  # cryptography < 43
    from cryptography.hazmat.primitives.ciphers.algorithms import TripleDES

KEY_PASSWORD = "server-key-secret"


@dataclass(frozen=True)
class Identity:
    """A certificate with its key: separate PEM files, and one keystore file holding key and chain (as Kafka reads)."""

    name: str
    dn: str  # the subject as Kafka's principal builder renders it (Java's X500Principal.getName())
    cert_path: Path
    key_path: Path
    keystore_path: Path  # private key (unencrypted PKCS#8) + certificate + CA certificate
    cert_pem: str
    key_pem: str
    chain_pem: str  # certificate + CA certificate

    @property
    def principal(self) -> str:
        return f"User:{self.dn}"


@dataclass(frozen=True)
class TlsMaterial:
    directory: Path
    ca_path: Path
    ca_pem: str
    server: Identity  # CN=localhost, SANs localhost, 127.0.0.1 and ::1
    alice: Identity  # CN=alice,OU=eng,O=Example
    bob: Identity  # CN=bob,OU=ops,O=Example
    server_key_encrypted_path: Path  # the server key as encrypted PKCS#8 (password KEY_PASSWORD), readable by Kafka too
    server_key_encrypted_pem: str
    server_keystore_encrypted_path: Path  # encrypted key + chain
    key_password: str = KEY_PASSWORD

    def broker_properties(self, listener: str = "SSL", client_auth: str = "none") -> dict[str, str]:
        """Kafka keys for a listener with the server's keystore and the CA as trust store (listener-prefixed)."""
        prefix = f"listener.name.{listener.lower()}."
        return {
            prefix + "ssl.keystore.type": "PEM",
            prefix + "ssl.keystore.location": str(self.server.keystore_path),
            prefix + "ssl.truststore.type": "PEM",
            prefix + "ssl.truststore.location": str(self.ca_path),
            prefix + "ssl.client.auth": client_auth,
        }

    def client_properties(self, identity: Identity | None = None) -> dict[str, str]:
        """A Java Kafka client's keys: trust the CA, and present ``identity``'s certificate when given."""
        props = {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.ca_path)}
        if identity is not None:
            props |= {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(identity.keystore_path)}
        return props

    def librdkafka_properties(self, identity: Identity | None = None) -> dict[str, str]:
        """The same for confluent-kafka (librdkafka's key names)."""
        props = {"security.protocol": "SSL", "ssl.ca.location": str(self.ca_path)}
        if identity is not None:
            props |= {"ssl.certificate.location": str(identity.cert_path), "ssl.key.location": str(identity.key_path)}
        return props


def _pem_key(key: ec.EllipticCurvePrivateKey, password: str | None = None) -> str:
    encryption = serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption).decode("ascii")


def _der(tag: int, content: bytes) -> bytes:
    length = len(content)
    encoded = bytes([length]) if length < 0x80 else bytes([0x80 | ((length.bit_length() + 7) // 8)]) + length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([tag]) + encoded + content


def _pkcs12_kdf(password: str, salt: bytes, purpose: int, iterations: int, size: int) -> bytes:
    """RFC 7292 appendix B.2 with SHA-1: the key derivation of PKCS#12's PBE schemes."""
    v, u = 64, 20
    secret = password.encode("utf-16-be") + b"\0\0"

    def fill(data: bytes) -> bytes:
        return (data * (v * -(-len(data) // v) // len(data) + 1))[: v * -(-len(data) // v)]

    block = fill(salt) + fill(secret)
    out = b""
    while len(out) < size:
        digest = bytes([purpose]) * v + block
        for _ in range(iterations):
            digest = hashlib.sha1(digest).digest()
        out += digest
        addend = int.from_bytes((digest * (v // u + 1))[:v], "big") + 1
        block = b"".join(
            ((int.from_bytes(block[i : i + v], "big") + addend) % (1 << (8 * v))).to_bytes(v, "big") for i in range(0, len(block), v)
        )
    return out[:size]


def _pem_key_pbes1(key: ec.EllipticCurvePrivateKey, password: str) -> str:
    """Encrypted PKCS#8 with pbeWithSHAAnd3-KeyTripleDES-CBC, the scheme Kafka 3.9 on Java 17 can decrypt (it cannot
    read the PBES2 scheme that cryptography and OpenSSL 3 write by default)."""
    plain = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    salt, iterations = os.urandom(8), 2048
    des_key = _pkcs12_kdf(password, salt, 1, iterations, 24)
    iv = _pkcs12_kdf(password, salt, 2, iterations, 8)
    padder = padding.PKCS7(64).padder()
    encryptor = Cipher(TripleDES(des_key), modes.CBC(iv)).encryptor()
    encrypted = encryptor.update(padder.update(plain) + padder.finalize()) + encryptor.finalize()
    oid = _der(0x06, bytes([0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x0C, 0x01, 0x03]))  # 1.2.840.113549.1.12.1.3
    params = _der(0x30, _der(0x04, salt) + _der(0x02, iterations.to_bytes(2, "big")))
    info = _der(0x30, _der(0x30, oid + params) + _der(0x04, encrypted))
    body = base64.encodebytes(info).decode("ascii").replace("\n", "")
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "-----BEGIN ENCRYPTED PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END ENCRYPTED PRIVATE KEY-----\n"


def _pem_cert(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


def _name(*parts: tuple[x509.ObjectIdentifier, str]) -> x509.Name:
    return x509.Name([x509.NameAttribute(oid, value) for oid, value in parts])


def _certificate(subject: x509.Name, key, issuer: x509.Name, issuer_key, *, ca: bool, sans=(), usage=()) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        ).add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    else:
        builder = builder.add_extension(
            x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True
        ).add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
    if usage:
        builder = builder.add_extension(x509.ExtendedKeyUsage(list(usage)), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def generate_tls_material(directory: Path) -> TlsMaterial:
    """Write a CA, a server identity, clients alice and bob, and an encrypted server key into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name((NameOID.ORGANIZATION_NAME, "Example"), (NameOID.COMMON_NAME, "kafka-shim test CA"))
    ca_cert = _certificate(ca_name, ca_key, ca_name, ca_key, ca=True)
    ca_pem = _pem_cert(ca_cert)
    ca_path = directory / "ca.pem"
    ca_path.write_text(ca_pem)

    def identity(name: str, dn: str, subject: x509.Name, **kwargs) -> tuple[Identity, ec.EllipticCurvePrivateKey]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _certificate(subject, key, ca_name, ca_key, ca=False, **kwargs)
        cert_pem, key_pem = _pem_cert(cert), _pem_key(key)
        paths = {suffix: directory / f"{name}{suffix}" for suffix in (".pem", ".key", "-keystore.pem")}
        paths[".pem"].write_text(cert_pem)
        paths[".key"].write_text(key_pem)
        paths[".key"].chmod(0o600)
        paths["-keystore.pem"].write_text(key_pem + cert_pem + ca_pem)
        paths["-keystore.pem"].chmod(0o600)
        return Identity(name, dn, paths[".pem"], paths[".key"], paths["-keystore.pem"], cert_pem, key_pem, cert_pem + ca_pem), key

    both = (ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH)
    server, server_key = identity(
        "server",
        "CN=localhost,O=Example",
        _name((NameOID.ORGANIZATION_NAME, "Example"), (NameOID.COMMON_NAME, "localhost")),
        sans=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.IPAddress(ipaddress.ip_address("::1"))],
        usage=both,
    )
    clients = {}
    for user, unit in (("alice", "eng"), ("bob", "ops")):
        clients[user], _ = identity(
            user,
            f"CN={user},OU={unit},O=Example",
            _name((NameOID.ORGANIZATION_NAME, "Example"), (NameOID.ORGANIZATIONAL_UNIT_NAME, unit), (NameOID.COMMON_NAME, user)),
            usage=(ExtendedKeyUsageOID.CLIENT_AUTH,),
        )
    encrypted_pem = _pem_key_pbes1(server_key, KEY_PASSWORD)
    encrypted_path = directory / "server.key.enc"
    encrypted_path.write_text(encrypted_pem)
    encrypted_keystore = directory / "server-keystore.enc.pem"
    encrypted_keystore.write_text(encrypted_pem + server.chain_pem)
    return TlsMaterial(directory, ca_path, ca_pem, server, clients["alice"], clients["bob"], encrypted_path, encrypted_pem, encrypted_keystore)


@functools.cache
def shared_tls_material() -> TlsMaterial:
    """One set of material per test process, in a temporary directory removed at exit."""
    directory = Path(tempfile.mkdtemp(prefix="kafka-shim-tls-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return generate_tls_material(directory)
