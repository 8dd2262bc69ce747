"""BROKER_LOGGER resources (KIP-412): the broker's logger levels, described and changed as Kafka 3.9 does.

Kafka's counterparts: ``LoggingController`` (the loggers and their levels) and ``RuntimeLoggerManager`` (the checks
of IncrementalAlterConfigs, in its order: ALTER_CONFIGS on the cluster, the node id, then each operation: SET needs
an existing logger and one of log4j's levels, DELETE an existing logger other than the root, APPEND and SUBTRACT
are refused). Like Kafka's, the levels are not kept across restarts.

The loggers are a Kafka 3.9 broker's (``kafka_loggers``), each described with its own level or, without one, its
nearest ancestor's by dotted name, else the root's (Log4jController.resolveLevel); DELETE takes a logger's own level
away, so it follows its ancestors again. Entries come in the order of the Scala mutable.HashMap Kafka builds.
kafka-shim logs through structlog, not log4j: a level set here is recorded and described but does not change what
structlog writes (``--log-level`` does).
"""

from __future__ import annotations

from collections.abc import Sequence

from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.cluster.configs.alter_ops import AlterError, ConfigOp, OpType
from kafka_shim.shim.cluster.configs.definition import ConfigSource, ConfigType
from kafka_shim.shim.cluster.configs.describe import DescribedConfig
from kafka_shim.shim.cluster.configs.kafka_loggers import CONFIGURED, NAMES
from kafka_shim.shim.cluster.configs.scala_order import scala_hashmap_order

ROOT = "root"
# LogLevelConfig.VALID_LOG_LEVELS; the error message lists them sorted.
VALID_LEVELS = ("FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE")
_VALID_TEXT = ", ".join(sorted(VALID_LEVELS))


class BrokerLoggers:
    def __init__(self, root_level: str = "INFO") -> None:
        # Each logger's own level (None: it has none); the root always has one.
        self.levels: dict[str, str | None] = {ROOT: root_level, **dict.fromkeys(NAMES), **CONFIGURED}

    def level(self, name: str) -> str:
        """Log4jController.resolveLevel: the logger's own level, else its nearest ancestor's, else the root's."""
        own = self.levels.get(name)
        while own is None:
            cut = name.rfind(".")
            if cut <= 0:
                return self.levels[ROOT] or "INFO"
            name = name[:cut]
            own = self.levels.get(name)
        return own

    def describe(self) -> list[DescribedConfig]:
        return [DescribedConfig(name, self.level(name), ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG, ConfigType.UNKNOWN, False)
                for name in scala_hashmap_order(self.levels)]

    def alter(self, cluster_allowed: bool, name: str, node_id: int, ops: Sequence[ConfigOp], validate_only: bool, *,
              unknown_op_fails_the_switch: bool = True) -> None:
        """``unknown_op_fails_the_switch``: Kafka 3.7+ (RuntimeLoggerManager, Java) switches on ``OpType.forId``, which
        is null for an operation id it does not know, so the switch itself throws a NullPointerException: answered
        UNKNOWN_SERVER_ERROR, whose message ApiError.fromThrowable leaves out. Before 3.7 ConfigAdminManager's Scala
        match had a ``case _`` for it (INVALID_REQUEST "Unknown operation type ...")."""
        if not cluster_allowed:
            # ApiError.fromThrowable drops a message that is the error's default text
            raise AlterError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
        try:
            requested = int(name)
        except ValueError:
            raise AlterError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}") from None
        if requested != node_id:
            # Kafka 3.9 names its own id twice here ("Expected 1, but received 1").
            raise AlterError(ErrorCode.INVALID_REQUEST, f"Unexpected node id. Expected {node_id}, but received {node_id}")
        for op in ops:
            if op.op == OpType.SET:
                self._exists(op.name)
                if op.value not in VALID_LEVELS:
                    raise AlterError(ErrorCode.INVALID_CONFIG,
                                     f"Cannot set the log level of {op.name} to {op.value} as it is not a supported log level. "
                                     f"Valid log levels are {_VALID_TEXT}")
            elif op.op == OpType.DELETE:
                self._exists(op.name)
                if op.name == ROOT:
                    raise AlterError(ErrorCode.INVALID_REQUEST, f"Removing the log level of the {ROOT} logger is not allowed")
            elif op.op in (OpType.APPEND, OpType.SUBTRACT):
                raise AlterError(ErrorCode.INVALID_REQUEST, f"{OpType(op.op).name} operation is not allowed for the BROKER_LOGGER resource")
            elif unknown_op_fails_the_switch:
                raise AlterError(ErrorCode.UNKNOWN_SERVER_ERROR, None)
            else:
                raise AlterError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {op.op} is not allowed for the BROKER_LOGGER resource")
        if validate_only:
            return
        for op in ops:
            self.levels[op.name] = (op.value or "") if op.op == OpType.SET else None  # DELETE: back to its ancestors'

    def _exists(self, name: str) -> None:
        if name not in self.levels:
            raise AlterError(ErrorCode.INVALID_CONFIG, f"Logger {name} does not exist!")
