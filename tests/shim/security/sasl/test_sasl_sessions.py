"""SASL sessions over TCP: lifetimes and re-authentication (KIP-368), stalled handshakes, oversized tokens, and
passwords kept out of the logs."""

from __future__ import annotations

import asyncio
import struct
import time

import pytest
import structlog

from kafka_shim.protocol.messages import MetadataRequest, SaslAuthenticateRequest, SaslHandshakeRequest
from kafka_shim.shim.broker import Broker
from kafka_shim.shim.client.wire import ConnectionClosed, WireClient
from kafka_shim.shim.config.broker_config import BrokerConfig
from tests.support.sasl_setup import listener_address, sasl_properties


def _config(**overrides: str) -> BrokerConfig:
    return BrokerConfig.from_properties(sasl_properties(listeners="SASL_PLAINTEXT://127.0.0.1:0") | overrides)


async def _connect(broker: Broker) -> WireClient:
    host, port = listener_address(broker, "SASL_PLAINTEXT")
    return await WireClient.connect(host, port)


async def _login(client: WireClient, user: str, password: str, version: int = 2):
    handshake = await client.request(17, 1, SaslHandshakeRequest(mechanism="PLAIN"))
    assert handshake.error_code == 0
    token = b"\0" + user.encode() + b"\0" + password.encode()
    return await client.request(36, version, SaslAuthenticateRequest(auth_bytes=token))


async def _closed(client: WireClient, timeout: float = 5.0) -> bool:
    try:
        await client.read_frame(timeout=timeout)
    except ConnectionClosed:
        return True
    return False


async def test_session_lifetime_is_connections_max_reauth_ms() -> None:
    async with Broker(_config(**{"connections.max.reauth.ms": "60000"})) as broker:
        async with await _connect(broker) as client:
            answer = await _login(client, "alice", "alice-secret")
            assert (answer.error_code, answer.session_lifetime_ms) == (0, 60000)
    async with Broker(_config()) as broker:
        async with await _connect(broker) as client:
            assert (await _login(client, "alice", "alice-secret")).session_lifetime_ms == 0


async def test_an_expired_session_is_closed_at_its_next_request() -> None:
    async with Broker(_config(**{"connections.max.reauth.ms": "300"})) as broker:
        async with await _connect(broker) as client:
            assert (await _login(client, "alice", "alice-secret")).error_code == 0
            assert (await client.request(3, 1, MetadataRequest(topics=None))).brokers
            await asyncio.sleep(0.4)
            await client.send(3, 1, MetadataRequest(topics=None))
            assert await _closed(client)


async def test_reauthentication_extends_the_session() -> None:
    async with Broker(_config(**{"connections.max.reauth.ms": "1500"})) as broker:
        async with await _connect(broker) as client:
            assert (await _login(client, "alice", "alice-secret")).error_code == 0
            await asyncio.sleep(1.1)  # Kafka allows one re-authentication per second
            again = await _login(client, "alice", "alice-secret")
            assert (again.error_code, again.session_lifetime_ms) == (0, 1500)
            await asyncio.sleep(0.8)  # past the first session's end, inside the second's
            assert (await client.request(3, 1, MetadataRequest(topics=None))).brokers


async def test_reauthentication_cannot_change_the_principal() -> None:
    async with Broker(_config(**{"connections.max.reauth.ms": "60000"})) as broker:
        async with await _connect(broker) as client:
            assert (await _login(client, "alice", "alice-secret")).error_code == 0
            await asyncio.sleep(1.05)
            answer = await _login(client, "bob", "bob-secret")
            assert answer.error_code == 58
            assert answer.error_message == "Cannot change principals during re-authentication from User.alice: User.bob"
            assert await _closed(client)


async def test_without_a_session_lifetime_a_second_handshake_gets_34() -> None:
    async with Broker(_config()) as broker:
        async with await _connect(broker) as client:
            assert (await _login(client, "alice", "alice-secret")).error_code == 0
            answer = await client.request(17, 1, SaslHandshakeRequest(mechanism="PLAIN"))
            assert (answer.error_code, answer.mechanisms) == (34, [])


async def test_a_client_that_stalls_mid_handshake_is_closed() -> None:
    async with Broker(_config(**{"connections.max.idle.ms": "300"})) as broker:
        async with await _connect(broker) as silent, await _connect(broker) as stalled:
            assert (await stalled.request(17, 1, SaslHandshakeRequest(mechanism="PLAIN"))).error_code == 0
            assert await _closed(silent) and await _closed(stalled)


