"""The floor under kafka-shim's produce throughput: what a Python broker that does only the least can reach.

    .venv/bin/python bench/produce_floor.py [--rounds 2] [--min-seconds 3] [--shapes 1024x1,1024x8,100x1,100x8]
                                           [--floors crc,crc-nocopy,validate,validate-nocopy] [--json out.json]

Issue 13 asks kafka-shim to be ahead of librdkafka's mock cluster in MB/s. The mock checks only a batch's header
(rdkafka_mock.c: magic 2, a plausible record count; no CRC); kafka-shim checks what Kafka checks. This bench
measures how far a Python broker gets when it keeps only part of that work, beside kafka-shim and the mock, with
the same producers (bench/data_plane.py's: librdkafka through confluent-kafka, one process per producer, acks=1,
one topic of 4 partitions under the same 5 MiB retention):

- ``crc``: a uvloop server that reads each connection into one buffer, parses Produce (v9+) by hand, checks each
  batch's CRC-32C, copies it once into warm memory, counts offsets and answers. Nothing else: no authorization,
  no log, no generic codec. Every other request (ApiVersions, Metadata) goes to an in-process kafka-shim.
- ``crc-nocopy``: the same without the copy (a broker whose sockets read straight into its log's memory).
- ``validate``: kafka-shim's own record validation (shim.partitions.validator: CRC, every record's structure,
  offsets, timestamps) instead of the CRC alone, then the copy.
- ``validate-nocopy``: that validation without the copy.

On a 2-core machine the producers and the server share the CPU, so a server that spends less per MiB leaves more
to the producers: the table shows MB/s, the ratio to the mock in the same round, and the server's and the producers'
CPU per MiB (medians over the rounds). The floors are not brokers: they keep nothing, and serve no Fetch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import data_plane as dp  # noqa: E402

FLOORS = ("crc", "crc-nocopy", "validate", "validate-nocopy")
# The copy target: warm memory, faulted in once, reused round-robin (as kafka-shim's recycled log arenas are).
RING_BYTES = 256 * 2**20


def serve_floor(mode: str) -> None:
    """Run one floor server until killed; print its address as ``serve`` does."""
    import asyncio
    import socket
    import time

    import uvloop

    from kafka_shim.protocol.primitives import read_uvarint, write_uvarint
    from kafka_shim.protocol.records.crc import crc32c
    from kafka_shim.shim.partitions.validator import AppendSettings, validate
    from kafka_shim.shim.requests.dispatch import Pending, Respond
    from kafka_shim.shim.testing.embedded import EmbeddedBroker

    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    # Metadata names this server as the broker, so that producers send their Produce requests here.
    broker = EmbeddedBroker({"listeners": "PLAINTEXT://127.0.0.1:0", "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                             "auto.create.topics.enable": "true", "num.partitions": str(dp.PARTITIONS),
                             "offsets.topic.replication.factor": "1"}).start()
    listener = broker.broker.services.config.listeners[0]
    ring = memoryview(bytearray(RING_BYTES))
    for at in range(0, RING_BYTES, 4096):
        ring[at] = 1
    state = {"ring": 0}
    offsets: dict[tuple[bytes, int], int] = {}
    settings = AppendSettings()
    checks = mode.split("-")[0]
    copies = not mode.endswith("nocopy")

    def skip_tags(data: memoryview, at: int) -> int:
        count, at = read_uvarint(data, at)
        for _ in range(count):
            _, at = read_uvarint(data, at)
            size, at = read_uvarint(data, at)
            at += size
        return at

    def batch_error(records: memoryview) -> int:
        """0, or CORRUPT_MESSAGE (2) for a batch that fails the floor's check."""
        if checks == "validate":
            try:
                validate(records, settings, int(time.time() * 1000), "floor")
            except Exception:
                return 2
            return 0
        if len(records) < 61 or crc32c(records[21:]) != int.from_bytes(records[17:21], "big"):
            return 2
        return 0

    def produce(frame: memoryview) -> bytes | None:
        """A Produce v9+ request (flexible versions) answered by hand: per partition, the check, the copy, offsets."""
        correlation = frame[4:8]
        client_id = int.from_bytes(frame[8:10], "big", signed=True)
        at = skip_tags(frame, 10 + max(client_id, 0))
        transactional, at = read_uvarint(frame, at)
        at += max(transactional - 1, 0)
        acks = int.from_bytes(frame[at : at + 2], "big", signed=True)
        at += 6  # acks, timeout_ms
        topics, at = read_uvarint(frame, at)
        out = bytearray(correlation)
        out.append(0)  # response header tags
        out += write_uvarint(topics)
        for _ in range(topics - 1):
            name_size, at = read_uvarint(frame, at)
            name = bytes(frame[at : at + name_size - 1])
            at += name_size - 1
            out += write_uvarint(name_size)
            out += name
            partitions, at = read_uvarint(frame, at)
            out += write_uvarint(partitions)
            for _ in range(partitions - 1):
                index = int.from_bytes(frame[at : at + 4], "big")
                size, at = read_uvarint(frame, at + 4)
                records = frame[at : at + size - 1]
                at = skip_tags(frame, at + size - 1)
                error = batch_error(records)
                if not error and copies:
                    start = state["ring"]
                    if start + len(records) > RING_BYTES:
                        start = 0
                    ring[start : start + len(records)] = records
                    state["ring"] = start + len(records)
                base = offsets.get((name, index), 0)
                if not error:
                    offsets[(name, index)] = base + int.from_bytes(records[57:61], "big")
                out += index.to_bytes(4, "big") + error.to_bytes(2, "big") + (base if not error else -1).to_bytes(8, "big", signed=True)
                out += (-1).to_bytes(8, "big", signed=True) + (0).to_bytes(8, "big")  # log_append_time, log_start_offset
                out += b"\x01\x00\x00"  # no record errors, no error message, no tags
            at = skip_tags(frame, at)
            out.append(0)
        out += b"\x00\x00\x00\x00\x00"  # throttle_time_ms, tags
        return None if acks == 0 else len(out).to_bytes(4, "big") + out

    class Connection(asyncio.BufferedProtocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport
            self.buffer = memoryview(bytearray(8 * 2**20))
            self.start = self.end = 0
            host, peer_port = transport.get_extra_info("peername")
            self.session = broker.call(lambda: broker.broker.dispatcher.session(listener, None, host, peer_port,
                                                                                 local_address=("127.0.0.1", port)))

        def get_buffer(self, sizehint: int) -> memoryview:
            if self.end == len(self.buffer) or (len(self.buffer) - self.end < 65536 and self.start):
                held = self.end - self.start
                self.buffer[:held] = self.buffer[self.start : self.end]
                self.start, self.end = 0, held
            return self.buffer[self.end :]

        def buffer_updated(self, nbytes: int) -> None:
            self.end += nbytes
            while self.end - self.start >= 4:
                size = int.from_bytes(self.buffer[self.start : self.start + 4], "big")
                if self.end - self.start - 4 < size:
                    if size + 4 > len(self.buffer):  # a frame larger than the buffer: a larger buffer
                        held = self.end - self.start
                        larger = memoryview(bytearray(size + 4 + 2**20))
                        larger[:held] = self.buffer[self.start : self.end]
                        self.buffer, self.start, self.end = larger, 0, held
                    break
                frame = self.buffer[self.start + 4 : self.start + 4 + size]
                self.start += 4 + size
                if frame[:2] == b"\x00\x00" and int.from_bytes(frame[2:4], "big") >= 9:
                    answer = produce(frame)
                else:
                    answer = self.elsewhere(bytes(frame))
                if answer:
                    self.transport.write(answer)  # type: ignore[attr-defined]
            if self.start == self.end:
                self.start = self.end = 0

        def elsewhere(self, payload: bytes) -> bytes | None:
            outcome = broker.call(self.session.receive, payload)
            if type(outcome) is Pending:
                async def finish() -> object:
                    return await outcome.outcome
                outcome = asyncio.run_coroutine_threadsafe(finish(), broker.loop).result(60)
            return outcome.data if type(outcome) is Respond else None

    async def main() -> None:
        await asyncio.get_running_loop().create_server(Connection, sock=listening)
        print(f"PLAINTEXT://127.0.0.1:{port}", flush=True)
        await asyncio.Event().wait()

    uvloop.run(main())


def start_floor(mode: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve", mode], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()  # type: ignore[union-attr]
    if "://" not in line:
        raise SystemExit(f"floor {mode}: did not start (said {line!r})")
    return proc, line.split("://", 1)[1]


def one(kind: str, size: int, producers: int, min_seconds: float) -> dp.Throughput:
    if kind == "kafka-shim":
        proc, address, stop = dp.start_shim_server(sys.executable, *dp.RETENTION_CHECK)
    elif kind == "librdkafka-mock":
        proc, address, stop = dp.start_mock_server()
    else:
        (proc, address), stop = start_floor(kind.removeprefix("floor-")), dp._stop_process
    try:
        dp.create_topic(address, "floor", dp.PARTITIONS, auto=kind != "kafka-shim", config=dp.retention_topic_config(5))
        return dp.produce(kind, address, "floor", 64 * 2**20, size, "1", producers, min_seconds, pid=proc.pid)  # type: ignore[attr-defined]
    finally:
        stop(proc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--min-seconds", type=float, default=3.0)
    parser.add_argument("--shapes", default="1024x1,1024x8,100x1,100x8", help="record size x producers, comma-separated")
    parser.add_argument("--floors", default=",".join(FLOORS))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--serve", choices=FLOORS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_floor(args.serve)
        return 0
    shapes = [tuple(int(x) for x in shape.split("x")) for shape in args.shapes.split(",")]
    kinds = [f"floor-{mode}" for mode in args.floors.split(",") if mode] + ["kafka-shim", "librdkafka-mock"]
    print(f"$ {' '.join([Path(sys.executable).name, *sys.argv])}", flush=True)
    runs: dict[tuple[str, int, int], list[tuple[dp.Throughput, float]]] = {}
    for round_number in range(1, args.rounds + 1):
        for size, producers in shapes:
            found = {kind: one(kind, size, producers, args.min_seconds) for kind in kinds}
            mock = found["librdkafka-mock"].mb_per_s
            for kind, result in found.items():
                runs.setdefault((kind, size, producers), []).append((result, result.mb_per_s / mock))
                print(f"  [round {round_number}] {kind:22s} {size:5d} B x{producers}: {result.mb_per_s:7.1f} MB/s "
                      f"({result.mb_per_s / mock:.2f}x the mock), server {result.cpu_ms_per_mib or 0:.2f} ms/MiB, "
                      f"producers {result.client_cpu_ms_per_mib or 0:.2f} ms/MiB"
                      + (f", {result.failed} FAILED" if result.failed else ""), flush=True)
    print(f"\nmedians of {args.rounds} round(s), acks=1, 4 partitions, 5 MiB retention")
    print(f"{'server':22s} {'size':>5s} {'prod':>4s} {'MB/s':>8s} {'vs mock':>8s} {'server ms/MiB':>14s} {'producers ms/MiB':>17s}")
    table = []
    for (kind, size, producers), found in runs.items():
        row = {"server": kind, "size": size, "producers": producers,
               "mb_per_s": statistics.median(r.mb_per_s for r, _ in found),
               "vs_mock": statistics.median(ratio for _, ratio in found),
               "server_ms_per_mib": statistics.median(r.cpu_ms_per_mib or 0.0 for r, _ in found),
               "producers_ms_per_mib": statistics.median(r.client_cpu_ms_per_mib or 0.0 for r, _ in found),
               "failed": sum(r.failed for r, _ in found)}
        table.append(row)
    for row in sorted(table, key=lambda r: (-r["size"], r["producers"])):
        print(f"{row['server']:22s} {row['size']:5d} {row['producers']:4d} {row['mb_per_s']:8.1f} {row['vs_mock']:7.2f}x "
              f"{row['server_ms_per_mib']:14.2f} {row['producers_ms_per_mib']:17.2f}" + (" FAILED" if row["failed"] else ""))
    if args.json:
        args.json.write_text(json.dumps(table, indent=2))
    return 1 if any(row["failed"] for row in table) else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
