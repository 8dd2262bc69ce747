"""JSON Web Key Sets and JWS signatures, as Kafka 3.9's secured OAUTHBEARER validator (jose4j) reads and checks them.

``parse_jwks`` reads a JWKS document (RFC 7517) into ``Jwk`` entries; ``select`` picks the key a signed token names
(jose4j's VerificationJwkSelector: the token's ``kid``, then the key type its ``alg`` needs, the curve for EC
keys, ``use`` "sig" or none; the key's own ``alg`` member is not looked at); ``verify`` checks the signature with it, refusing keys jose4j refuses (RSA under
2048 bits, an HMAC key shorter than its hash). Keys of a type or curve this reader does not know are skipped, as
jose4j skips them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

# alg -> (key type, hash); EC curves and EdDSA curves are checked apart.
_ALGORITHMS: dict[str, tuple[str, str | None]] = {
    **{f"RS{n}": ("RSA", f"SHA{n}") for n in (256, 384, 512)},
    **{f"PS{n}": ("RSA", f"SHA{n}") for n in (256, 384, 512)},
    **{f"ES{n}": ("EC", f"SHA{n}") for n in (256, 384, 512)},
    **{f"HS{n}": ("oct", f"SHA{n}") for n in (256, 384, 512)},
    "EdDSA": ("OKP", None),
}
_EC_CURVES = {"ES256": ("P-256", ec.SECP256R1(), 32), "ES384": ("P-384", ec.SECP384R1(), 48),
              "ES512": ("P-521", ec.SECP521R1(), 66)}
_CURVE_BY_NAME = {name: curve for name, curve, _ in _EC_CURVES.values()}
_HASHES = {"SHA256": hashes.SHA256(), "SHA384": hashes.SHA384(), "SHA512": hashes.SHA512()}
_HMAC_DIGESTS = {"SHA256": hashlib.sha256, "SHA384": hashlib.sha384, "SHA512": hashlib.sha512}
MIN_RSA_BITS = 2048


class JwksError(ValueError):
    """A JWKS document that cannot be read (Kafka's broker does not start with it)."""


class SignatureError(Exception):
    """A signature that does not verify, or a key jose4j would not use for it."""


@dataclass(frozen=True)
class Jwk:
    kty: str
    kid: str | None
    use: str | None
    alg: str | None
    crv: str | None
    key: Any  # a cryptography public key, or the HMAC secret's bytes


def parse_jwks(text: str, where: str) -> list[Jwk]:
    """The keys of a JWKS document; JwksError when it is not one (not JSON, no ``keys`` array)."""
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise JwksError(f"{where}: not a JSON document: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise JwksError(f"{where}: a JWKS document is an object with a \"keys\" array (RFC 7517 section 5)")
    keys = []
    for entry in document["keys"]:
        if not isinstance(entry, dict):
            raise JwksError(f"{where}: a key in \"keys\" is not a JSON object: {entry!r}")
        key = _jwk(entry, where)
        if key is not None:
            keys.append(key)
    return keys


def _jwk(entry: dict[str, Any], where: str) -> Jwk | None:
    kty = entry.get("kty")
    if not isinstance(kty, str):
        raise JwksError(f"{where}: a key without a \"kty\" member: {entry!r}")
    crv = entry.get("crv") if isinstance(entry.get("crv"), str) else None
    try:
        if kty == "RSA":
            key: Any = rsa.RSAPublicNumbers(_uint(entry, "e"), _uint(entry, "n")).public_key()
        elif kty == "EC":
            curve = _CURVE_BY_NAME.get(crv or "")
            if curve is None:
                return None  # a curve jose4j does not know: skipped
            key = ec.EllipticCurvePublicNumbers(_uint(entry, "x"), _uint(entry, "y"), curve).public_key()
        elif kty == "OKP":
            raw = _b64(entry, "x")
            if crv == "Ed25519":
                key = ed25519.Ed25519PublicKey.from_public_bytes(raw)
            elif crv == "Ed448":
                key = ed448.Ed448PublicKey.from_public_bytes(raw)
            else:
                return None  # X25519/X448: keys for agreement, not signatures
        elif kty == "oct":
            key = _b64(entry, "k")
        else:
            return None
    except (KeyError, ValueError, TypeError) as exc:
        raise JwksError(f"{where}: the {kty} key {entry.get('kid')!r} cannot be read: {exc}") from None
    text = {name: entry[name] if isinstance(entry.get(name), str) else None for name in ("kid", "use", "alg")}
    return Jwk(kty, text["kid"], text["use"], text["alg"], crv, key)


def _b64(entry: dict[str, Any], name: str) -> bytes:
    value = entry[name]
    if not isinstance(value, str):
        raise TypeError(f"\"{name}\" is not a string")
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))


def _uint(entry: dict[str, Any], name: str) -> int:
    return int.from_bytes(_b64(entry, name), "big")


def select(keys: list[Jwk], alg: str, kid: str | None) -> list[Jwk]:
    """The keys that may verify a token signed with ``alg`` (and naming ``kid``), in the set's order."""
    family = _ALGORITHMS.get(alg)
    if family is None:
        return []
    kty = family[0]
    found = []
    for key in keys:
        if key.kty != kty or (kid is not None and key.kid != kid):
            continue
        if key.use is not None and key.use != "sig":
            continue
        if kty == "EC" and key.crv != _EC_CURVES[alg][0]:
            continue
        found.append(key)
    return found


def known_algorithm(alg: str) -> bool:
    return alg in _ALGORITHMS


def verify(key: Jwk, alg: str, signing_input: bytes, signature: bytes) -> None:
    """SignatureError unless ``signature`` is ``alg``'s over ``signing_input`` with ``key``."""
    kty, hash_name = _ALGORITHMS[alg]
    try:
        if kty == "oct":
            digest = _HMAC_DIGESTS[hash_name]  # type: ignore[index]
            if len(key.key) * 8 < digest().digest_size * 8:
                raise SignatureError(f"an {alg} key must be at least {digest().digest_size * 8} bits")
            if not hmac.compare_digest(hmac.new(key.key, signing_input, digest).digest(), signature):
                raise SignatureError("the HMAC does not match")
        elif kty == "RSA":
            if key.key.key_size < MIN_RSA_BITS:
                raise SignatureError(f"an RSA key must be at least {MIN_RSA_BITS} bits, this one has {key.key.key_size}")
            chosen = _HASHES[hash_name]  # type: ignore[index]
            pad = (padding.PKCS1v15() if alg.startswith("RS")
                   else padding.PSS(mgf=padding.MGF1(chosen), salt_length=chosen.digest_size))
            key.key.verify(signature, signing_input, pad, chosen)
        elif kty == "EC":
            size = _EC_CURVES[alg][2]
            if len(signature) != 2 * size:
                raise SignatureError(f"an {alg} signature is {2 * size} bytes, this one {len(signature)}")
            r, s = int.from_bytes(signature[:size], "big"), int.from_bytes(signature[size:], "big")
            key.key.verify(encode_dss_signature(r, s), signing_input, ec.ECDSA(_HASHES[hash_name]))  # type: ignore[index]
        else:
            key.key.verify(signature, signing_input)
    except InvalidSignature:
        raise SignatureError("the signature does not verify") from None
