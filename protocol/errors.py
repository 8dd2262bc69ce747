"""The one error type the codec raises, so callers never see struct.error or IndexError."""

from __future__ import annotations


class ProtocolError(Exception):
    """Bytes that do not form a valid message, or a message that cannot be written.

    ``message`` is the schema name (e.g. ``MetadataRequest``), ``field`` the dotted
    path of the field being read or written when it failed (``Topics.Name``), or
    None when the failure is not tied to one field.
    """

    def __init__(
        self,
        reason: str,
        *,
        message: str | None = None,
        api_key: int | None = None,
        version: int | None = None,
        field: str | None = None,
    ) -> None:
        self.reason = reason
        self.message = message
        self.api_key = api_key
        self.version = version
        self.field = field
        where = []
        if message is not None:
            where.append(f"{message} v{version}" if version is not None else message)
        if field:
            where.append(f"field {field}")
        super().__init__(f"{', '.join(where)}: {reason}" if where else reason)


class DecodeError(ProtocolError):
    """Malformed or truncated input."""


class EncodeError(ProtocolError):
    """A message that cannot be written at the requested version."""


class UnsupportedVersionError(EncodeError):
    """A non-default, non-ignorable field set for a version that lacks it (Kafka's UnsupportedVersionException)."""


class FrameTooLarge(ProtocolError):
    """A size prefix above the configured maximum (Kafka's InvalidReceiveException)."""

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(f"frame of {size} bytes exceeds the limit of {limit} bytes (socket.request.max.bytes)")
