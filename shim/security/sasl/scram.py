"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka 3.9's ScramSaslServer answers them.

client-first  ``n,[a=<authzid>],[m=<value>,]n=<user>,r=<client nonce>[,<ext>=<value>]*``
server-first  ``r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>``
client-final  ``c=<base64 gs2 header>,r=<nonce>[,<ext>=<value>]*,p=<base64 proof>``
server-final  ``v=<base64 server signature>``

Kafka's behaviour, kept where it differs from a strict reading of the RFC (checked against a real Kafka 3.9):
- the messages are matched with Kafka's patterns: US-ASCII only, gs2 header ``n`` only (no channel binding);
- a reserved ``m=`` part is accepted and left out of the AuthMessage, as Kafka's parser does;
- the ``c=`` value is not compared with the gs2 header; it is part of the AuthMessage, so the proof covers it;
- unknown extensions are ignored; ``tokenauth=true`` logs in with a delegation token: the user name is the token id,
  the password the token's HMAC in base64, and the authorization id the token's owner (shim/security/tokens.py);
- an unknown user fails at the first message, with the same generic message as a wrong proof, so the text
  never tells whether the user exists;
- a proof of the wrong length makes Kafka close the connection without answering.
Kafka never sends ``e=`` server-final messages: every failure is a SaslAuthenticate error (code 58).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable

from kafka_shim.shim.javacompat.java_hash import JavaHashMap
from kafka_shim.shim.security.sasl.errors import (
    IllegalSaslStateError,
    InvalidCredentialsError,
    SaslAuthenticationError,
    SaslProtocolViolation,
)
from kafka_shim.shim.security.sasl.scram_math import ScramCredential, ScramMechanism, auth_message, secure_random_string

# Kafka's ScramMessages patterns (Java's [\x01-\x7F&&[^=,]] written out as ranges). The quantifiers are possessive:
# no part can end inside a run of its own characters, so giving characters back could never find a match, and
# refusing a half-megabyte garbage token stays a matter of milliseconds.
_VALUE_SAFE = r"[\x01-\x2b\x2d-\x3c\x3e-\x7f]"
_SASLNAME = rf"(?:{_VALUE_SAFE}++|=2C|=3D)++"
_VALUE = r"[\x01-\x2b\x2d-\x7f]++"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]++"
_ALPHA = r"[A-Za-z]++"
_B64 = r"[a-zA-Z0-9/+]"
_BASE64 = rf"(?:{_B64}{{4}})*+(?:{_B64}{{3}}=|{_B64}{{2}}==)?"
_EXTENSIONS = rf"(?:,{_ALPHA}={_VALUE})*+"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?:m={_VALUE},)?n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS})"
)
# Kafka's client-final pattern is c=..,r=..[,ext=..]*,p=..; a proof has no comma, so it is the last field, which
# lets the extensions be matched possessively too.
_CLIENT_FINAL_HEAD = re.compile(rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}")
_PROOF = re.compile(rf"p=(?P<proof>{_BASE64})")

TOKEN_AUTH = "tokenauth"

Lookup = Callable[[str], ScramCredential | None]
# A delegation token's credential for this mechanism, its owner's name and its expiry timestamp (ms), or None.
TokenLookup = Callable[[str], tuple[ScramCredential, str, int] | None]


