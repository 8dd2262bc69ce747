"""DescribeAcls (MATCH filter) and CreateAcls requests/s over loopback: kafka-shim against an echo floor and Apache Kafka.

    .venv/bin/python bench/acl_api.py [--seconds 2] [--quick] [--sizes 10000,100000] [--connections 1,16,64]
                                      [--in-flight 8] [--kafka-max-acls N] [--without-kafka] [--json out.json]

Three servers answer the same requests in the same run, one after the other:
  kafka-shim    in its own process (`Broker(..., preload_acls=...)`, uvloop when installed, as `kafka-shim serve`),
                with the ACLs put straight into its authorizer at start-up;
  echo-floor    a minimal asyncio server (same event loop) that answers every frame with pre-encoded response
                bytes: the most any asyncio server could do on this machine with this load generator;
  apache-kafka  Kafka 3.9 (scripts/real-kafka: KRaft, StandardAuthorizer) with Kafka's stock JVM options (1 GB heap,
                G1, full JIT), loaded with the same ACLs by CreateAcls over the wire as the super user (batches of
                5000) and put under load for --kafka-warmup seconds after each load before it is measured.
Every server holds the same ACLs: 10 fixed ones (the probe's matches, near misses, and the grant below) plus
generated ones over many principals, topics and groups that never match the probe. Requests go over PLAINTEXT as
User:ANONYMOUS, which an ACL allows ALTER on the cluster (so each request is authorized through a real ACL check,
not the super-user short cut).
  describe  DescribeAcls v3, filter TOPIC "payments.eu.orders" MATCH (any principal/host/operation/permission):
            5 ACLs in 4 resources; the answers of kafka-shim and Kafka are checked against that before timing.
  create    CreateAcls v3 with one new LITERAL TOPIC binding per request, a different name every time; the ACLs
            created are deleted (DeleteAcls) after each shape, so every shape starts with the stated count.
The load generator (this process: raw sockets, pre-encoded requests) keeps --in-flight requests outstanding on
each connection; latency is per request, from its send to its response. On a 2-core machine it shares the CPU
with the server under test, so absolute figures are lower bounds; ratios between servers measured in this run are
the numbers that matter.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from loadgen import drive, percentile  # noqa: E402
from real_kafka import STOCK_JVM_OPTS, start_real_kafka  # noqa: E402

from kafka_shim.protocol.framing import decode_response, encode_request, encode_response  # noqa: E402
from kafka_shim.protocol.messages import (  # noqa: E402
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeAclsResponse,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)

DESCRIBE, CREATE, DELETE = 29, 30, 31
VERSION = 3  # what Kafka 3.9 and kafka-shim both serve at most (the Java admin client's choice)
CORRELATION = 7  # every request carries the same id, so the echo floor can answer with fixed bytes
# Enum codes (Kafka's): resource types, pattern types, operations, permissions.
ANY, TOPIC, GROUP, CLUSTER = 1, 2, 3, 4
MATCH, LITERAL, PREFIXED = 2, 3, 4
OP_ANY, OP_READ, OP_WRITE, OP_ALTER, OP_DESCRIBE = 1, 3, 4, 7, 8
PERM_ANY, DENY, ALLOW = 1, 2, 3

PROBE = "payments.eu.orders"
NEW_PRINCIPAL = "User:bench-new"  # every ACL the create shapes add, so one DeleteAcls filter removes them
NEW_NAME = "new-{:012d}"
# (resource type, name, pattern, principal, host, operation, permission)
Acl = tuple[int, str, int, str, str, int, int]
PROBE_MATCHES: list[Acl] = [
    (TOPIC, PROBE, LITERAL, "User:probe-reader", "*", OP_READ, ALLOW),
    (TOPIC, PROBE, LITERAL, "User:probe-writer", "*", OP_WRITE, ALLOW),
    (TOPIC, "payments.", PREFIXED, "User:probe-ops", "*", OP_DESCRIBE, ALLOW),
    (TOPIC, "payments.eu.", PREFIXED, "User:probe-blocked", "10.1.2.3", OP_READ, DENY),
    (TOPIC, "*", LITERAL, "User:monitor", "*", OP_DESCRIBE, ALLOW),
]
FIXED: list[Acl] = [
    (CLUSTER, "kafka-cluster", LITERAL, "User:ANONYMOUS", "*", OP_ALTER, ALLOW),
    *PROBE_MATCHES,
    # Near misses the MATCH filter must leave out.
    (TOPIC, PROBE + "2", LITERAL, "User:probe-reader", "*", OP_READ, ALLOW),
    (TOPIC, "payments.us.", PREFIXED, "User:probe-ops", "*", OP_DESCRIBE, ALLOW),
    (GROUP, PROBE, LITERAL, "User:probe-reader", "*", OP_READ, ALLOW),
    (TOPIC, "payments.eu.orders.", PREFIXED, "User:probe-ops", "*", OP_READ, ALLOW),
]


def generated(start: int, stop: int) -> list[Acl]:
    """ACLs number start..stop-1 of the bulk set: 1000 principals, topics and groups, a tenth PREFIXED; never the probe."""
    out = []
    operations = (OP_READ, OP_WRITE, OP_DESCRIBE)
    for i in range(start, stop):
        rtype = GROUP if i % 7 == 0 else TOPIC
        pattern = PREFIXED if i % 10 == 3 else LITERAL
        name = f"svc{i % 997}.stream{i // 997}" + ("." if pattern == PREFIXED else "")
        out.append((rtype, name, pattern, f"User:app-{i % 1000}", "*", operations[i % 3], DENY if i % 50 == 0 else ALLOW))
    return out


def dataset(total: int) -> list[Acl]:
    """Exactly `total` ACLs; dataset(a) is a prefix of dataset(b) for a < b, so Kafka can be topped up."""
    return FIXED + generated(0, total - len(FIXED))


# -- requests and the answers they must get -------------------------------------------------------
def probe_filter() -> DescribeAclsRequest:
    return DescribeAclsRequest(resource_type_filter=TOPIC, resource_name_filter=PROBE, pattern_type_filter=MATCH,
                               principal_filter=None, host_filter=None, operation=OP_ANY, permission_type=PERM_ANY)


def describe_request() -> bytes:
    return encode_request(DESCRIBE, VERSION, CORRELATION, probe_filter(), client_id="bench")


def _creation(acl: Acl) -> CreateAclsRequest.AclCreation:
    rtype, name, pattern, principal, host, operation, permission = acl
    return CreateAclsRequest.AclCreation(resource_type=rtype, resource_name=name, resource_pattern_type=pattern,
                                         principal=principal, host=host, operation=operation, permission_type=permission)


class CreateRequests:
    """Distinct CreateAcls requests, made by writing a counter into one pre-encoded frame (same length every time)."""

    def __init__(self) -> None:
        placeholder = NEW_NAME.format(0)
        acl = (TOPIC, placeholder, LITERAL, NEW_PRINCIPAL, "*", OP_READ, ALLOW)
        self.template = encode_request(CREATE, VERSION, CORRELATION, CreateAclsRequest(creations=[_creation(acl)]), client_id="bench")
        self.at = self.template.index(placeholder.encode())
        self.width = len(placeholder)
        self.next = 1

    def take(self, count: int) -> bytes:
        head, tail, at = self.template[: self.at], self.template[self.at + self.width :], self.next
        self.next += count
        return b"".join(head + NEW_NAME.format(n).encode() + tail for n in range(at, at + count))


def probe_answer() -> list[Acl]:
    return sorted(PROBE_MATCHES)


def describe_response_frame() -> bytes:
    """What a broker answers the probe (Kafka's grouping by resource), for the echo floor."""
    groups: dict[tuple[int, str, int], list[Acl]] = {}
    for acl in PROBE_MATCHES:
        groups.setdefault(acl[:3], []).append(acl)
    resources = [DescribeAclsResponse.DescribeAclsResource(
        resource_type=rtype, resource_name=name, pattern_type=pattern,
        acls=[DescribeAclsResponse.AclDescription(principal=a[3], host=a[4], operation=a[5], permission_type=a[6]) for a in acls])
        for (rtype, name, pattern), acls in groups.items()]
    return encode_response(DESCRIBE, VERSION, CORRELATION, DescribeAclsResponse(throttle_time_ms=0, error_code=0, resources=resources))


def create_response_frame() -> bytes:
    body = CreateAclsResponse(throttle_time_ms=0, results=[CreateAclsResponse.AclCreationResult(error_code=0, error_message=None)])
    return encode_response(CREATE, VERSION, CORRELATION, body)


# -- a blocking wire client for checks, loading and clean-up ------------------------------------------
class Wire:
    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        self.correlation = 100

    def close(self) -> None:
        self.sock.close()

    def _recv(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return bytes(data)

    def send(self, api_key: int, version: int, body: object) -> None:
        self.correlation += 1
        self.sock.sendall(encode_request(api_key, version, self.correlation, body, client_id="bench-admin"))

    def receive(self, api_key: int, version: int) -> object:
        size = int.from_bytes(self._recv(4), "big")
        return decode_response(api_key, version, self._recv(size))[1]

    def call(self, api_key: int, version: int, body: object) -> object:
        self.send(api_key, version, body)
        return self.receive(api_key, version)

    def login_plain(self, user: str, password: str) -> None:
        shake = self.call(17, 1, SaslHandshakeRequest(mechanism="PLAIN"))
        if shake.error_code:
            raise SystemExit(f"SaslHandshake PLAIN refused: error {shake.error_code}")
        answer = self.call(36, 2, SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{password}".encode()))
        if answer.error_code:
            raise SystemExit(f"SASL PLAIN login as {user} failed: {answer.error_code} {answer.error_message}")

    def create(self, acls: list[Acl], batch: int = 5000, window: int = 4) -> None:
        """CreateAcls in batches, `window` requests in flight; every result must be 0."""
        batches = [acls[i : i + batch] for i in range(0, len(acls), batch)]
        pending = 0
        for n, chunk in enumerate(batches):
            self.send(CREATE, VERSION, CreateAclsRequest(creations=[_creation(a) for a in chunk]))
            pending += 1
            if pending == window or n == len(batches) - 1:
                for _ in range(pending):
                    failed = [r for r in self.receive(CREATE, VERSION).results if r.error_code]
                    if failed:
                        raise SystemExit(f"loading ACLs: CreateAcls answered {failed[0].error_code} {failed[0].error_message}")
                pending = 0

    def describe_probe(self) -> list[Acl]:
        response = self.call(DESCRIBE, VERSION, probe_filter())
        if response.error_code:
            raise SystemExit(f"DescribeAcls answered {response.error_code} {response.error_message}")
        return sorted((r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type)
                      for r in response.resources for a in r.acls)

    def count(self, principal: str | None = None) -> int:
        body = DescribeAclsRequest(resource_type_filter=ANY, resource_name_filter=None, pattern_type_filter=ANY,
                                   principal_filter=principal, host_filter=None, operation=OP_ANY, permission_type=PERM_ANY)
        response = self.call(DESCRIBE, VERSION, body)
        if response.error_code:
            raise SystemExit(f"DescribeAcls answered {response.error_code} {response.error_message}")
        return sum(len(r.acls) for r in response.resources)

    def delete_created(self) -> None:
        """Remove every ACL the create requests added, until none shows (a pipelined create may land late)."""
        body = DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(
            resource_type_filter=ANY, resource_name_filter=None, pattern_type_filter=ANY, principal_filter=NEW_PRINCIPAL,
            host_filter=None, operation=OP_ANY, permission_type=PERM_ANY)])
        deadline = time.monotonic() + 60
        while True:
            result = self.call(DELETE, VERSION, body).filter_results[0]
            if result.error_code:
                raise SystemExit(f"DeleteAcls answered {result.error_code} {result.error_message}")
            if self.count(NEW_PRINCIPAL) == 0:
                return
            if time.monotonic() > deadline:
                raise SystemExit("the ACLs created by the benchmark did not go away within 60 s of deleting them")
            time.sleep(0.2)


# -- the servers -------------------------------------------------------------------------------
def _event_loop_runner() -> tuple[str, Callable]:
    try:
        import uvloop

        return "uvloop", uvloop.run
    except ImportError:
        return "asyncio", asyncio.run


async def _serve_shim(total: int) -> None:
    from kafka_shim.authorizer import AccessControlEntry, AclBinding, ResourcePattern
    from kafka_shim.authorizer.model import AclOperation, AclPermissionType, PatternType, ResourceType
    from kafka_shim.shim.broker import Broker
    from kafka_shim.shim.config.broker_config import BrokerConfig
    from kafka_shim.shim.config.logging import configure_logging

    configure_logging(level="warning")
    started = time.perf_counter()
    bindings = [AclBinding(ResourcePattern(ResourceType(t), n, PatternType(p)), AccessControlEntry(pr, h, AclOperation(o), AclPermissionType(m)))
                for t, n, p, pr, h, o, m in dataset(total)]
    config = BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "node.id": "1",
    })
    broker = Broker(config, preload_acls=bindings)
    await broker.start()
    bound = broker.bound[0]
    print(f"{bound.host}:{bound.port} {time.perf_counter() - started:.2f}", flush=True)
    await asyncio.Event().wait()


