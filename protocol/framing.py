"""Size-prefixed frames and request/response headers, without any I/O.

A Kafka connection is a stream of frames: a signed 32-bit size, then that many
bytes. A request frame is a RequestHeader followed by the body; a response frame
is a ResponseHeader followed by the body. Which header version applies depends
only on the API key and version (see :func:`request_header_version`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cache

from kafka_shim.protocol import frame_memory
from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.errors import DecodeError, FrameTooLarge, ProtocolError
from kafka_shim.protocol.frame_memory import unfilled_bytes
from kafka_shim.protocol.messages import Message, message_class, request_class, response_class
from kafka_shim.protocol.schema import api_index, message_spec

_SIZE = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")
_SIZE_CORRELATION = struct.Struct(">ii")


@cache
def api_name(api_key: int) -> str:
    """Kafka's name of an API (``Metadata``), or ``Unknown(N)``."""
    names = api_index().get(api_key)
    return names[0][: -len("Request")] if names else f"Unknown({api_key})"


@cache
def is_flexible(api_key: int, version: int) -> bool:
    return version in message_spec(api_index()[api_key][0]).flexible_versions


def request_header_version(api_key: int, version: int) -> int:
    """Kafka's rule: v2 for flexible versions, v1 otherwise, v0 only for ControlledShutdown v0."""
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and version == 0:
        return 0
    return 2 if is_flexible(api_key, version) else 1


