"""What capture costs the event loop itself: µs per Metadata request through the request pipeline, in one process.

    .venv/bin/python bench/capture_loop.py [--requests 20000] [--rounds 4] [--profile]

bench/capture.py measures requests/s over sockets; this isolates the broker's side. One embedded broker with
capture on (the authorizer with allow.everyone.if.no.acl.found=true, as in bench/capture.py) serves the same
pre-encoded Metadata v12 request (one topic, one DESCRIBE decision) through three sessions in turn, on its own
loop: no tap; a tap that keeps the records as tuples in a deque (building the record, and the garbage collections
that thousands of queued tuples bring); and the capture sink, which marshals each record on the loop and whose
forwarder thread hands them to the writer process meanwhile (its share of the interpreter lock shows here; the
writer process's own work does not). Rounds alternate the three, so drift from other load hits all alike.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from typing import Any

from kafka_shim.protocol.framing import encode_request
from kafka_shim.protocol.messages import MetadataRequest
from kafka_shim.shim.testing.embedded import EmbeddedBroker

TOPIC = "bench-capture"


class DequeTap:
    """Records kept in memory: the cost of building and handing over a record, without a writer."""

    def __init__(self) -> None:
        self.records: collections.deque[Any] = collections.deque()

    def record(self, request: Any) -> None:
        self.records.append(request)

    def close(self) -> None:
        self.records.clear()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one captured pass")
    a = ap.parse_args(argv)
    print(f"command: python bench/capture_loop.py {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip())
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    payload = encode_request(3, 12, 1, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)],
                                                       allow_auto_topic_creation=False))[4:]
    with tempfile.TemporaryDirectory() as capture_dir, EmbeddedBroker(
            capture_dir=capture_dir, authorizer_class_name="org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            allow_everyone_if_no_acl_found="true") as broker:
        broker.call(broker.broker.services.partitions.create_topic, TOPIC, 1)
        dispatcher = broker.broker.dispatcher
        listener = broker.broker.services.config.listeners[0]

        def one_pass(tap: str, profile: cProfile.Profile | None = None) -> float:
            session = dispatcher.session(listener, None, "127.0.0.1", 50000, local_address=("127.0.0.1", 9092))
            session.tap = {"none": None, "deque": DequeTap(), "capture": session.tap}[tap]
            if profile is not None:
                profile.enable()
            started = time.perf_counter()
            for _ in range(a.requests):
                session.receive(payload)
            elapsed = time.perf_counter() - started
            if profile is not None:
                profile.disable()
            return elapsed / a.requests * 1e6

        runs: dict[str, list[float]] = {"none": [], "deque": [], "capture": []}
        for _ in range(a.rounds):
            for tap in runs:
                runs[tap].append(broker.call(one_pass, tap))
        base = statistics.median(runs["none"])
        print(f"\nµs per Metadata request on the loop, median of {a.rounds} rounds of {a.requests:,}:")
        for tap, label in (("none", "no tap"), ("deque", "tap into a deque"), ("capture", "capture (writer process on)")):
            value = statistics.median(runs[tap])
            print(f"  {label:28s} {value:6.1f}   +{value - base:4.1f}  ({', '.join(f'{v:.1f}' for v in runs[tap])})")
        if a.profile:
            profile = cProfile.Profile()
            broker.call(one_pass, "capture", profile)
            pstats.Stats(profile, stream=sys.stdout).sort_stats("tottime").print_stats(15)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
