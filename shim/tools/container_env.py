"""server.properties from environment variables, as Apache Kafka's official image reads them (``serve --config-from-env``).

Kafka's image (KafkaDockerWrapper.getServerConfigsFromEnv, 3.7+) turns every ``KAFKA_*`` variable but a few of its
own into a key: drop every ``KAFKA_``, lower-case, ``_`` -> ``.``, then ``...`` -> ``-`` and ``..`` -> ``_``. So
``KAFKA_ADVERTISED_LISTENERS`` is ``advertised.listeners`` and ``KAFKA_LISTENER_NAME_SASL__PLAINTEXT_...`` keeps its
underscore. kafka-shim's own keys (``kafka.shim.*``) are written ``KAFKA_SHIM_*``: Kafka's rule makes those
``shim.*``, which no Kafka key starts with, and they are given their ``kafka.`` back. ``KAFKA_VERSION`` stays the
image's own variable, as in Kafka's image: the release to emulate is set with ``serve --kafka-version`` (or the key in
the mounted file).
"""

from __future__ import annotations

from collections.abc import Mapping

# Kafka's image uses these itself (KafkaDockerWrapper.ExcludeServerPropsEnv); they are never server properties.
EXCLUDED = frozenset({
    "KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS",
    "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS", "KAFKA_TOOLS_LOG4J_LOGLEVEL",
    "KAFKA_JMX_HOSTNAME",
})


def property_name(variable: str) -> str | None:
    """The server.properties key an environment variable sets, or None when it sets none."""
    if not variable.startswith("KAFKA_") or variable in EXCLUDED:
        return None
    key = variable.replace("KAFKA_", "").lower().replace("_", ".").replace("...", "-").replace("..", "_")
    return f"kafka.{key}" if key.startswith("shim.") else key


def properties_from_env(env: Mapping[str, str]) -> dict[str, str]:
    """Every key the environment sets (empty values included, as Kafka's image writes them)."""
    out: dict[str, str] = {}
    for variable, value in sorted(env.items()):
        key = property_name(variable)
        if key:
            out[key] = value
    return out
