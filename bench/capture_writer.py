"""What the capture writer process spends per request: turning a batch of the broker's records into trace columns.

    .venv/bin/python bench/capture_writer.py [--rows 4096] [--repeat 15]

The writer gets the broker's records as marshal wrote them on the event loop (traces.capture_pipe). It reads them
column by column (traces.capture_columns) and falls back to unmarshalling them row by row (traces.capture_rows) for
batches off the usual shape; this times both on the same batches, and the Parquet encoding after them, over shapes
that repeat little or much: the distinct connections and decisions of a batch are what the column path unmarshals
one by one, and big frames are what it copies. Medians of ``--repeat`` runs, in µs per request.
"""

from __future__ import annotations

import argparse
import marshal
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka_shim.protocol.framing import encode_request  # noqa: E402
from kafka_shim.protocol.messages import MetadataRequest, ProduceRequest  # noqa: E402
from kafka_shim.protocol.records import build_batch, encode_batch  # noqa: E402
from kafka_shim.traces import capture_files, capture_pipe  # noqa: E402
from kafka_shim.traces.capture_columns import broker_table  # noqa: E402
from kafka_shim.traces.capture_rows import RECORD_FIELDS, tapped_rows  # noqa: E402
from kafka_shim.traces.format import CAPTURE  # noqa: E402

NOW_US = 1_790_000_000_000_000


def _session(i: int) -> bytes:
    return marshal.dumps((f"127.0.0.1:9092-127.0.0.1:{40000 + i}-{i}", "127.0.0.1", 40000 + i, "PLAINTEXT", "PLAINTEXT",
                          "librdkafka", "2.6.1"), 2)


def _decision(topic: str, operation: int = 8) -> tuple:
    return ("authorize", operation, 2, topic, True, "DefaultAllow", 1, None)


def _metadata(topics: list[str], correlation: int) -> bytes:
    return encode_request(3, 12, correlation, MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics], allow_auto_topic_creation=False),
        client_id="app")[4:]


def _produce(topic: str, records: int, size: int, correlation: int) -> bytes:
    batch = encode_batch(build_batch([(None, os.urandom(size), [], NOW_US // 1000) for _ in range(records)]))
    return encode_request(0, 9, correlation, ProduceRequest(acks=1, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[ProduceRequest.PartitionProduceData(
            index=0, records=batch)])]), client_id="app")[4:]


def _answer(size: int) -> bytes:
    return size.to_bytes(4, "big") + bytes(size)


def shapes(rows: int) -> dict[str, list[tuple]]:
    """Batches of records in the broker's shape (shim.tap.TappedRequest)."""
    sessions = [_session(i) for i in range(8)]
    meta = _metadata(["orders"], 1)
    produce = _produce("orders", 10, 100, 1)
    big = _produce("orders", 100, 1024, 1)
    many_topics = [f"team{i % 40}.svc{i}" for i in range(50)]
    wide = _metadata(many_topics, 1)
    return {
        "Metadata, 1 topic, 8 connections": [
            (NOW_US + i, sessions[i % 8], "User:app", meta, None, _answer(130), "response", 40, [_decision("orders")])
            for i in range(rows)],
        "Produce 10 x 100 B, 8 connections": [
            (NOW_US + i, sessions[i % 8], "User:app", produce, None, _answer(60), "response", 90,
             [_decision("orders", 4)]) for i in range(rows)],
        "Produce 100 x 1 KiB, 8 connections": [
            (NOW_US + i, sessions[i % 8], "User:app", big, None, _answer(60), "response", 300,
             [_decision("orders", 4)]) for i in range(rows // 8)],
        "Metadata of 50 topics, 50 decisions each": [
            (NOW_US + i, sessions[i % 8], "User:app", wide, None, _answer(2000), "response", 200,
             [_decision(t) for t in many_topics]) for i in range(rows // 4)],
        "nothing repeats: a connection and a topic per request": [
            (NOW_US + i, _session(i), f"User:app{i}", _metadata([f"t{i}"], i), None, _answer(130), "response", 40,
             [_decision(f"t{i}")]) for i in range(rows)],
    }


def _median_us(fn: Callable[[], object], rows: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) / rows * 1e6


def _parquet(table: pa.Table) -> None:
    writer = capture_files.parquet_writer(pa.BufferOutputStream(), CAPTURE)
    writer.write_table(table)
    writer.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=4096, help="requests per batch (the forwarder sends 4,096 or more)")
    ap.add_argument("--repeat", type=int, default=15)
    a = ap.parse_args(argv)
    print(f"command: python bench/capture_writer.py {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip())
    print(f"python {sys.version.split()[0]}, pyarrow {pa.__version__}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f} at start\n")
    print(f"{'µs per request':55s} {'rows':>6s} {'row by row':>11s} {'by columns':>11s} {'ratio':>6s} {'+ Parquet':>10s}")
    for name, records in shapes(a.rows).items():
        message = b"".join(capture_pipe.rows_message(RECORD_FIELDS, [capture_pipe.record(r) for r in records], None))
        fields, block, _ = capture_pipe.rows_body(message[5:])
        table = broker_table(block)
        if table is None or not table.equals(tapped_rows(block.rows(), fields=fields)):
            raise SystemExit(f"{name}: the column path did not give the row path's rows")
        by_rows = _median_us(lambda b=block, f=fields: tapped_rows(b.rows(), fields=f), len(records), a.repeat)
        by_columns = _median_us(lambda b=block: broker_table(b), len(records), a.repeat)
        parquet = _median_us(lambda t=table: _parquet(t), len(records), a.repeat)
        print(f"{name:55s} {len(records):6d} {by_rows:11.2f} {by_columns:11.2f} {by_rows / by_columns:5.1f}x {parquet:10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
