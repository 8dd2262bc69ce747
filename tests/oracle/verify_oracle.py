"""End-to-end check of the real-Kafka oracle (scripts/real-kafka) with confluent-kafka.

    .venv/bin/python tests/oracle/verify_oracle.py [--dir DIR] [--keep]

Starts the oracle in DIR (default: a fresh temporary directory), then:
  * admin over SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512: describe_cluster, create_acls,
    describe_acls (sees the ACL), delete_acls;
  * anonymous on PLAINTEXT: DescribeAcls fails with CLUSTER_AUTHORIZATION_FAILED (raw wire; librdkafka
    swallows that error code and returns []), create_acls fails with it too;
  * alice with a wrong password (PLAIN and SCRAM-SHA-256): authentication fails;
  * alice with her password: authenticated but not authorized (CLUSTER_AUTHORIZATION_FAILED);
  * the Java AdminProbe and kafka.admin.AclCommand through `scripts/real-kafka run`;
then stops the oracle and checks that its JVM is gone. Prints one line per check and exits non-zero on the
first failure (the broker is stopped either way unless --keep).
Not collected by pytest (no test_ prefix): it needs a JDK and Maven; the project's tests will grow their own.
"""

import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL_KAFKA = os.path.join(ROOT, "scripts", "real-kafka")
TIMEOUT = 15


def check(name, cond, detail=""):
    print("{} {}{}".format("ok  " if cond else "FAIL", name, (": " + detail) if detail else ""), flush=True)
    if not cond:
        raise SystemExit(1)


def admin(bootstrap, user=None, password=None, mechanism="PLAIN", errors=None):
    conf = {"bootstrap.servers": bootstrap, "socket.timeout.ms": TIMEOUT * 1000}
    if user is not None:
        conf.update(
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}
        )
    if errors is not None:
        conf["error_cb"] = errors.append
    return AdminClient(conf)


def acl(principal, topic="oracle-topic"):
    return AclBinding(
        ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, principal, "*", AclOperation.READ, AclPermissionType.ALLOW
    )


def error_code(exc):
    err = exc.args[0] if exc.args else None
    return err.code() if isinstance(err, KafkaError) else None


def raw_describe_acls(bootstrap, user=None, password=None):
    """DescribeAcls v1 (match everything) on a raw socket, after SASL/PLAIN v0-style handshake+authenticate
    when a user is given. Returns (error_code, error_message)."""
    host, port = bootstrap.rsplit(":", 1)
    corr = [0]

    def string(s):
        return b"\xff\xff" if s is None else struct.pack(">h", len(s)) + s.encode()

    def exchange(sock, api_key, version, body):
        corr[0] += 1
        req = struct.pack(">hhi", api_key, version, corr[0]) + string("oracle-verify") + body
        sock.sendall(struct.pack(">i", len(req)) + req)
        (size,) = struct.unpack(">i", recv_exactly(sock, 4))
        data = recv_exactly(sock, size)
        assert struct.unpack(">i", data[:4])[0] == corr[0]
        return data[4:]

    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        if user is not None:
            resp = exchange(sock, 17, 1, string("PLAIN"))  # SaslHandshake v1
            assert struct.unpack(">h", resp[:2])[0] == 0, resp
            token = b"\0" + user.encode() + b"\0" + password.encode()
            resp = exchange(sock, 36, 0, struct.pack(">i", len(token)) + token)  # SaslAuthenticate v0
            assert struct.unpack(">h", resp[:2])[0] == 0, resp
        # resource_type ANY(1), name null, pattern ANY(1), principal null, host null, operation ANY(1), perm ANY(1)
        body = struct.pack(">b", 1) + string(None) + struct.pack(">b", 1) + string(None) + string(None) + struct.pack(">bb", 1, 1)
        resp = exchange(sock, 29, 1, body)
        (code,) = struct.unpack(">h", resp[4:6])
        (mlen,) = struct.unpack(">h", resp[6:8])
        return code, (resp[8 : 8 + mlen].decode() if mlen >= 0 else None)


