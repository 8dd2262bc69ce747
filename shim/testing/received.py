"""What an in-process broker received, from the test's thread: ``kafka_shim.received("Produce", topic="orders")``.

The record lives on the broker's event loop (``shim.faults.received``); every call here runs there and returns a
copy. The pytest fixture records from the start and empties the record between tests; an ``EmbeddedBroker`` records
once ``received.start()`` is called (it costs a little on every request).
"""

from __future__ import annotations

import time
from typing import Any

from kafka_shim.shim.faults.received import Received


class ReceivedControl:
    def __init__(self, embedded: Any) -> None:  # an EmbeddedBroker
        self._embedded = embedded

    def __call__(self, api: int | str | None = None, *, principal: str | None = None, topic: str | None = None,
                 group: str | None = None) -> list[Received]:
        """The requests received so far, oldest first: all, or those of ``api`` (a name like "Produce" or a key)
        from ``principal`` naming ``topic`` / ``group`` (the names Kafka would authorize them on)."""
        return self._embedded.call(lambda: self._log().matching(api, principal=principal, topic=topic, group=group))

    def wait_for(self, api: int | str, count: int = 1, *, timeout: float = 30.0, **match: Any) -> list[Received]:
        """Wait until at least ``count`` matching requests have been received (TimeoutError naming what was seen
        after ``timeout`` seconds), and return them."""
        deadline = time.monotonic() + timeout
        while True:
            found = self(api, **match)
            if len(found) >= count:
                return found
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{len(found)} matching {api} request(s) received in {timeout:g} s, not {count}; "
                                   f"received: {sorted({r.api for r in self()})}")
            time.sleep(0.02)

    def start(self) -> None:
        self._embedded.call(lambda: self._faults().record(True))

    def stop(self) -> None:
        self._embedded.call(lambda: self._faults().record(False))

    def clear(self) -> None:
        self._embedded.call(lambda: self._log().clear())

    def _faults(self) -> Any:
        return self._embedded.broker.services.faults

    def _log(self) -> Any:
        return self._faults().received
