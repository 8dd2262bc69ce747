"""Apache Kafka's 4.x Java clients as a test peer: tests/java4 (its own Maven project, pom.xml pinned to one
kafka-clients 4.x release) built with Maven and run as ``kafkashim.java4.Java4Probe``.

``classpath()`` runs ``mvn compile dependency:build-classpath`` the first time (jars go to ~/.m2 as for tests/oracle,
which scripts/real-kafka resolves the same way; Maven and a JDK come from scripts/ensure-java, which scripts/test
runs) and caches the classpath in tests/java4/target/ with a digest of the pom and the sources, so later runs start
the JVM at once. ``run_probe()`` runs the scenarios against one broker and returns each scenario's result.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1] / "java4"
POM = PROJECT / "pom.xml"
TARGET = PROJECT / "target"
MAIN_CLASS = "kafkashim.java4.Java4Probe"
# Bounds, not expected times: the first Maven run downloads kafka-clients and the Maven plugins (~1 min when
# ~/.m2 is warm from tests/oracle); a probe run takes about a minute on an idle 2-core machine.
MAVEN_TIMEOUT_S = 900
PROBE_TIMEOUT_S = 600


def clients_version() -> str:
    """The kafka-clients release the pom pins (``<kafka.clients.version>``)."""
    found = re.search(r"<kafka\.clients\.version>([^<]+)</kafka\.clients\.version>", POM.read_text())
    assert found, f"no <kafka.clients.version> in {POM}"
    return found.group(1).strip()


def _digest() -> str:
    h = hashlib.sha256()
    for path in [POM, *sorted((PROJECT / "src").rglob("*"))]:
        if path.is_file():
            h.update(str(path.relative_to(PROJECT)).encode())
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _cached(cp_file: Path, stamp: Path, digest: str) -> list[str] | None:
    try:
        if stamp.read_text().strip() != digest:
            return None
        entries = [e for e in cp_file.read_text().strip().split(os.pathsep) if e]
    except OSError:
        return None
    classes = TARGET / "classes" / (MAIN_CLASS.replace(".", "/") + ".class")
    if not entries or not classes.exists() or not all(os.path.exists(e) for e in entries):
        return None  # e.g. ~/.m2 or target/ was wiped
    return [str(TARGET / "classes"), *entries]


def classpath() -> list[str]:
    """The probe's classpath (target/classes first), building with Maven only when the pom or sources changed."""
    TARGET.mkdir(exist_ok=True)
    cp_file, stamp = TARGET / "classpath.txt", TARGET / "classpath.txt.stamp"
    digest = _digest()
    cp = _cached(cp_file, stamp, digest)
    if cp:
        return cp
    with open(TARGET / ".resolve.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # pytest-xdist workers resolve once
        cp = _cached(cp_file, stamp, digest)
        if cp:
            return cp
        mvn = os.environ.get("MVN") or shutil.which("mvn")
        assert mvn, "mvn not found: scripts/ensure-java installs Maven and a JDK"
        log = TARGET / "mvn.log"
        cmd = [mvn, "-B", "-Dstyle.color=never", "-f", str(POM), "compile",
               # fully qualified (version from the pom's pluginManagement): no plugin-prefix metadata look-ups
               "org.apache.maven.plugins:maven-dependency-plugin:build-classpath", f"-Dmdep.outputFile={cp_file}"]
        with open(log, "wb") as out:
            rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=PROJECT,
                                timeout=MAVEN_TIMEOUT_S).returncode
        if rc != 0:
            errors = [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith("[ERROR]")]
            raise AssertionError(f"Maven failed (exit {rc}) building {POM}:\n" + "\n".join(errors[:20]) + f"\n(log: {log})")
        stamp.write_text(digest + "\n")
        cp = _cached(cp_file, stamp, digest)
        assert cp, f"Maven succeeded but {cp_file} is missing or names missing jars (log: {log})"
        return cp


def run_probe(plaintext: str, sasl: str, prefix: str, scenarios: list[str] | None = None) -> dict[str, dict]:
    """Run Java4Probe against a broker configured like scripts/real-kafka's Kafka; {scenario: result}."""
    java = os.environ.get("JAVA") or shutil.which("java")
    assert java, "java not found: scripts/ensure-java installs a JDK"
    cmd = [java, "-Xss1m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
           "-cp", os.pathsep.join(classpath()), MAIN_CLASS, "--plaintext", plaintext, "--sasl", sasl, "--prefix", prefix]
    if scenarios:
        cmd += ["--scenarios", ",".join(scenarios)]
    done = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_S)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines and lines[-1] == {"done": True}, (
        f"Java4Probe exited {done.returncode}\nstdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}")
    return {line["scenario"]: line["result"] for line in lines[:-1]}
