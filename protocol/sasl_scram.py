"""SCRAM arithmetic (RFC 5802 section 3, RFC 7677) and Kafka's SCRAM mechanisms: the one implementation, sans-IO, used
by the broker's ScramServer (shim.security.sasl.scram), kafka-shim's client (shim.client.scram) and the trace replayer
(traces.replay.sasl). It lives in protocol so that traces, which may not import shim, share it;
shim/security/sasl/scram_math.py re-exports it under its old name.

    SaltedPassword  := Hi(password, salt, i)              ClientKey := HMAC(SaltedPassword, "Client Key")
    StoredKey       := H(ClientKey)                       ServerKey := HMAC(SaltedPassword, "Server Key")
    AuthMessage     := client-first-message-bare + "," + server-first-message + "," + client-final-message-without-proof
    ClientSignature := HMAC(StoredKey, AuthMessage)       ClientProof := ClientKey XOR ClientSignature
    ServerSignature := HMAC(ServerKey, AuthMessage)

Kafka's ScramFormatter conventions are kept: passwords are UTF-8 without SASLprep, salts and server nonces
are the UTF-8 bytes of a random base-36 number of 130 bits, and the mechanisms carry Kafka's type codes.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

# Kafka's default iteration count (kafka-configs / kafka-storage --add-scram) and ScramControlManager's bounds.
DEFAULT_ITERATIONS = 4096
MAX_ITERATIONS = 16384


@dataclass(frozen=True)
class ScramMechanism:
    name: str  # "SCRAM-SHA-256"
    type: int  # the int8 on the wire (clients' admin ScramMechanism: 0 is UNKNOWN)
    hash_name: str  # hashlib's name
    min_iterations: int = DEFAULT_ITERATIONS

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        """Hi(password, salt, i): PBKDF2 with HMAC of this hash."""
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode("utf-8"), salt, iterations)

    def client_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Client Key")

    def stored_key(self, salted_password: bytes) -> bytes:
        return self.hash(self.client_key(salted_password))

    def server_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Server Key")

    @property
    def digest_size(self) -> int:
        """The length of every key, signature and proof of this mechanism."""
        return hashlib.new(self.hash_name).digest_size

    def client_proof(self, salted_password: bytes, auth_message: bytes) -> bytes:
        """ClientProof: what the client sends to show it knows the password, without sending it."""
        client_key = self.client_key(salted_password)
        return _xor(client_key, self.hmac(self.hash(client_key), auth_message))

    def proof_matches(self, stored_key: bytes, auth_message: bytes, proof: bytes) -> bool:
        """Whether ``proof`` (of ``digest_size`` bytes) is the ClientProof for this StoredKey: the server recovers
        ClientKey from it and compares H(ClientKey) with StoredKey in constant time."""
        client_key = _xor(self.hmac(stored_key, auth_message), proof)
        return hmac.compare_digest(self.hash(client_key), stored_key)

    def server_signature(self, server_key: bytes, auth_message: bytes) -> bytes:
        """ServerSignature: what the server sends back to show it holds the credential too."""
        return self.hmac(server_key, auth_message)


def auth_message(client_first_bare: str, server_first: str, client_final_without_proof: str) -> bytes:
    """AuthMessage, which both proofs sign."""
    return f"{client_first_bare},{server_first},{client_final_without_proof}".encode()


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", 1, "sha256")
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", 2, "sha512")
MECHANISMS: dict[str, ScramMechanism] = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
BY_TYPE: dict[int, ScramMechanism] = {m.type: m for m in MECHANISMS.values()}


@dataclass(frozen=True)
class ScramCredential:
    """What the broker keeps for one (user, mechanism): never the password itself."""

    salt: bytes = field(repr=False)
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    iterations: int

    @classmethod
    def from_salted_password(cls, mechanism: ScramMechanism, salt: bytes, salted_password: bytes, iterations: int) -> ScramCredential:
        return cls(salt, mechanism.stored_key(salted_password), mechanism.server_key(salted_password), iterations)

    @classmethod
    def derive(cls, mechanism: ScramMechanism, password: str, iterations: int = DEFAULT_ITERATIONS,
               salt: bytes | None = None) -> ScramCredential:
        """A credential for ``password`` with a fresh random salt (as Kafka's ScramFormatter.generateCredential)."""
        salt = secure_random_bytes() if salt is None else salt
        return cls.from_salted_password(mechanism, salt, mechanism.salted_password(password, salt, iterations), iterations)

    def matches_password(self, mechanism: ScramMechanism, password: str) -> bool:
        candidate = mechanism.stored_key(mechanism.salted_password(password, self.salt, self.iterations))
        return hmac.compare_digest(candidate, self.stored_key)


_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def secure_random_string() -> str:
    """Java's ``new BigInteger(130, secureRandom).toString(36)``: what Kafka uses for nonces and salts."""
    value = secrets.randbits(130)
    if value == 0:
        return "0"
    out = []
    while value:
        value, digit = divmod(value, 36)
        out.append(_DIGITS[digit])
    return "".join(reversed(out))


def secure_random_bytes() -> bytes:
    return secure_random_string().encode("ascii")
