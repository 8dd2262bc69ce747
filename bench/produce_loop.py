"""What one Produce request costs the broker's event loop: µs per request through the request pipeline, in one process.

    .venv/bin/python bench/produce_loop.py [--requests 4000] [--rounds 5] [--compare NAME=PYTHON ...]

bench/data_plane.py measures MB/s with real producers, where large batches hide the cost of each request and each
partition; small-batch producers (linger.ms 0, one record at a time, many partitions per request) pay it in full.
Here an embedded broker (the authorizer on, allow.everyone.if.no.acl.found=true) takes the same pre-encoded Produce
v9 request (acks=1) again and again through one session on its own loop, for shapes of several sizes: one record to
one partition; 10 and 1,000 records; 40 records to each of 4 partitions; records of mixed sizes with keys and
headers (which the validator walks record by record instead of scanning by their fixed layout); 1 KiB records.

``--compare NAME=PYTHON`` runs the same shapes under another interpreter (another checkout's install of kafka-shim),
each round alternating which goes first; the table gives both medians and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

SHAPES = {  # name: (records per partition, partitions, value size or None for mixed sizes with keys and headers)
    "1 record x 1 partition": (1, 1, 100),
    "10 records x 1 partition": (10, 1, 100),
    "40 records x 4 partitions": (40, 4, 100),
    "1000 records x 1 partition": (1000, 1, 100),
    "40 mixed records x 4 partitions": (40, 4, None),
    "100 x 1 KiB x 1 partition": (100, 1, 1024),
}
TOPIC = "bench-produce-loop"


def _request(records: int, partitions: int, size: int | None) -> bytes:
    from kafka_shim.protocol.framing import encode_request
    from kafka_shim.protocol.messages import ProduceRequest
    from kafka_shim.protocol.records import build_batch, encode_batch

    rng = random.Random(records * 31 + partitions)
    now = int(time.time() * 1000)

    def batch() -> bytes:
        if size is not None:
            return encode_batch(build_batch([(None, b"v" * size, [], now) for _ in range(records)]))
        return encode_batch(build_batch([(f"key-{rng.randrange(10_000)}".encode(), rng.randbytes(rng.randrange(20, 300)),
                                          [("h", b"x" * rng.randrange(4))], now + rng.randrange(3)) for _ in range(records)]))

    data = [ProduceRequest.PartitionProduceData(index=i, records=batch()) for i in range(partitions)]
    request = ProduceRequest(acks=1, timeout_ms=30000, topic_data=[ProduceRequest.TopicProduceData(name=TOPIC, partition_data=data)])
    return encode_request(0, 9, 1, request, client_id="bench")[4:]


def measure(requests: int) -> dict[str, float]:
    """µs per request of each shape, in this interpreter (one pass each, after a warm-up pass)."""
    from kafka_shim.shim.testing.embedded import EmbeddedBroker

    out: dict[str, float] = {}
    with EmbeddedBroker(authorizer_class_name="org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                        allow_everyone_if_no_acl_found="true") as broker:
        broker.call(broker.broker.services.partitions.create_topic, TOPIC, max(p for _, p, _ in SHAPES.values()))
        dispatcher = broker.broker.dispatcher
        listener = broker.broker.services.config.listeners[0]
        for name, (records, partitions, size) in SHAPES.items():
            payload = _request(records, partitions, size)

            def one_pass(count: int, payload: bytes = payload) -> float:
                session = dispatcher.session(listener, None, "127.0.0.1", 50000, local_address=("127.0.0.1", 9092))
                started = time.perf_counter()
                for _ in range(count):
                    if session.receive(payload) is None:
                        raise SystemExit("the broker did not answer the Produce request at once")
                return (time.perf_counter() - started) / count * 1e6

            broker.call(one_pass, max(requests // 10, 10))
            out[name] = broker.call(one_pass, requests if records < 1000 else max(requests // 10, 10))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=4000, help="requests per shape and pass (a tenth for 1,000 records)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--compare", action="append", default=[], metavar="NAME=PYTHON")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(measure(a.requests)))
        return 0
    print(f"command: python bench/produce_loop.py {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip())
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    interpreters = {"this": sys.executable}
    for spec in a.compare:
        name, _, python = spec.partition("=")
        if not python:
            ap.error(f"--compare {spec}: expected NAME=PYTHON")
        interpreters[name] = python
    found: dict[str, dict[str, list[float]]] = {name: {shape: [] for shape in SHAPES} for name in interpreters}
    for number in range(a.rounds):
        order = list(interpreters.items())
        for name, python in order if number % 2 == 0 else order[::-1]:
            # Each in a fresh process: a shape's figures do not depend on what an earlier interpreter left behind.
            done = subprocess.run([python, __file__, "--child", "--requests", str(a.requests)], capture_output=True,
                                  text=True, cwd="/")
            if done.returncode != 0:
                raise SystemExit(f"{name} ({python}) failed:\n{done.stderr[-3000:]}")
            for shape, value in json.loads(done.stdout.strip().splitlines()[-1]).items():
                found[name][shape].append(value)
        print(f"  round {number + 1} of {a.rounds} done", flush=True)
    names = list(interpreters)
    print(f"\nµs per Produce request (v9, acks=1) on the loop, median of {a.rounds} rounds:")
    print(f"{'shape':34s}" + "".join(f"{n:>12s}" for n in names) + ("".join(f"{'this/' + n:>14s}" for n in names[1:])))
    for shape in SHAPES:
        medians = [statistics.median(found[n][shape]) for n in names]
        print(f"{shape:34s}" + "".join(f"{m:12.1f}" for m in medians) + "".join(f"{medians[0] / m:13.2f}x" for m in medians[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
