"""Run a broker on a background thread: for tests and programs that use blocking Kafka clients."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path

from kafka_shim.authorizer import AclBinding
from kafka_shim.shim.broker import Broker
from kafka_shim.shim.config.broker_config import BrokerConfig
from kafka_shim.shim.os_threads import name_os_thread
from kafka_shim.shim.tap import RequestTap
from kafka_shim.shim.testing.faults import FaultControl
from kafka_shim.shim.testing.received import ReceivedControl


class EmbeddedBroker:
    """``with EmbeddedBroker(config) as broker: ... broker.bootstrap_servers``.

    The broker's event loop runs on its own thread, so blocking clients
    (confluent-kafka, kafka-python) can be used from the calling thread.

    ``capture_dir`` (or the config's ``kafka.shim.capture.dir``) records every request in the trace format
    (kafka_shim.traces); ``tap`` attaches any other RequestTap (shim.tap). Either is closed, its files finished,
    when the broker stops.
    """

    def __init__(self, config: BrokerConfig | Mapping[str, str] | None = None, *, capture_dir: str | Path | None = None,
                 tap: RequestTap | None = None, preload_acls: list[AclBinding] | None = None, warm_up: bool = True,
                 **overrides: str) -> None:
        props = {"listeners": "PLAINTEXT://127.0.0.1:0"}
        props.update({k.replace("_", "."): v for k, v in overrides.items()})
        if isinstance(config, Mapping):  # server.properties keys as a dict: the listeners default to a free port
            config = BrokerConfig.from_properties({**props, **config})
        self.config = config or BrokerConfig.from_properties(props)
        if capture_dir is not None:
            self.config = BrokerConfig.from_properties(self.config.raw, {"kafka.shim.capture.dir": str(capture_dir)})
        self.tap = tap
        self.preload_acls = preload_acls  # created at start (and again by reset), as ``serve --acls`` does
        self.warm_up = warm_up  # Broker's: load every handler once listening
        self.loop = asyncio.new_event_loop()
        self.broker: Broker | None = None
        self._thread = threading.Thread(target=self._run, name="kafka-shim-broker", daemon=True)
        self._started: Future[Broker] = Future()
        self._stop_event: asyncio.Event | None = None

    def _run(self) -> None:
        name_os_thread()
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._main())
        self.loop.close()

    async def _main(self) -> None:
        self._stop_event = asyncio.Event()
        tap = self.tap
        try:
            if tap is None:
                tap = self.tap = _capture_tap(self.config)
            broker = Broker(self.config, tap=tap, preload_acls=self.preload_acls, warm_up=self.warm_up)
            await broker.start()
        except BaseException as exc:
            if tap is not None:
                tap.close()
            self._started.set_exception(exc)
            return
        self.broker = broker
        self._started.set_result(broker)
        await self._stop_event.wait()
        await broker.stop()

    def start(self) -> EmbeddedBroker:
        if self._thread.ident is not None:
            raise RuntimeError("this EmbeddedBroker has been started before; a stopped broker is not started again: "
                               "create a new EmbeddedBroker (with log.dirs to keep its data), or reset() a running one")
        self._thread.start()
        self._started.result(timeout=30)
        return self

    def stop(self) -> None:
        if self._thread.is_alive() and self._stop_event is not None:
            self.loop.call_soon_threadsafe(self._stop_event.set)
            self._thread.join(timeout=30)

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and self.broker is not None

    def reset(self) -> None:
        """The broker back to a fresh start's state, listeners kept (``Broker.reset``; in-memory brokers only)."""
        assert self.broker is not None, "start() the broker first"
        asyncio.run_coroutine_threadsafe(self.broker.reset(), self.loop).result(timeout=60)

    def call(self, fn, *args):
        """Run ``fn(*args)`` on the broker's loop thread and return its result (for state changes in tests)."""
        done: Future = Future()

        def run() -> None:
            try:
                done.set_result(fn(*args))
            except BaseException as exc:
                done.set_exception(exc)

        self.loop.call_soon_threadsafe(run)
        return done.result(timeout=30)

    def call_async(self, fn):
        """Run the coroutine ``fn(broker)`` on the broker's loop and return its result."""
        assert self.broker is not None, "start() the broker first"
        return asyncio.run_coroutine_threadsafe(fn(self.broker), self.loop).result(timeout=60)

    @property
    def faults(self) -> FaultControl:
        """Injected faults (``broker.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER")``; see shim.testing.faults)."""
        return FaultControl(self)

    @property
    def received(self) -> ReceivedControl:
        """The decoded requests the broker received, each with its principal, once ``received.start()`` is called
        (see shim.testing.received)."""
        return ReceivedControl(self)

    @property
    def bootstrap_servers(self) -> str:
        assert self.broker is not None, "start() the broker first"
        return self.broker.bootstrap_servers

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _capture_tap(config: BrokerConfig) -> RequestTap | None:
    """A trace capture sink when the config names kafka.shim.capture.dir (traces is imported only then)."""
    if not config.raw.get("kafka.shim.capture.dir", "").strip():
        return None
    from kafka_shim.traces.capture import CaptureSettings, CaptureSink

    return CaptureSink(CaptureSettings.from_properties(config.raw))
