"""Apache Kafka 3.9 as a peer in the benchmarks: started and stopped through scripts/real-kafka.

Every bench that compares with the real broker goes through here, so they agree on how it is started: KRaft, one
node, on loopback, with the overrides and JVM options the bench asks for.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "real-kafka"

# Kafka's own start-up defaults (kafka-server-start.sh, kafka-run-class.sh), not scripts/real-kafka's small test heap.
STOCK_JVM_OPTS = ("-Xms1g -Xmx1g -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 "
                  "-XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true")


@dataclass
class RealKafka:
    directory: Path
    plaintext: str  # host:port
    sasl: str  # host:port

    def stop(self) -> None:
        subprocess.run([sys.executable, str(SCRIPT), "stop", "--dir", str(self.directory)], capture_output=True)
        shutil.rmtree(self.directory, ignore_errors=True)


def start_real_kafka(*overrides: str, jvm_opts: str | None = None, skip_flag: str = "--without-kafka") -> RealKafka:
    """Start a fresh broker (the first run resolves its jars into ~/.m2); SystemExit says how to leave it out."""
    directory = Path(tempfile.mkdtemp(prefix="bench-kafka-"))
    env = dict(os.environ)
    if jvm_opts is not None:
        env["REAL_KAFKA_JVM_OPTS"] = os.environ.get("REAL_KAFKA_JVM_OPTS", jvm_opts)
    args = [sys.executable, str(SCRIPT), "start", "--dir", str(directory)]
    for override in overrides:
        args += ["--override", override]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=900, env=env)
    if proc.returncode != 0:
        shutil.rmtree(directory, ignore_errors=True)
        raise SystemExit(f"real Kafka did not start (use {skip_flag} to leave it out):\n{proc.stderr[-3000:]}")
    urls = dict(line.split("://", 1) for line in proc.stdout.split() if "://" in line)
    return RealKafka(directory, urls["PLAINTEXT"], urls["SASL_PLAINTEXT"])
