"""JSON Web Key Sets and JWS signatures, as Kafka 3.9's secured OAUTHBEARER validator (jose4j 0.9.4) reads them.

``parse_jwks`` reads a JWKS document (RFC 7517) into ``Jwk`` entries, dropping keys it cannot read or does not know,
as jose4j drops them (string members of another type, ``key_ops`` not an array, an ``x5c`` not an array of readable
certificates). ``select`` picks the key for a signed token as jose4j's VerificationJwkSelector does: every key of
the set whose ``kid`` is the token's (when it names one), whose type fits its ``alg``, whose ``use`` is "sig" or
absent, whose ``key_ops`` allow "verify" and whose ``x5t`` / ``x5t#S256`` (else its ``x5c`` certificate's) match
the token's; only when several are left, those whose own ``alg`` is absent or the token's and, for EC, whose curve
is the algorithm's; then the first.
``verify`` checks the signature with it, refusing keys jose4j refuses (RSA under 2048 bits, an HMAC key shorter than
its hash, an EC key on another curve).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from typing import Any

from cryptography import x509
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
_ORDERS = {"ES256": 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551,
           "ES384": int("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFC7634D81F4372DDF581A0DB248B0A77AECEC196ACCC52973", 16),
           "ES512": int("01FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFA51868783BF2F966B7FCC0148F709A"
                        "5D03BB5C9B8899C47AEBB6FB71E91386409", 16)}
_HASHES = {"SHA256": hashes.SHA256(), "SHA384": hashes.SHA384(), "SHA512": hashes.SHA512()}
_HMAC_DIGESTS = {"SHA256": hashlib.sha256, "SHA384": hashlib.sha384, "SHA512": hashlib.sha512}
MIN_RSA_BITS = 2048
_BASE64_CHARACTERS = re.compile(r"[A-Za-z0-9_-]+")
_TO_URL_ALPHABET = str.maketrans("+/", "-_")
# JWK members jose4j reads as strings (JsonWebKey; PublicJsonWebKey for every kind of key but "oct"): a key with any
# of them of another JSON type is dropped from the set.
_STRING_MEMBERS = ("kid", "use", "alg")
_PUBLIC_KEY_STRING_MEMBERS = ("x5t", "x5t#S256", "x5u")


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
    key_ops: tuple[Any, ...] | None = None
    x5t: str | None = None
    x5t_s256: str | None = None


def parse_jwks(text: str, where: str) -> list[Jwk]:
    """The keys of a JWKS document; JwksError when it is not one (not a JSON object with a ``keys`` array, member
    names repeated)."""
    try:
        document = json.loads(text, object_pairs_hook=no_duplicate_members)
    except ValueError as exc:
        raise JwksError(f"{where}: not a JSON document: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise JwksError(f"{where}: a JWKS document is an object with a \"keys\" array (RFC 7517 section 5)")
    return [key for key in map(_jwk, document["keys"]) if key is not None]


def no_duplicate_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members (``json.loads``'s object_pairs_hook), ValueError for a name given twice (jose4j's
    JSON reader refuses it, in JWKS documents and in tokens)."""
    found: dict[str, Any] = {}
    for name, value in pairs:
        if name in found:
            raise ValueError(f"the member {name!r} appears twice")
        found[name] = value
    return found


