"""The pytest plugin, installed with the package (entry point ``pytest11``: ``kafka_shim``).

Fixtures:

- ``kafka_shim`` (function scope): a running in-process broker (``testing.handle.KafkaShim``), empty at the start
  of every test. One broker per distinct configuration is started the first time a test asks for it and then reset
  between tests (``Broker.reset``: same port, no restart), so a suite pays one start per configuration.
- ``kafka_shim_session`` (session scope): one broker for the whole session, never reset, for tests that share
  state on purpose.

The first broker a session starts is followed by ``gc.freeze()``: everything alive then (the broker's code, codec
tables and state, and the test process's own modules) moves to the collector's permanent generation, so the full
collections that the broker's per-test allocations trigger, and the two pytest runs at the end of the session, no
longer walk it (per test process ~0.2 s of CPU, which decides a pytest-xdist run's time on a small machine). Objects
frozen stay uncollected if they later become garbage in a reference cycle; ``kafka_shim_gc_freeze = false`` in the
pytest ini turns the freeze off.

Configuration: ``@pytest.mark.kafka_shim(listener="SASL_PLAINTEXT", authorizer=True, acls=[...], ...)`` on a test,
class or module (the closest marker wins; see ``testing.options.ShimOptions``), or indirect parametrization
(``@pytest.mark.parametrize("kafka_shim", [{"listener": "SSL"}, {}], indirect=True)``) to run a test on several.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # imported when a fixture is first used: pytest loads this plugin in every session of the project
    from kafka_shim.shim.testing.handle import KafkaShim
    from kafka_shim.shim.testing.options import ShimOptions

MARKER = "kafka_shim"
GC_FREEZE_INI = "kafka_shim_gc_freeze"


class BrokerPool:
    """The running brokers of a session, one per configuration; each is reset before it is handed out again."""

    def __init__(self, freeze_gc: bool = False) -> None:
        self._running: dict[ShimOptions, KafkaShim] = {}
        self._freeze_gc = freeze_gc

    def acquire(self, options: ShimOptions) -> KafkaShim:
        from kafka_shim.shim.testing.handle import KafkaShim

        shim = self._running.get(options)
        if shim is not None and not shim.embedded.running:
            shim = None  # a test stopped it: the next one gets a new broker of the same configuration
        if shim is None:
            shim = self._running[options] = KafkaShim(options).start()
            if self._freeze_gc:
                _freeze_once()
        else:
            shim.reset()
        return shim

    def close(self) -> None:
        for shim in self._running.values():
            shim.stop()
        self._running.clear()


def _freeze_once() -> None:
    """Collect, then freeze what is left: once per process (a later freeze would keep a reset broker's old state for
    good). A freeze count above 0 means it happened, here or by the application, even if this module was imported
    again since (pytester's in-process runs re-import plugins)."""
    if gc.get_freeze_count() == 0:
        gc.collect()
        gc.freeze()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(GC_FREEZE_INI, type="bool", default=True,
                  help="kafka-shim: gc.freeze() once the first broker has started, so that full garbage collections "
                       "skip its long-lived objects (default true)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(listener=, users=, mechanism=, authorizer=, super_users=, acls=, allow_everyone_if_no_acl_found=, "
        "kafka_version=, config=): the broker the kafka_shim fixture gives this test (kafka-shim's pytest plugin)",
    )


@pytest.fixture(scope="session")
def kafka_shim_pool(pytestconfig: pytest.Config) -> Iterator[BrokerPool]:
    """The brokers behind ``kafka_shim``, stopped at the end of the session."""
    pool = BrokerPool(freeze_gc=bool(pytestconfig.getini(GC_FREEZE_INI)))
    yield pool
    pool.close()


@pytest.fixture
def kafka_shim(request: pytest.FixtureRequest, kafka_shim_pool: BrokerPool) -> KafkaShim:
    """An empty kafka-shim broker for this test, configured by its ``kafka_shim`` marker or indirect parameter."""
    return kafka_shim_pool.acquire(_options(request))


@pytest.fixture(scope="session")
def kafka_shim_session(pytestconfig: pytest.Config) -> Iterator[KafkaShim]:
    """One plain broker (PLAINTEXT, no authorizer) for the whole session; its state is shared between tests."""
    from kafka_shim.shim.testing.handle import KafkaShim

    with KafkaShim() as shim:
        if pytestconfig.getini(GC_FREEZE_INI):
            _freeze_once()
        yield shim


def _options(request: pytest.FixtureRequest) -> ShimOptions:
    from kafka_shim.shim.testing.options import ShimOptions

    values: dict[str, Any] = {}
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None:
        if marker.args:
            raise pytest.UsageError(f"the {MARKER} marker takes keyword arguments only, e.g. "
                                    f"@pytest.mark.{MARKER}(listener='SASL_PLAINTEXT')")
        values.update(marker.kwargs)
    param = getattr(request, "param", None)
    if param is not None:
        if not isinstance(param, dict):
            raise pytest.UsageError(f"indirect parameters of the {MARKER} fixture are dicts of marker options, "
                                    f"e.g. {{'listener': 'SSL'}}; got {param!r}")
        values.update(param)
    return ShimOptions.from_marker(values)
