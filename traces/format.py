"""The trace format: one row per Kafka request, in Parquet files partitioned by day (``day=YYYY-MM-DD/``).

Every source writes it (kafka-shim's own capture now; a capture proxy, Kafka's request and authorizer logs and
packet captures later) and every consumer reads it (replay, the Spark audit). The columns, their types and meaning
are documented in traces/FORMAT.md; ``SCHEMA`` below is the one definition. Its version, ``SCHEMA_VERSION``, is
written into every file's key-value metadata (``kafka_shim.trace.schema_version``); a reader refuses files of a
newer version, since it could not know what their new columns mean, and reads older ones.

Readers: ``read_trace(path)`` (a file or a directory, as one ``pyarrow.Table``, the hive ``day`` column added for
directories) and ``iter_requests(table)``, which decodes the raw request and response frames through
``kafka_shim.protocol`` where a row holds them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from kafka_shim.protocol.framing import decode_response, parse_request

SCHEMA_VERSION = 1
VERSION_KEY = b"kafka_shim.trace.schema_version"
SOURCE_KEY = b"kafka_shim.trace.source"

# Row kinds.
REQUEST = "request"
DROPPED = "dropped"  # the capture writer fell behind: ``dropped_requests`` requests were not recorded

# Sources.
CAPTURE = "capture"
PROXY = "proxy"  # kafka-shim capture-proxy (traces.proxy)

# Files being written start with "." (and end in ".inprogress"): Spark and pyarrow.dataset skip such names, so a
# directory being captured into reads as the files already finished.
IN_PROGRESS_PREFIX = "."
IN_PROGRESS_SUFFIX = ".inprogress"
DAY_PREFIX = "day="
# The hive partition column a directory read adds (the files themselves do not hold it).
DAY_FIELD = pa.field("day", pa.string())

DECISION = pa.struct([
    pa.field("kind", pa.string(), nullable=False),  # authorize | by_resource_type | authorized_operations
    pa.field("operation", pa.string()),  # AclOperation name (READ, IDEMPOTENT_WRITE, ...); null for bitfields
    pa.field("resource_type", pa.string(), nullable=False),  # ResourceType name (TOPIC, GROUP, CLUSTER, ...)
    pa.field("resource_name", pa.string()),  # null for by_resource_type
    pa.field("allowed", pa.bool_()),  # null for authorized_operations
    pa.field("rule", pa.string()),  # SuperUser | DefaultAllow | DefaultDeny | MatchingAcl(acl=StandardAcl(...))
    pa.field("resource_ref_count", pa.int32()),
    pa.field("authorized_operations", pa.int32()),  # the KIP-430 bitfield, for kind authorized_operations
])

SCHEMA = pa.schema([
    pa.field("kind", pa.string(), nullable=False),
    pa.field("time", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("connection_id", pa.string()),
    pa.field("client_host", pa.string()),
    pa.field("client_port", pa.int32()),
    pa.field("listener", pa.string()),
    pa.field("security_protocol", pa.string()),
    pa.field("principal", pa.string()),
    pa.field("client_id", pa.string()),
    pa.field("client_software_name", pa.string()),
    pa.field("client_software_version", pa.string()),
    pa.field("api_key", pa.int16()),
    pa.field("api_version", pa.int16()),
    pa.field("correlation_id", pa.int32()),
    pa.field("request", pa.binary()),
    pa.field("request_json", pa.string()),
    pa.field("response", pa.binary()),
    pa.field("response_json", pa.string()),
    pa.field("outcome", pa.string()),
    pa.field("response_time_us", pa.int64()),
    pa.field("decisions", pa.list_(pa.field("item", DECISION))),
    pa.field("dropped_requests", pa.int64()),
    pa.field("dropped_until", pa.timestamp("us", tz="UTC")),
    # Added after version 1's first files, at the end and optional for readers (older files read it as null).
    pa.field("response_rewritten", pa.bool_()),  # proxy rows: the client got a re-encoded answer (broker addresses)
], metadata={VERSION_KEY: str(SCHEMA_VERSION).encode()})


class TraceError(ValueError):
    """A trace that cannot be read: the message names the file and what to do."""


class NewerTraceVersion(TraceError):
    pass


def file_metadata(source: str) -> dict[bytes, bytes]:
    """The key-value metadata every trace file carries."""
    return {VERSION_KEY: str(SCHEMA_VERSION).encode(), SOURCE_KEY: source.encode()}


def day_directory(root: Path, time_us: int) -> Path:
    """``root/day=YYYY-MM-DD`` for a UTC time in microseconds."""
    import datetime

    day = datetime.datetime.fromtimestamp(time_us / 1_000_000, tz=datetime.UTC).date()
    return root / f"{DAY_PREFIX}{day.isoformat()}"


def trace_files(path: str | Path) -> list[Path]:
    """The finished trace files of a directory (recursively, in name order: oldest first), or the file itself."""
    p = Path(path)
    if p.is_file():
        return [p]
    if not p.is_dir():
        raise TraceError(f"{p}: no such trace file or directory")
    return sorted(f for f in p.rglob("*.parquet") if not any(part.startswith((".", "_")) for part in f.relative_to(p).parts))


def check_version(path: Path, metadata: dict[bytes, bytes] | None) -> int:
    """The file's schema version; NewerTraceVersion when this reader is too old for it."""
    raw = (metadata or {}).get(VERSION_KEY)
    if raw is None:
        raise TraceError(f"{path}: not a kafka-shim trace file (its Parquet metadata has no {VERSION_KEY.decode()})")
    try:
        version = int(raw)
    except ValueError:
        raise TraceError(f"{path}: unreadable trace schema version {raw!r}") from None
    if version > SCHEMA_VERSION:
        raise NewerTraceVersion(
            f"{path}: trace schema version {version} is newer than this kafka-shim reads (version {SCHEMA_VERSION} and "
            f"older); upgrade kafka-shim (pip install --upgrade kafka-shim) to read it")
    return version


