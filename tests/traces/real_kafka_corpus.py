"""The real-Kafka trace corpus: one workload of real clients against Apache Kafka 3.9, seen three ways.

    .venv/bin/python tests/traces/real_kafka_corpus.py OUT_DIR

starts a real Kafka 3.9 with ``scripts/real-kafka start --log-level kafka.request.logger=DEBUG
--log-level kafka.authorizer.logger=DEBUG`` (SASL_PLAINTEXT with PLAIN and SCRAM users
admin/alice/bob, StandardAuthorizer, admin a super user), records its SASL listener with ``tcpdump -i lo -w``
(root; ``scripts/ensure-tcpdump`` installs it), runs the workload below with confluent-kafka and kafka-python,
stops tcpdump with SIGINT (it flushes and exits) and stops Kafka. OUT_DIR then holds:

    traffic.pcap            the SASL listener's packets (tcpdump -i lo: Ethernet link type)
    traffic-any.pcap        the same from tcpdump -i any (Linux cooked capture, SLL2 with libpcap >= 1.10)
    kafka-request.log       kafka.request.logger at DEBUG: every completed request
    kafka-authorizer.log    kafka.authorizer.logger at DEBUG: denials and the grants Kafka logs (logIfAllowed)
    acls.yaml               the ACL set the workload ran under (kafka-shim's --acls format)
    corpus.json             the port, the users and what the workload did (for the tests' expectations)

The workload: admin creates topics ``orders`` (3 partitions) and ``secret`` and the ACLs; alice produces to
``orders`` with an idempotent confluent-kafka producer (PLAIN) and with acks=0 from kafka-python (SCRAM-SHA-256),
consumes them in group ``alice-group`` with kafka-python (SCRAM-SHA-512) and commits, and describes topics and the
cluster with authorized operations; bob (PLAIN) is denied describing ``secret`` and the group ``bob-group``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REAL_KAFKA = ROOT / "scripts" / "real-kafka"
# At DEBUG the request logger writes every completed request, the authorizer logger the grants Kafka logs
# (logIfAllowed) besides the denials (INFO).
DEBUG_LOGGERS = ("kafka.request.logger", "kafka.authorizer.logger")
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
TOPICS = {"orders": 3, "secret": 1}
IDEMPOTENT_MESSAGES = 20
ACKS0_MESSAGES = 5

ACLS_YAML = """\
# The ACL set of the real-Kafka trace corpus (tests/traces/real_kafka_corpus.py). User:admin is a super user.
acls:
  - resource_type: topic
    resource_name: orders
    principal: User:alice
    operations: [Write, Read, Describe]
  - resource_type: group
    resource_name: alice-group
    principal: User:alice
    operation: Read
  - resource_type: topic
    resource_name: orders
    principal: User:bob
    operation: Describe
  - resource_type: topic
    resource_name: secret
    principal: User:bob
    operation: Read
    permission: deny
