"""The SASL username a capture proxy can read from a client's first token, never the password.

Kafka's counterparts: ``PlainSaslServer`` (RFC 4616: ``authzid NUL authcid NUL passwd``; Kafka accepts an authzid
only when it is empty or equals the authcid, and the principal is ``User:<authcid>``) and ``ScramSaslServer``
(RFC 5802 client-first message ``gs2-header n=saslname,r=nonce``; ``=2C`` and ``=3D`` stand for ``,`` and ``=`` in
the name, and the principal is ``User:<name>``). The proxy does not terminate SASL: it only reads these tokens as
they pass, so the trace's principal column names who the broker authenticated. OAUTHBEARER's first message carries
a JWT whose ``sub`` claim is the principal Kafka's validators take unless configured otherwise (read without
checking the token: the broker does that). GSSAPI carries no name the proxy can read; its rows keep the principal
unknown (null).
"""

from __future__ import annotations

from kafka_shim.protocol.sasl_oauthbearer import FirstMessageError, parse_first_message, token_subject

PLAIN = "PLAIN"
SCRAM_PREFIX = "SCRAM-"
OAUTHBEARER = "OAUTHBEARER"

# How many client tokens each mechanism's exchange takes (the last one's successful answer completes it).
_ROUNDS = {PLAIN: 1, "SCRAM-SHA-256": 2, "SCRAM-SHA-512": 2, OAUTHBEARER: 1}


def exchange_rounds(mechanism: str | None) -> int | None:
    """Client tokens in a successful exchange of ``mechanism``; None for mechanisms the proxy cannot follow."""
    return _ROUNDS.get((mechanism or "").upper())


def username(mechanism: str | None, first_token: bytes | None) -> str | None:
    """The name the broker will authenticate from the client's first token, or None if it cannot be read."""
    if not first_token:
        return None
    mech = (mechanism or "").upper()
    if mech == PLAIN:
        return _plain_user(first_token)
    if mech.startswith(SCRAM_PREFIX):
        return _scram_user(first_token)
    if mech == OAUTHBEARER:
        return _oauthbearer_user(first_token)
    return None


def _oauthbearer_user(token: bytes) -> str | None:
    try:
        first = parse_first_message(token)
    except FirstMessageError:
        return None
    subject = token_subject(first.token)
    if subject is None or (first.authorization_id and first.authorization_id != subject):
        return None  # Kafka refuses an authorization id naming someone else
    return subject


def _plain_user(token: bytes) -> str | None:
    parts = token.split(b"\x00")
    if len(parts) != 3:
        return None  # Kafka refuses such a token: no user
    try:
        authzid, authcid = parts[0].decode("utf-8"), parts[1].decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not authcid or (authzid and authzid != authcid):
        return None  # Kafka refuses an empty user and an authzid naming someone else
    return authcid


def _scram_user(token: bytes) -> str | None:
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        return None
    # gs2-header: "n,," / "y,," / "n,a=authzid," then the bare message "n=name,r=nonce[,extensions]".
    pieces = text.split(",", 2)
    if len(pieces) < 3:
        return None
    for attribute in pieces[2].split(","):
        if attribute.startswith("n="):
            name = attribute[2:]
            return name.replace("=2C", ",").replace("=3D", "=") if name else None
    return None
