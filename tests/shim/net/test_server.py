"""The server core over real TCP: framing limits, ordering, bad input, versions."""

from __future__ import annotations

import asyncio
import struct
import time
import uuid

import pytest
import structlog.testing

from kafka_shim.protocol.framing import decode_response, encode_request
from kafka_shim.protocol.messages import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest
from kafka_shim.shim.broker import Broker
from kafka_shim.shim.client.wire import ConnectionClosed, WireClient
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.handlers import ApiHandler, load_all
from kafka_shim.shim.requests.api_table import ApiTable


def _config(**props: str) -> BrokerConfig:
    base = {"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "3"}
    base.update({k.replace("_", "."): v for k, v in props.items()})
    return BrokerConfig.from_properties(base)


@pytest.fixture
async def broker():
    async with Broker(_config()) as running:
        yield running


async def _client(broker: Broker) -> WireClient:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return await WireClient.connect(host, int(port))


def _raw_frame(api_key: int, version: int, correlation_id: int, body: bytes, client_id: bytes = b"t", flexible: bool = False) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id + (b"\x00" if flexible else b"")
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


async def test_metadata_names_this_broker(broker: Broker) -> None:
    async with await _client(broker) as client:
        for version in range(13):
            response = await client.request(3, version, MetadataRequest(topics=[]))
            assert [(b.node_id, b.port) for b in response.brokers] == [(3, broker.bound[0].port)]
            assert response.topics == []
            if version >= 2:
                assert response.cluster_id == broker.state.cluster_id
            if version >= 1:
                assert response.controller_id == 3


async def test_metadata_topics(broker: Broker) -> None:
    topic = broker.state.add_topic("orders", 2)
    topic_request = MetadataRequest.MetadataRequestTopic
    async with await _client(broker) as client:
        everything = await client.request(3, 1, MetadataRequest(topics=None))
        assert [t.name for t in everything.topics] == ["orders"]
        v0_all = await client.request(3, 0, MetadataRequest(topics=[]))
        assert [t.name for t in v0_all.topics] == ["orders"]  # v0: an empty list means every topic

        asked = await client.request(3, 12, MetadataRequest(topics=[topic_request(name="orders"), topic_request(name="nope"),
                                                                   topic_request(name="bad name!")], include_topic_authorized_operations=True))
        # With auto.create.topics.enable (the default) Kafka answers illegal names before the topics it creates.
        found, invalid, missing = asked.topics
        assert (found.error_code, found.topic_id, len(found.partitions)) == (0, topic.topic_id, 2)
        assert found.topic_authorized_operations == 3576  # no authorizer: every topic operation
        assert (missing.error_code, missing.partitions, missing.topic_authorized_operations) == (3, [], 3576)
        assert invalid.error_code == 17

        by_id = await client.request(3, 12, MetadataRequest(topics=[topic_request(name=None, topic_id=topic.topic_id)]))
        assert by_id.topics[0].name == "orders"
        stranger = uuid.uuid4()
        unknown_id = await client.request(3, 12, MetadataRequest(topics=[topic_request(name=None, topic_id=stranger)]))
        assert [(t.error_code, t.name, t.topic_id) for t in unknown_id.topics] == [(100, None, stranger)]

        # Before v12 a topic must be named: Kafka fails every topic with INVALID_REQUEST.
        null_name = await client.request(3, 11, MetadataRequest(topics=[topic_request(name=None, topic_id=stranger),
                                                                       topic_request(name="orders")]))
        assert [(t.error_code, t.name) for t in null_name.topics] == [(42, ""), (42, "orders")]
        assert null_name.brokers == []


async def test_cluster_authorized_operations_only_when_asked(broker: Broker) -> None:
    async with await _client(broker) as client:
        asked = await client.request(3, 10, MetadataRequest(topics=[], include_cluster_authorized_operations=True))
        assert asked.cluster_authorized_operations == 8096
        not_asked = await client.request(3, 10, MetadataRequest(topics=[]))
        assert not_asked.cluster_authorized_operations == -(2**31)


async def test_api_versions_lists_only_what_is_served(broker: Broker) -> None:
    async with await _client(broker) as client:
        for version in range(5):
            body = ApiVersionsRequest(client_software_name="test", client_software_version="1.0") if version >= 3 else ApiVersionsRequest()
            response = await client.request(18, version, body)
            assert response.error_code == 0
            ranges = {a.api_key: (a.min_version, a.max_version) for a in response.api_keys}
            assert ranges == {a.api_key: (a.min_version, a.max_version) for a in broker.services.api_table.served}
            assert ranges == {h.api_key: (h.min_version, h.max_version) for h in load_all().values()}  # no release profile
            assert {3: (0, 12), 17: (0, 1), 18: (0, 4), 36: (0, 2)}.items() <= ranges.items()
            assert not ({71, 72} & set(ranges))  # client telemetry: a KRaft broker leaves it out without a plugin


async def test_api_versions_rejects_bad_software_name(broker: Broker) -> None:
    async with await _client(broker) as client:
        response = await client.request(18, 3, ApiVersionsRequest(client_software_name="-bad", client_software_version="1"))
        assert (response.error_code, response.api_keys) == (42, [])


async def test_api_versions_unknown_version_answers_v0_with_error_35(broker: Broker) -> None:
    async with await _client(broker) as client:
        # A version from the future: the body is not even parsed.
        await client.send_raw(_raw_frame(18, 99, 41, b"\x01\x02\x03", flexible=True))
        payload = await client.read_frame()
        correlation_id, body = decode_response(18, 0, payload)
        assert correlation_id == 41
        assert body.error_code == 35
        assert [(a.api_key, a.min_version, a.max_version) for a in body.api_keys] == [(18, 0, 4)]
        assert len(payload) == 4 + 2 + 4 + 6  # header v0 + v0 body: error, one-element array
        # The connection stays usable.
        assert (await client.request(18, 0, ApiVersionsRequest())).error_code == 0


@pytest.mark.parametrize(
    ("api_key", "version"),
    [(3, 13), (3, -1), (0, 3), (29, 1), (9999, 0), (-5, 0)],
    ids=["metadata-v13", "metadata-v-1", "produce-unserved", "describe-acls-unserved", "unknown-key", "negative-key"],
)
async def test_unserved_requests_close_the_connection(broker: Broker, api_key: int, version: int) -> None:
    async with await _client(broker) as client:
        await client.send_raw(_raw_frame(api_key, version, 1, b"\x00" * 8))
        assert await client.closed_by_peer()
    await _still_serves(broker)


async def _still_serves(broker: Broker) -> None:
    async with await _client(broker) as other:
        assert (await other.request(18, 0, ApiVersionsRequest())).error_code == 0


async def test_responses_keep_request_order_when_pipelined(broker: Broker) -> None:
    async with await _client(broker) as client:
        frames = []
        for cid in range(1, 201):
            if cid % 2:
                frames.append(encode_request(18, cid % 5, cid, ApiVersionsRequest(client_software_name="a", client_software_version="1")))
            else:
                frames.append(encode_request(3, cid % 13, cid, MetadataRequest(topics=[])))
        await client.send_raw(b"".join(frames))
        for cid in range(1, 201):
            payload = await client.read_frame()
            key, version = (18, cid % 5) if cid % 2 else (3, cid % 13)
            got, _ = decode_response(key, version, payload)
            assert got == cid


async def test_async_handlers_do_not_overtake_earlier_requests(broker: Broker) -> None:
    table = broker.services.api_table
    original = table.handler(3, 12)

    async def slow_metadata(ctx, request):
        await asyncio.sleep(0.05 if ctx.correlation_id == 1 else 0)
        return original.handle(ctx, request)

    handlers = {a.api_key: table.handler(a.api_key, a.max_version) for a in table.served}
    broker.services.api_table = ApiTable({**handlers, 3: ApiHandler(3, 0, 12, slow_metadata, is_async=True)})
    async with await _client(broker) as client:
        await client.send_raw(encode_request(3, 12, 1, MetadataRequest(topics=[])) + encode_request(18, 0, 2, ApiVersionsRequest())
                              + encode_request(3, 12, 3, MetadataRequest(topics=[])))
        order = [decode_response(k, v, await client.read_frame())[0] for k, v in ((3, 12), (18, 0), (3, 12))]
        assert order == [1, 2, 3]


async def test_oversized_frame_closes_without_reading_it() -> None:
    async with Broker(_config(socket_request_max_bytes="1000")) as broker:
        async with await _client(broker) as client:
            # Announce 1 GiB and send only the prefix: the broker must not wait for (or buffer) the body.
            await client.send_raw(struct.pack(">i", 1 << 30))
            assert await client.closed_by_peer(timeout=2)
        async with await _client(broker) as client:
            await client.send_raw(struct.pack(">i", -7))
            assert await client.closed_by_peer(timeout=2)
        await _still_serves(broker)


async def test_malformed_bodies_close_only_that_connection(broker: Broker) -> None:
    bystander = await _client(broker)
    try:
        bad_bodies = [
            _raw_frame(3, 1, 1, b"\x7f\xff\xff\xff"),  # 2^31-1 topics in 4 bytes
            _raw_frame(3, 9, 1, b"\x05\x00", flexible=True),  # compact array of 4 topics, no data
            _raw_frame(3, 1, 1, b""),  # body missing
            _raw_frame(18, 3, 1, b"\x80\x80\x80\x80\x80\x80", flexible=True),  # a varint that never ends
            struct.pack(">i", 2) + b"\x00\x03",  # header cut short
            struct.pack(">i", 0),  # empty frame
        ]
        for frame in bad_bodies:
            async with await _client(broker) as client:
                await client.send_raw(frame)
                assert await client.closed_by_peer(), frame
        assert (await bystander.request(18, 0, ApiVersionsRequest())).error_code == 0
    finally:
        await bystander.close()


async def test_client_disconnect_mid_frame_is_harmless(broker: Broker) -> None:
    client = await _client(broker)
    frame = encode_request(3, 12, 1, MetadataRequest(topics=[]))
    await client.send_raw(frame[: len(frame) // 2])
    await client.close()
    await _still_serves(broker)
    deadline = time.monotonic() + 5
    while broker.connections and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert broker.connections == set()


async def test_idle_connections_are_closed() -> None:
    async with Broker(_config(connections_max_idle_ms="200")) as broker:
        async with await _client(broker) as client:
            started = time.monotonic()
            assert await client.closed_by_peer(timeout=3)
            assert 0.15 < time.monotonic() - started < 2.5


async def test_slow_reader_does_not_block_other_clients(broker: Broker) -> None:
    hog = await _client(broker)
    try:
        # Thousands of requests whose responses are never read.
        await asyncio.wait_for(hog.send_raw(encode_request(3, 12, 1, MetadataRequest(topics=None)) * 20000), timeout=5)
    except TimeoutError:
        pass  # the broker stopped reading from it: that is the point
    try:
        # Served at all, not served fast: how fast depends on the machine (the flood's bounds are asserted in
        # test_request_path_limits.py); the bound here only keeps a hang from stalling the suite.
        await asyncio.wait_for(_still_serves(broker), timeout=60)
    finally:
        hog.writer.transport.abort()


async def test_request_header_v2_with_null_client_id(broker: Broker) -> None:
    async with await _client(broker) as client:
        client.client_id = None
        response = await client.request(3, 12, MetadataRequest(topics=[]))
        assert response.brokers[0].node_id == 3


async def test_closed_connection_raises(broker: Broker) -> None:
    async with await _client(broker) as client:
        await client.send_raw(_raw_frame(9999, 0, 1, b""))
        with pytest.raises(ConnectionClosed):
            await client.read_frame()


def test_unsupported_version_body_is_v0_shape() -> None:
    unsupported_version_response = ApiTable(load_all()).unsupported_api_versions
    assert unsupported_version_response().encode(0) == bytes.fromhex("0023" "00000001" "0012" "0000" "0004")
    assert ApiVersionsResponse.decode(unsupported_version_response().encode(0), 0).error_code == 35


async def test_a_failing_handler_answers_unknown_server_error_and_keeps_the_connection(broker: Broker) -> None:
    table = broker.services.api_table
    metadata = table.handler(3, 12)

    def crash(ctx, request):
        raise RuntimeError("a bug")

    handlers = {a.api_key: table.handler(a.api_key, a.max_version) for a in table.served}
    broker.services.api_table = ApiTable({**handlers, 3: metadata._replace(handle=crash)})
    with structlog.testing.capture_logs() as logs:
        async with await _client(broker) as client:
            request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")])
            await client.send_raw(encode_request(3, 12, 1, request) + encode_request(18, 0, 2, ApiVersionsRequest()))
            correlation_id, answer = decode_response(3, 12, await client.read_frame())
            assert (correlation_id, [(t.name, t.error_code) for t in answer.topics]) == (1, [("t", -1)])
            assert decode_response(18, 0, await client.read_frame())[1].error_code == 0
    failed = [e for e in logs if e["event"] == "handler_failed"]
    assert [(e["api"], e["answered"], e["log_level"]) for e in failed] == [("Metadata", "UNKNOWN_SERVER_ERROR", "error")]
    assert isinstance(failed[0]["exc_info"], RuntimeError)