def lenient_base64(part: str) -> bytes:
    """jose4j's lenient base64 decoder (its tokens' parts, a JWK's x5c certificates): either alphabet, reading up to
    the first '=', other characters skipped, a last lone character dropped."""
    text = part.split("=", 1)[0].translate(_TO_URL_ALPHABET)
    text = "".join(_BASE64_CHARACTERS.findall(text))
    if len(text) % 4 == 1:
        text = text[:-1]
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _jwk(entry: Any) -> Jwk | None:
    """A key of the set, or None for one jose4j would drop (unreadable, or of a kind it does not verify with)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("kty"), str):
        return None
    # jose4j's JsonWebKey and PublicJsonWebKey: string members of another type, key_ops that is not an array, an x5c
    # that is not an array of readable certificates each throw, and the set drops the key.
    public = entry["kty"] != "oct"
    strings = _STRING_MEMBERS + _PUBLIC_KEY_STRING_MEMBERS if public else _STRING_MEMBERS
    if any(entry.get(name) is not None and not isinstance(entry[name], str) for name in strings):
        return None
    if entry.get("key_ops") is not None and not isinstance(entry["key_ops"], list):
        return None
    certificate = None
    if "x5c" in entry and public:  # present: read, a null too (jose4j then fails on it)
        chain = entry["x5c"]
        if not isinstance(chain, list) or not all(isinstance(item, str) for item in chain):
            return None
        try:
            ders = [lenient_base64(item) for item in chain]
            for der in ders:
                x509.load_der_x509_certificate(der)
        except ValueError:
            return None
        certificate = ders[0] if ders else None
    kty = entry["kty"]
    crv = entry.get("crv") if isinstance(entry.get("crv"), str) else None
    try:
        if kty == "RSA":
            key: Any = rsa.RSAPublicNumbers(_uint(entry, "e"), _uint(entry, "n")).public_key()
        elif kty == "EC":
            curve = _CURVE_BY_NAME.get(crv or "")
            if curve is None:
                return None
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
    except (KeyError, ValueError, TypeError):
        return None
    text = {name: entry.get(name) for name in strings}
    operations = entry.get("key_ops")
    x5t, x5t_s256 = text.get("x5t"), text.get("x5t#S256")
    if certificate is not None:  # jose4j's key filter derives absent thumbprints from the x5c leaf certificate
        x5t = x5t if x5t is not None else _b64url(hashlib.sha1(certificate).digest())
        x5t_s256 = x5t_s256 if x5t_s256 is not None else _b64url(hashlib.sha256(certificate).digest())
    return Jwk(kty, text["kid"], text["use"], text["alg"], crv, key, tuple(operations) if isinstance(operations, list) else None,
               x5t, x5t_s256)


def _b64(entry: dict[str, Any], name: str) -> bytes:
    value = entry[name]
    if not isinstance(value, str):
        raise TypeError(f"\"{name}\" is not a string")
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))


def _uint(entry: dict[str, Any], name: str) -> int:
    return int.from_bytes(_b64(entry, name), "big")


def select(keys: list[Jwk], header: dict[str, Any]) -> Jwk | None:
    """The key jose4j verifies a token with ``header`` (its ``alg`` known) with, or None."""
    alg = header["alg"]
    kty = _ALGORITHMS[alg][0]
    kid = header.get("kid")
    thumbprints = {name: header.get(name) for name in ("x5t", "x5t#S256")}
    found = []
    for key in keys:
        if key.kty != kty or (kid is not None and key.kid != kid):
            continue
        if (key.use is not None and key.use != "sig") or (key.key_ops is not None and "verify" not in key.key_ops):
            continue
        if any(wanted is not None and own is not None and own != wanted
               for wanted, own in ((thumbprints["x5t"], key.x5t), (thumbprints["x5t#S256"], key.x5t_s256))):
            continue
        found.append(key)
    if len(found) > 1:
        found = [key for key in found if key.alg is None or key.alg == alg]
        if len(found) > 1 and kty == "EC":  # (OKP keys of other curves were not read: none to sort out)
            found = [key for key in found if key.crv == _EC_CURVES[alg][0]]
    return found[0] if found else None


def known_algorithm(alg: str) -> bool:
    return alg in _ALGORITHMS


def verify(key: Jwk, alg: str, signing_input: bytes, signature: bytes) -> None:
    """SignatureError unless ``signature`` is ``alg``'s over ``signing_input`` with ``key``."""
    kty, hash_name = _ALGORITHMS[alg]
    try:
        if kty == "oct":
            digest = _HMAC_DIGESTS[hash_name]  # type: ignore[index]
            if len(key.key) < digest().digest_size:
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
            _, curve, size = _EC_CURVES[alg]
            if key.key.curve.name != curve.name:
                raise SignatureError(f"an {alg} key is on {curve.name}, this one on {key.key.curve.name}")
            if len(signature) > 2 * size:
                raise SignatureError(f"an {alg} signature is at most {2 * size} bytes, this one {len(signature)}")
            half = len(signature) // 2  # jose4j's split of R and S (a last odd byte is not read)
            r, s = int.from_bytes(signature[:half], "big"), int.from_bytes(signature[half:2 * half], "big")
            if r % _ORDERS[alg] == 0 or s % _ORDERS[alg] == 0:
                raise SignatureError("R or S is zero modulo the curve's order")
            key.key.verify(encode_dss_signature(r, s), signing_input, ec.ECDSA(_HASHES[hash_name]))  # type: ignore[index]
        else:
            key.key.verify(signature, signing_input)
    except InvalidSignature:
        raise SignatureError("the signature does not verify") from None
