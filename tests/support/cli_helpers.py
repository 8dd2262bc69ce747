"""Running ``kafka-shim acls`` in-process and writing Kafka client configs for it."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from kafka_shim.shim.tools import acls as acls_cli

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_acls(*args: str, stdin: str = "") -> Result:
    out, err = io.StringIO(), io.StringIO()
    code = acls_cli.main(list(args), acls_cli.Streams(out, err, io.StringIO(stdin)))
    return Result(code, out.getvalue(), err.getvalue())


def client_config(directory: Path, user: str, password: str, mechanism: str = "PLAIN",
                  protocol: str = "SASL_PLAINTEXT") -> Path:
    module = PLAIN_MODULE if mechanism == "PLAIN" else SCRAM_MODULE
    path = directory / f"{user}-{mechanism}.properties"
    path.write_text(f"security.protocol={protocol}\nsasl.mechanism={mechanism}\n"
                    f'sasl.jaas.config={module} required username="{user}" password="{password}";\n')
    return path


def blocks(listing: str) -> dict[str, set[str]]:
    """kafka-acls.sh's listing as {resource line: its ACL lines}, for comparisons where the order is the broker's."""
    out: dict[str, set[str]] = {}
    for block in listing.split(" \n\n"):
        if block.strip():
            head, _, body = block.partition(": \n ")
            out[head] = {line.strip() for line in body.split("\n")}
    return out
