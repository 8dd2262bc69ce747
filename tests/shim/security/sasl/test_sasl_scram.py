"""SCRAM, server and client: the RFC 5802 and RFC 7677 example exchanges, Kafka's refusals, and garbage."""

from __future__ import annotations

import base64
import time

import pytest

from kafka_shim.shim.client.scram import ScramClient, ScramError
from kafka_shim.shim.security.sasl import (
    IllegalSaslStateError,
    InvalidCredentialsError,
    SaslAuthenticationError,
    SaslProtocolViolation,
)
from kafka_shim.shim.security.sasl.scram import ScramServer
from kafka_shim.shim.security.sasl.scram_math import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramCredential,
    ScramMechanism,
    auth_message,
    secure_random_string,
)
from tests.support.scram_probe import RFC_NONCE, ScramProbe

SHA256 = SCRAM_SHA_256.name
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
SCRAM_SHA_1 = ScramMechanism("SCRAM-SHA-1", 0, "sha1")  # only for RFC 5802's example; Kafka has no SHA-1


def server(mechanism: ScramMechanism = SCRAM_SHA_256, users: dict[str, str] | None = None, iterations: int = 4096,
           **kwargs) -> ScramServer:
    users = {"alice": "alice-secret", "al,ice=": "odd-name"} if users is None else users
    credentials = {user: ScramCredential.derive(mechanism, pw, iterations) for user, pw in users.items()}
    return ScramServer(mechanism, credentials.get, **kwargs)


