"""Request-sized work in slices gives the same answer as on the spot (Metadata's large-request path)."""

from __future__ import annotations

from kafka_shim.protocol.messages import MetadataRequest, RequestHeader
from kafka_shim.shim.handlers import load_all
from kafka_shim.shim.handlers.metadata import LARGE_REQUEST, _answer, metadata
from kafka_shim.shim.requests.context import RequestContext
from kafka_shim.shim.requests.work import run_inline, run_sliced
from tests.shim.requests.test_dispatch import _services


def _context(services, version: int) -> RequestContext:
    header = RequestHeader(request_api_key=3, request_api_version=version, correlation_id=1, client_id="t")
    return RequestContext(services, services.config.listeners[0], header, version, "127.0.0.1", 1)


async def test_metadata_in_slices_answers_as_on_the_spot() -> None:
    load_all()
    services = _services()
    for i in range(0, 3 * LARGE_REQUEST, 7):
        services.cluster.add_topic(f"t{i}", 1)
    names = [f"t{i}" for i in range(3 * LARGE_REQUEST)] + ["bad name!", "__consumer_offsets", "t0"]
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names])
    for version in (0, 9, 12):
        ctx = _context(services, version)
        on_the_spot = run_inline(_answer(ctx, request))
        sliced = await run_sliced(_answer(ctx, request))
        assert sliced == on_the_spot
        assert await metadata(ctx, request) == on_the_spot  # the handler takes the sliced path for this size
        assert len(on_the_spot.topics) == 3 * LARGE_REQUEST + 2
        assert {t.error_code for t in on_the_spot.topics} == {0, 3, 17}