class ScramServer:
    """One SCRAM exchange. ``lookup(user)`` gives the user's credential for this mechanism, or None."""

    def __init__(self, mechanism: ScramMechanism, lookup: Lookup, *, reauthentication: bool = False,
                 nonce: Callable[[], str] = secure_random_string, token_lookup: TokenLookup | None = None) -> None:
        self.mechanism = mechanism.name
        self._scram = mechanism
        self._lookup = lookup
        self._token_lookup = token_lookup
        # Set by a tokenauth=true login: the principal is token-authenticated, and its session ends with the token.
        self.token_authenticated = False
        self.credential_expiry_ms: int | None = None
        self._reauthentication = reauthentication
        self._nonce = nonce
        self._state = "RECEIVE_CLIENT_FIRST_MESSAGE"
        self._authorization_id: str | None = None
        # Kept between the two client messages only; cleared as soon as the exchange ends.
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._full_nonce = ""

    @property
    def complete(self) -> bool:
        return self._state == "COMPLETE"

    @property
    def authorization_id(self) -> str:
        if not self.complete or self._authorization_id is None:
            raise RuntimeError("the SCRAM exchange has not completed")
        return self._authorization_id

    def evaluate(self, token: bytes) -> bytes:
        try:
            if self._state == "RECEIVE_CLIENT_FIRST_MESSAGE":
                response = self._client_first(bytes(token))
                self._state = "RECEIVE_CLIENT_FINAL_MESSAGE"
                return response
            if self._state == "RECEIVE_CLIENT_FINAL_MESSAGE":
                response = self._client_final(bytes(token))
                self._clear()
                self._state = "COMPLETE"
                return response
        except SaslAuthenticationError:
            self._clear()
            self._state = "FAILED"
            raise
        raise IllegalSaslStateError(self._state)

    # -- the two client messages --------------------------------------------------------------
    def _client_first(self, token: bytes) -> bytes:
        match = _CLIENT_FIRST.fullmatch(_decode(token))
        if match is None:
            raise self._invalid("the client-first message does not have SCRAM's form")
        saslname, client_nonce = match.group("saslname"), match.group("nonce")
        extensions = _extensions(match.group("extensions"))
        user = _username(saslname)
        if user is None:
            raise self._invalid("the user name has an '=' that is not =2C or =3D")
        if extensions.get(TOKEN_AUTH, "").lower() == "true":
            found = self._token_lookup(user) if self._token_lookup is not None else None
            if found is None:
                raise self._invalid(f"Token Authentication failed: Invalid tokenId : {user}")
            credential, owner, self.credential_expiry_ms = found
            self.token_authenticated = True
        else:
            credential, owner = self._lookup(user), user
            if credential is None:
                raise self._invalid(f"no {self.mechanism} credential for user {user!r}")
        authzid = match.group("authzid") or ""
        if authzid and authzid != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username",
                reason=f"user {user!r} asked to act as {authzid!r}")
        if credential.iterations < self._scram.min_iterations:
            raise self._invalid(f"the stored credential of {user!r} has {credential.iterations} iterations, "
                                f"less than the minimum {self._scram.min_iterations}")
        # Kafka rebuilds client-first-message-bare from the parsed parts for the AuthMessage: without any m= part,
        # and with the extensions in its HashMap's order.
        bare = f"n={saslname},r={client_nonce}"
        if extensions:
            bare += "," + ",".join(f"{k}={v}" for k, v in extensions.items())
        self._credential = credential
        self._authorization_id = owner
        self._client_first_bare = bare
        self._full_nonce = client_nonce + self._nonce()
        self._server_first = (f"r={self._full_nonce},s={base64.b64encode(credential.salt).decode('ascii')},"
                              f"i={credential.iterations}")
        return self._server_first.encode("ascii")

    def _client_final(self, token: bytes) -> bytes:
        text = _decode(token)
        head, comma, last = text.rpartition(",")
        match = _CLIENT_FINAL_HEAD.fullmatch(head) if comma else None
        proof_match = _PROOF.fullmatch(last) if match else None
        if match is None or proof_match is None:
            raise self._invalid("the client-final message does not have SCRAM's form")
        nonce = match.group("nonce")
        # Kafka's ScramSaslServer only asks that the nonce end with the server-first one, and signs the nonce as
        # sent: librdkafka 2.0 sends the client's part twice, and Kafka lets it in.
        if not nonce.endswith(self._full_nonce):
            raise self._invalid("Invalid client nonce in the final client message.")
        channel = base64.b64decode(match.group("channel"))
        proof = base64.b64decode(proof_match.group("proof"))
        credential = self._credential
        assert credential is not None
        without_proof = f"c={base64.b64encode(channel).decode('ascii')},r={nonce}"
        signed = auth_message(self._client_first_bare, self._server_first, without_proof)
        if len(proof) != self._scram.digest_size:
            raise SaslProtocolViolation(self.mechanism, "the client proof has the wrong length",
                                        reauthentication=self._reauthentication)
        if not self._scram.proof_matches(credential.stored_key, signed, proof):
            raise self._invalid("Invalid client credentials")
        return b"v=" + base64.b64encode(self._scram.server_signature(credential.server_key, signed))

    def _invalid(self, reason: str) -> InvalidCredentialsError:
        return InvalidCredentialsError(self.mechanism, reason, reauthentication=self._reauthentication)

    def _clear(self) -> None:
        self._credential = None
        self._client_first_bare = self._server_first = self._full_nonce = ""


def _decode(token: bytes) -> str:
    # Java decodes with replacement characters, which the ASCII-only patterns then refuse.
    return token.decode("utf-8", "replace")


def _extensions(text: str) -> dict[str, str]:
    """Kafka's Utils.parseMap into a HashMap: later duplicates win, iteration in HashMap order."""
    parsed: JavaHashMap[str] = JavaHashMap()
    for item in text[1:].split(",") if text else []:
        key, _, value = item.partition("=")
        parsed.put(key, value)
    return dict(parsed.items())


def _username(saslname: str) -> str | None:
    """RFC 5802 saslname to user name, in Kafka's order: =2C first, then reject any '=' that is not =3D."""
    name = saslname.replace("=2C", ",")
    if "=" in name.replace("=3D", ""):
        return None
    return name.replace("=3D", "=")

