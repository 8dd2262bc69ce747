"""shim/handlers/manifest.py, from which the broker's API table is built without importing the handlers, says what
the @handles registrations say; the table it gives answers ApiVersions byte for byte as the registrations do; and a
broker imports a handler module only when a request needs it."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.framing import encode_response
from kafka_shim.shim import handlers
from kafka_shim.shim.handlers import _loader, deferred_handlers, load_all
from kafka_shim.shim.handlers.manifest import MANIFEST, ApiModule
from kafka_shim.shim.requests.api_table import ApiTable, DeferredApi

ROOT = Path(__file__).resolve().parents[3]


def test_the_manifest_restates_every_registration() -> None:
    # Only this package's registrations: tests/support stand-ins register too while their tests run.
    registered = {key: ApiModule(h.handle.__module__.rsplit(".", 1)[-1], h.min_version, h.max_version, h.error_response is not None)
                  for key, h in load_all().items() if h.handle.__module__.startswith(f"{handlers.__name__}.")}
    missing = {ApiKey(k).name: v for k, v in registered.items() if k not in MANIFEST}
    assert not missing, f"add these entries to shim/handlers/manifest.py: {missing}"
    differing = {ApiKey(k).name: (MANIFEST[k], v) for k, v in registered.items() if MANIFEST[k] != v}
    assert not differing, f"shim/handlers/manifest.py says (first) what @handles no longer does (second): {differing}"
    assert MANIFEST.keys() == registered.keys(), f"entries without a registration: {sorted(MANIFEST.keys() - registered.keys())}"


def test_every_handler_module_is_named_by_the_manifest() -> None:
    package = {m.name for m in pkgutil.iter_modules(handlers.__path__)} - {"manifest"}
    assert package == {api.module for api in MANIFEST.values()}


@pytest.mark.parametrize("release", [None, {18: (0, 2), 3: (1, 9), 0: (3, 11), 9999: (0, 3)}], ids=["all", "release-profile"])
def test_apiversions_from_the_manifest_is_byte_identical_to_the_registrations(release) -> None:
    eager_handlers = {key: h for key, h in load_all().items() if key in MANIFEST}  # not tests/support stand-ins
    lazy, eager = ApiTable({key: _fresh(key) for key in MANIFEST}, release), ApiTable(eager_handlers, release)
    assert lazy.served == eager.served
    for version in range(0, 5):
        assert (encode_response(ApiKey.API_VERSIONS, version, 1, messages.ApiVersionsResponse(api_keys=lazy.api_versions_list()))
                == encode_response(ApiKey.API_VERSIONS, version, 1, messages.ApiVersionsResponse(api_keys=eager.api_versions_list())))
    assert lazy.unsupported_api_versions_frame(9) == eager.unsupported_api_versions_frame(9)


def test_the_brokers_entries_are_the_registrations_once_imported_and_keep_a_registration_the_manifest_lacks() -> None:
    registry = load_all()
    entries = deferred_handlers()
    assert all(entries[key] is registry[key] for key in MANIFEST)
    stand_in = handlers.ApiHandler(ApiKey.FIND_COORDINATOR, 0, 6, lambda ctx, request: None)
    if ApiKey.FIND_COORDINATOR not in registry:  # tests/support/produce.py advertises such stand-ins
        registry[ApiKey.FIND_COORDINATOR] = stand_in
        try:
            assert deferred_handlers()[ApiKey.FIND_COORDINATOR] is stand_in
        finally:
            registry.pop(ApiKey.FIND_COORDINATOR)


def _fresh(key: int) -> DeferredApi:
    """A deferred entry even for a key whose module this test process has imported already."""
    api = MANIFEST[key]
    return DeferredApi(key, api.min_version, api.max_version, api.error_form,
                       _loader(key, api.module, api.min_version, api.max_version, api.error_form))


def test_a_deferred_entry_loads_the_registered_handler_on_first_use() -> None:
    table = ApiTable({key: _fresh(key) for key in MANIFEST})
    assert table.handler(ApiKey.METADATA, 12) is load_all()[ApiKey.METADATA]
    assert table.handler(ApiKey.METADATA, 13) is None
    request = messages.CreateTopicsRequest(topics=[messages.CreateTopicsRequest.CreatableTopic(name="t")])
    body = table.error_response(ApiKey.CREATE_TOPICS, request, ErrorCode.ILLEGAL_SASL_STATE, "why")
    assert [t.error_code for t in body.topics] == [ErrorCode.ILLEGAL_SASL_STATE]
    named = messages.DescribeUserScramCredentialsRequest(users=[messages.DescribeUserScramCredentialsRequest.UserName(name="a")])
    answer = table.error_response(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, named, ErrorCode.ILLEGAL_SASL_STATE, "why")
    assert (answer.error_code, answer.error_message, [(r.user, r.error_code) for r in answer.results]) == (
        ErrorCode.ILLEGAL_SASL_STATE, "why", [("", ErrorCode.ILLEGAL_SASL_STATE)])
    # A null user list: Kafka's getErrorResponse fails on it and the request is never answered (no form: a close).
    every = messages.DescribeUserScramCredentialsRequest(users=None)
    assert table.error_response(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, every, ErrorCode.ILLEGAL_SASL_STATE, "why") is None


def test_an_entry_that_differs_from_the_registration_is_refused_when_loaded() -> None:
    wrong = _loader(ApiKey.METADATA, "metadata", 0, 13, True)
    with pytest.raises(RuntimeError, match=r"manifest\.py.s entry for api key 3"):
        wrong()


def test_a_started_broker_imports_no_handler_until_it_listens_then_loads_them_while_idle() -> None:
    # A fresh interpreter: this test process has imported every handler already.
    script = textwrap.dedent("""
        import asyncio, sys
        from kafka_shim.shim.broker import Broker
        from kafka_shim.shim.config.broker_config import BrokerConfig
        from kafka_shim.shim.handlers.manifest import MANIFEST

        def imported():
            return sorted(m.rsplit(".", 1)[-1] for m in sys.modules if m.startswith("kafka_shim.shim.handlers."))

        async def main():
            broker = Broker(BrokerConfig.load(None, {"listeners": "PLAINTEXT://127.0.0.1:0"}))
            await broker.start()
            print("imported", imported())
            await asyncio.wait_for(broker._warm_up, timeout=120)
            print("imported", imported() == sorted({"manifest", *(api.module for api in MANIFEST.values())}))
            await broker.stop()

        asyncio.run(main())
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    at_start, after_warm_up = [line for line in out.stdout.splitlines() if line.startswith("imported ")]  # not the log lines
    assert at_start == "imported ['manifest']"
    assert after_warm_up == "imported True"