"""


class CorpusUnavailable(RuntimeError):
    """The corpus cannot be made on this machine (no Java, no tcpdump, not root); the message says why."""


@dataclass(frozen=True)
class Corpus:
    dir: Path
    pcap: Path
    pcap_any: Path
    request_log: Path
    authorizer_log: Path
    acls: Path
    info: dict


def load(directory: Path) -> Corpus:
    d = Path(directory)
    return Corpus(d, d / "traffic.pcap", d / "traffic-any.pcap", d / "kafka-request.log", d / "kafka-authorizer.log", d / "acls.yaml",
                  json.loads((d / "corpus.json").read_text()))


def check_tools() -> None:
    if os.geteuid() != 0:
        raise CorpusUnavailable("tcpdump on the loopback interface needs root")
    if subprocess.run([str(ROOT / "scripts" / "ensure-java")], capture_output=True).returncode != 0:
        raise CorpusUnavailable("Java could not be installed (scripts/ensure-java failed)")
    if subprocess.run([str(ROOT / "scripts" / "ensure-tcpdump")], capture_output=True).returncode != 0 or not shutil.which("tcpdump"):
        raise CorpusUnavailable("tcpdump could not be installed (scripts/ensure-tcpdump failed)")


def build(out: Path, attempts: int = 3) -> Corpus:
    """Run the workload against a fresh Kafka 3.9 and leave the corpus in ``out``.

    A loopback capture that tcpdump reports packets dropped from (a busy machine) is no reference: the workload is
    run again on a fresh broker, up to ``attempts`` times."""
    check_tools()
    out = Path(out)
    for attempt in range(1, attempts + 1):
        dropped = _build_once(out)
        if not dropped:
            return load(out)
        print(f"real_kafka_corpus: tcpdump -i lo dropped {dropped} packet(s) (attempt {attempt} of {attempts})",
              file=sys.stderr)
    raise RuntimeError(f"tcpdump -i lo dropped packets in each of {attempts} runs: the machine is too busy for a "
                       "complete capture; run again when it is quieter")


def _build_once(out: Path) -> int:
    """One run into ``out``; the packets tcpdump -i lo reported dropped."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    kafka_dir = out / "kafka"
    start = subprocess.run([sys.executable, str(REAL_KAFKA), "start", "--dir", str(kafka_dir),
                            *(f"--log-level={logger}=DEBUG" for logger in DEBUG_LOGGERS)],
                           capture_output=True, text=True, timeout=900)
    if start.returncode != 0:
        raise RuntimeError(f"real Kafka did not start:\n{start.stderr[-4000:]}")
    try:
        port = json.loads((kafka_dir / "oracle.json").read_text())["ports"]["SASL_PLAINTEXT"]
        pcap, pcap_any = out / "traffic.pcap", out / "traffic-any.pcap"
        tcpdumps = [_start_tcpdump(pcap, port, "lo")]
        try:
            tcpdumps.append(_start_tcpdump(pcap_any, port, "any"))
            info = _workload(f"127.0.0.1:{port}")
            _wait_until_captured([pcap, pcap_any], port)
        finally:
            dropped = [_stop_tcpdump(tcpdump) for tcpdump in tcpdumps]
    finally:
        subprocess.run([sys.executable, str(REAL_KAFKA), "stop", "--dir", str(kafka_dir)], capture_output=True, timeout=120)
    for name in ("kafka-request.log", "kafka-authorizer.log"):
        shutil.copyfile(kafka_dir / "logs" / name, out / name)
    (out / "acls.yaml").write_text(ACLS_YAML)
    info["port"] = port
    info["tcpdump_dropped"] = dict(zip(("lo", "any"), dropped, strict=False))
    (out / "corpus.json").write_text(json.dumps(info, indent=2, sort_keys=True))
    return dropped[0]


