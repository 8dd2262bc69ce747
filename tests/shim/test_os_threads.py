"""The broker's helper threads carry their names in the OS (what ``top -H`` and ``/proc/PID/task/TID/comm`` show)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from kafka_shim.shim.os_threads import name_os_thread, os_thread_name
from kafka_shim.shim.testing.embedded import EmbeddedBroker

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread names are read from Linux's /proc")


def _comm(native_id: int) -> str:
    return Path(f"/proc/self/task/{native_id}/comm").read_text().strip()


def test_the_os_keeps_a_shortened_name() -> None:
    assert os_thread_name("kafka-shim-arenas") == b"shim-arenas"
    assert os_thread_name("kafka-shim-capture-answers") == b"shim-capture-an"  # 15 bytes, as Linux keeps them
    assert os_thread_name("audit-decisions") == b"audit-decisions"


def test_a_thread_names_itself_in_the_os() -> None:
    seen: list[str] = []

    def run() -> None:
        name_os_thread()
        seen.append(_comm(threading.get_native_id()))

    thread = threading.Thread(target=run, name="kafka-shim-example")
    thread.start()
    thread.join(30)
    assert seen == ["shim-example"]


def test_the_embedded_broker_and_its_worker_show_their_names() -> None:
    from kafka_shim.shim.requests.work import off_loop

    async def worker_thread(_broker: object) -> int:
        return await off_loop(threading.get_native_id)

    with EmbeddedBroker() as broker:
        assert _comm(broker.call(threading.get_native_id)) == "shim-broker"
        assert _comm(broker.call_async(worker_thread)) == "shim-work_0"


def test_the_arena_thread_shows_its_name() -> None:
    from kafka_shim.shim.log.arena import ArenaPool

    pool = ArenaPool(arena_bytes=4096, spare=2)
    pool.store([b"x" * 10_000])  # three arenas: the pool wakes its helper thread to map spares
    helper = pool._thread
    assert helper is not None and helper.native_id is not None
    deadline = time.monotonic() + 30
    while _comm(helper.native_id) != "shim-arenas" and time.monotonic() < deadline:
        time.sleep(0.01)  # the helper names itself first thing; this only waits for it to have run
    assert _comm(helper.native_id) == "shim-arenas"
