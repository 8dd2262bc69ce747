"""kafka-shim's logging: the loggers every shim module writes to, and the set-up of the ``kafka-shim`` commands.

``get_logger`` is the library's logger (kafka_shim.authorizer.library_logging): silent until the application
configures logging, then through the application's structlog set-up or its stdlib logging. ``configure_logging`` is
for kafka-shim's own commands only (``serve``, ``acls``): it configures structlog to print one structured line per
event, JSON or human-readable; code that embeds kafka-shim never calls it.
"""

from __future__ import annotations

import logging
import sys

import structlog

from kafka_shim.authorizer.library_logging import get_logger

__all__ = ["LEVELS", "configure_logging", "get_logger"]

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def configure_logging(fmt: str = "console", level: str = "info", stream=None) -> None:
    """Route structlog to ``stream`` (stderr by default) at ``level``, as ``json`` or ``console`` lines."""
    if fmt not in ("json", "console"):
        raise ValueError(f"log format must be json or console, not {fmt!r}")
    renderer = structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS[level]),
        logger_factory=structlog.PrintLoggerFactory(file=stream or sys.stderr),
        cache_logger_on_first_use=False,
    )

