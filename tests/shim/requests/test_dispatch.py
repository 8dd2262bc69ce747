"""The request pipeline without sockets: a frame in, an outcome out."""

from __future__ import annotations

import asyncio
import struct

import pytest

from kafka_shim.protocol.framing import decode_response, encode_request
from kafka_shim.protocol.messages import (
    ApiVersionsRequest,
    DescribeClusterRequest,
    DescribeClusterResponse,
    MetadataRequest,
    ProduceRequest,
)
from kafka_shim.shim.cluster.endpoints import Endpoints
from kafka_shim.shim.cluster.state import ClusterState
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.handlers import ApiHandler, CloseConnection, load_all
from kafka_shim.shim.requests.api_table import ApiTable
from kafka_shim.shim.requests.dispatch import Close, Dispatcher, Pending, RequestSession, Respond
from kafka_shim.shim.requests.services import Services


def _services(table: ApiTable | None = None) -> Services:
    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "5"})
    endpoints = Endpoints(config)
    endpoints.bind("PLAINTEXT", "127.0.0.1", 9092)
    return Services(config=config, cluster=ClusterState(cluster_id="c1", node_id=5), endpoints=endpoints,
                    authorizer=None, scram=None, api_table=table or ApiTable(load_all()))


def _session(table: ApiTable | None = None, **dispatcher: int) -> RequestSession:
    services = _services(table)
    return Dispatcher(services, **dispatcher).session(services.config.listeners[0], None, "127.0.0.1", 50000)


def _payload(api_key: int, version: int, body: object, correlation_id: int = 1) -> bytes:
    return encode_request(api_key, version, correlation_id, body)[4:]


def _raw(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    return struct.pack(">hhih", api_key, version, correlation_id, 1) + b"t" + body


def _answer(outcome: object, api_key: int, version: int) -> tuple[int, object]:
    assert type(outcome) is Respond, outcome
    return decode_response(api_key, version, outcome.data[4:])


def _ranges(response: object) -> dict[int, tuple[int, int]]:
    return {a.api_key: (a.min_version, a.max_version) for a in response.api_keys}


def test_api_versions_is_answered_from_the_api_table() -> None:
    session = _session()
    correlation_id, response = _answer(session.receive(_payload(18, 0, ApiVersionsRequest(), 9)), 18, 0)
    assert (correlation_id, response.error_code) == (9, 0)
    table = session.services.api_table
    assert _ranges(response) == {a.api_key: (a.min_version, a.max_version) for a in table.served}
    assert _ranges(response) == {h.api_key: (h.min_version, h.max_version) for h in load_all().values()}


def test_a_release_profile_narrows_both_routing_and_the_answer() -> None:
    table = ApiTable(load_all(), {18: (0, 2), 3: (1, 9), 9999: (0, 3)})
    assert [(a.api_key, a.min_version, a.max_version) for a in table.served] == [(3, 1, 9), (18, 0, 2)]
    session = _session(table)
    _, response = _answer(session.receive(_payload(18, 2, ApiVersionsRequest())), 18, 2)
    assert _ranges(response) == {3: (1, 9), 18: (0, 2)}
    closed = session.receive(_payload(3, 12, MetadataRequest(topics=[])))
    assert type(closed) is Close and "not enabled" in closed.fields["reason"]
    _, unsupported = _answer(session.receive(_payload(18, 3, ApiVersionsRequest(client_software_name="a", client_software_version="1"))), 18, 0)
    assert (unsupported.error_code, _ranges(unsupported)) == (35, {18: (0, 2)})
    assert table.handler(29, 0) is None  # DescribeAcls is not in this release


def test_unsupported_api_versions_version_gets_error_35_as_a_v0_body() -> None:
    payload = _raw(18, 99, 41, b"\x01\x02\x03")[:8] + b"\x00\x01t\x00"  # a flexible header v2, body never parsed
    outcome = _session().receive(payload)
    correlation_id, response = _answer(outcome, 18, 0)
    assert (correlation_id, response.error_code, _ranges(response)) == (41, 35, {18: (0, 4)})
    assert len(outcome.data) == 4 + 4 + 2 + 4 + 6


@pytest.mark.parametrize(("api_key", "version"), [(9999, 0), (3, 13), (0, 3)], ids=["unknown-key", "metadata-v13", "produce"])
def test_unserved_requests_close(api_key: int, version: int) -> None:
    outcome = _session().receive(_raw(api_key, version, 1, b"\x00" * 8))
    assert type(outcome) is Close
    assert outcome.event == "request_rejected"


def test_an_undecodable_body_closes() -> None:
    outcome = _session().receive(_raw(3, 1, 1, b"\x7f\xff\xff\xff"))  # 2^31-1 topics in 4 bytes
    assert type(outcome) is Close
    assert (outcome.event, outcome.fields["api_key"], outcome.fields["api_version"]) == ("request_rejected", 3, 1)


def test_a_header_cut_short_closes() -> None:
    assert type(_session().receive(b"\x00\x03")) is Close


def _with(api_key: int, handle: object, is_async: bool = False) -> ApiTable:
    """The served table with ``api_key``'s handler replaced (its error answer kept)."""
    handlers = dict(load_all())
    served = handlers[api_key]
    handlers[api_key] = ApiHandler(api_key, served.min_version, served.max_version, handle, is_async, served.error_response)
    return ApiTable(handlers)


def test_a_handler_refusal_closes() -> None:
    def refuse(ctx, request):
        raise CloseConnection("not this one")

    refused = _session(_with(3, refuse)).receive(_payload(3, 12, MetadataRequest(topics=[])))
    assert type(refused) is Close and (refused.event, refused.fields["reason"]) == ("request_rejected", "not this one")


def _crash(ctx, request):
    raise KeyError("bug")


def test_a_handler_failure_gets_the_apis_error_answer_with_unknown_server_error() -> None:
    """KafkaApis' handleError: the request's getErrorResponse with UNKNOWN_SERVER_ERROR, the traceback logged."""
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="a"), MetadataRequest.MetadataRequestTopic(name="b")])
    outcome = _session(_with(3, _crash)).receive(_payload(3, 12, request, 7))
    correlation_id, response = _answer(outcome, 3, 12)
    assert (correlation_id, [(t.name, t.error_code) for t in response.topics]) == (7, [("a", -1), ("b", -1)])
    assert (outcome.failure.event, outcome.failure.level, outcome.failure.fields["answered"]) == (
        "handler_failed", "error", "UNKNOWN_SERVER_ERROR")
    assert isinstance(outcome.failure.error, KeyError)