@dataclass(frozen=True, slots=True)
class Problem:
    """A trace file that could not be read, and why."""

    path: Path
    error: str


def read_trace(path: str | Path, problems: list[Problem] | None = None) -> pa.Table:
    """Every row of a trace file or directory as one table in ``SCHEMA`` (plus ``day`` for day directories).

    A file that cannot be read (truncated, not Parquet, a newer schema) raises TraceError naming it; with a
    ``problems`` list such files are listed there instead and the others read.
    """
    root = Path(path)
    files = trace_files(root)
    good: list[Path] = []
    for f in files:
        try:
            check_version(f, pq.read_schema(f).metadata)
            good.append(f)
        except (TraceError, OSError, pa.ArrowException) as exc:
            message = str(exc) if isinstance(exc, TraceError) else f"{f}: not a readable Parquet file ({exc})"
            if problems is None:
                raise (exc if isinstance(exc, TraceError) else TraceError(message)) from None
            problems.append(Problem(f, message))
    if not good:
        return SCHEMA.empty_table()
    kwargs: dict[str, Any] = {"schema": SCHEMA}
    if root.is_dir():
        kwargs = {"schema": SCHEMA.append(DAY_FIELD), "partitioning": ds.partitioning(pa.schema([DAY_FIELD]), flavor="hive"),
                  "partition_base_dir": str(root)}
    try:
        return ds.dataset([str(f) for f in good], format="parquet", **kwargs).to_table()
    except (OSError, pa.ArrowException) as exc:
        raise TraceError(f"{root}: a trace file could not be read ({exc})") from None


@dataclass(slots=True)
class TracedRequest:
    """One request row with its frames decoded (``request_body`` / ``response_body`` are protocol messages; None
    where the row has no raw bytes or they do not decode, ``decode_error`` then says why)."""

    row: dict[str, Any]
    request_body: Any | None
    response_body: Any | None
    decode_error: str | None


def iter_requests(trace: pa.Table | str | Path) -> Iterator[TracedRequest]:
    """The request rows of a trace, in order, their raw frames decoded through kafka_shim.protocol."""
    table = trace if isinstance(trace, pa.Table) else read_trace(trace)
    for row in table.filter(pc.equal(table["kind"], REQUEST)).to_pylist():
        request_body = response_body = None
        errors: list[str] = []
        raw = row.get("request")
        if raw is not None:
            try:
                request_body = parse_request(raw).decode_body()
            except Exception as exc:  # any frame bytes: a bad one is reported per row, never raised
                errors.append(f"request: {exc}")
        answer = row.get("response")
        if answer is not None and row.get("api_key") is not None:
            try:
                _, response_body = decode_response(row["api_key"], row["api_version"], answer)
            except Exception as exc:
                errors.append(f"response: {exc}")
        yield TracedRequest(row, request_body, response_body, "; ".join(errors) or None)


# Config values in these requests may be passwords (ssl.keystore.password, sasl.jaas.config): like Kafka's request
# log, a trace keeps them only as "REDACTED", in request_json, never as raw bytes.
REDACTED = "REDACTED"
CONFIG_ALTERING_APIS = frozenset({33, 44})  # AlterConfigs, IncrementalAlterConfigs


def redacted_request_json(payload: bytes) -> str | None:
    """A config-altering request as JSON text with every config value replaced by REDACTED (None if undecodable)."""
    try:
        frame = parse_request(payload)
        body = frame.decode_body().to_dict()
    except Exception:  # any bytes: an undecodable frame is simply not described
        return None
    for resource in body.get("resources", ()):
        for config in resource.get("configs", ()):
            if config.get("value") is not None:
                config["value"] = REDACTED
    return to_json_text(body)


def to_json_text(body: Any) -> str:
    """A decoded body as JSON text, for sources without raw bytes (bytes as hex)."""
    return json.dumps(body, default=lambda o: o.hex() if isinstance(o, bytes | bytearray) else str(o), sort_keys=True)