def test_a_broker_without_warm_up_imports_a_handler_when_its_first_request_comes() -> None:
    # The test harness's brokers (one per pytest-xdist worker) are started this way: each imports only what it serves.
    script = textwrap.dedent("""
        import asyncio, sys
        from kafka_shim.protocol.framing import decode_response, encode_request
        from kafka_shim.protocol.messages import MetadataRequest
        from kafka_shim.shim.broker import Broker
        from kafka_shim.shim.config.broker_config import BrokerConfig

        def imported():
            return sorted(m.rsplit(".", 1)[-1] for m in sys.modules if m.startswith("kafka_shim.shim.handlers."))

        async def main():
            broker = Broker(BrokerConfig.load(None, {"listeners": "PLAINTEXT://127.0.0.1:0"}), warm_up=False)
            bound = await broker.start()
            for _ in range(50):
                await asyncio.sleep(0)  # turns of the loop in which a warm-up would import
            print("imported", imported())
            reader, writer = await asyncio.open_connection("127.0.0.1", bound[0].port)
            writer.write(encode_request(3, 12, 7, MetadataRequest(topics=[], allow_auto_topic_creation=False)))
            size = int.from_bytes(await reader.readexactly(4), "big")
            correlation_id, answer = decode_response(3, 12, await reader.readexactly(size))
            print("answered", correlation_id, [b.node_id for b in answer.brokers])
            print("imported", imported())
            writer.close()
            await broker.stop()

        asyncio.run(main())
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line.startswith(("imported ", "answered "))]
    assert lines == ["imported ['manifest']", "answered 7 [1]", "imported ['manifest', 'metadata']"], out.stdout


def test_warm_up_loads_each_served_handler_once_in_the_order_given() -> None:
    order = [ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.DELETE_TOPICS]
    table = ApiTable({key: _fresh(key) for key in order}, {ApiKey.API_VERSIONS: (0, 4), ApiKey.METADATA: (0, 12), ApiKey.PRODUCE: (0, 11)})
    table.handler(ApiKey.METADATA, 12)
    assert list(table.warm_up()) == [ApiKey.API_VERSIONS, ApiKey.PRODUCE]  # Metadata was loaded; DeleteTopics is not served
    assert list(table.warm_up()) == []
