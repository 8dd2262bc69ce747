"""Certificates for the pytest plugin's SSL and SASL_SSL listeners, generated at start and never written elsewhere.

A CA and a server certificate for ``localhost`` / 127.0.0.1 / ::1 (EC P-256: quick to make, and read by OpenSSL in
librdkafka and by Python's ssl alike). The broker reads them through Kafka's PEM keystore keys
(``ssl.keystore.type=PEM``), listener-prefixed as Kafka allows; clients trust ``ca_file``.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class TlsFiles:
    ca_file: Path  # the CA certificate (PEM): what clients trust
    keystore_file: Path  # the server's key, certificate and the CA certificate (PEM), as Kafka's PEM keystore reads it

    @classmethod
    def generate(cls, directory: Path) -> TlsFiles:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kafka-shim pytest CA")])
        ca_cert = _sign(_builder(ca_name, ca_key, ca_name).add_extension(
            x509.BasicConstraints(ca=True, path_length=None), critical=True), ca_key)
        key = ec.generate_private_key(ec.SECP256R1())
        sans = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                x509.IPAddress(ipaddress.ip_address("::1"))]
        cert = _sign(_builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]), key, ca_name)
                     .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                     .add_extension(x509.SubjectAlternativeName(sans), critical=False)
                     .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False), ca_key)
        ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        files = cls(directory / "ca.pem", directory / "server-keystore.pem")
        files.ca_file.write_bytes(ca_pem)
        files.keystore_file.write_bytes(key_pem + cert.public_bytes(serialization.Encoding.PEM) + ca_pem)
        files.keystore_file.chmod(0o600)
        return files

    def server_properties(self, listener: str) -> dict[str, str]:
        prefix = f"listener.name.{listener.lower()}."
        return {prefix + "ssl.keystore.type": "PEM", prefix + "ssl.keystore.location": str(self.keystore_file)}


def _builder(subject: x509.Name, key: ec.EllipticCurvePrivateKey, issuer: x509.Name) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30)))


def _sign(builder: x509.CertificateBuilder, key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    return builder.sign(key, hashes.SHA256())
