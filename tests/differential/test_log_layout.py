"""Kafka's own kafka-dump-log.sh (kafka.tools.DumpLogSegments, 3.9) reads the segments kafka-shim writes.

The log, offset index and time index of a partition written by ``shim/log`` through ``FileStorage`` are handed to
Kafka's tool: it must print the offsets, keys, values and timestamps that were appended, find every index entry
pointing at the batch it names, and pass its index sanity checks. Needs the JVM (``scripts/real-kafka run``).
"""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kafka_shim.protocol.records import Compression, TimestampType
from kafka_shim.shim.log.log_config import LogConfig
from kafka_shim.shim.log.log_manager import LogManager
from kafka_shim.shim.log.storage import FileStorage
from tests.support.log_batches import FakeClock, batch_bytes
from tests.support.peers import REAL_KAFKA

pytestmark = pytest.mark.oracle

DUMP = "kafka.tools.DumpLogSegments"
T0 = 1_700_000_000_000
# A record line; a null key has no "key:" field at all.
RECORD = re.compile(
    r"\| offset: (\d+) (CreateTime|LogAppendTime): (-?\d+) keySize: (-?\d+) valueSize: (-?\d+).*? (?:key: (.*?) )?payload: (.*)$"
)


def _dump(*args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, str(REAL_KAFKA), "run", DUMP, *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _write(root: Path, clock: FakeClock, timestamp_type: TimestampType) -> list[tuple[int, int, bytes | None, bytes]]:
    """Appends batches (two segments) and returns what was appended: (offset, timestamp, key, value)."""
    manager = LogManager(FileStorage(root), clock=clock)
    config = LogConfig(segment_bytes=1500, index_interval_bytes=200, message_timestamp_type=timestamp_type)
    log = manager.create("dumped", 0, topic_id=uuid.uuid4(), config=config)
    expected = []
    for n in range(12):
        values = [b"value-%d-%d" % (n, i) + b"." * (20 * n) for i in range(1 + n % 3)]
        stamps = [T0 + 1000 * n - 10 * i for i in range(len(values))]
        key = None if n % 4 == 3 else b"key-%d" % n
        clock.now = T0 + 500_000 + n
        compression = Compression.GZIP if n % 5 == 4 else Compression.NONE
        info = log.append(batch_bytes(values, key=key, timestamps=stamps, compression=compression), leader_epoch=0)
        for i, value in enumerate(values):
            stamp = info.log_append_time if timestamp_type is TimestampType.LOG_APPEND_TIME else stamps[i]
            expected.append((info.base_offset + i, stamp, key, value))
    assert len(log.segments) >= 2
    manager.close()
    return expected


@pytest.mark.parametrize("timestamp_type", list(TimestampType), ids=["create-time", "log-append-time"])
def test_kafka_dump_log_reads_what_was_written(tmp_path: Path, timestamp_type: TimestampType) -> None:
    expected = _write(tmp_path, FakeClock(), timestamp_type)
    folder = tmp_path / "dumped-0"
    logs = sorted(str(p) for p in folder.glob("*.log"))
    indexes = sorted(str(p) for p in folder.glob("*.index")) + sorted(str(p) for p in folder.glob("*.timeindex"))

    dumped = _dump("--files", ",".join(logs + indexes), "--print-data-log", "--deep-iteration")
    records = [RECORD.search(line) for line in dumped.stdout.splitlines()]
    seen = [
        (int(m[1]), int(m[3]), None if m[6] is None else m[6].encode(), m[7].encode())
        for m in records if m is not None
    ]
    assert seen == expected
    kind = "LogAppendTime" if timestamp_type is TimestampType.LOG_APPEND_TIME else "CreateTime"
    assert all(m[2] == kind for m in records if m is not None)
    # Every offset index entry names the last offset of the batch at its position; every time index entry holds the
    # max timestamp of the batch it names; offsets follow each other. The tool reports any of these on stderr.
    for complaint in ("Mismatches in", "timestamp mismatch", "Indexed offset", "Non-consecutive", "out of order", "Exception"):
        assert complaint not in dumped.stderr, dumped.stderr
    assert len(re.findall(r"^offset: \d+ position: \d+$", dumped.stdout, re.M)) >= 2
    assert len(re.findall(r"^timestamp: \d+ offset: \d+$", dumped.stdout, re.M)) >= 2

    sane = _dump("--files", ",".join(indexes), "--index-sanity-check")
    assert sane.stdout.count("passed sanity check") == len(indexes), sane.stdout + sane.stderr