async def _serve_echo() -> None:
    answers = {DESCRIBE: describe_response_frame(), CREATE: create_response_frame()}

    class Echo(asyncio.Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:
            self.transport = transport
            self.buf = bytearray()

        def data_received(self, data: bytes) -> None:
            buf = self.buf
            buf += data
            pos, out = 0, []
            while len(buf) - pos >= 4:
                size = int.from_bytes(buf[pos : pos + 4], "big")
                if len(buf) - pos - 4 < size:
                    break
                out.append(answers[int.from_bytes(buf[pos + 4 : pos + 6], "big")])
                pos += 4 + size
            if pos:
                del buf[:pos]
                self.transport.write(b"".join(out))

    server = await asyncio.get_running_loop().create_server(Echo, "127.0.0.1", 0)
    host, port = server.sockets[0].getsockname()[:2]
    print(f"{host}:{port} 0", flush=True)
    await asyncio.Event().wait()


def start_child(mode: str, *args: str) -> tuple[subprocess.Popen, str, float]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve", mode, *args], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().split()
    if not line:
        proc.wait(timeout=10)
        raise SystemExit(f"the {mode} server did not start (exit {proc.returncode})")
    return proc, line[0], float(line[1])


def stop_child(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class KafkaPeer:
    """Kafka 3.9 with its stock JVM options, and the ACLs loaded into it so far."""

    def __init__(self) -> None:
        self.kafka = start_real_kafka(jvm_opts=STOCK_JVM_OPTS, skip_flag="--without-kafka")
        self.plaintext, self.sasl = self.kafka.plaintext, self.kafka.sasl
        self.loaded = 0

    def load_to(self, total: int) -> float:
        """Top the ACLs up to `total` (CreateAcls as admin over SASL PLAIN); seconds taken, until all are visible."""
        started = time.perf_counter()
        wire = Wire(self.sasl)
        try:
            wire.login_plain("admin", "admin-secret")
            wire.create(dataset(total)[self.loaded :])
            # KRaft: the controller has committed them; wait until the broker's authorizer has them too.
            deadline = time.monotonic() + 120
            while wire.count() < total:
                if time.monotonic() > deadline:
                    raise SystemExit(f"Kafka did not show {total} ACLs within 120 s of loading them")
                time.sleep(0.2)
        finally:
            wire.close()
        self.loaded = total
        return time.perf_counter() - started

    def stop(self) -> None:
        self.kafka.stop()


# -- the load generator --------------------------------------------------------------------------
@dataclass
class Result:
    server: str
    request: str
    acls: int
    connections: int
    in_flight: int
    requests: int
    seconds: float
    per_second: float
    p50_ms: float
    p99_ms: float


def measure(server: str, address: str, acls: int, args: argparse.Namespace, creates: CreateRequests) -> list[Result]:
    """Every shape against one server holding `acls` ACLs; created ACLs are removed after each create shape."""
    results = []
    describe = describe_request()
    for kind, requests in (("describe", lambda n: describe * n), ("create", creates.take)):
        for connections in args.connections:
            done, elapsed, lat = drive(address, connections, args.in_flight, args.seconds, args.warmup, requests)
            results.append(Result(server, kind, acls, connections, args.in_flight, done, round(elapsed, 3), done / elapsed,
                                  percentile(lat, 0.50), percentile(lat, 0.99)))
            print(f"  {server:<13} {kind:<8} {acls:>7} ACLs {connections:>3} conn: {done / elapsed:>9.0f} req/s", flush=True)
            if server == "echo-floor":
                continue
            # A barrier: requests left queued by this shape (Kafka keeps one per connection after a client goes) are
            # answered before the next shape starts, so no shape pays for the previous one's backlog.
            wire = Wire(address)
            try:
                wire.describe_probe()
                if kind == "create":
                    wire.delete_created()
            finally:
                wire.close()
    return results


def check(server: str, address: str) -> None:
    """The server answers the probe with exactly the expected ACLs, and a CreateAcls with success."""
    wire = Wire(address)
    try:
        got = wire.describe_probe()
        if got != probe_answer():
            raise SystemExit(f"{server} answered the DescribeAcls probe with {got}, expected {probe_answer()}")
        wire.sock.sendall(CreateRequests().take(1))
        result = wire.receive(CREATE, VERSION).results[0]
        if result.error_code:
            raise SystemExit(f"{server} answered CreateAcls with {result.error_code} {result.error_message}")
        wire.delete_created()
    finally:
        wire.close()


def warm_up_kafka(address: str, args: argparse.Namespace, creates: CreateRequests) -> None:
    """The JIT compiles Kafka's request path during the first seconds; time it after that, not during."""
    for requests in (lambda n: describe_request() * n, creates.take):
        drive(address, 16, args.in_flight, args.kafka_warmup / 2, 0.0, requests)
    wire = Wire(address)
    try:
        wire.delete_created()
    finally:
        wire.close()


# -- the report ----------------------------------------------------------------------------------
def report(results: list[Result], args: argparse.Namespace, notes: list[str]) -> None:
    servers = [s for s in ("echo-floor", "kafka-shim", "apache-kafka") if any(r.server == s for r in results)]
    by_key = {(r.server, r.request, r.acls, r.connections): r for r in results}
    print()
    header = f"{'request':<9} {'ACLs':>7} {'conns':>5}"
    for s in servers:
        header += f" | {s + ' req/s':>18} {'p50 ms':>7} {'p99 ms':>7}"
    header += " | shim/echo" + (" | shim/kafka" if "apache-kafka" in servers else "")
    print(header)
    print("-" * len(header))
    for kind in ("describe", "create"):
        for acls in sorted({r.acls for r in results if r.server == "kafka-shim"}):
            for connections in args.connections:
                line = f"{kind:<9} {acls:>7} {connections:>5}"
                row = {s: by_key.get((s, kind, acls if s != "echo-floor" else 0, connections)) for s in servers}
                if "apache-kafka" in row and row["apache-kafka"] is None:  # Kafka held fewer ACLs (--kafka-max-acls)
                    kafka_sizes = sorted(r.acls for r in results if r.server == "apache-kafka" and r.request == kind)
                    fallback = max((a for a in kafka_sizes if a <= acls), default=None)
                    row["apache-kafka"] = by_key.get(("apache-kafka", kind, fallback, connections)) if fallback else None
                for s in servers:
                    r = row[s]
                    line += (f" | {r.per_second:>18.0f} {r.p50_ms:>7.2f} {r.p99_ms:>7.2f}" if r else f" | {'-':>18} {'':>7} {'':>7}")
                shim = row["kafka-shim"]
                line += f" | {shim.per_second / row['echo-floor'].per_second:>8.2f}x"
                if "apache-kafka" in servers:
                    kafka = row["apache-kafka"]
                    line += f" | {shim.per_second / kafka.per_second:>9.2f}x" if kafka else f" | {'-':>10}"
                print(line)
    if "apache-kafka" in servers:
        pairs = [(r, by_key.get(("apache-kafka", r.request, r.acls, r.connections))) for r in results if r.server == "kafka-shim"]
        behind = [f"{r.request} {r.acls} ACLs {r.connections} conn" for r, k in pairs if k and r.per_second < k.per_second]
        print()
        print("target (ahead of Apache Kafka): " + ("met in every shape measured" if not behind else "MISSED in " + "; ".join(behind)))
    for note in notes:
        print("note:", note)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="measured time per shape")
    parser.add_argument("--warmup", type=float, default=0.5, help="unmeasured time before each shape")
    parser.add_argument("--quick", action="store_true", help="0.5 s per shape, 10k ACLs only (a smoke run)")
    parser.add_argument("--sizes", default="10000,100000", help="stored ACL counts, comma-separated")
    parser.add_argument("--connections", default="1,16,64", help="concurrent connections, comma-separated")
    parser.add_argument("--in-flight", type=int, default=8, help="requests outstanding per connection")
    parser.add_argument("--kafka-max-acls", type=int, default=None, help="load Kafka with at most this many ACLs")
    parser.add_argument("--kafka-warmup", type=float, default=6.0, help="seconds of load before Kafka is measured")
    parser.add_argument("--without-kafka", action="store_true", help="leave out the real Apache Kafka broker")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--serve", nargs="+", help=argparse.SUPPRESS)  # internal: run one server in this process
    args = parser.parse_args()
    loop_name, run_loop = _event_loop_runner()
    if args.serve:
        signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
        run_loop(_serve_shim(int(args.serve[1])) if args.serve[0] == "shim" else _serve_echo())
        return 0
    if args.quick:
        args.seconds, args.warmup, args.sizes, args.kafka_warmup = 0.5, 0.2, "10000", 2.0
    sizes = sorted(int(s) for s in args.sizes.split(","))
    args.connections = [int(c) for c in args.connections.split(",")]
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores; event loop of kafka-shim and "
          f"the echo floor: {loop_name}; {args.seconds:g} s per shape after {args.warmup:g} s warm-up; {args.in_flight} in flight "
          f"per connection; DescribeAcls/CreateAcls v{VERSION}; load average at start {os.getloadavg()[0]:.2f} (other work on the "
          f"machine skews every figure)")
    notes: list[str] = []
    results: list[Result] = []
    creates = CreateRequests()

    proc, address, _ = start_child("echo")
    try:
        print(f"echo-floor on {address}")
        results += measure("echo-floor", address, 0, args, creates)
    finally:
        stop_child(proc)

    for size in sizes:
        proc, address, load = start_child("shim", str(size))
        try:
            print(f"kafka-shim on {address}: {size} ACLs preloaded into its authorizer, start-up {load:.2f} s")
            check("kafka-shim", address)
            results += measure("kafka-shim", address, size, args, creates)
        finally:
            stop_child(proc)

    if not args.without_kafka:
        kafka = KafkaPeer()
        try:
            print(f"apache-kafka on {kafka.plaintext} (JVM options: {os.environ.get('REAL_KAFKA_JVM_OPTS', STOCK_JVM_OPTS)})")
            for size in sizes:
                if args.kafka_max_acls is not None and size > args.kafka_max_acls:
                    if kafka.loaded >= args.kafka_max_acls:
                        continue
                    notes.append(f"Apache Kafka held {args.kafka_max_acls} ACLs, not {size} (--kafka-max-acls): its {size}-ACL rows "
                                 f"compare kafka-shim at {size} with Kafka at {args.kafka_max_acls}")
                    size = args.kafka_max_acls
                took = kafka.load_to(size)
                print(f"apache-kafka: loaded to {size} ACLs over the wire in {took:.1f} s")
                check("apache-kafka", kafka.plaintext)
                # After every load, not only the first: a large load also leaves the controller compacting its log.
                warm_up_kafka(kafka.plaintext, args, creates)
                results += measure("apache-kafka", kafka.plaintext, size, args, creates)
        finally:
            kafka.stop()

    report(results, args, notes)
    if args.json:
        args.json.write_text(json.dumps({"results": [asdict(r) for r in results], "notes": notes}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
