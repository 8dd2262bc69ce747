"""Kafka 3.9's own kafka-dump-log (DumpLogSegments) reads kafka-shim's producer-state snapshots."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kafka_shim.shim.producers.snapshot import write_snapshot
from kafka_shim.shim.producers.state import LoggedBatch, rebuild
from tests.support.peers import REAL_KAFKA


def test_kafka_dump_log_reads_a_snapshot(tmp_path: Path) -> None:
    state = rebuild([LoggedBatch(7, 0, 0, 2, 0, 2, 100), LoggedBatch(9, 2, 0, 0, 3, 3, 150), LoggedBatch(7, 0, 3, 4, 4, 5, 200)])
    path = write_snapshot(tmp_path, 6, state.entries())
    proc = subprocess.run(
        [sys.executable, str(REAL_KAFKA), "run", "kafka.tools.DumpLogSegments", "--files", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("producerId:")]
    # Kafka checked the version and the CRC, then printed every entry with the last batch of each producer.
    assert len(lines) == 2, proc.stdout
    assert "producerId: 7 producerEpoch: 0 " in lines[0]
    assert "firstSequence: 3 lastSequence: 4 lastOffset: 5 offsetDelta: 1 timestamp: 200" in lines[0]
    assert "producerId: 9 producerEpoch: 2 " in lines[1] and "lastOffset: 3" in lines[1]
