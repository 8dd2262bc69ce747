"""A kafka-shim capture proxy (traces.proxy) on its own event-loop thread, for tests with blocking clients."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from kafka_shim.traces.capture import CaptureSettings, CaptureSink
from kafka_shim.traces.format import PROXY
from kafka_shim.traces.proxy import CaptureProxy, ProxiedRequest

TIMEOUT = 30


class ProxyThread:
    """A CaptureProxy on its own event loop thread (the clients under test block the calling thread)."""

    def __init__(self, upstream: tuple[str, int], capture: Path | None, security_protocol: str = "PLAINTEXT",
                 **options: object) -> None:
        self.sink = CaptureSink(CaptureSettings(capture), source=PROXY, fields=ProxiedRequest._fields) if capture is not None else None
        self.proxy = CaptureProxy(upstream, self.sink, security_protocol=security_protocol, **options)  # type: ignore[arg-type]
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="capture-proxy", daemon=True)

    def __enter__(self) -> ProxyThread:
        self._thread.start()
        self.address = asyncio.run_coroutine_threadsafe(self.proxy.start(), self.loop).result(TIMEOUT)
        return self

    @property
    def bootstrap(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.proxy.stop(), self.loop).result(TIMEOUT * 2)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(TIMEOUT)
        self.loop.close()
