"""A request at the size limit must not stall the other clients (issue 12, defect 4)."""

from __future__ import annotations

import asyncio

from kafka_shim.protocol.framing import decode_response, encode_request
from kafka_shim.protocol.messages import ApiVersionsRequest, MetadataRequest
from kafka_shim.shim.broker import Broker
from kafka_shim.shim.client.wire import WireClient
from kafka_shim.shim.config.broker_config import BrokerConfig

MAX_BYTES = 4 * 1024 * 1024
TOPICS = 419_410  # 8-character names: the largest Metadata v0 request under 4 MiB
SMALL_ANSWERS = 100


async def test_small_requests_are_answered_while_a_request_at_the_limit_is_worked_on() -> None:
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "socket.request.max.bytes": str(MAX_BYTES)})
    names = [MetadataRequest.MetadataRequestTopic(name=f"t{i:07d}") for i in range(TOPICS)]
    big_request = encode_request(3, 0, 1, MetadataRequest(topics=names))
    del names
    assert MAX_BYTES - 1024 < len(big_request) - 4 <= MAX_BYTES
    async with Broker(config) as broker:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        big = await WireClient.connect(host, int(port))
        small = await WireClient.connect(host, int(port))
        try:
            await small.request(18, 0, ApiVersionsRequest())  # warm the codecs
            await big.send_raw(big_request)
            big_answer = asyncio.ensure_future(big.read_frame(timeout=300))
            # Counted only once the whole request is written: answers during the upload prove nothing.
            answered_meanwhile = 0
            while not big_answer.done() and answered_meanwhile < SMALL_ANSWERS:
                assert (await small.request(18, 0, ApiVersionsRequest(), timeout=300)).error_code == 0
                answered_meanwhile += 1
            assert answered_meanwhile == SMALL_ANSWERS, "the big request was answered first: every other client waited for it"
            assert not big_answer.done()
            correlation_id, response = decode_response(3, 0, await asyncio.wait_for(big_answer, 300))
            assert correlation_id == 1
            assert len(response.topics) == TOPICS
            assert response.topics[0].error_code == 3  # none of them exists
        finally:
            await big.close()
            await small.close()