async def test_an_oversized_frame_before_authentication_closes_only_that_connection() -> None:
    async with Broker(_config()) as broker:
        async with await _connect(broker) as big, await _connect(broker) as other:
            # Kafka's sasl.server.max.receive.size (512 KiB) applies until authentication completes.
            await big.send_raw(struct.pack(">i", 524289) + b"\0" * 64)
            assert await _closed(big)
            assert (await _login(other, "bob", "bob-secret")).error_code == 0


async def test_an_oversized_frame_before_authentication_fails_it_after_the_delay() -> None:
    # SaslServerAuthenticator turns the invalid receive into a SaslAuthenticationException: nothing is answered and
    # the connection closes after connection.failed.authentication.delay.ms, as for a wrong password.
    with structlog.testing.capture_logs() as logs:
        async with Broker(_config(**{"connection.failed.authentication.delay.ms": "300"})) as broker:
            async with await _connect(broker) as big:
                started = time.monotonic()
                await big.send_raw(struct.pack(">i", 524289) + b"\0" * 64)
                assert await _closed(big)
                assert time.monotonic() - started >= 0.27
    failed = [e for e in logs if e["event"] == "authentication_failed"]
    assert failed and "sasl.server.max.receive.size" in failed[0]["reason"], logs


async def test_sasl_server_max_receive_size_is_configurable() -> None:
    with structlog.testing.capture_logs() as logs:
        async with Broker(_config(**{"sasl.server.max.receive.size": "1000",
                                     "connection.failed.authentication.delay.ms": "0"})) as broker:
            async with await _connect(broker) as big, await _connect(broker) as other:
                await big.send_raw(struct.pack(">i", 1001) + b"\0" * 64)
                assert await _closed(big)
                assert (await _login(other, "bob", "bob-secret")).error_code == 0  # a login fits in 1000 bytes
    failed = [e for e in logs if e["event"] == "authentication_failed"]
    assert failed and "sasl.server.max.receive.size 1000" in failed[0]["reason"], logs


async def test_no_password_or_proof_reaches_the_log() -> None:
    from kafka_shim.shim.client.scram import ScramClient

    with structlog.testing.capture_logs() as logs:
        async with Broker(_config(**{"connection.failed.authentication.delay.ms": "0"})) as broker:
            async with await _connect(broker) as client:
                await _login(client, "alice", "secret-that-is-wrong")
            async with await _connect(broker) as client:
                scram = ScramClient("SCRAM-SHA-256", "bob", "another-wrong-secret")
                assert (await client.request(17, 1, SaslHandshakeRequest(mechanism="SCRAM-SHA-256"))).error_code == 0
                first = await client.request(36, 2, SaslAuthenticateRequest(auth_bytes=scram.first_message()))
                final = scram.final_message(first.auth_bytes)
                await client.request(36, 2, SaslAuthenticateRequest(auth_bytes=final))
    text = repr(logs)
    assert "authentication_failed" in text
    for secret in ("secret-that-is-wrong", "another-wrong-secret", final.decode().rsplit("p=", 1)[1]):
        assert secret not in text


@pytest.mark.parametrize("delay_ms", ["0", "200"])
async def test_failed_authentication_is_answered_after_the_delay(delay_ms: str) -> None:
    async with Broker(_config(**{"connection.failed.authentication.delay.ms": delay_ms})) as broker:
        async with await _connect(broker) as client:
            loop = asyncio.get_running_loop()
            started = loop.time()
            answer = await _login(client, "alice", "wrong")
            assert answer.error_code == 58
            assert (loop.time() - started >= 0.2) == (delay_ms == "200")


async def test_a_malformed_handshake_closes_only_that_connection() -> None:
    async with Broker(_config()) as broker:
        async with await _connect(broker) as bad, await _connect(broker) as good:
            # SaslHandshake v1 whose mechanism string claims 200 bytes but carries 3.
            payload = struct.pack(">hhih", 17, 1, 9, 1) + b"t" + struct.pack(">h", 200) + b"PLA"
            await bad.send_raw(struct.pack(">i", len(payload)) + payload)
            assert await _closed(bad)
            assert (await _login(good, "alice", "alice-secret")).error_code == 0
