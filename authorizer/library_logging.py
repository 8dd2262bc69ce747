"""kafka-shim's loggers, made to behave as a library's: silent until the application configures logging.

Every module of kafka-shim gets its logger from :func:`get_logger` (the shim through
``kafka_shim.shim.config.logging``; this module sits in the authorizer because it is the lowest package that logs and
the shim may import it, not the other way round). Which way an event goes is decided at each use, so an application
may configure logging before or after it imports kafka-shim:

- the application configured structlog (``structlog.is_configured()``; ``kafka-shim serve`` does, and so does
  ``structlog.testing.capture_logs``): the event goes through the application's processors, wrapper class and
  logger factory, exactly as ``structlog.get_logger(name)`` would send it;
- otherwise: to the stdlib logger of the same name (``kafka_shim.*``, and ``kafka.authorizer.logger`` for the
  audit, Kafka's name), filtered by that logger's level before anything is formatted, the event and its fields
  rendered into the message (``listening host=127.0.0.1 port=9092``). The ``kafka_shim`` and
  ``kafka.authorizer.logger`` loggers carry a NullHandler, so with no logging configured at all nothing is printed,
  not even warnings (stdlib's last-resort handler writes WARNING and above to stderr for a logger without one).

``is_enabled_for(level)`` answers for the way an event would go now: the stdlib logger's effective level, or the
application's structlog wrapper (True when that wrapper cannot tell). A ``bind()``-ed logger (a connection's is
bound when it connects) holds its values for both ways and still chooses at each event, so an application (or a
test's ``capture_logs``) that configures structlog after a connection opened still gets that connection's events.
"""

from __future__ import annotations

import logging
from typing import Any

import structlog

LIBRARY_ROOT = "kafka_shim"
# The attributes a LogRecord has of its own; ``extra`` may not set them.
_RECORD_ATTRIBUTES = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}
# Values printed bare in ``key=value``; anything with a space, quote or '=' is quoted with repr().
_NEEDS_QUOTES = frozenset(" \t\n\"'=")


def _readable(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return repr(text) if not text or any(ch in _NEEDS_QUOTES for ch in text) else text


def render_for_stdlib(_logger: Any, _method: str, event_dict: dict[str, Any]) -> tuple[tuple[str], dict[str, Any]]:
    """The event as a stdlib message: the event text, then each field as ``key=value``; exc_info and stack_info are
    handed to the stdlib logger, which formats the traceback as the application's formatter says."""
    kwargs = {key: event_dict.pop(key) for key in ("exc_info", "stack_info") if event_dict.get(key)}
    event = str(event_dict.pop("event", ""))
    fields = " ".join(f"{key}={_readable(value)}" for key, value in event_dict.items())
    return (f"{event} {fields}" if fields else event,), kwargs


def render_message_only(_logger: Any, _method: str, event_dict: dict[str, Any]) -> tuple[tuple[str], dict[str, Any]]:
    """The event text alone as the message (the audit line is Kafka's whole line); the fields go to the LogRecord
    as attributes (``extra``) for handlers that read them, except names a LogRecord has of its own."""
    kwargs = {key: event_dict.pop(key) for key in ("exc_info", "stack_info") if event_dict.get(key)}
    event = str(event_dict.pop("event", ""))
    event_dict.pop("logger", None)  # the stdlib logger's own name says it
    kwargs["extra"] = {key: value for key, value in event_dict.items() if key not in _RECORD_ATTRIBUTES}
    return (event,), kwargs


_METHOD_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "warn": logging.WARNING,
                  "error": logging.ERROR, "exception": logging.ERROR, "critical": logging.CRITICAL, "fatal": logging.CRITICAL}


class _StdlibLogger(structlog.stdlib.BoundLogger):
    """structlog's stdlib wrapper, asking the stdlib logger's level before anything else: a disabled event costs one
    ``isEnabledFor`` (structlog's filter_by_level processor gets there through the processor chain and an exception:
    about 10 times slower, measured)."""

    def _proxy_to_logger(self, method_name: str, event: str | None = None, *event_args: str, **event_kw: Any) -> Any:
        if not self._logger.isEnabledFor(_METHOD_LEVELS.get(method_name, logging.NOTSET)):
            return None
        return super()._proxy_to_logger(method_name, event, *event_args, **event_kw)


def _logging_method(name: str) -> Any:
    level = _METHOD_LEVELS[name]

    def log(self: LibraryLogger, event: str | None = None, *args: Any, **fields: Any) -> Any:
        if structlog.is_configured():
            return getattr(self._structlog, name)(event, *args, **fields)
        if self._stdlib._logger.isEnabledFor(level):
            return getattr(self._stdlib, name)(event, *args, **fields)
        return None

    log.__name__ = log.__qualname__ = name
    return log


class LibraryLogger:
    """A logger that writes through the application's structlog set-up when there is one, else to stdlib logging."""

    __slots__ = ("_stdlib", "_structlog", "name")

    def __init__(self, name: str, message_only: bool = False) -> None:
        self.name = name
        # Reads the global structlog configuration at each use, as structlog.get_logger's proxies do.
        self._structlog: Any = structlog.get_logger(name)
        renderer = render_message_only if message_only else render_for_stdlib
        self._stdlib: Any = _StdlibLogger(logging.getLogger(name), [structlog.contextvars.merge_contextvars, renderer], {})

    def _target(self) -> Any:
        return self._structlog if structlog.is_configured() else self._stdlib

    def _with(self, structlog_logger: Any, stdlib_logger: Any) -> LibraryLogger:
        bound = object.__new__(LibraryLogger)
        bound.name, bound._structlog, bound._stdlib = self.name, structlog_logger, stdlib_logger
        return bound

    def bind(self, **values: Any) -> LibraryLogger:
        # Both ways get the values; a structlog bound logger shares the configuration's processor list, which
        # capture_logs and reconfiguration change in place.
        return self._with(self._structlog.bind(**values), self._stdlib.bind(**values))

    def new(self, **values: Any) -> LibraryLogger:
        return self._with(self._structlog.new(**values), self._stdlib.new(**values))

    def is_enabled_for(self, level: int) -> bool:
        target = self._target()
        if target is self._structlog:
            target = target.bind()
        check = getattr(target, "is_enabled_for", None)
        return True if check is None else bool(check(level))

    # The logging methods are spelled out (__getattr__ would cost a failed lookup on every event), and ask the
    # stdlib level first: a disabled event on the stdlib route costs two calls.
    debug = _logging_method("debug")
    info = _logging_method("info")
    warning = _logging_method("warning")
    error = _logging_method("error")
    exception = _logging_method("exception")
    critical = _logging_method("critical")

    def __getattr__(self, name: str) -> Any:
        # Anything else a bound logger has (unbind, try_unbind, log, msg...), from the way events go now. Private
        # names are not forwarded: copy and pickle probe them on an instance whose slots are not set yet.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._target(), name)

    def __repr__(self) -> str:
        return f"<LibraryLogger {self.name!r}>"


def get_logger(name: str, message_only: bool = False) -> LibraryLogger:
    """kafka-shim's logger ``name`` (``kafka_shim.*``, or a name Kafka uses such as ``kafka.authorizer.logger``, which
    gets its own NullHandler); ``message_only`` keeps the stdlib message to the event text."""
    if name != LIBRARY_ROOT and not name.startswith(LIBRARY_ROOT + "."):
        _silence(name)
    return LibraryLogger(name, message_only)


def _silence(name: str) -> None:
    logger = logging.getLogger(name)
    if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
        logger.addHandler(logging.NullHandler())


_silence(LIBRARY_ROOT)
