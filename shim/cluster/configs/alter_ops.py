"""IncrementalAlterConfigs' operations (KIP-339) applied to a resource's stored configs, with Kafka's list rules.

Two places in Kafka 3.9 apply them, with slightly different rules, and kafka-shim follows each:

- TOPIC (and CLIENT_METRICS) resources: the controller (``ConfigurationControlManager.incrementalAlterConfigResource``). APPEND and
  SUBTRACT need a LIST key ("Can't APPEND to key x because its type is not LIST.", INVALID_CONFIG); the current
  value, else the key's LogConfig default, is split on commas with empty parts dropped; APPEND adds the values not
  already there, SUBTRACT removes each value once. The keys are visited in Java HashMap order (the controller keys
  the operations by name), which decides which error is reported first.
- BROKER resources: the forwarding broker (``ConfigAdminManager.prepareIncrementalConfigs``), in request order.
  APPEND/SUBTRACT on a key that is not LIST: "Config value append is not allowed for config key: x" (INVALID_CONFIG);
  on a key KafkaConfig does not know, Kafka fails with an unexpected exception (UNKNOWN_SERVER_ERROR, no message).
  That reading is only validated: the broker forwards the operations, and the controller stores what its own rules
  above make of them (BROKER_LIST_DEFAULTS standing for KafkaConfig's LIST defaults).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.cluster.configs.broker_configs import BROKER_CONFIGS
from kafka_shim.shim.cluster.configs.definition import ConfigType, ConfigValueError, to_config_string
from kafka_shim.shim.cluster.configs.topic_configs import TOPIC_CONFIGS
from kafka_shim.shim.javacompat.java_hash import java_order


class OpType(enum.IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True)
class ConfigOp:
    name: str
    op: int  # an OpType id, or whatever the client sent
    value: str | None


class AlterError(Exception):
    """A resource's alteration refused with ``error_code`` and ``message`` (None: Kafka sends no message)."""

    def __init__(self, error_code: int, message: str | None) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


# KafkaConfigSchema.getDefault for the BROKER keys the controller may split (ConfigDef's LIST keys of KafkaConfig).
BROKER_LIST_DEFAULTS: dict[str, str | None] = {name: key.default for name, key in BROKER_CONFIGS.items() if key.type is ConfigType.LIST}


def java_split(text: str) -> list[str]:
    """String.split(","): trailing empty strings dropped; a string without a comma is itself (even empty)."""
    parts = text.split(",")
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def apply_topic_ops(current: Mapping[str, str], ops: Sequence[ConfigOp]) -> dict[str, str]:
    """The topic's overrides after ``ops`` (distinct names; the broker refused duplicates before)."""
    list_keys = {name: to_config_string(key.default, key.type) for name, key in TOPIC_CONFIGS.items() if key.type is ConfigType.LIST}
    return apply_controller_ops(current, ops, list_keys)


def apply_controller_ops(current: Mapping[str, str], ops: Sequence[ConfigOp], list_keys: Mapping[str, str | None]) -> dict[str, str]:
    """The controller's operations on a resource's stored configs; ``list_keys`` maps each LIST key to its default."""
    by_name = {op.name: op for op in ops}
    result = dict(current)
    for name in java_order(list(by_name)):
        op = by_name[name]
        if op.op == OpType.SET:
            result[name] = op.value  # type: ignore[assignment]  # nulls were refused before
        elif op.op == OpType.DELETE:
            result.pop(name, None)
        elif op.op in (OpType.APPEND, OpType.SUBTRACT):
            if name not in list_keys:
                raise AlterError(ErrorCode.INVALID_CONFIG, f"Can't {OpType(op.op).name} to key {name} because its type is not LIST.")
            base = result.get(name)
            if base is None:
                base = list_keys[name]
            parts = [part for part in java_split(base or "") if part]
            for value in java_split(op.value or ""):
                if op.op == OpType.APPEND and value not in parts:
                    parts.append(value)
                elif op.op == OpType.SUBTRACT and value in parts:
                    parts.remove(value)
            result[name] = ",".join(parts)
        else:  # the controller's switch has no case for it and fails unexpectedly
            raise AlterError(ErrorCode.UNKNOWN_SERVER_ERROR, None)
    return result


def apply_broker_ops(current: Mapping[str, str], ops: Sequence[ConfigOp]) -> dict[str, str]:
    """A BROKER resource's dynamic configs after ``ops``, in request order (every operation id is checked first:
    ConfigAdminManager.validateBrokerConfigChange maps them all to OpTypes before applying any)."""
    unknown = next((op.op for op in ops if op.op not in tuple(OpType)), None)
    if unknown is not None:
        raise AlterError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {unknown}")
    result = dict(current)
    for op in ops:
        if op.op == OpType.SET:
            result[op.name] = op.value  # type: ignore[assignment]
        elif op.op == OpType.DELETE:
            result.pop(op.name, None)
        elif op.op in (OpType.APPEND, OpType.SUBTRACT):
            key = BROKER_CONFIGS.get(op.name)
            if key is None:
                raise AlterError(ErrorCode.UNKNOWN_SERVER_ERROR, None)
            verb = "append" if op.op == OpType.APPEND else "subtract"
            if key.type is not ConfigType.LIST:
                raise AlterError(ErrorCode.INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {op.name}")
            old = result.get(op.name, key.default)
            values = java_split(op.value or "")
            if op.op == OpType.APPEND:
                parts = java_split(old) if old else []
                result[op.name] = ",".join(parts + [v for v in values if v not in parts])
            else:
                parts = java_split(old or "")
                for value in values:  # Scala's List.diff: one occurrence per value
                    if value in parts:
                        parts.remove(value)
                result[op.name] = ",".join(parts)
        else:
            raise AlterError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op.op}")
    return result


def config_error(error: ConfigValueError) -> AlterError:
    return AlterError(error.error_code, error.message)
