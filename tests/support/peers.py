"""The real Kafka peer of the differential tests: starting and stopping it, and what both brokers are compared on.

A plain module (not the conftest), so that tests import it by a name no other test folder uses.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REAL_KAFKA = ROOT / "scripts" / "real-kafka"
# Differences that are reported rather than asserted (e.g. API version ranges), printed at the end.
REPORTED: list[str] = []


@dataclass(frozen=True)
class RealKafka:
    dir: Path
    plaintext: tuple[str, int]
    sasl: tuple[str, int]
    info: dict


def _address(url: str) -> tuple[str, int]:
    host, port = url.split("://", 1)[1].rsplit(":", 1)
    return host, int(port)


def start_real_kafka(directory: Path, *overrides: str) -> RealKafka:
    args = [sys.executable, str(REAL_KAFKA), "start", "--dir", str(directory)]
    for override in overrides:
        args += ["--override", override]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        pytest.fail(f"real Kafka did not start ({' '.join(args)}):\n{proc.stderr[-6000:]}", pytrace=False)
    urls = {line.split("://", 1)[0]: line for line in proc.stdout.split()}
    info = json.loads((directory / "oracle.json").read_text())
    return RealKafka(directory, _address(urls["PLAINTEXT"]), _address(urls["SASL_PLAINTEXT"]), info)


def stop_real_kafka(kafka: RealKafka) -> None:
    subprocess.run([sys.executable, str(REAL_KAFKA), "stop", "--dir", str(kafka.dir)], capture_output=True, timeout=120)