def recv_exactly(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    return buf


def process_gone(pid):
    """No such process, or only a zombie waiting for its (re)parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir")
    ap.add_argument("--keep", action="store_true", help="leave the broker running")
    args = ap.parse_args()
    d = args.dir or tempfile.mkdtemp(prefix="real-kafka-")

    t0 = time.monotonic()
    r = subprocess.run([REAL_KAFKA, "start", "--dir", d], stdout=subprocess.PIPE, text=True)
    check("start", r.returncode == 0, f"exit {r.returncode}")
    lines = r.stdout.splitlines()
    check(
        "start printed exactly two listeners",
        len(lines) == 2 and lines[0].startswith("PLAINTEXT://") and lines[1].startswith("SASL_PLAINTEXT://"),
        repr(lines),
    )
    print("     started in {:.1f}s: {}".format(time.monotonic() - t0, " ".join(lines)))
    with open(os.path.join(d, "oracle.json")) as f:
        state = json.load(f)
    plain_bs = lines[0].split("://", 1)[1]
    sasl_bs = lines[1].split("://", 1)[1]
    pid = state["pid"]
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(ln for ln in f if ln.startswith("VmRSS")).split(":")[1].strip()
        print(f"     broker pid {pid}, RSS {rss}")

        for mech in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            a = admin(sasl_bs, "admin", "admin-secret", mech)
            cluster = a.describe_cluster(request_timeout=TIMEOUT).result(timeout=TIMEOUT)
            check(
                f"admin/{mech} describe_cluster",
                cluster.cluster_id == state["cluster_id"] and [n.id for n in cluster.nodes] == [1] and cluster.controller.id == 1,
                f"cluster {cluster.cluster_id} nodes {[n.id for n in cluster.nodes]} controller {cluster.controller.id}",
            )
            binding = acl("User:alice", "oracle-" + mech.lower())
            for fut in a.create_acls([binding], request_timeout=TIMEOUT).values():
                fut.result(timeout=TIMEOUT)
            flt = AclBindingFilter(
                ResourceType.TOPIC,
                "oracle-" + mech.lower(),
                ResourcePatternType.ANY,
                None,
                None,
                AclOperation.ANY,
                AclPermissionType.ANY,
            )
            found = []
            for _ in range(50):  # ACLs propagate through the metadata log: usually at once
                found = a.describe_acls(flt, request_timeout=TIMEOUT).result(timeout=TIMEOUT)
                if found:
                    break
                time.sleep(0.1)
            check(f"admin/{mech} create_acls + describe_acls", found == [binding], repr(found))

        # anonymous on PLAINTEXT: no rights at all. On the wire Kafka answers DescribeAcls with error 31
        # (CLUSTER_AUTHORIZATION_FAILED); librdkafka (2.16) drops DescribeAcls' top-level error code, so
        # confluent-kafka's describe_acls() reports an empty list instead: check the wire, CreateAcls (whose
        # per-binding errors librdkafka does pass on) and that describe_acls() at least leaks nothing.
        flt_all = AclBindingFilter(
            ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
        )
        code, message = raw_describe_acls(plain_bs)
        check("anonymous DescribeAcls on the wire: CLUSTER_AUTHORIZATION_FAILED", code == 31, f"error_code {code}, {message!r}")
        a = admin(plain_bs)
        found = a.describe_acls(flt_all, request_timeout=TIMEOUT).result(timeout=TIMEOUT)
        check("anonymous describe_acls() via librdkafka: empty (error code dropped by librdkafka)", found == [], repr(found))
        try:
            for fut in a.create_acls([acl("User:ANONYMOUS")], request_timeout=TIMEOUT).values():
                fut.result(timeout=TIMEOUT)
            check("anonymous create_acls denied", False, "it succeeded")
        except KafkaException as e:
            check("anonymous create_acls denied", error_code(e) == KafkaError.CLUSTER_AUTHORIZATION_FAILED, str(e.args[0]))

        # alice, right password: authenticated, not authorized
        code, message = raw_describe_acls(sasl_bs, "alice", "alice-secret")
        check("alice/PLAIN DescribeAcls on the wire: CLUSTER_AUTHORIZATION_FAILED", code == 31, f"error_code {code}")
        a = admin(sasl_bs, "alice", "alice-secret", "SCRAM-SHA-512")
        try:
            for fut in a.create_acls([acl("User:alice")], request_timeout=TIMEOUT).values():
                fut.result(timeout=TIMEOUT)
            check("alice/SCRAM-SHA-512 create_acls denied", False, "it succeeded")
        except KafkaException as e:
            check(
                "alice/SCRAM-SHA-512 create_acls denied", error_code(e) == KafkaError.CLUSTER_AUTHORIZATION_FAILED, str(e.args[0])
            )

        # alice, wrong password: authentication fails
        for mech in ("PLAIN", "SCRAM-SHA-256"):
            errors = []
            a = admin(sasl_bs, "alice", "not-her-password", mech, errors)
            try:
                a.describe_cluster(request_timeout=5).result(timeout=10)
                failed_with = None
            except KafkaException as e:
                failed_with = e.args[0]
            a.poll(0.5)
            auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
            check(
                f"alice/{mech} wrong password: authentication failure",
                bool(auth),
                str(auth[0]) if auth else f"errors {errors}, request error {failed_with}",
            )

        # the Java side: AdminProbe and AclCommand with the resolved classpath
        r = subprocess.run(
            [
                REAL_KAFKA,
                "run",
                "kafkashim.oracle.AdminProbe",
                "--bootstrap",
                sasl_bs,
                "--user",
                "admin",
                "--password",
                "admin-secret",
                "--mechanism",
                "SCRAM-SHA-256",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        probe = json.loads(r.stdout)
        check(
            "AdminProbe admin/SCRAM-SHA-256",
            r.returncode == 0 and probe["cluster_id"] == state["cluster_id"] and probe["controller"]["id"] == 1,
            r.stdout.strip(),
        )
        r = subprocess.run(
            [REAL_KAFKA, "run", "kafkashim.oracle.AdminProbe", "--bootstrap", plain_bs, "--include-authorized-operations"],
            stdout=subprocess.PIPE,
            text=True,
        )
        probe = json.loads(r.stdout)
        check("AdminProbe anonymous", r.returncode == 0 and probe["authorized_operations"] == [], r.stdout.strip())
        r = subprocess.run(
            [
                REAL_KAFKA,
                "run",
                "kafka.admin.AclCommand",
                "--bootstrap-server",
                sasl_bs,
                "--command-config",
                state["files"]["admin_properties"],
                "--list",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        check(
            "AclCommand --list",
            r.returncode == 0 and "User:alice" in r.stdout and "oracle-plain" in r.stdout,
            f"{len(r.stdout.splitlines())} lines",
        )
        r = subprocess.run(
            [REAL_KAFKA, "run", "kafka.admin.AclCommand", "--bootstrap-server", plain_bs, "--list"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        check(
            "AclCommand --list as anonymous: ClusterAuthorizationException",
            "ClusterAuthorizationException" in r.stdout,
            r.stdout.strip().splitlines()[-1] if r.stdout else "",
        )
    finally:
        if not args.keep:
            r = subprocess.run([REAL_KAFKA, "stop", "--dir", d])
    if not args.keep:
        check("stop", r.returncode == 0)
        check("the JVM is gone", process_gone(pid))
        java = subprocess.run(["pgrep", "-f", "kafka.Kafka " + d], stdout=subprocess.PIPE, text=True).stdout.split()
        check("no java process left for this DIR", not [p for p in java if not process_gone(int(p))], repr(java))
        r = subprocess.run([REAL_KAFKA, "stop", "--dir", d])
        check("stop again is a no-op", r.returncode == 0)
        if not args.dir:
            shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
