"""An application that embeds kafka-shim, run in a fresh interpreter by test_library_logging.py.

``python library_logging_app.py MODE REPORT``: MODE says how the application sets up logging before it uses kafka-shim:
``none`` (not at all), ``stdlib`` (logging.basicConfig, kafka-shim's loggers at DEBUG) or ``structlog`` (the
application's own structlog processors, JSON on stderr, tagged ``app=demo``). Then it runs an EmbeddedBroker with the
authorizer on, asks it for two topics' metadata with kafka-python (one it may describe, one it may not), sends a
frame too large for the broker (a WARNING), and asks a stand-alone Authorizer twice (allowed, denied). What it
finds it writes to the file REPORT, so stdout and stderr hold only what kafka-shim (or a library) printed.
"""

from __future__ import annotations

import logging
import socket
import struct
import sys
from typing import TextIO


def configure(mode: str) -> None:
    if mode == "stdlib":
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
        logging.getLogger("kafka_shim").setLevel(logging.DEBUG)
        logging.getLogger("kafka.authorizer.logger").setLevel(logging.DEBUG)
    elif mode == "structlog":
        import structlog

        def tag(_logger: object, _method: str, event: dict) -> dict:
            event["app"] = "demo"
            return event

        structlog.configure(
            processors=[structlog.processors.add_log_level, tag, structlog.processors.JSONRenderer()],
            wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
            logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        )
    elif mode != "none":
        raise SystemExit(f"unknown mode {mode!r}: none, stdlib or structlog")


def main(mode: str, report_path: str) -> None:
    configure(mode)
    with open(report_path, "w", encoding="utf-8") as report:
        run_scenario(report)


def run_scenario(report: TextIO) -> None:

    from kafka.admin import KafkaAdminClient

    from kafka_shim.authorizer import AccessControlEntry, AclBinding, Authorizer, ResourcePattern
    from kafka_shim.authorizer.model import AclOperation, AclPermissionType, PatternType, ResourceType
    from kafka_shim.shim.config.broker_config import BrokerConfig
    from kafka_shim.shim.testing.embedded import EmbeddedBroker

    def describe_on(topic: str, principal: str = "User:ANONYMOUS") -> AclBinding:
        return AclBinding(ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                          AccessControlEntry(principal, "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW))

    config = BrokerConfig.from_properties({
        "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    })
    with EmbeddedBroker(config) as running:
        running.call(running.broker.authorizer.create_acls, [describe_on("open")])
        admin = KafkaAdminClient(bootstrap_servers=running.bootstrap_servers, request_timeout_ms=30000)
        try:
            topics = admin.describe_topics(["open", "closed"])
        finally:
            admin.close()
        print("described", sorted((t["name"], t["error_code"]) for t in topics), file=report)
        host, port = running.bootstrap_servers.split(":")
        with socket.create_connection((host, int(port)), timeout=30) as raw:
            raw.sendall(struct.pack(">i", 0x7FFFFFFF))  # a size prefix far over socket.request.max.bytes
            print("oversized frame closed", raw.recv(1) == b"", file=report)

    az = Authorizer()
    az.create_acls([describe_on("open", "User:alice")])
    allowed = az.authorize("User:alice", "10.0.0.1", AclOperation.DESCRIBE, ResourceType.TOPIC, "open", request="Metadata")
    denied = az.authorize("User:alice", "10.0.0.1", AclOperation.DESCRIBE, ResourceType.TOPIC, "closed", request="Metadata")
    print("authorizer", allowed, denied, file=report)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
