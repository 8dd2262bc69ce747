"""From trace rows to authorization questions: what Kafka 3.9's broker asks its authorizer for each request.

Each request row's frame is decoded through ``kafka_shim.protocol`` and handed to
``authorizer.api_checks.requirements`` (Kafka 3.9's KafkaApis / AuthHelper checks, declared once). Each
requirement becomes one question row, of a kind:

* ``authorize``: Authorizer.authorize of one operation on one named resource;
* ``shortcut``: the check's one action that, allowed, grants every name of the check (Kafka's "CREATE on the
  cluster, else CREATE per topic"); the broker then does not ask the per-name questions;
* ``by_resource_type``: KIP-679 authorizeByResourceType (InitProducerId without IDEMPOTENT_WRITE: WRITE on any topic);
* ``authorized_operations``: one operation's bit of a KIP-430 bitfield (asked for each supported operation).

Names the request does not carry (all-topics Metadata, ListGroups, topics named only by id) depend on the broker's
state; where the trace holds the broker's own decisions for the request, those name the resources, else the
question keeps a null name and is decided as unresolved (null). The broker's own decisions are turned into rows of
the same shape (``broker_rows``) so both can be compared.

Works on pyarrow RecordBatches of the trace schema (``traces/format.py``), so the same code runs in one process
(engine ``arrow``) and inside Spark executors (``mapInArrow``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pyarrow as pa

from kafka_shim.authorizer.api_checks import DECLARATIONS, Mode, requirements
from kafka_shim.authorizer.model import SUPPORTED_OPERATIONS, AclOperation, ResourceType
from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.protocol.framing import api_name, parse_request
from kafka_shim.protocol.schema import api_index, message_spec
from kafka_shim.traces.audit.tables import (
    KIND_AUTHORIZE,
    KIND_AUTHORIZED_OPERATIONS,
    KIND_BY_RESOURCE_TYPE,
    KIND_SHORTCUT,
    TIME,
)

# The trace columns the audit reads (the frames' responses are never needed).
TRACE_COLUMNS = ("kind", "time", "source", "connection_id", "client_host", "principal", "client_id", "api_key",
                 "api_version", "correlation_id", "request", "request_json", "decisions")

# One row per (request, question), or per request the audit could not judge (problem set, question fields null).
QUESTIONS = pa.schema([
    pa.field("request_index", pa.int64()),
    pa.field("time", TIME),
    pa.field("source", pa.string()),
    pa.field("connection_id", pa.string()),
    pa.field("principal", pa.string()),
    pa.field("host", pa.string()),
    pa.field("client_id", pa.string()),
    pa.field("api_key", pa.int16()),
    pa.field("api_version", pa.int16()),
    pa.field("request_name", pa.string()),
    pa.field("correlation_id", pa.int32()),
    pa.field("seq", pa.int32()),
    pa.field("check", pa.string()),
    pa.field("mode", pa.string()),
    pa.field("kind", pa.string()),
    pa.field("operation", pa.string()),
    pa.field("resource_type", pa.string()),
    pa.field("resource_name", pa.string()),
    pa.field("resource_id", pa.string()),
    pa.field("ref_count", pa.int32()),
    pa.field("hard", pa.bool_()),
    pa.field("error_code", pa.int16()),
    pa.field("error", pa.string()),
    pa.field("gate", pa.string()),  # bitfield questions: the GATE check that must pass first
    pa.field("problem", pa.string()),
    pa.field("detail", pa.string()),
])

# The broker's own answers, one row per question (bitfields spread to one row per supported operation).
BROKER = pa.schema([
    pa.field("request_index", pa.int64()),
    pa.field("time", TIME),
    pa.field("principal", pa.string()),
    pa.field("host", pa.string()),
    pa.field("request_name", pa.string()),
    pa.field("correlation_id", pa.int32()),
    pa.field("kind", pa.string()),  # authorize (shortcuts included: the broker does not tell them apart) | by_resource_type | authorized_operations
    pa.field("operation", pa.string()),
    pa.field("resource_type", pa.string()),
    pa.field("resource_name", pa.string()),
    pa.field("allowed", pa.bool_()),
    pa.field("rule", pa.string()),
])

_HARD_MODES = {Mode.AUTHORIZE_OR_THROW, Mode.FILTER_WITH_ERROR}
_NAME_BY_CODE = {e.value: e.name for e in ErrorCode}


def _valid_version(api_key: int, version: int) -> bool:
    names = api_index().get(api_key)
    return names is not None and version in message_spec(names[0]).valid_versions


def _kind(req: Any) -> str:
    if req.is_shortcut:
        return KIND_SHORTCUT
    if req.mode is Mode.BITFIELD:
        return KIND_AUTHORIZED_OPERATIONS
    if req.any_resource:
        return KIND_BY_RESOURCE_TYPE
    return KIND_AUTHORIZE


class _Memo:
    """Questions per distinct request body: clients repeat the same Metadata / Fetch / heartbeat bodies endlessly."""

    def __init__(self, limit: int = 50_000) -> None:
        self.limit = limit
        self.items: dict[tuple[int, int, bytes], list[tuple] | tuple[str, str]] = {}

    def questions(self, raw: bytes, api_key: int, version: int) -> list[tuple] | tuple[str, str]:
        frame = parse_request(raw)
        body_bytes = bytes(raw[frame.body_offset:])
        key = (api_key, version, body_bytes)
        hit = self.items.get(key)
        if hit is not None:
            return hit
        result = _questions_of(frame)
        if api_key != 0 and len(body_bytes) < 4096:  # Produce bodies carry records: never the same twice
            if len(self.items) >= self.limit:
                self.items.clear()
            self.items[key] = result
        return result


def _questions_of(frame: Any) -> list[tuple] | tuple[str, str]:
    """(check, mode, kind, operation, resource_type, name, resource_id, ref_count, hard, error_code, gate) per
    requirement, or (problem, detail)."""
    try:
        body = frame.decode_body()
    except Exception as exc:  # any bytes: one undecodable request is a reported problem, never a crash
        return ("decode_error", f"{api_name(frame.api_key)} v{frame.api_version}: {exc}")
    try:
        reqs = requirements(frame.api_key, frame.api_version, body)
    except Exception as exc:  # a reader meeting an unexpected request shape: reported, not raised
        return ("requirements_error", f"{api_name(frame.api_key)} v{frame.api_version}: {type(exc).__name__}: {exc}")
    gates = {b.gate for b in DECLARATIONS[frame.api_key].bitfields if b.gate}
    out = []
    for r in reqs:
        kind = _kind(r)
        hard = r.mode in _HARD_MODES and kind != KIND_SHORTCUT
        gate = r.check if kind == KIND_AUTHORIZED_OPERATIONS and r.check in gates else None
        out.append((r.check, r.mode.value, kind, r.operation.name, r.resource_type.name,
                    None if kind == KIND_BY_RESOURCE_TYPE else r.name,
                    str(r.resource_id) if r.resource_id is not None else None, r.ref_count, hard,
                    int(r.error_code) if hard else 0, gate))
    return out


def _questions_from_json(api_key: int, version: int, text: str) -> list[tuple] | tuple[str, str]:
    """Rows without frame bytes (AlterConfigs captured with redacted values, Kafka's request log): the decoded
    body as JSON, read through the same duck-typed readers."""
    try:
        body = json.loads(text, object_hook=lambda d: SimpleNamespace(**d))
    except ValueError as exc:
        return ("decode_error", f"{api_name(api_key)} v{version}: request_json is not JSON ({exc})")
    return _questions_of(_JsonFrame(api_key, version, body))


@dataclass(slots=True)
class _JsonFrame:
    api_key: int
    api_version: int
    body: Any

    def decode_body(self) -> Any:
        return self.body


def _broker_names(decisions: list[dict] | None) -> dict[tuple[str, str, str], list[tuple[str, int]]]:
    """The names the broker asked about per (kind, operation, resource type), for unresolved questions."""
    found: dict[tuple[str, str, str], list[tuple[str, int]]] = {}
    for d in decisions or ():
        if d["resource_name"] is None:
            continue
        if d["kind"] == KIND_AUTHORIZED_OPERATIONS:
            key = (KIND_AUTHORIZED_OPERATIONS, "", d["resource_type"])
        else:
            key = (KIND_AUTHORIZE, d["operation"], d["resource_type"])
        names = found.setdefault(key, [])
        if all(n != d["resource_name"] for n, _ in names):
            names.append((d["resource_name"], d["resource_ref_count"] or 1))
    return found


def explode(batch: pa.RecordBatch, first_index: int | None = None) -> pa.RecordBatch:
    """Question rows for a batch of trace rows. ``request_index`` comes from the batch's ``request_index`` column
    or, without one, counts request rows from ``first_index``."""
    cols = {name: batch.column(name).to_pylist() for name in TRACE_COLUMNS if name in batch.schema.names}
    indexes = batch.column("request_index").to_pylist() if "request_index" in batch.schema.names else None
    out: dict[str, list] = {f.name: [] for f in QUESTIONS}
    memo = _MEMO
    next_index = first_index or 0
    for i in range(batch.num_rows):
        if cols["kind"][i] != "request":
            continue
        index = indexes[i] if indexes is not None else next_index
        next_index += 1
        api_key, version, raw = cols["api_key"][i], cols["api_version"][i], cols["request"][i]
        result: list[tuple] | tuple[str, str]
        if api_key is None or version is None:
            result = ("unreadable_header", "the request header could not be read when the trace was taken")
        elif api_key not in DECLARATIONS or not (DECLARATIONS[api_key].checks or DECLARATIONS[api_key].bitfields):
            continue  # ApiVersions, SASL and the other APIs without ACL checks ask nothing
        elif not _valid_version(api_key, version):
            result = ("unknown_version", f"{api_name(api_key)} v{version} is not a version Kafka 3.9 defines; its checks are unknown")
        elif raw is None and cols.get("request_json", [None] * batch.num_rows)[i] is not None:
            result = _questions_from_json(api_key, version, cols["request_json"][i])
        elif raw is None:
            result = ("no_request_bytes", f"{api_name(api_key)} v{version}: the trace has no request frame (source {cols['source'][i]})")
        else:
            try:
                result = memo.questions(raw, api_key, version)
            except Exception as exc:  # a damaged header: reported per row
                result = ("decode_error", f"{api_name(api_key)} v{version}: {exc}")
        common = (index, cols["time"][i], cols["source"][i], cols["connection_id"][i], cols["principal"][i],
                  cols["client_host"][i], cols["client_id"][i], api_key, version,
                  api_name(api_key) if api_key is not None else None, cols["correlation_id"][i])
        if isinstance(result, tuple):
            _append(out, common, (None,) * 13 + result)
            continue
        resolved = _resolve(result, cols["decisions"][i] if "decisions" in cols else None)
        for seq, q in enumerate(resolved):
            check, mode, kind, op, rtype, name, rid, ref_count, hard, code, gate = q
            _append(out, common, (seq, check, mode, kind, op, rtype, name, rid, ref_count, hard, code,
                                  _NAME_BY_CODE.get(code, str(code)) if hard else None, gate, None, None))
    return pa.RecordBatch.from_pydict(out, schema=QUESTIONS)


def _resolve(questions: list[tuple], decisions: list[dict] | None) -> list[tuple]:
    """Unnamed questions (every resource, or by id) named by the broker's own decisions for the request."""
    if all(q[5] is not None or q[2] == KIND_BY_RESOURCE_TYPE for q in questions) or not decisions:
        return questions
    names = _broker_names(decisions)
    out = []
    for q in questions:
        if q[5] is not None or q[2] == KIND_BY_RESOURCE_TYPE:
            out.append(q)
            continue
        key = (KIND_AUTHORIZED_OPERATIONS, "", q[4]) if q[2] == KIND_AUTHORIZED_OPERATIONS else (KIND_AUTHORIZE, q[3], q[4])
        found = names.get(key)
        if not found:
            out.append(q)
            continue
        for name, count in found:
            out.append((*q[:5], name, None, count, *q[8:]))
    return out


def _append(out: dict[str, list], common: tuple, rest: tuple) -> None:
    for name, value in zip(_COLUMN_NAMES, common + rest, strict=True):
        out[name].append(value)


_COLUMN_NAMES = [f.name for f in QUESTIONS]
_MEMO = _Memo()


def broker_rows(batch: pa.RecordBatch, first_index: int | None = None) -> pa.RecordBatch:
    """The broker's recorded answers of a batch of trace rows (capture's ``decisions`` column)."""
    names = batch.schema.names
    out: dict[str, list] = {f.name: [] for f in BROKER}
    if "decisions" not in names:
        return pa.RecordBatch.from_pydict(out, schema=BROKER)
    kinds, decisions = batch.column("kind").to_pylist(), batch.column("decisions").to_pylist()
    indexes = batch.column("request_index").to_pylist() if "request_index" in names else None
    times, principals, hosts = (batch.column(c).to_pylist() for c in ("time", "principal", "client_host"))
    keys, correlations = batch.column("api_key").to_pylist(), batch.column("correlation_id").to_pylist()
    next_index = first_index or 0
    for i in range(batch.num_rows):
        if kinds[i] != "request":
            continue
        index = indexes[i] if indexes is not None else next_index
        next_index += 1
        if keys[i] not in DECLARATIONS:
            continue
        common = (index, times[i], principals[i], hosts[i], api_name(keys[i]), correlations[i])
        for d in decisions[i] or ():
            if d["kind"] == KIND_AUTHORIZED_OPERATIONS:
                rtype = ResourceType.from_string(d["resource_type"])
                bits = d["authorized_operations"] or 0
                for op in sorted(SUPPORTED_OPERATIONS.get(rtype, ())):
                    _append_broker(out, common, (d["kind"], op.name, d["resource_type"], d["resource_name"],
                                                 bool(bits >> int(op) & 1), None))
            else:
                _append_broker(out, common, (d["kind"], d["operation"], d["resource_type"], d["resource_name"],
                                             d["allowed"], d["rule"]))
    return pa.RecordBatch.from_pydict(out, schema=BROKER)


_BROKER_NAMES = [f.name for f in BROKER]


def _append_broker(out: dict[str, list], common: tuple, rest: tuple) -> None:
    for name, value in zip(_BROKER_NAMES, common + rest, strict=True):
        out[name].append(value)


def iter_batches(table: pa.Table, rows: int = 8192) -> Iterator[pa.RecordBatch]:
    yield from table.to_batches(max_chunksize=rows)


__all__ = ["BROKER", "QUESTIONS", "TRACE_COLUMNS", "AclOperation", "broker_rows", "explode", "iter_batches"]
