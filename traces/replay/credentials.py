"""The replayer's credentials file: how to authenticate as each principal a trace recorded.

A trace never holds passwords (SaslAuthenticate rows are recorded without their bytes), so a replay of a SASL
connection needs them from the user. One line per principal, whitespace-separated; ``#`` starts a comment::

    # principal      mechanism       username   password (the rest of the line)
    User:alice       PLAIN           alice      alice-secret
    User:admin       SCRAM-SHA-512   admin      admin secret with spaces
    User:carol       OAUTHBEARER     carol
    User:dave        OAUTHBEARER     dave       eyJhbGciOi... (a token the target broker accepts)

Mechanisms: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (Kafka's names). The username is what the client sends
(PLAIN's authcid, SCRAM's ``n=``); Kafka makes the principal ``User:<username>`` from it. For OAUTHBEARER the last
field is the token to send; without one the replayer makes an unsecured JWT naming the username, which a broker
with Kafka's default validator accepts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

OAUTHBEARER = "OAUTHBEARER"
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", OAUTHBEARER)


class CredentialsError(ValueError):
    """A credentials file that cannot be used; the message names the file, the line and the fix."""


@dataclass(frozen=True)
class Credential:
    principal: str
    mechanism: str
    username: str
    password: str = field(repr=False)


def parse_credentials(text: str, source: str = "credentials") -> dict[str, Credential]:
    """Principal -> Credential from the file's text; CredentialsError for a malformed line or a repeated principal."""
    out: dict[str, Credential] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 3)
        if len(parts) == 3 and parts[1].upper() == OAUTHBEARER:
            parts.append("")  # no token given: an unsecured one is made
        if len(parts) != 4:
            raise CredentialsError(f"{source}:{number}: expected 'PRINCIPAL MECHANISM USERNAME PASSWORD', got {len(parts)} field(s)")
        principal, mechanism, username, password = parts
        mechanism = mechanism.upper()
        if ":" not in principal:
            raise CredentialsError(f"{source}:{number}: principal {principal!r} should be TYPE:NAME, e.g. User:alice")
        if mechanism not in MECHANISMS:
            raise CredentialsError(f"{source}:{number}: unknown mechanism {parts[1]!r}; use one of {', '.join(MECHANISMS)}")
        if principal in out:
            raise CredentialsError(f"{source}:{number}: {principal} is listed twice; keep one line per principal")
        out[principal] = Credential(principal, mechanism, username, password)
    return out


def load_credentials(path: str | Path) -> dict[str, Credential]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CredentialsError(f"{path}: cannot read the credentials file ({exc.strerror or exc})") from None
    return parse_credentials(text, str(path))