def response_header_version(api_key: int, version: int) -> int:
    """v1 for flexible versions, except ApiVersions, whose responses always use v0 (KIP-511)."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, version) else 0


@dataclass(slots=True)
class RequestFrame:
    """A request with its header parsed; the body is decoded separately (and lazily)."""

    header: Message  # protocol.messages.RequestHeader
    header_version: int
    payload: bytes
    body_offset: int

    @property
    def api_key(self) -> int:
        return self.header.request_api_key

    @property
    def api_version(self) -> int:
        return self.header.request_api_version

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id

    def decode_body(self) -> Message:
        cls = _request_classes.get(self.api_key) or _remember_request_class(self.api_key)
        return cls.decode_from(self.payload, self.api_version, self.body_offset)[0]


_request_classes: dict[int, type[Message]] = {}


def _remember_request_class(api_key: int) -> type[Message]:
    cls = _request_classes[api_key] = request_class(api_key)
    return cls


def parse_request(payload: bytes) -> RequestFrame:
    """Parse a request frame's header (the payload excludes the size prefix).

    An unknown API key raises DecodeError, as Kafka's header parsing does; the
    caller decides whether the version is one it serves.
    """
    if len(payload) < 4:
        raise DecodeError("request shorter than its api key and version", message="RequestHeader")
    api_key, version = _KEY_VERSION.unpack_from(payload, 0)
    header_version = _header_versions.get((api_key, version))
    if header_version is None:
        if api_key not in api_index():
            raise DecodeError(f"unknown api key {api_key}", message="RequestHeader", api_key=api_key, version=version)
        header_version = request_header_version(api_key, version)
        if -1 <= version <= 100:  # bound the memo: versions a client could plausibly send
            _header_versions[(api_key, version)] = header_version
    header_cls = _header_class or _load_header_class()
    header, offset = header_cls.decode_from(payload, header_version)
    return RequestFrame(header, header_version, payload, offset)


_header_class: type[Message] | None = None


def _load_header_class() -> type[Message]:
    global _header_class
    _header_class = message_class("RequestHeader")
    return _header_class


_header_versions: dict[tuple[int, int], int] = {}


def encode_request(api_key: int, version: int, correlation_id: int, body: Message, client_id: str | None = "kafka-shim") -> bytes:
    """A complete request frame, size prefix included."""
    header_cls = message_class("RequestHeader")
    header = header_cls(request_api_key=api_key, request_api_version=version, correlation_id=correlation_id, client_id=client_id)
    out: list[bytes] = [b""]
    header.encode_into(out, request_header_version(api_key, version))
    body.encode_into(out, version)
    size = sum(map(len, out))
    out[0] = _SIZE.pack(size)
    return b"".join(out)


def encode_response(api_key: int, version: int, correlation_id: int, body: Message) -> bytes:
    """A complete response frame, size prefix included."""
    out: list[bytes] = [b""]
    body.encode_into(out, version)
    size = sum(map(len, out))
    if api_key == ApiKey.API_VERSIONS or not is_flexible(api_key, version):
        out[0] = _SIZE_CORRELATION.pack(size + 4, correlation_id)
    else:
        out[0] = _SIZE_CORRELATION.pack(size + 5, correlation_id) + b"\x00"
    return b"".join(out)


def decode_response(api_key: int, version: int, payload: bytes) -> tuple[int, Message]:
    """(correlation id, body) from a response frame without its size prefix."""
    header_cls = message_class("ResponseHeader")
    header, offset = header_cls.decode_from(payload, response_header_version(api_key, version))
    return header.correlation_id, response_class(api_key).decode(payload, version, offset)


# Frames from this size on that arrive in several chunks are collected chunk by chunk (see FrameSplitter).
_COLLECT_FROM = 64 * 1024


class FrameSplitter:
    """Cuts a byte stream into frames; refuses a size above ``max_size``, or a negative one, before buffering the body.

    A connection uses it one frame at a time: :meth:`receive` the bytes that arrived, then call :meth:`next_frame`
    until it returns None. Taking frames one at a time lets the caller stop (back-pressure) and leave the rest as
    unparsed bytes, and a refused size is reported only when it is reached: every complete frame before it has
    been returned first, so the caller can answer those requests before it closes (Kafka reads one request at a
    time and answers it). :meth:`feed` is the all-at-once form. A large frame arriving in many chunks is buffered
    without re-copying on every chunk.

    With ``fill_in_place`` a reader that can write into memory it is handed (asyncio's BufferedProtocol) reads a
    large frame's bytes straight into the frame: :meth:`frame_buffer` is the part still to come, and
    :meth:`frame_filled` says how much of it was written.
    """

    __slots__ = ("_buf", "_fill", "_frame", "_have", "_need", "_parts", "_pos", "_ready", "fill_in_place", "max_size")

    def __init__(self, max_size: int, *, fill_in_place: bool = False) -> None:
        self.max_size = max_size
        self.fill_in_place = fill_in_place and frame_memory.AVAILABLE
        # The large frame being filled in place, and the writable view of its contents.
        self._frame: bytes | None = None
        self._fill: memoryview | None = None
        # Received bytes: the chunk itself while nothing was left over (no copy), a bytearray once bytes remain
        # between chunks (appending to it does not re-copy what is already there).
        self._buf: bytes | bytearray = b""
        self._pos = 0  # start of the first frame not yet returned
        # A large frame arriving in chunks is collected as the chunks themselves and joined once, straight into its
        # payload (one copy in all), when its last byte arrives; it then waits in ``_ready`` for next_frame.
        self._parts: list[bytes | memoryview] | None = None
        self._have = self._need = 0
        self._ready: bytes | None = None

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as frames."""
        pending = len(self._buf) - self._pos
        if self._parts is not None:
            pending += self._have
        elif self._frame is not None:
            pending += 4 + self._have  # its size prefix, then the payload bytes filled so far
        if self._ready is not None:
            pending += 4 + len(self._ready)
        return pending

    def receive(self, data: bytes | memoryview) -> None:
        """Append bytes as they arrive; nothing is parsed until :meth:`next_frame`."""
        if self._fill is not None:  # a frame under way in place, handed bytes the usual way
            take = min(len(data), self._need - self._have)
            self._fill[self._have : self._have + take] = memoryview(data)[:take]
            self.frame_filled(take)
            if take == len(data):
                return
            data = bytes(memoryview(data)[take:])
        if self.fill_in_place and self._ready is None and self._pos == len(self._buf) and self._parts is None:
            data = self._start_in_place(data)
            if data is None:
                return
        if self._parts is not None:
            self._parts.append(data if type(data) is bytes else bytes(data))  # a view's memory may be reused
            self._have += len(data)
            if self._have >= self._need:
                self._join()
            return
        buf, pos = self._buf, self._pos
        if pos == len(buf):
            self._buf, self._pos = bytes(data), 0
        else:
            if isinstance(buf, bytes):
                self._buf = bytearray(memoryview(buf)[pos:])
            elif pos:
                del buf[:pos]  # drop the frames already returned before growing the buffer
            self._pos = 0
            self._buf += data
        if self._ready is None:
            self._maybe_collect()

    def _start_in_place(self, data: bytes | memoryview) -> bytes | memoryview | None:
        """Bytes that begin a frame: a large one is copied straight into its own bytes object, whole or as far as it
        came (rather than into the buffer first and out of it again); what follows it, if anything, is returned."""
        if len(data) < 4:
            return data
        (size,) = _SIZE.unpack_from(data, 0)
        if size < _COLLECT_FROM or size > self.max_size:
            return data
        take = self._begin_in_place(size, memoryview(data)[4:])
        rest = memoryview(data)[4 + take :]
        return rest if len(rest) else None

    def _begin_in_place(self, size: int, first: memoryview) -> int:
        """A bytes object for a frame of ``size`` bytes, filled with as much of ``first`` as it takes; how much."""
        self._frame, self._fill = unfilled_bytes(size)
        self._have, self._need = 0, size
        take = min(size, len(first))
        self._fill[:take] = first[:take]
        self.frame_filled(take)
        return take

    def _maybe_collect(self) -> None:
        """Start collecting when the next frame is large, acceptable and still incomplete."""
        buf, pos = self._buf, self._pos
        available = len(buf) - pos
        if available < 4:
            return
        (size,) = _SIZE.unpack_from(buf, pos)
        if size < _COLLECT_FROM or size > self.max_size or available - 4 >= size:
            return
        if self.fill_in_place:
            with memoryview(buf) as view:
                self._begin_in_place(size, view[pos + 4 :])
            self._buf, self._pos = b"", 0
            return
        if isinstance(buf, bytes):
            first: bytes | memoryview = memoryview(buf)[pos:]  # immutable: a view is safe to keep
        else:
            with memoryview(buf) as view:
                first = bytes(view[pos:])
        self._parts, self._have, self._need = [first], available, 4 + size
        self._buf, self._pos = b"", 0

    def _join(self) -> None:
        parts = self._parts
        assert parts is not None
        extra = self._have - self._need  # bytes of the frames after this one, at the end of the last chunk
        last = memoryview(parts[-1])
        pieces = [memoryview(parts[0])[4:], *parts[1:-1], last[: len(last) - extra]] if len(parts) > 1 else \
            [memoryview(parts[0])[4 : len(last) - extra]]
        self._ready = b"".join(pieces)
        self._buf, self._pos = (bytes(last[len(last) - extra :]) if extra else b""), 0
        self._parts, self._have, self._need = None, 0, 0

    def frame_buffer(self) -> memoryview | None:
        """Where the rest of the large frame under way goes (at most up to its end), or None when no frame is
        being filled in place: the caller then hands what it reads to :meth:`receive`."""
        if self._fill is None:
            return None
        return self._fill[self._have : self._need]

    def frame_filled(self, count: int) -> None:
        """``count`` more bytes were written at the start of the last :meth:`frame_buffer`."""
        self._have += count
        if self._have >= self._need:
            self._ready, self._frame, self._fill = self._frame, None, None
            self._have = self._need = 0

    @property
    def frame_ready(self) -> bool:
        """True if :meth:`next_frame` would return a frame or raise (a refused size), False if it needs more bytes."""
        if self._ready is not None:
            return True
        buf, pos = self._buf, self._pos
        if len(buf) - pos < 4:
            return False
        (size,) = _SIZE.unpack_from(buf, pos)
        return size < 0 or size > self.max_size or len(buf) - pos - 4 >= size

    def next_frame(self) -> bytes | None:
        """The next complete frame's payload, or None until more bytes arrive.

        Raises FrameTooLarge for a size above ``max_size`` and ProtocolError for a negative size, as soon as the
        size prefix is complete (its body is never waited for), and again on every later call.
        """
        ready = self._ready
        if ready is not None:
            self._ready = None
            if self._buf:
                self._maybe_collect()
            return ready
        buf, pos = self._buf, self._pos
        available = len(buf) - pos
        if available < 4:
            return None
        (size,) = _SIZE.unpack_from(buf, pos)
        if size < 0:
            raise ProtocolError(f"invalid frame size {size}")
        if size > self.max_size:
            raise FrameTooLarge(size, self.max_size)
        if available - 4 < size:
            return None
        end = pos + 4 + size
        if isinstance(buf, bytes):
            frame = buf[pos + 4 : end]
        else:
            with memoryview(buf) as view:  # one copy into the returned bytes, and no view left to pin the buffer
                frame = bytes(view[pos + 4 : end])
        if end == len(buf):
            self._buf, self._pos = b"", 0
        else:
            self._pos = end
        return frame

    def feed(self, data: bytes) -> list[bytes]:
        """Receive ``data`` and return every complete frame. A refused size raises, and the frames this call had
        already cut are lost with it: a connection that must answer them uses :meth:`next_frame`."""
        self.receive(data)
        frames = []
        while (frame := self.next_frame()) is not None:
            frames.append(frame)
        return frames
