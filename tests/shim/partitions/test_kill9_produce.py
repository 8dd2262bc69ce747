"""kill -9 of a `kafka-shim serve` process while an idempotent producer writes with acks=-1: after a restart every
acknowledged record is there, a retried batch is recognised (its original offsets, written once), and producer ids
are not handed out again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from kafka_shim.protocol.messages import InitProducerIdRequest, ProduceRequest
from kafka_shim.protocol.records import build_batch, encode_batch
from kafka_shim.shim.cluster.state import ClusterState
from kafka_shim.shim.log.log_manager import LogManager
from kafka_shim.shim.log.storage import FileStorage
from kafka_shim.shim.partitions.manager import Partitions
from tests.support.produce import records_of
from tests.support.wire import Wire

ROOT = Path(__file__).resolve().parents[3]
PRODUCE, INIT_PRODUCER_ID = 0, 22
NOW = 1_700_000_000_000


def _partitions(data_dir: Path) -> Partitions:
    partitions = Partitions(ClusterState(cluster_id="c", node_id=1), LogManager(FileStorage(data_dir)), {}, data_dir)
    partitions.load()
    return partitions


def _serve(data_dir: Path) -> tuple[subprocess.Popen, tuple[str, int]]:
    proc = subprocess.Popen([sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", "--override",
                             "listeners=PLAINTEXT://127.0.0.1:0", "--data-dir", str(data_dir)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    host, port = proc.stdout.readline().strip().split("://", 1)[1].rsplit(":", 1)
    return proc, (host, int(port))


def _produce(wire: Wire, pid: int, seq: int, values: list[bytes]):
    records = encode_batch(build_batch([(b"k", v, [], NOW) for v in values], producer_id=pid, producer_epoch=0, base_sequence=seq))
    answer = wire.request(PRODUCE, 9, ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[ProduceRequest.TopicProduceData(
        name="durable", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])]))
    assert not answer.closed
    partition = answer.body.responses[0].partition_responses[0]
    return partition.error_code, partition.base_offset


def _producer_id(wire: Wire) -> int:
    answer = wire.request(INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000))
    assert answer.body.error_code == 0
    return answer.body.producer_id


def test_kill_9_loses_no_acknowledged_record_and_writes_no_retry_twice(tmp_path: Path) -> None:
    setup = _partitions(tmp_path)
    setup.create_topic("durable", 1)
    setup.close()

    proc, address = _serve(tmp_path)
    try:
        with Wire(address) as wire:
            pid = _producer_id(wire)
            acknowledged = [_produce(wire, pid, seq * 2, [b"v%d" % (seq * 2), b"v%d" % (seq * 2 + 1)]) for seq in range(20)]
        assert acknowledged == [(0, seq * 2) for seq in range(20)]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)

    proc, address = _serve(tmp_path)
    try:
        with Wire(address) as wire:
            assert _produce(wire, pid, 38, [b"v38", b"v39"]) == (0, 38)  # the last batch retried: a duplicate
            assert _produce(wire, pid, 32, [b"v32", b"v33"]) == (0, 32)  # one of the five before it too
            assert _produce(wire, pid, 44, [b"x"]) == (45, -1)  # a gap
            assert _produce(wire, pid, 40, [b"v40"]) == (0, 40)
            assert _producer_id(wire) > pid
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0

    after = _partitions(tmp_path)
    state = after.get("durable", 0)
    assert [s.value for s in records_of(state.log.read(0, 1 << 30).records)] == [b"v%d" % i for i in range(41)]
    after.close()