def _start_tcpdump(path: Path, port: int, interface: str) -> subprocess.Popen:
    # --immediate-mode: each packet is handed to tcpdump as it comes (not in blocks the kernel releases later) and
    # -U writes it out at once, so the file can be watched for the last packet; -B: 16 MiB of kernel buffer, so a
    # busy machine does not make the kernel drop packets tcpdump has not read yet
    proc = subprocess.Popen(["tcpdump", "-i", interface, "--immediate-mode", "-U", "-n", "-s", "0", "-B", "16384", "-w", str(path),
                             "tcp", "port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # tcpdump says "listening on IFACE" once the capture is open (after notes such as "data link type
    # LINUX_SLL2"); nothing sent before that would be recorded
    assert proc.stderr is not None
    said = []
    for line in proc.stderr:
        said.append(line)
        if "listening on" in line:
            break
    else:
        proc.wait()
        raise RuntimeError(f"tcpdump -i {interface} did not start: {''.join(said)}")
    return proc


def _wait_until_captured(pcaps: list[Path], port: int) -> None:
    """Open and close one more connection after the workload and wait until its FIN is in the files: every packet
    before it is then written too."""
    from kafka_shim.traces.importers.pcap_packets import FIN, read_segments
    from kafka_shim.traces.importers.report import ImportReport

    with socket.create_connection(("127.0.0.1", port), timeout=30) as sentinel:
        marker = sentinel.getsockname()[1]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if all(any(s.sport == marker and s.flags & FIN for s in read_segments(p, ImportReport("pcap"))) for p in pcaps):
            return
        time.sleep(0.1)
    raise RuntimeError(f"tcpdump did not write the closing of connection :{marker} within 60 s")


def _stop_tcpdump(proc: subprocess.Popen) -> int:
    """Stop tcpdump (SIGINT: it flushes its file and exits); the packets it says the kernel dropped."""
    proc.send_signal(signal.SIGINT)
    try:
        _, said = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise RuntimeError("tcpdump did not stop within 60 s of SIGINT") from None
    match = re.search(r"(\d+) packets? dropped by kernel", said or "")
    return int(match.group(1)) if match else 0


def _confluent(user: str, bootstrap: str, **extra: object) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": PASSWORDS[user], "client.id": f"corpus-{user}", **extra}


def _kafka_python(user: str, bootstrap: str, mechanism: str) -> dict:
    return {"bootstrap_servers": bootstrap, "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism,
            "sasl_plain_username": user, "sasl_plain_password": PASSWORDS[user]}


def _workload(bootstrap: str) -> dict:
    from confluent_kafka import Producer
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        NewTopic,
        ResourcePatternType,
        ResourceType,
    )
    from kafka import KafkaConsumer, KafkaProducer

    admin = AdminClient(_confluent("admin", bootstrap))
    for future in admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()]).values():
        future.result(60)
    bindings = [
        *(AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*", op, AclPermissionType.ALLOW)
          for op in (AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE)),
        AclBinding(ResourceType.GROUP, "alice-group", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                   AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:bob", "*", AclOperation.DESCRIBE,
                   AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, "User:bob", "*", AclOperation.READ,
                   AclPermissionType.DENY),
    ]
    for future in admin.create_acls(bindings).values():
        future.result(60)
    _wait_for_acls(admin, len(bindings))

    producer = Producer(_confluent("alice", bootstrap, **{"enable.idempotence": True, "acks": "all"}))
    delivered: list[object] = []
    for i in range(IDEMPOTENT_MESSAGES):
        producer.produce("orders", key=f"k{i}".encode(), value=f"idempotent {i}".encode(), partition=i % 3,
                         on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(60)
    if len(delivered) != IDEMPOTENT_MESSAGES or any(delivered):
        raise RuntimeError(f"the idempotent producer's deliveries: {delivered}")
    del producer

    fire = KafkaProducer(acks=0, client_id="corpus-alice-acks0", **_kafka_python("alice", bootstrap, "SCRAM-SHA-256"))
    for i in range(ACKS0_MESSAGES):
        fire.send("orders", value=f"acks0 {i}".encode(), partition=0)
    fire.flush(60)
    fire.close(timeout=30)

    consumer = KafkaConsumer("orders", group_id="alice-group", client_id="corpus-alice-consumer",
                             auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=1000,
                             **_kafka_python("alice", bootstrap, "SCRAM-SHA-512"))
    seen = 0
    deadline = time.monotonic() + 120
    while seen < IDEMPOTENT_MESSAGES + ACKS0_MESSAGES and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            seen += len(records)
    consumer.commit()
    consumer.close()
    if seen != IDEMPOTENT_MESSAGES + ACKS0_MESSAGES:
        raise RuntimeError(f"alice's consumer read {seen} records of {IDEMPOTENT_MESSAGES + ACKS0_MESSAGES}")

    from confluent_kafka import TopicCollection

    alice = AdminClient(_confluent("alice", bootstrap))
    described = alice.describe_topics(TopicCollection(["orders"]), include_authorized_operations=True)["orders"].result(60)
    alice.describe_cluster(include_authorized_operations=True).result(60)

    bob = AdminClient(_confluent("bob", bootstrap))
    denied = {}
    try:
        bob.describe_topics(TopicCollection(["secret"]))["secret"].result(60)
    except Exception as exc:  # the denial is what the workload is for
        denied["secret"] = str(exc)
    try:
        group = bob.describe_consumer_groups(["bob-group"])["bob-group"].result(60)
        denied["bob-group"] = str(getattr(group, "state", group))
    except Exception as exc:
        denied["bob-group"] = str(exc)
    return {"topics": TOPICS, "idempotent_messages": IDEMPOTENT_MESSAGES, "acks0_messages": ACKS0_MESSAGES,
            "consumed": seen, "alice_orders_operations": sorted(str(op) for op in described.authorized_operations or ()),
            "bob_denied": denied}


def _wait_for_acls(admin: object, expected: int) -> None:
    """CreateAcls answers before the ACLs reach the authorizer's metadata image; wait until DescribeAcls lists them."""
    from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    wanted = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                              AclPermissionType.ANY)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if len(admin.describe_acls(wanted).result(60)) >= expected:  # type: ignore[attr-defined]
            return
        time.sleep(0.2)
    raise RuntimeError("the ACLs did not appear in DescribeAcls within 60 s")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    corpus = build(Path(sys.argv[1]))
    print(json.dumps(corpus.info, indent=2))
