"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51) over TCP, with the SASL listeners.

The expected answers are the ones a real Kafka 3.9 gave (tests/differential/test_scram_admin.py compares live).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from kafka_shim.protocol.messages import (
    AlterUserScramCredentialsRequest,
    ApiVersionsRequest,
    DescribeUserScramCredentialsRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from kafka_shim.shim.broker import Broker
from kafka_shim.shim.client.scram import ScramClient
from kafka_shim.shim.client.wire import ConnectionClosed, WireClient
from kafka_shim.shim.config.broker_config import BrokerConfig
from tests.support.sasl_setup import USERS, listener_address, sasl_properties

A = AlterUserScramCredentialsRequest
D = DescribeUserScramCredentialsRequest
SHA256, SHA512 = 1, 2
BOTH = [(SHA256, 4096), (SHA512, 4096)]  # sorted: Kafka's own order of mechanisms varies from run to run


def upsertion(name: str, password: str = "pw", mechanism: int = SHA256, iterations: int = 4096, salt: bytes = b"salt",
              salted_password: bytes | None = None) -> A.ScramCredentialUpsertion:
    algo = "sha256" if mechanism == SHA256 else "sha512"
    if salted_password is None:
        salted_password = hashlib.pbkdf2_hmac(algo, password.encode(), salt, max(iterations, 1))
    return A.ScramCredentialUpsertion(name=name, mechanism=mechanism, iterations=iterations, salt=salt, salted_password=salted_password)


def deletion(name: str, mechanism: int = SHA256) -> A.ScramCredentialDeletion:
    return A.ScramCredentialDeletion(name=name, mechanism=mechanism)


def users(*names: str) -> D:
    return D(users=[D.UserName(name=n) for n in names])


@asynccontextmanager
async def broker(**extra: str) -> AsyncIterator[Broker]:
    async with Broker(BrokerConfig.from_properties({**sasl_properties(), **extra})) as b:
        yield b


@asynccontextmanager
async def connect(b: Broker, user: str | None = None, listener: str = "SASL_PLAINTEXT") -> AsyncIterator[WireClient]:
    """A client on the SASL listener logged in with PLAIN as ``user``; anonymous on PLAINTEXT when user is None."""
    host, port = listener_address(b, "PLAINTEXT" if user is None else listener)
    client = await WireClient.connect(host, port)
    try:
        if user is not None:
            assert (await client.request(17, 1, SaslHandshakeRequest(mechanism="PLAIN"))).error_code == 0
            token = f"\0{user}\0{USERS[user]}".encode()
            assert (await client.request(36, 2, SaslAuthenticateRequest(auth_bytes=token))).error_code == 0
        yield client
    finally:
        await client.close()


async def scram_login(b: Broker, user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> tuple[int, str | None]:
    host, port = listener_address(b, "SASL_PLAINTEXT")
    async with await WireClient.connect(host, port) as client:
        assert (await client.request(17, 1, SaslHandshakeRequest(mechanism=mechanism))).error_code == 0
        scram = ScramClient(mechanism, user, password)
        first = await client.request(36, 2, SaslAuthenticateRequest(auth_bytes=scram.first_message()))
        if first.error_code:
            return first.error_code, first.error_message
        final = await client.request(36, 2, SaslAuthenticateRequest(auth_bytes=scram.final_message(first.auth_bytes)))
        if final.error_code == 0:
            scram.verify_server_final(final.auth_bytes)
        return final.error_code, final.error_message


def described(response) -> list[tuple]:
    return [(r.user, r.error_code, r.error_message, sorted((c.mechanism, c.iterations) for c in r.credential_infos))
            for r in response.results]


def altered(response) -> list[tuple]:
    return [(r.user, r.error_code, r.error_message) for r in response.results]


async def test_both_apis_are_advertised() -> None:
    async with broker() as b, connect(b) as client:
        versions = {k.api_key: (k.min_version, k.max_version) for k in (await client.request(18, 3, ApiVersionsRequest(
            client_software_name="t", client_software_version="1"))).api_keys}
    assert versions[50] == (0, 0) and versions[51] == (0, 0)


async def test_describe_everything_lists_the_jaas_users_in_kafkas_order() -> None:
    async with broker() as b, connect(b, "admin") as client:
        for request in (D(users=None), D(users=[])):
            response = await client.request(50, 0, request)
            assert (response.error_code, response.error_message) == (0, "")
            assert described(response) == [("bob", 0, "", BOTH), ("admin", 0, "", BOTH), ("alice", 0, "", BOTH)]


async def test_describe_named_users_with_duplicates_and_unknowns() -> None:
    async with broker() as b, connect(b, "admin") as client:
        response = await client.request(50, 0, users("alice", "nobody", "alice", "", "bob"))
    assert described(response) == [
        ("", 91, "Attempt to describe a user credential that does not exist: ", []),
        ("bob", 0, "", BOTH),
        ("alice", 92, "Cannot describe SCRAM credentials for the same user twice in a single request: alice", []),
        ("nobody", 91, "Attempt to describe a user credential that does not exist: nobody", []),
    ]


async def test_alter_refusals_as_kafka_words_and_orders_them() -> None:
    async with broker() as b, connect(b, "admin") as client:
        request = A(deletions=[deletion("nobody"), deletion(""), deletion("x1", 0), deletion("x2", 3)],
                    upsertions=[upsertion("nobody"), upsertion("u1", iterations=4095), upsertion("u2", iterations=16385),
                                upsertion("u3", iterations=16384), upsertion(""), upsertion("u4", mechanism=0), upsertion("u1"),
                                upsertion("u5", mechanism=SHA512, salted_password=b""), upsertion("u6", salt=b"")])
        assert altered(await client.request(51, 0, request)) == [
            ("u6", 0, None), ("u3", 0, None),
            ("", 93, "Username must not be empty"), ("u5", -1, None), ("x1", 33, "Unknown SCRAM mechanism"),
            ("x2", 33, "Unknown SCRAM mechanism"), ("nobody", 91, "Attempt to delete a user credential that does not exist"),
            ("u1", 93, "Too few iterations"), ("u2", 93, "Too many iterations"), ("u4", 33, "Unknown SCRAM mechanism"),
        ]
        response = await client.request(50, 0, D(users=None))
        assert [r.user for r in response.results] == ["u6", "bob", "admin", "alice", "u3"]
        assert described(response)[-1] == ("u3", 0, "", [(SHA256, 16384)])


async def test_a_user_altered_twice_in_one_request_is_a_duplicate_whatever_the_mechanism() -> None:
    async with broker() as b, connect(b, "admin") as client:
        request = A(deletions=[deletion("alice"), deletion("alice"), deletion("alice", SHA512)], upsertions=[upsertion("alice")])
        assert altered(await client.request(51, 0, request)) == [
            ("alice", 92, "A user credential cannot be altered twice in the same request")]
        request = A(deletions=[deletion("bob")], upsertions=[upsertion("bob", mechanism=SHA512)])
        assert altered(await client.request(51, 0, request)) == [
            ("bob", 92, "A user credential cannot be altered twice in the same request")]
        request = A(deletions=[], upsertions=[upsertion("carol"), upsertion("carol", mechanism=SHA512)])
        assert altered(await client.request(51, 0, request)) == [
            ("carol", 92, "A user credential cannot be altered twice in the same request")]
        # Nothing was changed by any of them.
        response = await client.request(50, 0, users("alice", "bob", "carol"))
        assert {r.user: r.error_code for r in response.results} == {"alice": 0, "bob": 0, "carol": 91}


async def test_credentials_set_over_the_wire_log_in_and_deleted_ones_do_not() -> None:
    async with broker() as b:
        async with connect(b, "admin") as client:
            response = await client.request(51, 0, A(deletions=[], upsertions=[upsertion("carol", "carol-pw", iterations=8192)]))
            assert altered(response) == [("carol", 0, None)]
        assert await scram_login(b, "carol", "carol-pw") == (0, "")
        code, message = await scram_login(b, "carol", "wrong")
        assert (code, message) == (58, "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
        async with connect(b, "admin") as client:
            assert altered(await client.request(51, 0, A(deletions=[deletion("carol"), deletion("alice", SHA512)], upsertions=[]))) == [
                ("carol", 0, None), ("alice", 0, None)]
        assert (await scram_login(b, "carol", "carol-pw"))[0] == 58
        assert (await scram_login(b, "alice", USERS["alice"], "SCRAM-SHA-512"))[0] == 58
        assert await scram_login(b, "alice", USERS["alice"], "SCRAM-SHA-256") == (0, "")


async def test_changes_survive_a_restart(tmp_path: Path) -> None:
    async with broker(**{"log.dirs": str(tmp_path)}) as b, connect(b, "admin") as client:
        # One user once per request (Kafka's rule), so bob's two mechanisms take two requests.
        request = A(deletions=[deletion("bob")], upsertions=[upsertion("carol", "carol-pw")])
        assert [r.error_code for r in (await client.request(51, 0, request)).results] == [0, 0]
        request = A(deletions=[deletion("bob", SHA512)], upsertions=[])
        assert [r.error_code for r in (await client.request(51, 0, request)).results] == [0]
    async with broker(**{"log.dirs": str(tmp_path)}) as b:
        async with connect(b, "admin") as client:
            response = await client.request(50, 0, D(users=None))
            assert sorted(r.user for r in response.results) == ["admin", "alice", "carol"]
        assert await scram_login(b, "carol", "carol-pw") == (0, "")
        assert (await scram_login(b, "bob", USERS["bob"]))[0] == 58


async def test_without_the_right_the_answer_is_31_and_kafkas_shapes() -> None:
    async with broker() as b, connect(b) as anonymous:
        response = await anonymous.request(50, 0, users("alice", "bob"))
        assert (response.error_code, response.error_message) == (31, None)
        assert described(response) == [("", 31, None, []), ("", 31, None, [])]
        response = await anonymous.request(50, 0, D(users=[]))
        assert (response.error_code, response.results) == (31, [])
        response = await anonymous.request(51, 0, A(deletions=[deletion("zed")], upsertions=[upsertion("b"), upsertion("a"), upsertion("b")]))
        assert [(r.user, r.error_code) for r in response.results] == [("a", 31), ("b", 31), ("zed", 31)]
        assert all(r.error_message.startswith("Request Request(") and r.error_message.endswith(") is not authorized.")
                   for r in response.results)
    async with broker() as b, connect(b, "alice") as alice:
        assert (await alice.request(50, 0, users("alice"))).error_code == 31
        assert (await alice.request(51, 0, A(deletions=[deletion("alice")], upsertions=[]))).results[0].error_code == 31


async def test_describe_everything_without_the_right_gets_no_answer_so_the_connection_closes() -> None:
    # Kafka fails while building this error response (its user list is null) and never answers.
    async with broker() as b, connect(b) as anonymous:
        with pytest.raises(ConnectionClosed):
            await anonymous.request(50, 0, D(users=None))


async def test_an_acl_grants_the_right() -> None:
    from kafka_shim.authorizer import (
        AccessControlEntry,
        AclBinding,
        AclOperation,
        AclPermissionType,
        PatternType,
        ResourcePattern,
        ResourceType,
    )

    async with broker() as b:
        cluster = ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL)
        b.authorizer.create_acls([AclBinding(cluster, AccessControlEntry("User:alice", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW))])
        async with connect(b, "alice") as alice:
            assert (await alice.request(50, 0, users("bob"))).results[0].error_code == 0
            assert (await alice.request(51, 0, A(deletions=[deletion("bob")], upsertions=[]))).results[0].error_code == 31


async def test_without_an_authorizer_or_sasl_listener_the_apis_still_work_in_memory() -> None:
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0"})
    async with Broker(config) as b, connect(b) as client:
        assert (await client.request(50, 0, D(users=None))).results == []
        assert altered(await client.request(51, 0, A(deletions=[], upsertions=[upsertion("carol")]))) == [("carol", 0, None)]
        assert described(await client.request(50, 0, D(users=None))) == [("carol", 0, "", [(SHA256, 4096)])]


async def test_without_a_sasl_listener_changes_are_still_kept_in_the_data_directory(tmp_path: Path) -> None:
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)})
    async with Broker(config) as b, connect(b) as client:
        assert altered(await client.request(51, 0, A(deletions=[], upsertions=[upsertion("carol")]))) == [("carol", 0, None)]
    async with Broker(config) as b, connect(b) as client:
        assert described(await client.request(50, 0, D(users=None))) == [("carol", 0, "", [(SHA256, 4096)])]
