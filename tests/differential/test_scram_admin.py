"""SCRAM against a real Kafka 3.9: Describe/AlterUserScramCredentials (50/51) and the SCRAM and PLAIN exchanges.

Both brokers have admin/alice/bob as PLAIN and SCRAM users (Kafka's SCRAM credentials come from
``kafka-storage format --add-scram``, kafka-shim's from the SCRAM listeners' JAAS). Each test removes the
credentials it creates, because the real broker lives for the whole session.

Normalised before comparing: the order of a user's credential_infos (Kafka keeps mechanisms in a HashMap keyed
by an enum, whose order changes from one JVM to the next), the connection details inside Kafka's
"Request Request(...) is not authorized." texts, and the random nonce and salt in SCRAM server messages.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_shim.protocol.messages import (
    AlterUserScramCredentialsRequest,
    DescribeUserScramCredentialsRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.testing.embedded import EmbeddedBroker
from tests.support.compare import field_diff
from tests.support.sasl_setup import USERS, listener_address, sasl_properties
from tests.support.scram_probe import ScramProbe
from tests.support.wire import Answer, Wire

A = AlterUserScramCredentialsRequest
D = DescribeUserScramCredentialsRequest
SHA256, SHA512 = 1, 2
NOT_AUTHORIZED = re.compile(r"^Request Request\(.*\) is not authorized\.$", re.DOTALL)


@pytest.fixture(scope="module")
def shim_scram() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(BrokerConfig.from_properties(sasl_properties())) as broker:
        yield broker


@pytest.fixture
def brokers(oracle, shim_scram: EmbeddedBroker) -> dict[str, dict[str, tuple[str, int]]]:
    return {
        "kafka": {"SASL_PLAINTEXT": oracle.sasl, "PLAINTEXT": oracle.plaintext},
        "shim": {name: listener_address(shim_scram.broker, name) for name in ("SASL_PLAINTEXT", "PLAINTEXT")},
    }


def _plain(body: Any) -> Any:
    tree = body.to_dict() if hasattr(body, "to_dict") else body
    return _normalise(tree)


def _normalise(tree: Any, key: str = "") -> Any:
    if isinstance(tree, dict):
        return {k: _normalise(v, k) for k, v in tree.items() if k != "throttle_time_ms"}
    if isinstance(tree, list):
        items = [_normalise(v) for v in tree]
        return sorted(items, key=repr) if key == "credential_infos" else items
    if key == "error_message" and isinstance(tree, str) and NOT_AUTHORIZED.match(tree):
        return "Request Request(<connection>) is not authorized."
    return tree


def assert_same(kafka: Answer, shim: Answer, what: str) -> None:
    assert kafka.closed == shim.closed, f"{what}: Kafka closed={kafka.closed}, kafka-shim closed={shim.closed}\n{kafka}\n{shim}"
    if not kafka.closed:
        diff = field_diff(_plain(kafka.body), _plain(shim.body))
        assert not diff, "\n  ".join([f"Kafka and kafka-shim disagree on {what}:", *diff])


def on_both(brokers, user: str | None, api_key: int, body: Any) -> tuple[Answer, Answer]:
    """The same request to both brokers, as ``user`` (SASL/PLAIN) or anonymously on PLAINTEXT."""
    answers = []
    for side in ("kafka", "shim"):
        with Wire(brokers[side]["PLAINTEXT" if user is None else "SASL_PLAINTEXT"]) as wire:
            if user is not None:
                wire.sasl_plain(user, USERS[user])
            answers.append(wire.request(api_key, 0, body))
    return answers[0], answers[1]


def upsertion(name: str, password: str, mechanism: int = SHA256, iterations: int = 4096, salt: bytes = b"diff-salt",
              salted_password: bytes | None = None) -> A.ScramCredentialUpsertion:
    if salted_password is None:
        salted_password = hashlib.pbkdf2_hmac("sha256" if mechanism == SHA256 else "sha512", password.encode(), salt, iterations)
    return A.ScramCredentialUpsertion(name=name, mechanism=mechanism, iterations=iterations, salt=salt, salted_password=salted_password)


def cleanup(brokers, *credentials: tuple[str, int]) -> None:
    """Delete what a test created, one request per credential (a user may appear once per request)."""
    for name, mechanism in credentials:
        on_both(brokers, "admin", 51, A(deletions=[A.ScramCredentialDeletion(name=name, mechanism=mechanism)], upsertions=[]))


def names(*users: str) -> D:
    return D(users=[D.UserName(name=u) for u in users])


# -- DescribeUserScramCredentials -------------------------------------------------------------------------------

@pytest.mark.parametrize("request_body", [
    D(users=None),
    D(users=[]),
    names("alice"),
    names("alice", "nobody", "alice", "", "bob", "admin"),
    names("nobody", "nobody", "nobody"),
], ids=["null", "empty", "one", "mixed", "duplicate unknown"])
def test_describe_as_a_super_user(brokers, request_body: D) -> None:
    assert_same(*on_both(brokers, "admin", 50, request_body), what=f"DescribeUserScramCredentials {request_body}")


@pytest.mark.parametrize("user", [None, "alice"], ids=["anonymous", "alice"])
@pytest.mark.parametrize("request_body", [names("alice", "bob"), D(users=[])], ids=["named", "empty"])
def test_describe_without_the_right(brokers, user: str | None, request_body: D) -> None:
    assert_same(*on_both(brokers, user, 50, request_body), what=f"DescribeUserScramCredentials as {user or 'ANONYMOUS'}")


def test_describe_everything_without_the_right(brokers) -> None:
    # Kafka fails while building this error response (its user list is null) and never answers; kafka-shim closes.
    with Wire(brokers["kafka"]["PLAINTEXT"], timeout=3) as wire:
        try:
            kafka = wire.request(50, 0, D(users=None))
        except TimeoutError:
            kafka = None
    with Wire(brokers["shim"]["PLAINTEXT"], timeout=10) as wire:
        shim = wire.request(50, 0, D(users=None))
    assert kafka is None or kafka.closed, f"Kafka answered: {kafka}"
    assert shim.closed


# -- AlterUserScramCredentials ----------------------------------------------------------------------------------

def test_alter_refusals_and_their_order(brokers) -> None:
    request = A(
        deletions=[A.ScramCredentialDeletion(name=n, mechanism=m) for n, m in (("nobody", 1), ("", 1), ("x1", 0), ("x2", 3))],
        upsertions=[upsertion("nobody", "p"), upsertion("u1", "p", iterations=4095), upsertion("u2", "p", iterations=4096),
                    upsertion("u2", "p"), upsertion("", "p"), upsertion("u4", "p", mechanism=0), upsertion("u1", "p"),
                    upsertion("u5", "p", mechanism=SHA512, salted_password=b""), upsertion("u6", "p", salt=b""),
                    upsertion("u3", "p", iterations=16384), upsertion("u7", "p", iterations=16385)])
    try:
        assert_same(*on_both(brokers, "admin", 51, request), what="AlterUserScramCredentials with every refusal")
        assert_same(*on_both(brokers, "admin", 50, D(users=None)), what="DescribeUserScramCredentials after it")
    finally:
        cleanup(brokers, ("u6", SHA256), ("u3", SHA256))


def test_duplicates_within_one_request(brokers) -> None:
    deletion = A.ScramCredentialDeletion
    for request in (
        A(deletions=[deletion(name="alice", mechanism=1), deletion(name="alice", mechanism=1), deletion(name="alice", mechanism=2)],
          upsertions=[upsertion("alice", "x")]),
        A(deletions=[deletion(name="bob", mechanism=1)], upsertions=[upsertion("bob", "x", mechanism=SHA512)]),
        A(deletions=[], upsertions=[upsertion("dup", "x"), upsertion("dup", "x", mechanism=SHA512)]),
        A(deletions=[deletion(name="gone", mechanism=1), deletion(name="gone", mechanism=1)], upsertions=[]),
    ):
        assert_same(*on_both(brokers, "admin", 51, request), what=f"AlterUserScramCredentials {request}")
    assert_same(*on_both(brokers, "admin", 50, D(users=None)), what="DescribeUserScramCredentials afterwards (nothing changed)")


@pytest.mark.parametrize("user", [None, "alice"], ids=["anonymous", "alice"])
def test_alter_without_the_right(brokers, user: str | None) -> None:
    request = A(deletions=[A.ScramCredentialDeletion(name="zed", mechanism=1)],
                upsertions=[upsertion("b", "x"), upsertion("a", "x"), upsertion("b", "x")])
    assert_same(*on_both(brokers, user, 51, request), what=f"AlterUserScramCredentials as {user or 'ANONYMOUS'}")


def test_a_credential_set_over_the_wire_logs_in_on_both(brokers) -> None:
    user, password = "scram-diff-carol", "carol-secret"
    try:
        for mechanism, iterations in ((SHA256, 8192), (SHA512, 4096)):
            assert_same(*on_both(brokers, "admin", 51, A(deletions=[], upsertions=[upsertion(user, password, mechanism, iterations)])),
                        what="AlterUserScramCredentials upsert")
        assert_same(*on_both(brokers, "admin", 50, names(user)), what="DescribeUserScramCredentials of the new user")
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            for attempt in (password, "wrong"):
                kafka, shim = (scram_exchange(brokers[side]["SASL_PLAINTEXT"], ScramProbe(mechanism, user, attempt))
                               for side in ("kafka", "shim"))
                assert kafka == shim, f"{mechanism} with {'the right' if attempt == password else 'a wrong'} password"
    finally:
        cleanup(brokers, (user, SHA256), (user, SHA512))
    assert_same(*on_both(brokers, "admin", 50, names(user)), what="DescribeUserScramCredentials after deletion")


# -- the exchanges themselves -----------------------------------------------------------------------------------

def scram_exchange(address: tuple[str, int], client: ScramProbe, *, first: bytes | None = None,
                   final_kwargs: dict | None = None) -> list[tuple]:
    """The SaslAuthenticate answers of one SCRAM exchange, with the random parts of server messages replaced by
    their shape, and whether the server signature checked out."""
    outcome: list[tuple] = []
    with Wire(address) as wire:
        hs = wire.request(17, 1, SaslHandshakeRequest(mechanism=client.mechanism))
        assert hs.body.error_code == 0, hs
        answer = wire.request(36, 2, SaslAuthenticateRequest(auth_bytes=first if first is not None else client.first_message()))
        outcome.append(_shape(answer, client))
        if answer.closed or answer.body.error_code:
            return outcome
        final = client.final_message(answer.body.auth_bytes, **(final_kwargs or {}))
        answer = wire.request(36, 2, SaslAuthenticateRequest(auth_bytes=final))
        outcome.append(_shape(answer, client))
        if not answer.closed and answer.body.error_code == 0:
            outcome.append(("server signature verified", client.signature_verifies(answer.body.auth_bytes)))
    return outcome


def _shape(answer: Answer, client: ScramProbe) -> tuple:
    if answer.closed:
        return ("closed",)
    body = answer.body
    token = bytes(body.auth_bytes)
    first = re.fullmatch(rb"r=(?P<cn>[^,]+?)(?P<sn>[0-9a-z]{1,26}),s=[A-Za-z0-9+/=]+,i=(?P<i>\d+)", token)
    if first and first.group("cn") == client.nonce.encode():
        token = b"r=<client nonce><base-36 nonce>,s=<salt>,i=" + first.group("i")
    elif token.startswith(b"v="):
        token = b"v=<signature>"
    return (body.error_code, body.error_message, token, body.session_lifetime_ms)


SCRAM_CASES = {
    "good": dict(client=("alice", "alice-secret")),
    "wrong password": dict(client=("alice", "alice-secret"), password="wrong"),
    "unknown user": dict(client=("mallory", "x")),
    "tokenauth": dict(client=("alice", "alice-secret"), first_extra=",tokenauth=true"),
    "unknown extension": dict(client=("alice", "alice-secret"), first_extra=",foo=bar"),
    "reserved m= part": dict(client=("alice", "alice-secret"), gs2="n,,m=ext,", final_kwargs={"channel": "biws"}),
    "channel binding y,, after n,,": dict(client=("alice", "alice-secret"), final_kwargs={"channel": "eSws"}),
    "authzid other than the user": dict(client=("alice", "alice-secret"), gs2="n,a=bob,"),
    "authzid equal to the user": dict(client=("alice", "alice-secret"), gs2="n,a=alice,"),
    "gs2 header y": dict(client=("alice", "alice-secret"), gs2="y,,"),
    "bad saslname": dict(client=("al=ice", "x")),
    "forged nonce": dict(client=("alice", "alice-secret"), final_kwargs={"nonce": "fyko+d2lbbFgONRv9qkxdawLx"}),
    "not SCRAM at all": dict(client=("alice", "alice-secret"), first=b"\xff\xfe garbage"),
    "empty first message": dict(client=("alice", "alice-secret"), first=b""),
}


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("case", list(SCRAM_CASES.values()), ids=list(SCRAM_CASES))
def test_scram_exchange(brokers, mechanism: str, case: dict) -> None:
    def client() -> ScramProbe:
        user, password = case["client"]
        return ScramProbe(mechanism, user, case.get("password", password), gs2_header=case.get("gs2", "n,,"),
                          first_extra=case.get("first_extra", ""))

    kafka, shim = (scram_exchange(brokers[side]["SASL_PLAINTEXT"], client(), first=case.get("first"),
                                  final_kwargs=case.get("final_kwargs")) for side in ("kafka", "shim"))
    assert kafka == shim


def test_scram_proof_of_the_wrong_length(brokers) -> None:
    """Kafka closes the connection without answering (a runtime exception in its SCRAM server)."""
    kafka, shim = (scram_exchange(brokers[side]["SASL_PLAINTEXT"], ScramProbe("SCRAM-SHA-256", "alice", "alice-secret"),
                                  final_kwargs={"proof": b"short"}) for side in ("kafka", "shim"))
    assert kafka[-1] == ("closed",)
    assert kafka == shim


PLAIN_TOKENS = [
    b"\0alice\0alice-secret\0garbage", b"alice", b"", b"\0alice", b"\0\0", b"\0alice\0", b"\0alice\0alice-secret\0x\0y",
    b"\xff\xfe\0alice\0alice-secret", b"alice\0alice\0alice-secret", "\0ünï\0pässwörd".encode(),
]


@pytest.mark.parametrize("token", PLAIN_TOKENS, ids=[repr(t) for t in PLAIN_TOKENS])
def test_plain_tokens(brokers, token: bytes) -> None:
    answers = []
    for side in ("kafka", "shim"):
        with Wire(brokers[side]["SASL_PLAINTEXT"]) as wire:
            assert wire.request(17, 1, SaslHandshakeRequest(mechanism="PLAIN")).body.error_code == 0
            answers.append(wire.request(36, 2, SaslAuthenticateRequest(auth_bytes=token)))
    assert_same(*answers, what=f"SASL/PLAIN token {token!r}")
