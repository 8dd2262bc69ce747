"""Consumer-group benchmark: kafka-shim against Apache Kafka 3.9, in the same run, with the same
``group.initial.rebalance.delay.ms``.

Two figures per broker:

- **Join**: N members (1, 10, 50) join one group and get their first assignment. Each member is a raw-protocol
  client on its own connection (asyncio, kafka-shim's codec) doing what a consumer does: JoinGroup (v5; the leader
  computes a round-robin assignment over the topic's partitions), SyncGroup, then a Heartbeat every
  ``--heartbeat-ms``; a REBALANCE_IN_PROGRESS sends it back to JoinGroup. The run is done when every member holds an
  assignment of the same generation. Reported: seconds from the first JoinGroup sent to that moment, and from the
  moment the last member sent its first JoinGroup (the target: under 1 s for 50 members).
- **OffsetCommit / OffsetFetch requests/s**: pipelined requests (bench/loadgen.py; plain sockets, several connections,
  many in flight) committing and fetching one partition's offset of a "simple" group (generation -1, no members).

The heartbeat interval decides how soon a member that already synced learns of a rebalance, on both brokers alike;
it is a client setting, the same for both.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import signal
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from loadgen import drive  # noqa: E402
from real_kafka import STOCK_JVM_OPTS, start_real_kafka  # noqa: E402

from kafka_shim.protocol.framing import decode_response, encode_request  # noqa: E402
from kafka_shim.protocol.messages import (  # noqa: E402
    CreateTopicsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)

JOIN_GROUP, SYNC_GROUP, HEARTBEAT, OFFSET_COMMIT, OFFSET_FETCH = 11, 14, 12, 8, 9
FIND_COORDINATOR, DESCRIBE_GROUPS, CREATE_TOPICS = 10, 15, 19
JOIN_V, SYNC_V, HEARTBEAT_V, COMMIT_V, FETCH_V = 5, 3, 3, 8, 8
REBALANCE_IN_PROGRESS, MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION = 27, 79, 25, 22
TOPIC = "bench-groups"
PARTITIONS = 64


# -- a raw-protocol connection (asyncio) -----------------------------------------------------------------------------
class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.cid = reader, writer, 0

    @classmethod
    async def open(cls, address: str) -> Connection:
        host, port = address.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        return cls(reader, writer)

    async def request(self, api_key: int, version: int, body):
        self.cid += 1
        self.writer.write(encode_request(api_key, version, self.cid, body, client_id="bench-groups"))
        (size,) = struct.unpack(">i", await self.reader.readexactly(4))
        cid, response = decode_response(api_key, version, await self.reader.readexactly(size))
        assert cid == self.cid, (cid, self.cid)
        return response

    def close(self) -> None:
        self.writer.close()


def subscription(topic: str) -> bytes:
    """ConsumerProtocolSubscription v0: one topic, no user data."""
    name = topic.encode()
    return struct.pack(">hih", 0, 1, len(name)) + name + struct.pack(">i", -1)


def assignment(topic: str, partitions: list[int]) -> bytes:
    """ConsumerProtocolAssignment v0."""
    name = topic.encode()
    return (struct.pack(">hih", 0, 1, len(name)) + name + struct.pack(">i", len(partitions))
            + b"".join(struct.pack(">i", p) for p in partitions) + struct.pack(">i", -1))


@dataclass
class JoinRun:
    members: int
    total_s: float  # first JoinGroup sent -> every member assigned in one generation
    after_last_s: float  # the last member's first JoinGroup -> the same moment
    generation: int
    rebalances: int


class Member:
    def __init__(self, index: int, group: str, done: JoinTracker) -> None:
        self.index, self.group, self.tracker = index, group, done
        self.member_id = ""
        self.synced_generation = -1

    async def run(self, address: str, heartbeat_s: float, stop: asyncio.Event) -> None:
        conn = await Connection.open(address)
        try:
            while not stop.is_set():
                generation = await self._join_and_sync(conn)
                if generation is None:
                    continue
                self.synced_generation = generation
                self.tracker.synced(self, generation)
                while not stop.is_set():
                    try:
                        await asyncio.wait_for(stop.wait(), heartbeat_s)
                        return
                    except TimeoutError:
                        pass
                    hb = await conn.request(HEARTBEAT, HEARTBEAT_V, HeartbeatRequest(
                        group_id=self.group, generation_id=generation, member_id=self.member_id))
                    if hb.error_code in (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION):
                        break
                    if hb.error_code == UNKNOWN_MEMBER_ID:
                        self.member_id = ""
                        break
                    assert hb.error_code == 0, hb
        finally:
            conn.close()

    async def _join_and_sync(self, conn: Connection) -> int | None:
        if self.tracker.first_join_at.get(self.index) is None:
            self.tracker.first_join_at[self.index] = time.perf_counter()
        join = await conn.request(JOIN_GROUP, JOIN_V, JoinGroupRequest(
            group_id=self.group, session_timeout_ms=30000, rebalance_timeout_ms=60000, member_id=self.member_id,
            group_instance_id=None, protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="roundrobin", metadata=subscription(TOPIC))]))
        if join.error_code == MEMBER_ID_REQUIRED:
            self.member_id = join.member_id
            return None
        if join.error_code == UNKNOWN_MEMBER_ID:
            self.member_id = ""
            return None
        if join.error_code == REBALANCE_IN_PROGRESS:
            return None
        assert join.error_code == 0, join
        self.member_id = join.member_id
        plan = []
        if join.leader == self.member_id:
            self.tracker.rebalances += 1
            ids = sorted(m.member_id for m in join.members)
            plan = [SyncGroupRequest.SyncGroupRequestAssignment(
                member_id=m, assignment=assignment(TOPIC, list(range(i, PARTITIONS, len(ids))))) for i, m in enumerate(ids)]
        sync = await conn.request(SYNC_GROUP, SYNC_V, SyncGroupRequest(
            group_id=self.group, generation_id=join.generation_id, member_id=self.member_id, group_instance_id=None,
            assignments=plan))
        if sync.error_code in (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION):
            return None
        if sync.error_code == UNKNOWN_MEMBER_ID:
            self.member_id = ""
            return None
        assert sync.error_code == 0 and sync.assignment, sync
        return join.generation_id


class JoinTracker:
    def __init__(self, count: int) -> None:
        self.count = count
        self.members: list[Member] = []
        self.first_join_at: dict[int, float] = {}
        self.rebalances = 0
        self.all_assigned = asyncio.Event()
        self.finished_at = 0.0
        self.generation = -1

    def synced(self, member: Member, generation: int) -> None:
        if all(m.synced_generation == generation for m in self.members) and not self.all_assigned.is_set():
            self.finished_at, self.generation = time.perf_counter(), generation
            self.all_assigned.set()


async def join_run(address: str, group: str, count: int, heartbeat_s: float, timeout_s: float) -> JoinRun:
    tracker = JoinTracker(count)
    tracker.members = [Member(i, group, tracker) for i in range(count)]
    stop = asyncio.Event()
    started = time.perf_counter()
    tasks = [asyncio.create_task(m.run(address, heartbeat_s, stop)) for m in tracker.members]
    waiter = asyncio.create_task(tracker.all_assigned.wait())
    await asyncio.wait([waiter, *tasks], timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    stop.set()
    failed = [t for t in tasks if t.done() and t.exception() is not None]
    await asyncio.gather(*tasks, return_exceptions=True)
    waiter.cancel()
    if failed:
        raise failed[0].exception()
    if not tracker.all_assigned.is_set():
        raise TimeoutError(f"{count} members were not all assigned within {timeout_s} s")
    last_join = max(tracker.first_join_at.values())
    return JoinRun(count, tracker.finished_at - started, tracker.finished_at - last_join, tracker.generation, tracker.rebalances)


# -- set-up and the offsets figures ----------------------------------------------------------------------------------
async def prepare(address: str) -> None:
    """The topic the members subscribe to, and __consumer_offsets loaded (FindCoordinator creates it)."""
    conn = await Connection.open(address)
    try:
        await conn.request(CREATE_TOPICS, 4, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=TOPIC, num_partitions=PARTITIONS, replication_factor=1, assignments=[], configs=[])], timeout_ms=30000))
        deadline = time.monotonic() + 120
        while True:
            found = await conn.request(FIND_COORDINATOR, 3, FindCoordinatorRequest(key="bench-probe", key_type=0))
            if found.error_code == 0:
                probes = [f"bench-probe-{i}" for i in range(200)]
                described = await conn.request(DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=probes))
                if all(g.error_code == 0 for g in described.groups):
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{address} never became the group coordinator")
            await asyncio.sleep(0.1)
    finally:
        conn.close()


def _commit_body(group: str) -> OffsetCommitRequest:
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None, topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=42, committed_leader_epoch=-1,
                                                             committed_metadata="")])])


def _fetch_body(group: str) -> OffsetFetchRequest:
    return OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[0])])], require_stable=False)


def _commit(group: str) -> bytes:
    return encode_request(OFFSET_COMMIT, COMMIT_V, 1, _commit_body(group), client_id="bench-groups")


def _fetch(group: str) -> bytes:
    return encode_request(OFFSET_FETCH, FETCH_V, 1, _fetch_body(group), client_id="bench-groups")


def check_offsets(address: str, group: str) -> None:
    """One commit and one fetch answered without error, so that the rates below count real work."""
    async def ask() -> None:
        conn = await Connection.open(address)
        try:
            committed = await conn.request(OFFSET_COMMIT, COMMIT_V, _commit_body(group))
            assert committed.topics[0].partitions[0].error_code == 0, committed
            fetched = await conn.request(OFFSET_FETCH, FETCH_V, _fetch_body(group))
            assert fetched.groups[0].topics[0].partitions[0].committed_offset == 42, fetched
        finally:
            conn.close()
    asyncio.run(ask())


def rate(address: str, frame: bytes, seconds: float, connections: int, in_flight: int) -> float:
    done, elapsed, _ = drive(address, connections, in_flight, seconds, 1.0, lambda n: frame * n)
    return done / elapsed


# -- the brokers ----------------------------------------------------------------------------------------------------
def start_shim(delay_ms: int) -> tuple[subprocess.Popen, str]:
    args = [sys.executable, "-m", "kafka_shim.shim.tools.cli", "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
            "--override", f"group.initial.rebalance.delay.ms={delay_ms}",
            # A single broker, as scripts/real-kafka configures Kafka (the default 3 leaves __consumer_offsets uncreated).
            "--override", "offsets.topic.replication.factor=1", "--log-level", "warning"]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip().split("://", 1)[1]


@dataclass
class Figures:
    server: str
    joins: list[JoinRun]
    commits_per_s: float
    fetches_per_s: float


def measure(server: str, address: str, sizes: list[int], args: argparse.Namespace) -> Figures:
    asyncio.run(prepare(address))
    # One unreported round first, so that neither broker is timed while it warms up (Kafka's JIT, first connections).
    asyncio.run(join_run(address, f"bench-warm-up-{time.time_ns()}", 5, args.heartbeat_ms / 1000, args.timeout))
    joins = []
    for n in sizes:
        run = asyncio.run(join_run(address, f"bench-join-{n}-{time.time_ns()}", n, args.heartbeat_ms / 1000, args.timeout))
        print(f"  {server}: {n} members assigned in {run.total_s:.3f} s ({run.after_last_s:.3f} s after the last joined; "
              f"generation {run.generation}, {run.rebalances} rebalances)", flush=True)
        joins.append(run)
    group = f"bench-offsets-{time.time_ns()}"
    check_offsets(address, group)
    commits = rate(address, _commit(group), args.seconds, args.connections, args.in_flight)
    fetches = rate(address, _fetch(group), args.seconds, args.connections, args.in_flight)
    print(f"  {server}: OffsetCommit {commits:,.0f}/s, OffsetFetch {fetches:,.0f}/s", flush=True)
    return Figures(server, joins, commits, fetches)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", default="1,10,50", help="group sizes to time (comma-separated)")
    parser.add_argument("--delay-ms", type=int, default=0, help="group.initial.rebalance.delay.ms on both brokers (Kafka's shipped "
                                                                "server.properties and kafka-shim's example config: 0)")
    parser.add_argument("--heartbeat-ms", type=int, default=100, help="the members' heartbeat interval")
    parser.add_argument("--seconds", type=float, default=3.0, help="how long each requests/s figure is measured")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--in-flight", type=int, default=16, help="requests outstanding per connection")
    parser.add_argument("--timeout", type=float, default=120.0, help="give up a join run after this many seconds")
    parser.add_argument("--without-kafka", action="store_true", help="leave out the real Apache Kafka broker")
    parser.add_argument("--without-shim", action="store_true", help="measure only Apache Kafka")
    args = parser.parse_args()
    sizes = [int(n) for n in args.members.split(",")]
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, group.initial.rebalance.delay.ms={args.delay_ms}, "
          f"heartbeat {args.heartbeat_ms} ms, {args.connections} connections x {args.in_flight} in flight", flush=True)
    results = []
    if not args.without_shim:
        proc, address = start_shim(args.delay_ms)
        try:
            results.append(measure("kafka-shim", address, sizes, args))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    if not args.without_kafka:
        kafka = start_real_kafka("authorizer.class.name=", f"group.initial.rebalance.delay.ms={args.delay_ms}", jvm_opts=STOCK_JVM_OPTS)
        try:
            results.append(measure("apache-kafka", kafka.plaintext, sizes, args))
        finally:
            kafka.stop()
    print()
    print(f"{'server':<14} " + " ".join(f"{f'join {n} (after last)':>24}" for n in sizes) + f" {'commit/s':>10} {'fetch/s':>10}")
    for r in results:
        print(f"{r.server:<14} " + " ".join(f"{f'{j.total_s:.3f} s ({j.after_last_s:.3f} s)':>24}" for j in r.joins)
              + f" {r.commits_per_s:>10,.0f} {r.fetches_per_s:>10,.0f}")
    if len(results) == 2:
        shim, kafka = results
        ratios = [f"join {j.members}: {k.total_s / j.total_s:.2f}x" for j, k in zip(shim.joins, kafka.joins, strict=True)]
        ratios += [f"commit: {shim.commits_per_s / kafka.commits_per_s:.2f}x", f"fetch: {shim.fetches_per_s / kafka.fetches_per_s:.2f}x"]
        print("kafka-shim ahead of Kafka by (>1 is faster): " + ", ".join(ratios))
    if not args.without_shim:
        biggest = results[0].joins[-1]
        print(f"kafka-shim: {biggest.members} members assigned {biggest.after_last_s:.3f} s after the last joined "
              f"({'under' if biggest.after_last_s < 1 else 'NOT under'} 1 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