def test_rfc5802_example_exchange() -> None:
    # RFC 5802 section 5 (SCRAM-SHA-1), byte for byte.
    credential = ScramCredential.derive(SCRAM_SHA_1, "pencil", 4096, base64.b64decode("QSXCR+Q6sek8bf92"))
    s = ScramServer(SCRAM_SHA_1, {"user": credential}.get, nonce=lambda: "3rfcNHYJY1ZVvWVs7j")
    assert s.evaluate(b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL") == b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096"
    final = s.evaluate(b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=")
    assert final == b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ="
    assert s.complete and s.authorization_id == "user"


def test_rfc7677_example_exchange() -> None:
    # RFC 7677 section 3 (SCRAM-SHA-256), byte for byte.
    credential = ScramCredential.derive(SCRAM_SHA_256, "pencil", 4096, base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="))
    s = ScramServer(SCRAM_SHA_256, {"user": credential}.get, nonce=lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    assert s.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO") == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    final = s.evaluate(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                       b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert s.authorization_id == "user"


def test_rfc5802_example_arithmetic() -> None:
    # The client's side of RFC 5802 section 5: the values behind its proof and the signature it expects.
    salted = SCRAM_SHA_1.salted_password("pencil", base64.b64decode("QSXCR+Q6sek8bf92"), 4096)
    signed = auth_message("n=user,r=fyko+d2lbbFgONRv9qkxdawL",
                          "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
                          "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j")
    proof = SCRAM_SHA_1.client_proof(salted, signed)
    assert base64.b64encode(proof) == b"v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="
    assert base64.b64encode(SCRAM_SHA_1.server_signature(SCRAM_SHA_1.server_key(salted), signed)) == b"rmF9pqV8S7suAoZWja4dJRkFsKQ="
    assert SCRAM_SHA_1.proof_matches(SCRAM_SHA_1.stored_key(salted), signed, proof)
    assert not SCRAM_SHA_1.proof_matches(SCRAM_SHA_1.stored_key(salted), signed, bytes(len(proof)))


def test_rfc7677_example_exchange_from_kafka_shims_client() -> None:
    # RFC 7677 section 3 again, the client's messages byte for byte, answered by the server of the same example.
    credential = ScramCredential.derive(SCRAM_SHA_256, "pencil", 4096, base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="))
    s = ScramServer(SCRAM_SHA_256, {"user": credential}.get, nonce=lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first_message() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = client.final_message(s.evaluate(client.first_message()))
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    server_final = s.evaluate(final)
    assert server_final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    client.verify_server_final(server_final)


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512], ids=lambda m: m.name)
def test_full_exchange_and_server_signature(mechanism: ScramMechanism) -> None:
    s = server(mechanism)
    client = ScramClient(mechanism.name, "alice", "alice-secret")
    server_first = s.evaluate(client.first_message())
    assert server_first.startswith(b"r=" + client.nonce.encode()) and b",i=4096" in server_first
    client.verify_server_final(s.evaluate(client.final_message(server_first)))
    assert s.complete and s.authorization_id == "alice"


def test_the_client_trusts_only_the_servers_own_signature() -> None:
    s = server()
    client = ScramClient("SCRAM-SHA-256", "alice", "alice-secret")
    server_final = s.evaluate(client.final_message(s.evaluate(client.first_message())))
    for wrong in (b"v=" + base64.b64encode(bytes(SCRAM_SHA_256.digest_size)), b"v=", b"e=other-error", server_final[:-4]):
        with pytest.raises(ScramError):
            client.verify_server_final(wrong)
    client.verify_server_final(server_final)


def test_escaped_user_names() -> None:
    s = server()
    client = ScramProbe(SHA256, "al,ice=", "odd-name")
    assert client.first_message() == b"n,,n=al=2Cice=3D,r=fyko+d2lbbFgONRv9qkxdawL"
    server_first = s.evaluate(client.first_message())
    s.evaluate(client.final_message(server_first))
    assert s.authorization_id == "al,ice="


def test_server_nonce_is_a_base36_number_of_130_bits_like_kafkas() -> None:
    nonces = {secure_random_string() for _ in range(200)}
    assert len(nonces) == 200
    assert all(set(n) <= set("0123456789abcdefghijklmnopqrstuvwxyz") and len(n) <= 26 for n in nonces)


def test_authorization_id_equal_to_the_user_is_accepted() -> None:
    s = server()
    client = ScramProbe(SHA256, "alice", "alice-secret", gs2_header="n,a=alice,")
    s.evaluate(client.final_message(s.evaluate(client.first_message())))
    assert s.authorization_id == "alice"


def fails(s: ScramServer, token: bytes) -> SaslAuthenticationError:
    with pytest.raises(SaslAuthenticationError) as raised:
        s.evaluate(token)
    assert not s.complete
    return raised.value


def first_fails(token: bytes, mechanism: ScramMechanism = SCRAM_SHA_256) -> SaslAuthenticationError:
    return fails(server(mechanism), token)


def final_fails(client: ScramProbe, **final_kwargs) -> SaslAuthenticationError:
    s = server()
    server_first = s.evaluate(client.first_message())
    return fails(s, client.final_message(server_first, **final_kwargs))


def test_wrong_password_gets_the_generic_text() -> None:
    error = final_fails(ScramProbe(SHA256, "alice", "not-her-password"))
    assert isinstance(error, InvalidCredentialsError)
    assert str(error) == GENERIC.format("SCRAM-SHA-256")
    assert "not-her-password" not in error.reason


def test_unknown_user_fails_at_the_first_message_with_the_same_text_as_a_wrong_password() -> None:
    # Kafka 3.9 refuses an unknown user at once (no made-up salt), but with the same words as a wrong proof,
    # so the message never says whether the user exists.
    error = first_fails(ScramProbe(SHA256, "mallory", "x").first_message())
    assert str(error) == str(final_fails(ScramProbe(SHA256, "alice", "wrong")))


def test_wrong_nonce_in_the_final_message() -> None:
    error = final_fails(ScramProbe(SHA256, "alice", "alice-secret"), nonce=RFC_NONCE + "forged")
    assert str(error) == GENERIC.format("SCRAM-SHA-256") and "nonce" in error.reason


def test_only_the_client_nonce_echoed_back_is_refused() -> None:
    error = final_fails(ScramProbe(SHA256, "alice", "alice-secret"), nonce=RFC_NONCE)
    assert isinstance(error, InvalidCredentialsError)


def test_a_client_nonce_sent_twice_is_accepted_as_kafka_accepts_it() -> None:
    # librdkafka 2.0 (Debian's kcat 1.7.1) sends its own nonce again before the server-first one. Kafka's
    # ScramSaslServer only asks that the nonce end with the server-first nonce, and checks the proof over the
    # nonce as sent: such a client logs in.
    client = ScramProbe(SHA256, "alice", "alice-secret")
    s = server()
    server_first = s.evaluate(client.first_message())
    full_nonce = server_first.decode().split(",")[0].removeprefix("r=")
    server_final = s.evaluate(client.final_message(server_first, nonce=RFC_NONCE + full_nonce))
    assert client.signature_verifies(server_final)
    assert s.complete and s.authorization_id == "alice"


def test_channel_binding_that_is_not_base64_is_refused() -> None:
    assert isinstance(final_fails(ScramProbe(SHA256, "alice", "alice-secret"), channel="b!ws"), InvalidCredentialsError)


def test_channel_binding_changed_after_the_proof_was_made_fails_the_proof() -> None:
    s = server()
    client = ScramProbe(SHA256, "alice", "alice-secret")
    final = client.final_message(s.evaluate(client.first_message()))
    error = fails(s, final.replace(b"c=biws", b"c=eSws"))  # "y,," instead of "n,,"
    assert "Invalid client credentials" in error.reason


def test_channel_binding_is_covered_by_the_proof_but_not_compared_as_in_kafka() -> None:
    # Measured: Kafka 3.9 accepts c=eSws ("y,,") after "n,," when the proof was computed over it.
    s = server()
    client = ScramProbe(SHA256, "alice", "alice-secret")
    s.evaluate(client.final_message(s.evaluate(client.first_message()), channel="eSws"))
    assert s.complete


def test_reserved_m_extension_is_accepted_and_left_out_of_the_auth_message_as_in_kafka() -> None:
    # Measured: Kafka 3.9 answers "n,,m=ext,n=alice,..." and verifies a proof made without the m= part.
    s = server()
    client = ScramProbe(SHA256, "alice", "alice-secret", gs2_header="n,,m=ext,")
    final = client.final_message(s.evaluate(client.first_message()), channel="biws")
    s.evaluate(final)
    assert s.complete


def test_unknown_extensions_are_ignored_but_kept_in_the_auth_message() -> None:
    s = server()
    client = ScramProbe(SHA256, "alice", "alice-secret", first_extra=",foo=bar")
    client.verify_server_final(s.evaluate(client.final_message(s.evaluate(client.first_message()))))


@pytest.mark.parametrize("value", ["true", "TRUE", "True"])
def test_tokenauth_with_an_unknown_token_id_is_refused(value: str) -> None:
    error = first_fails(ScramProbe(SHA256, "alice", "alice-secret", first_extra=f",tokenauth={value}").first_message())
    assert isinstance(error, InvalidCredentialsError) and "Invalid tokenId : alice" in error.reason


def test_a_token_login_authenticates_as_the_tokens_owner() -> None:
    hmac_b64 = base64.b64encode(b"token-hmac").decode()
    token = (ScramCredential.derive(SCRAM_SHA_256, hmac_b64, 4096), "bob", 1_900_000_000_000)
    s = server(token_lookup={"token-1": token}.get)
    client = ScramProbe(SHA256, "token-1", hmac_b64, first_extra=",tokenauth=true")
    client.verify_server_final(s.evaluate(client.final_message(s.evaluate(client.first_message()))))
    assert s.complete and s.authorization_id == "bob" and s.token_authenticated
    assert s.credential_expiry_ms == 1_900_000_000_000
    # The same id without tokenauth is a user name, which has no credential.
    error = fails(server(token_lookup={"token-1": token}.get), ScramProbe(SHA256, "token-1", hmac_b64).first_message())
    assert isinstance(error, InvalidCredentialsError)


def test_tokenauth_false_is_an_ordinary_login() -> None:
    s = server()
    client = ScramProbe(SHA256, "alice", "alice-secret", first_extra=",tokenauth=false")
    s.evaluate(client.final_message(s.evaluate(client.first_message())))
    assert s.complete


def test_authorization_id_other_than_the_user_gets_kafkas_own_text() -> None:
    error = first_fails(ScramProbe(SHA256, "alice", "alice-secret", gs2_header="n,a=bob,").first_message())
    assert not isinstance(error, InvalidCredentialsError)
    assert str(error) == "Authentication failed: Client requested an authorization id that is different from username"


def test_a_proof_of_the_wrong_length_closes_without_an_answer_as_in_kafka() -> None:
    error = final_fails(ScramProbe(SHA256, "alice", "alice-secret"), proof=b"short")
    assert isinstance(error, SaslProtocolViolation) and error.close_without_response


def test_a_credential_below_the_minimum_iterations_is_refused() -> None:
    s = server(iterations=4095)
    assert isinstance(fails(s, ScramProbe(SHA256, "alice", "alice-secret").first_message()), InvalidCredentialsError)


def test_reauthentication_changes_only_the_generic_text() -> None:
    s = server(reauthentication=True)
    error = fails(s, ScramProbe(SHA256, "mallory", "x").first_message())
    assert str(error) == "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"


@pytest.mark.parametrize("token", [
    b"",
    b"n,,",
    b"y,,n=alice,r=abc",  # a client that could bind a channel: Kafka supports only "n"
    b"p=tls-unique,,n=alice,r=abc",
    b"n,,n=alice",
    b"n,,n=alice,r=",
    b"n,,n=,r=abc",
    b"n,,n=al=ice,r=abc",  # "=" must be =2C or =3D
    "n,,n=ünï,r=abc".encode(),  # Kafka's patterns are US-ASCII only
    b"n,,n=alice,r=ab c",
    b"n,,n=alice,r=abc,1=2",
    b"\xff\xfe\xfd",
    b"n,,n=alice,r=abc\x00",
    b"n,," + b"n=" + b"a" * 600_000 + b",r=x,,",
    b"n,,n=alice,r=abc" + b",a=b" * 100_000 + b",",
])
def test_garbage_client_first_messages_are_authentication_errors(token: bytes) -> None:
    started = time.perf_counter()
    error = first_fails(token)
    assert time.perf_counter() - started < 1.0
    assert str(error) == GENERIC.format("SCRAM-SHA-256")


@pytest.mark.parametrize("final", [
    b"",
    b"c=biws",
    b"c=biws,r={nonce}",
    b"c=biws,r={nonce},p=",  # an empty proof has the wrong length
    b"c=biws,r={nonce},p=***",
    b"c=biw,r={nonce},p=AAAA",
    b"r={nonce},c=biws,p=AAAA",
    b"c=biws,r={nonce},p=" + b"A" * 600_000 + b"!",
    b"c=" + b"b" * 600_001 + b",r={nonce},p=AAAA",
    b"\x80" * 1000,
])
def test_garbage_client_final_messages_are_authentication_errors(final: bytes) -> None:
    s = server()
    client = ScramProbe(SHA256, "alice", "alice-secret")
    server_first = s.evaluate(client.first_message())
    nonce = server_first.split(b",")[0][2:]
    started = time.perf_counter()
    fails(s, final.replace(b"{nonce}", nonce))
    assert time.perf_counter() - started < 1.0


def test_no_token_after_the_exchange_ends() -> None:
    s = server()
    client = ScramProbe(SHA256, "alice", "alice-secret")
    s.evaluate(client.final_message(s.evaluate(client.first_message())))
    with pytest.raises(IllegalSaslStateError, match="Unexpected challenge in Sasl server state COMPLETE"):
        s.evaluate(b"again")
    s = server()
    fails(s, b"junk")
    with pytest.raises(IllegalSaslStateError, match="FAILED"):
        s.evaluate(ScramProbe(SHA256, "alice", "alice-secret").first_message())


def test_no_authorization_id_before_completion() -> None:
    s = server()
    s.evaluate(ScramProbe(SHA256, "alice", "alice-secret").first_message())
    with pytest.raises(RuntimeError):
        _ = s.authorization_id
