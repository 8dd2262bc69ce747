"""Connection quotas as Kafka's ConnectionQuotas applies them at accept time: the state on its own (a fake clock),
then real sockets against a broker with max.connections.per.ip, max.connections and an ip connection_creation_rate."""

from __future__ import annotations

import socket
import time

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.messages import AlterClientQuotasRequest as A
from kafka_shim.protocol.messages import ApiVersionsRequest
from kafka_shim.shim.quotas.client_quotas import Alteration, ClientQuotas
from kafka_shim.shim.quotas.connection_quotas import ConnectionQuotas
from kafka_shim.shim.testing.handle import KafkaShim
from kafka_shim.shim.testing.options import ShimOptions
from tests.support.wire import Wire

_BOUND_S = 60


def _quotas(properties: dict[str, str], client: ClientQuotas | None = None) -> ConnectionQuotas:
    return ConnectionQuotas(properties, client or ClientQuotas(), clock=lambda: 100.0)  # every connection at one instant


def test_max_connections_per_ip_and_its_overrides() -> None:
    quotas = _quotas({"max.connections.per.ip": "2", "max.connections.per.ip.overrides": "10.0.0.9:3"})
    assert [quotas.admit("PLAINTEXT", "10.0.0.1").action for _ in range(3)] == ["accept", "accept", "reject"]
    assert [quotas.admit("PLAINTEXT", "10.0.0.9").action for _ in range(4)] == ["accept"] * 3 + ["reject"]
    quotas.released("PLAINTEXT", "10.0.0.1")
    assert quotas.admit("PLAINTEXT", "10.0.0.1").action == "accept"


def test_an_ip_over_its_creation_rate_is_closed_after_the_throttle_time() -> None:
    client = ClientQuotas()
    client.alter([Alteration((("ip", "10.0.0.1"),), [("connection_creation_rate", 1.0)])], validate_only=False)
    quotas = _quotas({}, client)
    verdicts = [quotas.admit("PLAINTEXT", "10.0.0.1") for _ in range(12)]
    # 1 per second over the 10 s minimum window: the 11th within the same instant is over, and waits at most 1 s
    assert [v.action for v in verdicts[:10]] == ["accept"] * 10
    assert verdicts[10].action == "close_after" and 0 < verdicts[10].wait_ms <= 1000
    assert quotas.counts["10.0.0.1"] == 10  # a throttled connection is not counted
    assert quotas.admit("PLAINTEXT", "10.0.0.2").action == "accept"  # another address has no quota


def test_the_broker_creation_rate_holds_the_acceptor_and_max_connections_waits_for_a_slot() -> None:
    quotas = _quotas({"max.connection.creation.rate": "2", "listener.name.plaintext.max.connections": "1"})
    first = quotas.admit("PLAINTEXT", "10.0.0.1")
    assert first.action == "accept" and quotas.slot_available("PLAINTEXT")
    second = quotas.admit("PLAINTEXT", "10.0.0.2")
    assert not quotas.slot_available("PLAINTEXT")  # one connection allowed on this listener
    resumed: list[str] = []
    quotas.wait_for_slot("PLAINTEXT", lambda: resumed.append("second"))
    quotas.released("PLAINTEXT", "10.0.0.1")
    assert resumed == ["second"] and second.action == "accept"
    held = [quotas.admit("SSL", "10.0.0.3").wait_ms for _ in range(25)]
    assert held[0] == 0 and 0 < held[-1] <= 1000  # past 2 per second over the window, the acceptor waits


def test_a_static_creation_rate_of_zero_holds_every_connection_one_window() -> None:
    """Kafka's QuotaUtils.boundedThrottleTime: over a bound of 0 the throttle time is infinite, bounded by one quota
    window (1 s); the rate is refused as a dynamic config, but server.properties may hold it."""
    quotas = _quotas({"listener.name.plaintext.max.connection.creation.rate": "0"})
    assert [quotas.admit("PLAINTEXT", "10.0.0.1").wait_ms for _ in range(2)] == [1000, 1000]
    assert quotas.admit("SSL", "10.0.0.1").wait_ms == 1000  # the acceptor is held: every connection behind it waits


def _api_versions(sock: socket.socket) -> bytes:
    from kafka_shim.protocol.framing import encode_request

    sock.sendall(encode_request(ApiKey.API_VERSIONS, 0, 1, ApiVersionsRequest()))
    return sock.recv(4)


def test_real_connections_past_the_per_ip_maximum_are_closed() -> None:
    with KafkaShim(ShimOptions(config={"max.connections.per.ip": "2"})) as shim:
        host, port = shim.bootstrap_servers.split(":")
        first = socket.create_connection((host, int(port)), timeout=_BOUND_S)
        second = socket.create_connection((host, int(port)), timeout=_BOUND_S)
        third = socket.create_connection((host, int(port)), timeout=_BOUND_S)
        try:
            assert len(_api_versions(first)) == 4 and len(_api_versions(second)) == 4
            try:
                answered = _api_versions(third)
            except ConnectionError:
                answered = b""
            assert answered == b"", "the third connection from this address is closed unanswered"
            first.close()
            deadline = time.monotonic() + _BOUND_S
            while True:  # the broker sees the close a moment later; then a new connection is accepted
                with socket.create_connection((host, int(port)), timeout=_BOUND_S) as again:
                    try:
                        if len(_api_versions(again)) == 4:
                            break
                    except ConnectionError:
                        pass
                assert time.monotonic() < deadline, "no connection accepted after one closed"
                time.sleep(0.05)
        finally:
            for sock in (first, second, third):
                sock.close()


def test_an_ip_connection_creation_rate_closes_connections_unread() -> None:
    with KafkaShim() as shim:
        host, port = shim.bootstrap_servers.split(":")
        with Wire((host, int(port)), timeout=_BOUND_S) as wire:
            answer = wire.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, A(entries=[A.EntryData(
                entity=[A.EntityData(entity_type="ip", entity_name="127.0.0.1")],
                ops=[A.OpData(key="connection_creation_rate", value=1.0)])]))
            assert answer.body.entries[0].error_code == 0
        closed = 0
        for _ in range(15):  # 1 per second over a 10 s window: some of these are over the rate
            with socket.create_connection((host, int(port)), timeout=_BOUND_S) as sock:
                try:
                    closed += _api_versions(sock) == b""
                except ConnectionError:
                    closed += 1
        assert closed > 0, "no connection was throttled"
