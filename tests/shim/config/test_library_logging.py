"""Used as a library, kafka-shim prints nothing until the application configures logging; then its events go where the
application's logging sends them (kafka_shim.authorizer.library_logging, re-exported by shim/config/logging.py).

The end-to-end tests run library_logging_app.py in a fresh interpreter (structlog and logging as a new process finds
them): an EmbeddedBroker with the authorizer on, a kafka-python Metadata request for a topic it may describe and one
it may not, an oversized frame (a WARNING), and a stand-alone Authorizer's allowed and denied decisions.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from kafka_shim.shim.config.logging import get_logger

APP = Path(__file__).with_name("library_logging_app.py")
ROOT = Path(__file__).resolve().parents[3]
# What the application found: the scenario ran whether or not anything was printed.
SCENARIO_RAN = "described [('closed', 29), ('open', 3)]\noversized frame closed True\nauthorizer True False\n"


def run_app(mode: str, tmp_path: Path) -> tuple[str, str]:
    report = tmp_path / f"{mode}.report"
    done = subprocess.run([sys.executable, str(APP), mode, str(report)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert report.read_text(encoding="utf-8") == SCENARIO_RAN
    return done.stdout, done.stderr


def test_an_application_that_configures_no_logging_sees_nothing(tmp_path: Path) -> None:
    out, err = run_app("none", tmp_path)
    assert (out, err) == ("", "")


def test_stdlib_logging_shows_kafka_shim_events_under_their_logger_names(tmp_path: Path) -> None:
    out, err = run_app("stdlib", tmp_path)
    assert out == ""
    lines = err.splitlines()
    ours = [line for line in lines if line.split(" ", 2)[1].startswith(("kafka_shim.", "kafka.authorizer.logger"))]
    assert any(line.startswith("INFO kafka_shim.broker: listening listener=PLAINTEXT://127.0.0.1:") for line in ours), ours
    # A WARNING reaches the application's handler with its fields readable.
    assert any(line.startswith("WARNING kafka_shim.connection: frame_rejected client=127.0.0.1:")
               and " size=2147483647 limit=104857600" in line for line in ours), ours
    assert any(line.startswith("DEBUG kafka_shim.connection: request ") and " api=Metadata " in line for line in ours), ours
    # The audit keeps Kafka's logger name and Kafka's line as the whole message: denials at INFO, grants at DEBUG.
    assert ("INFO kafka.authorizer.logger: Principal = User:ANONYMOUS is Denied operation = DESCRIBE from host = 127.0.0.1 "
            "on resource = Topic:LITERAL:closed for request = Metadata with resourceRefCount = 1 based on rule DefaultDeny") in ours
    assert any(line.startswith("DEBUG kafka.authorizer.logger: Principal = User:ANONYMOUS is Allowed operation = DESCRIBE "
                               "from host = 127.0.0.1 on resource = Topic:LITERAL:open ") for line in ours), ours
    assert ("INFO kafka.authorizer.logger: Principal = User:alice is Denied operation = DESCRIBE from host = 10.0.0.1 "
            "on resource = Topic:LITERAL:closed for request = Metadata with resourceRefCount = 1 based on rule DefaultDeny") in ours
    assert any(line.startswith("DEBUG kafka.authorizer.logger: Principal = User:alice is Allowed ") for line in ours), ours


def test_an_application_structlog_set_up_renders_kafka_shim_events(tmp_path: Path) -> None:
    out, err = run_app("structlog", tmp_path)
    assert out == ""
    events = [json.loads(line) for line in err.splitlines()]  # every line went through the application's JSONRenderer
    assert events and all(event["app"] == "demo" for event in events), events
    names = [(event["level"], event["event"]) for event in events if event.get("logger") != "kafka.authorizer.logger"]
    assert ("info", "listening") in names
    assert ("warning", "frame_rejected") in names
    assert ("debug", "request") in names
    audit = [(event["level"], event["principal"], event["decision"], event["resource"])
             for event in events if event.get("logger") == "kafka.authorizer.logger"]
    assert audit == [  # the broker asks a Metadata's names in Kafka's hash-map order (closed before open)
        ("info", "User:ANONYMOUS", "Denied", "Topic:LITERAL:closed"),
        ("debug", "User:ANONYMOUS", "Allowed", "Topic:LITERAL:open"),
        ("debug", "User:alice", "Allowed", "Topic:LITERAL:open"),
        ("info", "User:alice", "Denied", "Topic:LITERAL:closed"),
    ]


# -- in this process: the stdlib route's details ---------------------------------------------------------------

@pytest.fixture
def structlog_unconfigured() -> Iterator[None]:
    """structlog as an application that never configured it (other tests here configure it, capture_logs too)."""
    saved = structlog.get_config()
    was_configured = structlog.is_configured()
    structlog.reset_defaults()
    try:
        yield
    finally:
        structlog.configure(**saved)
        if not was_configured:
            structlog.reset_defaults()


def test_is_enabled_for_follows_the_stdlib_logger_level(structlog_unconfigured: None) -> None:
    log = get_logger("kafka_shim.tests.levels")
    stdlib = logging.getLogger("kafka_shim.tests.levels")
    try:
        stdlib.setLevel(logging.WARNING)
        assert not log.is_enabled_for(logging.DEBUG) and log.is_enabled_for(logging.WARNING)
        stdlib.setLevel(logging.DEBUG)
        assert log.is_enabled_for(logging.DEBUG)
        assert log.bind(client="x").is_enabled_for(logging.DEBUG)
    finally:
        stdlib.setLevel(logging.NOTSET)


def test_stdlib_records_carry_fields_and_tracebacks(structlog_unconfigured: None, caplog: pytest.LogCaptureFixture) -> None:
    log = get_logger("kafka_shim.tests.records")
    with caplog.at_level(logging.INFO, logger="kafka_shim.tests.records"):
        log.debug("not_enabled", detail=1)
        log.bind(client="127.0.0.1:1").info("opened", reason="a b", size=3, flag=None)
        try:
            raise ValueError("bad")
        except ValueError:
            log.exception("failed", step="parse")
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("kafka_shim.tests.records", "INFO", "opened client=127.0.0.1:1 reason='a b' size=3 flag=None"),
        ("kafka_shim.tests.records", "ERROR", "failed step=parse"),
    ]
    assert caplog.records[1].exc_info is not None and caplog.records[1].exc_info[0] is ValueError


def test_the_audit_record_is_kafkas_line_with_the_fields_as_attributes(structlog_unconfigured: None,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    from kafka_shim.authorizer import Authorizer
    from kafka_shim.authorizer.model import AclOperation, ResourceType

    with caplog.at_level(logging.INFO, logger="kafka.authorizer.logger"):
        assert not Authorizer().authorize("User:bob", "10.1.2.3", AclOperation.WRITE, ResourceType.TOPIC, "t", request="Produce")
    [record] = caplog.records
    assert (record.name, record.levelname) == ("kafka.authorizer.logger", "INFO")
    assert record.getMessage() == ("Principal = User:bob is Denied operation = WRITE from host = 10.1.2.3 on resource = "
                                   "Topic:LITERAL:t for request = Produce with resourceRefCount = 1 based on rule DefaultDeny")
    assert (record.principal, record.decision, record.resource, record.rule) == ("User:bob", "Denied", "Topic:LITERAL:t", "DefaultDeny")
