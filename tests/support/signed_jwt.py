"""Signing keys, their JWKS document and signed JWTs, for tests of the secured OAUTHBEARER validator."""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _uint(value: int) -> str:
    return b64url(value.to_bytes((value.bit_length() + 7) // 8 or 1, "big"))


@dataclass
class SigningKey:
    """A private key and the public JWK that names it."""

    kid: str | None
    private: Any  # a cryptography private key, or an HMAC secret's bytes
    extra: dict[str, Any] = field(default_factory=dict)  # more JWK members (use, alg, x5c), of any JSON type

    def jwk(self) -> dict[str, Any]:
        key = self.private
        if isinstance(key, bytes):
            entry = {"kty": "oct", "k": b64url(key)}
        elif isinstance(key, rsa.RSAPrivateKey):
            numbers = key.public_key().public_numbers()
            entry = {"kty": "RSA", "n": _uint(numbers.n), "e": _uint(numbers.e)}
        elif isinstance(key, ec.EllipticCurvePrivateKey):
            numbers = key.public_key().public_numbers()
            size = (key.curve.key_size + 7) // 8
            crv = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}[key.curve.name]
            entry = {"kty": "EC", "crv": crv, "x": b64url(numbers.x.to_bytes(size, "big")),
                     "y": b64url(numbers.y.to_bytes(size, "big"))}
        else:
            raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            entry = {"kty": "OKP", "crv": "Ed25519", "x": b64url(raw)}
        if self.kid is not None:
            entry["kid"] = self.kid
        return entry | self.extra

    def sign(self, alg: str, data: bytes, der: bool = False) -> bytes:
        key = self.private
        bits = int(alg[2:]) if alg[2:].isdigit() else 0
        chosen = {256: hashes.SHA256(), 384: hashes.SHA384(), 512: hashes.SHA512()}.get(bits)
        if alg.startswith("HS"):
            return hmac.new(key, data, getattr(hashlib, f"sha{bits}")).digest()
        if alg.startswith("RS"):
            return key.sign(data, padding.PKCS1v15(), chosen)
        if alg.startswith("PS"):
            return key.sign(data, padding.PSS(mgf=padding.MGF1(chosen), salt_length=chosen.digest_size), chosen)
        if alg.startswith("ES"):
            signature = key.sign(data, ec.ECDSA(chosen))
            if der:
                return signature
            r, s = decode_dss_signature(signature)
            size = (key.curve.key_size + 7) // 8
            return r.to_bytes(size, "big") + s.to_bytes(size, "big")
        return key.sign(data)


def rsa_key(kid: str | None, bits: int = 2048, **extra: str) -> SigningKey:
    return SigningKey(kid, rsa.generate_private_key(public_exponent=65537, key_size=bits), extra)


def ec_key(kid: str | None, curve: ec.EllipticCurve | None = None, **extra: str) -> SigningKey:
    return SigningKey(kid, ec.generate_private_key(curve or ec.SECP256R1()), extra)


def ed25519_key(kid: str | None, **extra: str) -> SigningKey:
    return SigningKey(kid, ed25519.Ed25519PrivateKey.generate(), extra)


def hmac_key(kid: str | None, size: int = 32, **extra: str) -> SigningKey:
    return SigningKey(kid, os.urandom(size), extra)


def certificate_der(key: SigningKey) -> bytes:
    """A self-signed certificate of ``key``'s public key (DER), for a JWK's ``x5c``."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"kafka-shim test key {key.kid}")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.private.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
                   .not_valid_after(now + datetime.timedelta(days=30)).sign(key.private, hashes.SHA256()))
    return certificate.public_bytes(serialization.Encoding.DER)


def jwks_document(keys: list[SigningKey]) -> str:
    return json.dumps({"keys": [key.jwk() for key in keys]})


def signed_jwt(key: SigningKey, alg: str = "RS256", claims: dict[str, Any] | None = None,
               header: dict[str, Any] | None = None, *, kid: str | bool | None = True, der: bool = False) -> str:
    """A compact JWS signed by ``key``: header {"alg", "kid"} (``kid`` True: the key's own, False: none, or the
    given one), claims as given (``standard_claims`` for the usual ones)."""
    head: dict[str, Any] = {"alg": alg}
    if kid is True and key.kid is not None:
        head["kid"] = key.kid
    elif isinstance(kid, str):
        head["kid"] = kid
    head |= header or {}
    signing_input = (b64url(json.dumps(head, separators=(",", ":")).encode()) + "."
                     + b64url(json.dumps(claims if claims is not None else standard_claims()).encode()))
    return signing_input + "." + b64url(key.sign(alg, signing_input.encode(), der=der))


DROP = object()


def standard_claims(**replace: Any) -> dict[str, Any]:
    """sub alice, issued now, expiring in an hour; ``replace`` changes them (DROP removes one)."""
    now = int(time.time())
    claims = {"sub": "alice", "iat": now, "exp": now + 3600} | replace
    return {name: value for name, value in claims.items() if value is not DROP}
