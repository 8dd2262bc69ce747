"""Kafka's own tools read from kafka-shim as from Kafka 3.9: kafka-get-offsets.sh (GetOffsetShell) and
kafka-console-consumer.sh (ConsoleConsumer, the Java consumer with its incremental fetch sessions).

Both brokers hold the same records (tests/support/fetch_peers.py); each tool runs against each and the outputs
must be equal.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from kafka_shim.protocol.records import Compression
from tests.support.appending import T0, batch
from tests.support.fetch_peers import Peers
from tests.support.peers import REAL_KAFKA

GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"


def run_java(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REAL_KAFKA), "run", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def peers(oracle_open, shim_peer) -> Iterator[Peers]:
    both = Peers(oracle_open, shim_peer)
    both.topic("tools-data", 3)
    both.produce("tools-data", 0, batch([(b"k%d" % i, b"v%d" % i, [("h", b"x")], T0 + 10 * i) for i in range(5)]))
    both.produce("tools-data", 1, batch([(None, b"gz%d" % i, [], T0 + i) for i in range(3)], Compression.GZIP))
    yield both


def _both(peers: Peers, *args: str) -> tuple[str, str]:
    outputs = []
    for address in ("{}:{}".format(*peers.oracle.plaintext), peers.shim.bootstrap_servers):
        proc = run_java(*[a.replace("{bootstrap}", address) for a in args])
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        outputs.append(proc.stdout)
        _stderr.append(proc.stderr)
    return outputs[0], outputs[1]


_stderr: list[str] = []


@pytest.mark.parametrize("time_arg", ["-1", "-2", "max-timestamp", str(T0 + 15), str(T0 + 99)])
def test_get_offsets(peers, time_arg) -> None:
    kafka, shim = _both(peers, GET_OFFSETS, "--bootstrap-server", "{bootstrap}", "--topic", "tools-data", "--time", time_arg)
    assert kafka.splitlines() == shim.splitlines()
    if time_arg != str(T0 + 99):  # later than every record: no partition has an offset to print
        assert kafka.strip(), "GetOffsetShell printed nothing"


def test_console_consumer_partition_and_offset(peers) -> None:
    args = (CONSOLE_CONSUMER, "--bootstrap-server", "{bootstrap}", "--topic", "tools-data", "--partition", "0", "--offset", "2",
            "--max-messages", "3", "--timeout-ms", "60000", "--property", "print.key=true", "--property", "print.offset=true",
            "--property", "print.timestamp=true", "--property", "print.headers=true")
    kafka, shim = _both(peers, *args)
    assert kafka == shim, _stderr[-2:]
    assert shim, _stderr[-2:]
    assert shim.splitlines() == [f"CreateTime:{T0 + 10 * i}\tOffset:{i}\th:x\tk{i}\tv{i}" for i in range(2, 5)]


def test_console_consumer_from_beginning_of_a_compressed_partition(peers) -> None:
    kafka, shim = _both(peers, CONSOLE_CONSUMER, "--bootstrap-server", "{bootstrap}", "--topic", "tools-data", "--partition", "1",
                        "--from-beginning", "--max-messages", "3", "--timeout-ms", "60000")
    assert kafka == shim == "gz0\ngz1\ngz2\n"
