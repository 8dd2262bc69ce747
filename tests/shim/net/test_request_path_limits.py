"""The limits a client can rely on, over real TCP (issue 12, defects 1-3).

* Every complete request before a refused size prefix is answered before the connection closes.
* A connection has at most MAX_IN_FLIGHT unanswered requests; a client that pipelines thousands and never
  reads holds the broker to that many answers, other clients keep being served, and the flooder gets every
  answer, in order, once it reads.
* connections.max.idle.ms counts any bytes received (a partial frame too) as activity, and a connection
  closed while its peer reads nothing is released within a bounded time.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Callable

import pytest

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.framing import decode_response, encode_request
from kafka_shim.protocol.messages import ApiVersionsRequest, FetchRequest, MetadataRequest, ProduceRequest
from kafka_shim.protocol.records import build_batch, encode_batch
from kafka_shim.shim.broker import Broker
from kafka_shim.shim.client.wire import WireClient
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.handlers import ApiHandler
from kafka_shim.shim.handlers.produce import CHEAP_RECORDS
from kafka_shim.shim.net.connection import MAX_IN_FLIGHT, PENDING_FRAME_BYTES, KafkaConnection
from kafka_shim.shim.requests.api_table import ApiTable

METADATA_V = 12
TOPICS = 10  # Metadata answers of ~700 bytes: 10,000 of them are megabytes, more than the sockets between us hold


def _config(**props: str) -> BrokerConfig:
    base = {"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "3"}
    base.update({k.replace("_", "."): v for k, v in props.items()})
    return BrokerConfig.from_properties(base)


async def _open(broker: Broker) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return await asyncio.wait_for(asyncio.open_connection(host, int(port)), 10)


async def _open_kafka_sized(broker: Broker) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, KafkaConnection]:
    """A connection whose sockets have the buffer sizes Kafka's defaults give them (the broker's
    socket.send.buffer.bytes 102400, a client's receive.buffer.bytes 65536). Loopback's kernel buffers otherwise
    grow to megabytes: they would hold a test's answers out of the broker's sight, and a reader could drain them
    for longer than an idle time with nothing visible to the broker."""
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    sock.setblocking(False)
    await asyncio.wait_for(asyncio.get_running_loop().sock_connect(sock, (host, int(port))), 10)
    reader, writer = await asyncio.open_connection(sock=sock)
    conn = await _wait_for_server_side(broker, writer)
    conn.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 102400)
    return reader, writer, conn


async def _client(broker: Broker) -> WireClient:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return await WireClient.connect(host, int(port))


async def _eventually(condition: Callable[[], bool], timeout: float = 20.0, interval: float = 0.02) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` passes; the bound is generous, never the expectation."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(interval)
    return True


def _server_side(broker: Broker, writer: asyncio.StreamWriter) -> KafkaConnection:
    """The broker's connection object for a client socket, found by the client's local port."""
    local_port = writer.get_extra_info("sockname")[1]
    (conn,) = [c for c in broker.connections if c.client_port == local_port]
    return conn


async def _read_payload(reader: asyncio.StreamReader, timeout: float = 10.0) -> bytes:
    (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), timeout))
    return await asyncio.wait_for(reader.readexactly(size), timeout)


async def _closed(reader: asyncio.StreamReader, timeout: float = 10.0) -> bool:
    """True if the broker closes the connection (EOF or reset) within ``timeout``, with nothing more to read."""
    try:
        return await asyncio.wait_for(reader.read(1), timeout) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _add_topics(broker: Broker) -> None:
    for i in range(TOPICS):
        broker.state.add_topic(f"topic-{i}", 1)


def _api_versions(correlation_id: int) -> bytes:
    return encode_request(ApiKey.API_VERSIONS, 0, correlation_id, ApiVersionsRequest())


# -- 1. answers before a refused size ---------------------------------------------------------


@pytest.mark.parametrize("bad_size", [b"\xff\xff\xff\xff", struct.pack(">i", 1001)], ids=["negative", "above-limit"])
async def test_requests_before_a_refused_size_are_answered_then_closed(bad_size: bytes) -> None:
    async with Broker(_config(socket_request_max_bytes="1000")) as broker:
        reader, writer = await _open(broker)
        try:
            writer.write(_api_versions(7) + bad_size)  # one write: both arrive in the same read
            correlation_id, body = decode_response(ApiKey.API_VERSIONS, 0, await _read_payload(reader))
            assert (correlation_id, body.error_code) == (7, 0)
            assert await _closed(reader)
        finally:
            writer.close()


async def test_more_than_max_in_flight_before_a_refused_size_are_all_answered_in_order() -> None:
    async with Broker(_config()) as broker:
        table = broker.services.api_table
        original = table.handler(ApiKey.METADATA, METADATA_V)

        async def slow_metadata(ctx, request):  # an answer that is not ready when the bad size is read
            await asyncio.sleep(0.05)
            return original.handle(ctx, request)

        handlers = {a.api_key: table.handler(a.api_key, a.max_version) for a in table.served}
        slow = ApiHandler(ApiKey.METADATA, original.min_version, original.max_version, slow_metadata, is_async=True)
        broker.services.api_table = ApiTable({**handlers, ApiKey.METADATA: slow})
        count = 3 * MAX_IN_FLIGHT
        frames = [encode_request(ApiKey.METADATA, METADATA_V, cid, MetadataRequest(topics=[])) if cid % 3 == 0 else _api_versions(cid)
                  for cid in range(count)]
        reader, writer = await _open(broker)
        try:
            writer.write(b"".join(frames) + b"\xff\xff\xff\xff")
            for cid in range(count):
                key, version = (ApiKey.METADATA, METADATA_V) if cid % 3 == 0 else (ApiKey.API_VERSIONS, 0)
                assert decode_response(key, version, await _read_payload(reader))[0] == cid
            assert await _closed(reader)
        finally:
            writer.close()


async def test_a_connection_closed_with_answers_its_client_never_reads_is_released() -> None:
    """The answer before a refused size is far larger than the sockets between us hold, and never read: the
    broker waits a bounded time for the client to read it (here connections.max.idle.ms, 500 ms), then aborts."""
    async with Broker(_config(connections_max_idle_ms="500")) as broker:
        for i in range(20_000):  # a Metadata answer of about a megabyte
            broker.state.add_topic(f"topic-{i}", 1)
        _reader, writer, conn = await _open_kafka_sized(broker)
        try:
            writer.write(encode_request(ApiKey.METADATA, METADATA_V, 1, MetadataRequest(topics=None)) + b"\xff\xff\xff\xff")
            assert await _eventually(lambda: conn.closing)
            assert conn.transport.get_write_buffer_size() > 0  # the answer is still waiting for the client
            assert await _eventually(lambda: conn not in broker.connections)
            sock = conn.transport.get_extra_info("socket")
            assert await _eventually(lambda: sock.fileno() == -1, timeout=10)
        finally:
            writer.transport.abort()


# -- 2. pipelining is held to MAX_IN_FLIGHT ----------------------------------------------------------


async def test_a_flood_of_pipelined_requests_is_held_to_max_in_flight() -> None:
    async with Broker(_config()) as broker:
        _add_topics(broker)
        requests = 10_000
        flood = b"".join(encode_request(ApiKey.METADATA, METADATA_V, cid, MetadataRequest(topics=None)) for cid in range(requests))
        healthy = await _client(broker)
        answer_size = len(await _metadata_payload(healthy)) + 4
        reader, writer, conn = await _open_kafka_sized(broker)
        try:
            writer.write(flood)  # not drained: the broker decides how much of it to take
            high_water = conn.transport.get_write_buffer_limits()[1]
            worst = {"pending": 0, "write_buffer": 0, "unparsed": 0}
            sampling = True

            async def sample() -> None:
                while sampling:
                    worst["pending"] = max(worst["pending"], len(conn.pending))
                    worst["write_buffer"] = max(worst["write_buffer"], conn.transport.get_write_buffer_size())
                    worst["unparsed"] = max(worst["unparsed"], conn.splitter.buffered)
                    await asyncio.sleep(0.005)

            sampler = asyncio.ensure_future(sample())
            # Meanwhile another client keeps being answered, promptly, and is not closed.
            slowest = 0.0
            for _ in range(40):
                started = time.monotonic()
                assert len(await _metadata_payload(healthy)) + 4 == answer_size
                slowest = max(slowest, time.monotonic() - started)
                await asyncio.sleep(0.02)
            assert slowest < 2.0, slowest
            sampling = False
            await sampler
            assert worst["pending"] <= MAX_IN_FLIGHT
            # Answers the broker built and did not yet hand to the socket: at most one batch above the transport's mark.
            assert worst["write_buffer"] <= high_water + MAX_IN_FLIGHT * answer_size, worst
            assert worst["unparsed"] <= len(flood)  # never more than was sent, and reading paused
            assert conn in broker.connections

            # Once the flooder reads, it gets every answer, in order.
            for cid in range(requests):
                payload = await _read_payload(reader, timeout=30)
                assert struct.unpack_from(">i", payload)[0] == cid  # the response header's correlation id
        finally:
            writer.close()
            await healthy.close()


async def _metadata_payload(client: WireClient) -> bytes:
    await client.send(ApiKey.METADATA, METADATA_V, MetadataRequest(topics=None))
    return await client.read_frame()


async def _wait_for_server_side(broker: Broker, writer: asyncio.StreamWriter) -> KafkaConnection:
    local_port = writer.get_extra_info("sockname")[1]
    assert await _eventually(lambda: any(c.client_port == local_port for c in broker.connections))
    return _server_side(broker, writer)


async def test_pipelined_fetches_are_answered_one_at_a_time() -> None:
    """A Fetch answer is as large as the client asks: a client pipelining many must not have them built at once.
    Long-polling Fetches on an empty partition (each answered after max_wait_ms) sent back to back are taken one
    after the other, as Kafka takes them, and every answer still comes, in order."""
    fetches, wait_ms = 6, 300
    async with Broker(_config()) as broker:
        _add_topics(broker)
        request = FetchRequest(max_wait_ms=wait_ms, min_bytes=1, max_bytes=50 << 20, topics=[FetchRequest.FetchTopic(
            topic="topic-0", partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=20 << 20)])])
        reader, writer = await _open(broker)
        try:
            conn = await _wait_for_server_side(broker, writer)
            started = time.monotonic()
            writer.write(b"".join(encode_request(ApiKey.FETCH, 12, cid, request) for cid in range(fetches)))
            await writer.drain()
            most_at_once = 0
            answered = []
            while len(answered) < fetches:
                read = asyncio.ensure_future(_read_payload(reader, timeout=60))
                while not read.done():
                    most_at_once = max(most_at_once, len(conn.pending))  # requests taken, not yet answered
                    await asyncio.sleep(0.01)
                answered.append(struct.unpack_from(">i", read.result())[0])
            assert answered == list(range(fetches))
            assert most_at_once == 1
            # One after the other: each waited its max_wait_ms in turn (a slower machine only makes this longer).
            assert time.monotonic() - started >= fetches * wait_ms / 1000 * 0.9
        finally:
            writer.close()


# -- 3. idleness --------------------------------------------------------------------------------------


async def test_a_client_sending_a_partial_frame_slowly_is_not_idle() -> None:
    async with Broker(_config(connections_max_idle_ms="600")) as broker:
        reader, writer = await _open(broker)
        try:
            frame = encode_request(ApiKey.API_VERSIONS, 3, 5, ApiVersionsRequest(client_software_name="slow", client_software_version="1"))
            started = time.monotonic()
            for byte in frame:  # one byte per 100 ms: a 500 ms margin under the idle time, for a busy machine
                writer.write(bytes([byte]))
                await asyncio.sleep(0.1)
                assert not reader.at_eof()
            last_sent = time.monotonic() - 0.1
            assert last_sent - started > 3 * 0.6  # several idle periods went by
            correlation_id, body = decode_response(ApiKey.API_VERSIONS, 3, await _read_payload(reader))
            assert (correlation_id, body.error_code) == (5, 0)
            # Once it stops sending, it is idle, and closed.
            assert await _closed(reader, timeout=20)
            assert time.monotonic() - last_sent >= 0.5  # not before the idle time (load only makes it later)
        finally:
            writer.close()


async def test_a_client_reading_a_long_stream_of_answers_is_not_idle() -> None:
    """It sends everything at once, then only reads, for several idle periods: its reads (seen by the broker as
    its answers leaving for the socket) are activity."""
    idle_s = 1.0
    async with Broker(_config(connections_max_idle_ms=str(int(idle_s * 1000)))) as broker:
        _add_topics(broker)
        reader, writer, _conn = await _open_kafka_sized(broker)
        try:
            requests = 4_000
            writer.write(b"".join(encode_request(ApiKey.METADATA, METADATA_V, cid, MetadataRequest(topics=None)) for cid in range(requests)))
            started = time.monotonic()
            for cid in range(requests):
                payload = await _read_payload(reader)
                assert struct.unpack_from(">i", payload)[0] == cid  # the response header's correlation id
                if cid % 40 == 0:
                    await asyncio.sleep(0.04)  # a steady reader, not a fast one: 100 pauses, 4 s at least
            assert time.monotonic() - started > 3 * idle_s  # several idle periods went by
            writer.write(_api_versions(requests))
            assert decode_response(ApiKey.API_VERSIONS, 0, await _read_payload(reader))[0] == requests
        finally:
            writer.close()


async def test_a_partial_frame_left_unfinished_is_closed_as_idle() -> None:
    async with Broker(_config(connections_max_idle_ms="300")) as broker:
        reader, writer = await _open(broker)
        try:
            writer.write(_api_versions(1)[:7])
            assert await _closed(reader, timeout=20)
            assert await _eventually(lambda: not broker.connections)
        finally:
            writer.close()


async def test_a_client_that_never_reads_is_released_when_closed_as_idle() -> None:
    async with Broker(_config(connections_max_idle_ms="300")) as broker:
        _add_topics(broker)
        _reader, writer, conn = await _open_kafka_sized(broker)
        try:
            # Far more answers than the socket buffers between us hold, and never a byte read.
            writer.write(b"".join(encode_request(ApiKey.METADATA, METADATA_V, cid, MetadataRequest(topics=None)) for cid in range(10_000)))
            assert await _eventually(lambda: conn not in broker.connections, timeout=30)
            sock = conn.transport.get_extra_info("socket")
            assert await _eventually(lambda: sock.fileno() == -1, timeout=10)
            assert conn.transport.is_closing()
        finally:
            writer.transport.abort()


async def test_pipelined_large_produce_requests_hold_a_bounded_number_of_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Produce request too large to validate on the loop is handed to the worker thread, and every later request
    of its connection waits behind it. A producer pipelining many such requests must not have them all read into
    memory meanwhile (eight producers once held hundreds of megabytes of frames this way): with the worker held, the
    broker stops reading once PENDING_FRAME_BYTES are held, the rest stays in the socket, and once the worker goes
    on every request is answered, in order, its records all stored."""
    from kafka_shim.shim.handlers import produce

    worker_may_go = threading.Event()
    validate = produce._validate_all

    def held_validation(*args: object) -> object:
        worker_may_go.wait(60)
        return validate(*args)

    monkeypatch.setattr(produce, "_validate_all", held_validation)
    requests, records_per_batch = 12, 5_000  # two ~700 KB batches a request: above what the loop validates itself
    async with Broker(_config()) as broker:
        broker.services.partitions.create_topic("big", 2)
        batch = encode_batch(build_batch([(None, b"v" * 128, [], 1_700_000_000_000 + i) for i in range(records_per_batch)]))
        request = ProduceRequest(acks=1, timeout_ms=30000, topic_data=[ProduceRequest.TopicProduceData(
            name="big", partition_data=[ProduceRequest.PartitionProduceData(index=i, records=batch) for i in range(2)])])
        frames = [encode_request(ApiKey.PRODUCE, 9, cid, request) for cid in range(requests)]
        assert 2 * len(batch) > CHEAP_RECORDS  # validated in the worker thread
        reader, writer = await _open(broker)
        try:
            conn = await _wait_for_server_side(broker, writer)
            writer.write(b"".join(frames))
            # Reading pauses with the requests read so far held: the bound, and at most the request that crossed it
            # and the frame being read then.
            assert await _eventually(lambda: conn.reading_paused and sum(slot.size for slot in conn.pending) >= PENDING_FRAME_BYTES)
            held = sum(slot.size for slot in conn.pending) + conn.splitter.buffered
            assert held <= PENDING_FRAME_BYTES + 2 * len(frames[0]), (held, len(frames[0]))
            assert len(conn.pending) < requests
            worker_may_go.set()
            offsets = []
            for cid in range(requests):
                correlation_id, response = decode_response(ApiKey.PRODUCE, 9, await _read_payload(reader, timeout=60))
                assert correlation_id == cid
                answers = response.responses[0].partition_responses
                assert [(p.index, p.error_code) for p in sorted(answers, key=lambda p: p.index)] == [(0, 0), (1, 0)]
                offsets.append({p.base_offset for p in answers})
            assert offsets == [{cid * records_per_batch} for cid in range(requests)]
        finally:
            worker_may_go.set()
            writer.close()