async def test_an_async_handler_failure_gets_the_error_answer_too() -> None:
    async def crash_later(ctx, request):
        await asyncio.sleep(0)
        raise KeyError("bug")

    pending = _session(_with(3, crash_later, is_async=True)).receive(_payload(3, 12, MetadataRequest(topics=None), 3))
    assert type(pending) is Pending
    outcome = await pending.outcome
    _, response = _answer(outcome, 3, 12)
    assert response.topics == [] and isinstance(outcome.failure.error, KeyError)


def test_an_answer_that_cannot_be_encoded_gets_the_error_answer() -> None:
    """Kafka builds the answer's bytes inside handle(), so a serialization failure reaches handleError as well."""
    def unencodable(ctx, request):
        return DescribeClusterResponse(cluster_id=None)  # not nullable

    outcome = _session(_with(60, unencodable)).receive(_payload(60, 0, DescribeClusterRequest(), 4))
    _, response = _answer(outcome, 60, 0)
    assert response.error_code == -1 and outcome.failure.fields["answered"] == "UNKNOWN_SERVER_ERROR"


def test_a_failure_where_the_api_has_no_error_answer_closes() -> None:
    """Produce with acks=0: getErrorResponse is null, so Kafka closes the connection."""
    request = ProduceRequest(acks=0, timeout_ms=1000, topic_data=[])
    closed = _session(_with(0, _crash)).receive(_payload(0, 9, request))
    assert type(closed) is Close and (closed.event, closed.fields["answered"]) == ("handler_failed", "connection closed")
    assert isinstance(closed.error, KeyError)


async def test_requests_on_one_connection_are_handled_one_at_a_time() -> None:
    release = asyncio.Event()
    seen: list[int] = []
    metadata, describe_cluster = ApiTable(load_all()).handler(3, 12), ApiTable(load_all()).handler(60, 0)

    async def slow(ctx, request):
        seen.append(ctx.correlation_id)
        await release.wait()
        return metadata.handle(ctx, request)

    def quick(ctx, request):
        seen.append(ctx.correlation_id)
        return describe_cluster.handle(ctx, request)

    handlers = dict(load_all())
    handlers[3] = ApiHandler(3, 0, 12, slow, is_async=True)
    handlers[60] = ApiHandler(60, 0, 1, quick)  # any other key: it must wait for the slow one
    session = _session(ApiTable(handlers))
    first = session.receive(_payload(3, 12, MetadataRequest(topics=[]), 1))
    second = session.receive(_payload(60, 0, DescribeClusterRequest(), 2))
    assert type(first) is Pending and type(second) is Pending
    second_task = asyncio.ensure_future(second.outcome)
    first_task = asyncio.ensure_future(first.outcome)
    await asyncio.sleep(0.01)
    assert seen == [1]  # the second request has not reached its handler
    release.set()
    assert _answer(await first_task, 3, 12)[0] == 1
    assert type(await second_task) is Respond
    assert seen == [1, 2]
    # Once nothing is pending, requests are answered on the spot again.
    assert type(session.receive(_payload(18, 0, ApiVersionsRequest(), 3))) is Respond


async def test_a_large_frame_is_decoded_and_encoded_off_the_loop_with_the_same_answer() -> None:
    topics = [MetadataRequest.MetadataRequestTopic(name=f"topic-{i}") for i in range(500)]
    on_loop = _session(off_loop_bytes=1 << 30).receive(_payload(3, 0, MetadataRequest(topics=topics)))
    off = _session(off_loop_bytes=1024).receive(_payload(3, 0, MetadataRequest(topics=topics)))
    assert type(on_loop) is Respond and type(off) is Pending
    assert await off.outcome == on_loop
    _, response = _answer(on_loop, 3, 0)
    assert len(response.topics) == 500 and {t.error_code for t in response.topics} == {3}
