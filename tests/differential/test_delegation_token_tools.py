"""kafka-delegation-tokens.sh (Kafka 3.9's DelegationTokenCommand) against kafka-shim: create, describe, renew and
expire as a SASL user, then a Java client (kafka-topics.sh) that logs in with the token (SCRAM, ``tokenauth=true``)
and acts as the token's owner."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_shim.shim.testing.handle import KafkaShim
from kafka_shim.shim.testing.options import ShimOptions
from tests.support.cli_helpers import client_config
from tests.support.peers import REAL_KAFKA

TOKEN_COMMAND = "org.apache.kafka.tools.DelegationTokenCommand"
TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
ACLS = [{"resource_type": "topic", "resource_name": "alices-", "pattern_type": "prefixed", "principal": "User:alice",
         "operation": "Describe"}]


def _run(main_class: str, bootstrap: str, config: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REAL_KAFKA), "run", main_class, "--bootstrap-server", bootstrap,
                           "--command-config", str(config), *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def shim():
    options = ShimOptions(listener="SASL_PLAINTEXT", acls=ACLS, config={"delegation.token.secret.key": "tool-secret"})
    with KafkaShim(options) as running:
        running.create_topics(["alices-orders", "bobs-orders"])
        yield running


def test_the_token_command_and_a_token_login(shim: KafkaShim, tmp_path: Path) -> None:
    alice = client_config(tmp_path, "alice", shim.users["alice"])
    created = _run(TOKEN_COMMAND, shim.bootstrap_servers, alice, "--create", "--max-life-time-period", "-1",
                   "--renewer-principal", "User:bob")
    assert created.returncode == 0, created.stderr
    assert "Created delegation token with tokenId" in created.stdout
    row = re.search(r"\n(\S+)\s+(\S+)\s+(User:\S+)\s+(User:\S+)\s+(\[[^\]]*\])", created.stdout)
    assert row is not None, created.stdout
    token_id, token_hmac, owner, requester, renewers = row.groups()
    assert (owner, requester, renewers) == ("User:alice", "User:alice", "[User:bob]")

    # Without --owner-principal the 3.9 tool asks with an empty owner list, which Kafka answers with no tokens.
    mine = _run(TOKEN_COMMAND, shim.bootstrap_servers, alice, "--describe")
    assert mine.returncode == 0 and "Total number of tokens : 0" in mine.stdout, mine.stdout + mine.stderr
    described = _run(TOKEN_COMMAND, shim.bootstrap_servers, alice, "--describe", "--owner-principal", "User:alice")
    assert described.returncode == 0, described.stderr
    assert token_id in described.stdout and "Total number of tokens : 1" in described.stdout

    renewed = _run(TOKEN_COMMAND, shim.bootstrap_servers, client_config(tmp_path, "bob", shim.users["bob"]), "--renew",
                   "--hmac", token_hmac, "--renew-time-period", "3600000")
    assert renewed.returncode == 0, renewed.stderr
    assert "Completed renew operation. New expiry date" in renewed.stdout

    # A Java client logs in with the token and is alice: it lists the topics alice may describe.
    token_config = tmp_path / "token.properties"
    token_config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                            f'username="{token_id}" password="{token_hmac}" tokenauth="true";\n')
    listed = _run(TOPIC_COMMAND, shim.bootstrap_servers, token_config, "--list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["alices-orders"]
    # ... but it may not ask for tokens itself.
    refused = _run(TOKEN_COMMAND, shim.bootstrap_servers, token_config, "--describe")
    assert "DelegationTokenDisabledException" in refused.stderr + refused.stdout or \
        "not allowed" in (refused.stderr + refused.stdout).lower(), refused.stdout + refused.stderr

    expired = _run(TOKEN_COMMAND, shim.bootstrap_servers, alice, "--expire", "--hmac", token_hmac,
                   "--expiry-time-period", "-1")
    assert expired.returncode == 0, expired.stderr
    after = _run(TOKEN_COMMAND, shim.bootstrap_servers, alice, "--describe", "--owner-principal", "User:alice")
    assert "Total number of tokens : 0" in after.stdout, after.stdout
    gone = _run(TOPIC_COMMAND, shim.bootstrap_servers, token_config, "--list")
    assert gone.returncode != 0 and "Authentication failed" in gone.stderr + gone.stdout
