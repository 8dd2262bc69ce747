"""The container files, checked without a container engine: the KAFKA_* environment mapping (Apache Kafka's image
rule), docker-compose.yml's services and their keys, and the image's entrypoint and health check run as the image
runs them (``kafka-shim serve examples/container.properties --config-from-env``, ``kafka-shim healthcheck``).
tests/docker/test_image.py builds and runs the image itself where a container engine is available."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Producer

from kafka_shim.shim.cluster.configs.broker_configs import is_kafka_broker_key
from kafka_shim.shim.config.broker_config import DEFAULTS, KNOWN_IGNORED, SECURITY_KEY_PREFIXES
from kafka_shim.shim.tools.container_env import properties_from_env, property_name

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _known(key: str) -> bool:
    return key in DEFAULTS or key in KNOWN_IGNORED or key.startswith(SECURITY_KEY_PREFIXES) or is_kafka_broker_key(key)


def test_environment_variables_map_to_keys_as_in_kafkas_image() -> None:
    # KafkaDockerWrapperTest's own example, and the variables its image keeps for itself.
    assert properties_from_env({"KAFKA_TOOLS_LOG4J_LOGLEVEL": "TRACE", "KAFKA_VALID_PROPERTY": "Value",
                                "SOME_VARIABLE": "Some Value", "KAFKA_VALID___PROPERTY__ALL_CASES": "All Cases Value"}) == {
        "valid.property": "Value", "valid-property_all.cases": "All Cases Value"}
    assert property_name("KAFKA_ADVERTISED_LISTENERS") == "advertised.listeners"
    assert property_name("KAFKA_LISTENER_NAME_SASL__PLAINTEXT_SCRAM___SHA___256_SASL_JAAS_CONFIG") == \
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config"
    assert property_name("KAFKA_SHIM_CAPTURE_DIR") == "kafka.shim.capture.dir"  # kafka-shim's own keys
    assert property_name("KAFKA_VERSION") is None and property_name("KAFKA_HEAP_OPTS") is None


@pytest.mark.parametrize("service", ["kafka-shim", "kafka"])
def test_compose_services_set_only_keys_their_broker_knows(service: str) -> None:
    keys = properties_from_env({k: str(v) for k, v in COMPOSE["services"][service]["environment"].items()})
    unknown = sorted(k for k in keys if not _known(k))
    assert keys and not unknown, unknown


def test_compose_file_has_both_brokers_healthy_and_a_replay_job() -> None:
    services = COMPOSE["services"]
    assert services["kafka-shim"]["build"] == "." and services["kafka"]["image"] == "apache/kafka:3.9.0"
    assert all("healthcheck" in services[name] for name in ("kafka-shim", "kafka"))
    assert services["kafka-shim"]["volumes"] == ["kafka-shim-data:/var/lib/kafka-shim/data"]
    replay = services["replay"]
    assert replay["depends_on"]["kafka-shim"] == {"condition": "service_healthy"}
    assert "kafka-shim replay" in replay["command"][0] and "kafka:29093" in replay["command"][0]
    # Both brokers run the authorizer with the same super user.
    shim_props = (ROOT / "examples" / "container.properties").read_text()
    assert "super.users=User:admin" in shim_props and "User:admin" in services["kafka"]["environment"]["KAFKA_SUPER_USERS"]


def _dockerfile_command(instruction: str) -> list[str]:
    text = (ROOT / "Dockerfile").read_text()
    match = re.search(rf"^{instruction} .*?(\[.*\])\s*$", text, re.MULTILINE)
    assert match, f"no {instruction} in the Dockerfile"
    return yaml.safe_load(match[1])


def test_the_images_entrypoint_and_health_check_work_as_the_image_runs_them(tmp_path: Path) -> None:
    entrypoint = _dockerfile_command("ENTRYPOINT")
    health = _dockerfile_command("HEALTHCHECK --interval=2s --timeout=5s --start-period=2s --retries=30 CMD")
    assert entrypoint[:3] == ["kafka-shim", "serve", "/etc/kafka-shim/server.properties"]
    command = [sys.executable, "-m", "kafka_shim.shim.tools.cli", *entrypoint[1:]]
    command[command.index("/etc/kafka-shim/server.properties")] = str(ROOT / "examples" / "container.properties")
    env = {**os.environ, **{k: str(v) for k, v in COMPOSE["services"]["kafka-shim"]["environment"].items()},
           # What differs outside a container: free ports on loopback and a temporary data directory.
           "KAFKA_LISTENERS": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "KAFKA_LOG_DIRS": str(tmp_path),
           "KAFKA_ADVERTISED_LISTENERS": ""}
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        plaintext = server.stdout.readline().strip()
        assert plaintext.startswith("PLAINTEXT://127.0.0.1:"), server.stderr.read()
        address = plaintext.split("://", 1)[1]
        probe = [sys.executable, "-m", "kafka_shim.shim.tools.cli", *health[1:]]
        probe[probe.index("127.0.0.1:9092")] = address
        assert subprocess.run(probe, timeout=60).returncode == 0
        producer = Producer({"bootstrap.servers": address, "message.timeout.ms": 20000})
        errors: list = []
        producer.produce("from-the-image", b"v", on_delivery=lambda err, msg: errors.append(err))
        producer.flush(30)
        # The image's config runs the authorizer and KAFKA_AUTO_CREATE_TOPICS_ENABLE=false: anonymous is refused.
        assert errors and errors[0] is not None
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    assert server.returncode == 0
    assert (tmp_path / "meta.properties").exists()  # the data directory is the volume's


def test_healthcheck_fails_when_nothing_answers() -> None:
    done = subprocess.run([sys.executable, "-m", "kafka_shim.shim.tools.cli", "healthcheck", "--bootstrap-server",
                           "127.0.0.1:9", "--timeout", "5"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "did not answer" in done.stderr
