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
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_shim.authorizer.api_checks import DECLARATIONS, Mode, requirements
from kafka_shim.authorizer.model import SUPPORTED_OPERATIONS, AclOperation, ResourceType
from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.protocol.framing import api_name, decode_response, parse_request
from kafka_shim.protocol.schema import api_index, message_spec
from kafka_shim.traces.audit.tables import (
    BROKER_QUESTION,
    GATE_AFTER,
    KIND_AUTHORIZE,
    KIND_AUTHORIZED_OPERATIONS,
    KIND_BY_RESOURCE_TYPE,
    KIND_SHORTCUT,
    TIME,
)

# The trace columns the audit reads; responses only where a Metadata request's CREATE questions need them (explode).
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
    *BROKER_QUESTION,
    pa.field("allowed", pa.bool_()),
    pa.field("rule", pa.string()),
])

_HARD_MODES = {Mode.AUTHORIZE_OR_THROW, Mode.FILTER_WITH_ERROR}
# (api key, check key): the reader of the names a broker's answer shows to exist (Check.existing)
_EXISTING_READERS = {(decl.api_key, check.key): check.existing for decl in DECLARATIONS.values() for check in decl.checks
                     if check.existing is not None}
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
        if r.after is not None:
            gate = GATE_AFTER + r.after
        out.append((r.check, r.mode.value, kind, r.operation.name, r.resource_type.name,
                    None if kind == KIND_BY_RESOURCE_TYPE else r.name,
                    str(r.resource_id) if r.resource_id is not None else None, r.ref_count, hard,
                    int(r.error_code) if hard else 0, gate))
    return out


def _questions_from_json(api_key: int, version: int, text: str) -> list[tuple] | tuple[str, str]:
    """Rows without frame bytes (AlterConfigs captured with redacted values, Kafka's request log): the decoded
    body as JSON, read through the same duck-typed readers."""
    try:
        body = json.loads(text, object_hook=_json_struct)
    except ValueError as exc:
        return ("decode_error", f"{api_name(api_key)} v{version}: request_json is not JSON ({exc})")
    return _questions_of(_JsonFrame(api_key, version, body))


def _json_struct(fields: dict[str, Any]) -> SimpleNamespace:
    """A JSON object as the readers see a decoded struct: a topic id is a UUID there, written as its text here (a
    Metadata v12 naming topics has zero ids, which must not read as topics asked by id)."""
    topic_id = fields.get("topic_id")
    if isinstance(topic_id, str):
        try:
            fields["topic_id"] = uuid.UUID(topic_id)
        except ValueError:
            pass  # not a UUID's text: left as it is, so a damaged row is read as it was written
    return SimpleNamespace(**fields)


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


def _classify(api_key: int | None, version: int | None, raw: bytes | None, json_text: str | None,
              source: str | None) -> list[tuple] | tuple[str, str] | None:
    """A request row's questions, its problem (problem, detail), or None for APIs that ask nothing."""
    if api_key is None or version is None:
        return ("unreadable_header", "the request header could not be read when the trace was taken")
    if api_key not in DECLARATIONS or not (DECLARATIONS[api_key].checks or DECLARATIONS[api_key].bitfields):
        return None  # ApiVersions, SASL and the other APIs without ACL checks ask nothing
    if not _valid_version(api_key, version):
        return ("unknown_version", f"{api_name(api_key)} v{version} is not a version Kafka 3.9 defines; its checks are unknown")
    if raw is None and json_text is not None:
        return _questions_from_json(api_key, version, json_text)
    if raw is None:
        return ("no_request_bytes", f"{api_name(api_key)} v{version}: the trace has no request frame (source {source})")
    try:
        return _MEMO.questions(raw, api_key, version)
    except Exception as exc:  # a damaged header: reported per row
        return ("decode_error", f"{api_name(api_key)} v{version}: {exc}")


def _needs_names(result: list[tuple] | tuple[str, str] | None) -> bool:
    return isinstance(result, list) and any(q[5] is None and q[2] != KIND_BY_RESOURCE_TYPE for q in result)


def _template_rows(result: list[tuple] | tuple[str, str]) -> list[tuple]:
    """The question columns (seq onwards) of one classified request."""
    if isinstance(result, tuple):
        return [(None,) * 13 + result]
    rows = []
    for seq, q in enumerate(result):
        check, mode, kind, op, rtype, name, rid, ref_count, hard, code, gate = q
        rows.append((seq, check, mode, kind, op, rtype, name, rid, ref_count, hard, code,
                     _NAME_BY_CODE.get(code, str(code)) if hard else None, gate, None, None))
    return rows


_COMMON = ("request_index", "time", "source", "connection_id", "principal", "client_host", "client_id", "api_key",
           "api_version", "request_name", "correlation_id")


def explode(batch: pa.RecordBatch, first_index: int | None = None,
            answers: Callable[[], pa.Table] | None = None) -> pa.RecordBatch:
    """Question rows for a batch of trace rows. ``request_index`` comes from the batch's ``request_index`` column
    or, without one, counts request rows from ``first_index``.

    ``answers`` reads the rows' ``response`` and ``response_json`` (with ``request_index``) when the batch lacks
    them: only a Metadata request that allows auto-creation needs its answer (``_without_questions_for_existing``),
    and responses are most of a trace's bytes.

    Requests are classified once per distinct (api key, version, client id and body): the columns of the
    requests that share one are copied with Arrow's take, not built row by row. Requests whose unnamed questions
    are named by the broker's own decisions go row by row."""
    table = pa.Table.from_batches([batch])
    table = table.filter(pc.equal(table.column("kind"), "request"))
    if "request_index" not in table.column_names:
        start = first_index or 0
        table = table.append_column("request_index", pa.array(range(start, start + table.num_rows), pa.int64()))
    for name in ("request", "request_json", "decisions", "connection_id", "client_id", "source"):
        if name not in table.column_names:
            typ = questions_input_type(name)
            table = table.append_column(name, pa.nulls(table.num_rows, typ))
    n = table.num_rows
    if n == 0:
        return QUESTIONS.empty_table().to_batches()[0] if QUESTIONS.empty_table().to_batches() else \
            pa.RecordBatch.from_pydict({f.name: [] for f in QUESTIONS}, schema=QUESTIONS)
    key = _body_keys(table)
    uniq = pc.unique(key)
    position = pc.index_in(key, value_set=uniq).to_numpy(zero_copy_only=False)
    api_keys, versions = table.column("api_key"), table.column("api_version")
    raws, jsons, sources = table.column("request"), table.column("request_json"), table.column("source")
    has_decisions = pc.is_valid(table.column("decisions")).to_numpy(zero_copy_only=False)
    first: np.ndarray | None = None  # each distinct key's first row, needed only for a key not seen before

    def classify(u: int) -> list[tuple] | tuple[str, str] | None:
        nonlocal first
        if first is None:
            first = pc.index_in(uniq, value_set=key).to_numpy(zero_copy_only=False)
        r = int(first[u])
        return _classify(api_keys[r].as_py(), versions[r].as_py(), raws[r].as_py(), jsons[r].as_py(), sources[r].as_py())

    starts, counts, needs, templates = _TEMPLATES.place(uniq.to_pylist(), classify)
    slow = needs[position] & has_decisions
    fast_rows = np.nonzero(~slow)[0]
    per_row = counts[position[fast_rows]]
    rep = np.repeat(fast_rows, per_row)
    offsets = np.repeat(np.cumsum(per_row) - per_row, per_row)
    within = np.arange(len(rep), dtype=np.int64) - offsets
    template_index = np.repeat(starts[position[fast_rows]], per_row) + within
    question_names = _COLUMN_NAMES[len(_COMMON):]
    common = _common_columns(table)
    columns = {name: common[name].take(pa.array(rep)) for name in _COMMON_OUT}
    for name in question_names:
        columns[name] = (templates.column(name).take(pa.array(template_index)) if templates is not None
                         else pa.nulls(0, QUESTIONS.field(name).type))
    fast = pa.table([columns[f.name] for f in QUESTIONS], schema=QUESTIONS)
    if slow.any():
        slow_table = _explode_rows(table.take(pa.array(np.nonzero(slow)[0])))
        fast = pa.concat_tables([fast, slow_table])
    fast = _without_questions_for_existing(fast, table, answers)
    batches = fast.combine_chunks().to_batches()
    return batches[0] if batches else pa.RecordBatch.from_pydict({f.name: [] for f in QUESTIONS}, schema=QUESTIONS)


def _without_questions_for_existing(out: pa.Table, rows: pa.Table, answers: Callable[[], pa.Table] | None) -> pa.Table:
    """Without the questions the broker's recorded answer shows were never asked (``Check.existing``).

    Metadata's CREATE (KafkaApis.handleTopicMetadataRequest) is asked, on the cluster and else per topic, only for
    topics that do not exist; a topic the answer lists with error 0 existed, so no CREATE was asked for it under any
    ACL set, and the cluster question goes too when no topic of the request is left. Other answers keep the questions
    (an auto-created topic is answered UNKNOWN_TOPIC_OR_PARTITION, as is one that auto-creation was off for), and so
    does a request without a readable answer. Later questions move up (``seq``).
    """
    # two cheap column tests (no per-row key built); a pair they let through that declares no reader is left below
    keyed = pc.fill_null(pc.and_(pc.is_in(out.column("api_key"), value_set=pa.array(sorted({k for k, _ in _EXISTING_READERS}), pa.int16())),
                                 pc.is_in(out.column("check"), value_set=pa.array(sorted({c for _, c in _EXISTING_READERS}), pa.string()))),
                         False)
    if not pc.any(keyed).as_py():
        return out
    at = np.nonzero(keyed.to_numpy(zero_copy_only=False))[0]
    asked = out.select(["request_index", "api_key", "api_version", "check", "kind", "resource_name"]).take(pa.array(at)).to_pylist()
    kept = [i for i, q in enumerate(asked) if (q["api_key"], q["check"]) in _EXISTING_READERS]
    at, asked = at[kept], [asked[i] for i in kept]
    if not asked:
        return out
    existing = _existing_by_request(rows, answers, {(q["request_index"], q["check"]): (q["api_key"], q["api_version"]) for q in asked})
    left: dict[tuple[int, str], int] = {}  # per request and check: its per-name questions that stay
    for q in asked:
        if q["kind"] != KIND_SHORTCUT:
            key = (q["request_index"], q["check"])
            left[key] = left.get(key, 0) + (q["resource_name"] not in existing[key])
    drop = np.zeros(out.num_rows, dtype=bool)
    for position, q in zip(at, asked, strict=True):
        key = (q["request_index"], q["check"])
        drop[position] = left.get(key, 0) == 0 if q["kind"] == KIND_SHORTCUT else q["resource_name"] in existing[key]
    if not drop.any():
        return out
    return out.set_column(out.schema.get_field_index("seq"), "seq", _closed_up(out, drop)).filter(pa.array(~drop))


def _existing_by_request(rows: pa.Table, answers: Callable[[], pa.Table] | None,
                         wanted: dict[tuple[int, str], tuple[int, int]]) -> dict[tuple[int, str], frozenset[str]]:
    """Per (request index, check): the names its recorded answer shows to exist (wanted: the API key and version)."""
    found = {key: frozenset[str]() for key in wanted}
    try:
        source = rows if "response" in rows.column_names else answers() if answers is not None else None
    except (OSError, pa.ArrowException):  # the answers' column damaged: the questions stay as the requests ask them
        return found
    if source is None:
        return found
    indexes = sorted({index for index, _ in wanted})
    picked = source.filter(pc.is_in(source.column("request_index"), value_set=pa.array(indexes, pa.int64())))
    texts = picked.column("response_json").to_pylist() if "response_json" in picked.column_names else [None] * picked.num_rows
    answer_of = dict(zip(picked.column("request_index").to_pylist(), zip(picked.column("response").to_pylist(), texts,
                                                                           strict=True), strict=True))
    for (index, check), (api_key, version) in wanted.items():
        raw, text = answer_of.get(index, (None, None))
        found[(index, check)] = _existing_names(api_key, check, version, raw, text)
    return found


def _closed_up(out: pa.Table, drop: np.ndarray) -> pa.Array:
    """``seq`` once the dropped rows are gone: each question moves up by the dropped ones before it in its request."""
    seq = out.column("seq").to_numpy(zero_copy_only=False).astype(np.int64)
    requests = out.column("request_index").to_numpy(zero_copy_only=False)
    order = np.lexsort((seq, requests))
    dropped = drop[order].astype(np.int64)
    before = np.cumsum(dropped) - dropped  # dropped rows earlier in (request, seq) order, over all requests
    ordered = requests[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    first = np.maximum.accumulate(np.where(starts, np.arange(len(order)), 0))
    closed = seq.copy()
    closed[order] = seq[order] - (before - before[first])
    return pa.array(closed, pa.int32())


_EXISTING: dict[tuple[int, str, int, bytes | str], frozenset[str]] = {}  # per distinct answer: a client's repeat
_EXISTING_LIMIT = 10_000


def _existing_names(api_key: int, check: str, version: int, raw: bytes | None, text: str | None) -> frozenset[str]:
    """What the check's ``existing`` reader finds in an answer; empty when there is no readable answer."""
    memo_key = (api_key, check, version, raw[4:] if raw is not None else text or "")  # the correlation id differs
    found = _EXISTING.get(memo_key)
    if found is None:
        if len(_EXISTING) >= _EXISTING_LIMIT:
            _EXISTING.clear()
        found = _EXISTING[memo_key] = _read_existing(api_key, check, version, raw, text)
    return found


def _read_existing(api_key: int, check: str, version: int, raw: bytes | None, text: str | None) -> frozenset[str]:
    try:
        if raw is not None:
            body = decode_response(api_key, version, raw)[1]
        elif text is not None:
            body = json.loads(text, object_hook=_json_struct)
        else:
            return frozenset()
        return frozenset(_EXISTING_READERS[(api_key, check)](body, version))
    except Exception:  # a damaged or cut answer: its questions stay as the request asks them
        return frozenset()


def _body_keys(table: pa.Table) -> pa.ChunkedArray:
    """What a request's questions depend on, as one string per row: the API key and version, then "R" and the frame
    after its header's fixed part, or, without a frame, "J" and the JSON body, or "~" with neither (whose questions
    are a problem naming the row's source). Only the last part holds free bytes, so different requests never share
    a key."""
    frame = pc.binary_join_element_wise(b"R", pc.binary_slice(table.column("request"), 8, 1 << 30), b"",
                                        null_handling="emit_null")
    json = pc.binary_join_element_wise(b"J", pc.cast(table.column("request_json"), pa.binary()), b"", null_handling="emit_null")
    return pc.binary_join_element_wise(pc.cast(pc.cast(table.column("api_key"), pa.string()), pa.binary()),
                                       pc.cast(pc.cast(table.column("api_version"), pa.string()), pa.binary()),
                                       pc.coalesce(frame, json), b"\x00", null_handling="replace", null_replacement=b"~")


class _Templates:
    """The question columns (``_template_rows``) of every distinct request seen, in one Arrow table kept across
    batches: clients repeat the same bodies endlessly, so most batches find every body here and neither decode
    nor build a row. Rows whose answer depends on more than the key (no frame at all: the detail names the
    row's source) and bodies seldom seen twice (Produce records, large bodies) are placed after the kept ones,
    for one batch."""

    KEYS = 100_000  # distinct bodies kept; past it (or past ROWS question rows) the table starts again
    ROWS = 400_000

    def __init__(self) -> None:
        self.places: dict[bytes, tuple[int, int, bool]] = {}  # key: (first row, rows, needs names)
        self.table: pa.Table | None = None
        self.size = 0
        self.lock = threading.Lock()  # the positions handed out must match the table, whoever explodes at once

    def place(self, keys: list[bytes], classify: Callable[[int], list[tuple] | tuple[str, str] | None]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, pa.Table | None]:
        """(starts, counts, needs names) per key into the returned template table (None: no rows at all)."""
        with self.lock:
            return self._place(keys, classify)

    def _place(self, keys: list[bytes], classify: Callable[[int], list[tuple] | tuple[str, str] | None]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, pa.Table | None]:
        if len(self.places) > self.KEYS or self.size > self.ROWS:
            self.places, self.table, self.size = {}, None, 0
        n = len(keys)
        starts, counts, needs = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, bool)
        places = self.places
        kept: list[tuple] = []
        local: list[tuple] = []
        for u, k in enumerate(keys):
            place = places.get(k)
            if place is None:
                result = classify(u)
                rows = _template_rows(result) if result is not None else []
                named = _needs_names(result)
                if _keeps(k, result):
                    place = places[k] = (self.size + len(kept), len(rows), named)
                    kept += rows
                else:  # placed after the kept rows, known only to this batch (as -1 - its offset, until then)
                    place = (-1 - len(local), len(rows), named)
                    local += rows
            starts[u], counts[u], needs[u] = place
        if kept:
            self.size += len(kept)
            self.table = _join(self.table, _template_table(kept))
        if not local:
            return starts, counts, needs, self.table
        relative = starts < 0
        starts[relative] = self.size - 1 - starts[relative]
        return starts, counts, needs, _join(self.table, _template_table(local))


def _join(table: pa.Table | None, more: pa.Table) -> pa.Table:
    if table is None:
        return more
    joined = pa.concat_tables([table, more])
    return joined.combine_chunks() if joined.column(0).num_chunks > 16 else joined


def _keeps(key: bytes, result: list[tuple] | tuple[str, str] | None) -> bool:
    if isinstance(result, tuple) and result[0] == "no_request_bytes":
        return False  # its detail names the row's source, which the key leaves out
    # Produce: its records make every body new (the key starts with the API key's text)
    return len(key) < 4096 and not key.startswith(b"0\x00")


def _template_table(rows: list[tuple]) -> pa.Table:
    names = _COLUMN_NAMES[len(_COMMON):]
    return pa.table({name: pa.array([row[i] for row in rows], QUESTIONS.field(name).type) for i, name in enumerate(names)})


_COMMON_OUT = ("request_index", "time", "source", "connection_id", "principal", "host", "client_id", "api_key",
               "api_version", "request_name", "correlation_id")


def _common_columns(table: pa.Table) -> dict[str, pa.ChunkedArray]:
    keys = table.column("api_key")
    distinct = [k for k in pc.unique(keys).to_pylist() if k is not None]
    names = pc.index_in(keys, value_set=pa.array(distinct, pa.int16()))
    request_name = pc.take(pa.array([api_name(k) for k in distinct], pa.string()), names) if distinct else \
        pa.nulls(table.num_rows, pa.string())
    out = {name: table.column(name) for name in _COMMON if name != "client_host" and name != "request_name"}
    out["host"] = table.column("client_host")
    out["request_name"] = request_name
    return {k: (v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v) for k, v in out.items()}


def questions_input_type(name: str) -> pa.DataType:
    from kafka_shim.traces.format import SCHEMA

    return SCHEMA.field(name).type


def _explode_rows(table: pa.Table) -> pa.Table:
    """Row by row, for requests whose questions the broker's own decisions name."""
    cols = {name: table.column(name).to_pylist() for name in (*TRACE_COLUMNS, "request_index") if name in table.column_names}
    out: dict[str, list] = {f.name: [] for f in QUESTIONS}
    for i in range(table.num_rows):
        api_key, version = cols["api_key"][i], cols["api_version"][i]
        result = _classify(api_key, version, cols["request"][i], cols["request_json"][i], cols["source"][i])
        if result is None:
            continue
        common = (cols["request_index"][i], cols["time"][i], cols["source"][i], cols["connection_id"][i], cols["principal"][i],
                  cols["client_host"][i], cols["client_id"][i], api_key, version,
                  api_name(api_key) if api_key is not None else None, cols["correlation_id"][i])
        if not isinstance(result, tuple):
            result = _resolve(result, cols["decisions"][i])
        for row in _template_rows(result):
            _append(out, common, row)
    return pa.table(out, schema=QUESTIONS)


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
_TEMPLATES = _Templates()


def broker_rows(batch: pa.RecordBatch, first_index: int | None = None) -> pa.RecordBatch:
    """The broker's recorded answers of a batch of trace rows (capture's ``decisions`` column)."""
    names = batch.schema.names
    out: dict[str, list] = {f.name: [] for f in BROKER}
    if "decisions" not in names or batch.column("decisions").null_count == batch.num_rows:
        return pa.RecordBatch.from_pydict(out, schema=BROKER)
    if "request_index" not in names:  # number the request rows before leaving out those without decisions
        is_request = pc.equal(batch.column("kind"), "request").to_numpy(zero_copy_only=False)
        numbers = np.cumsum(is_request) - 1 + (first_index or 0)
        batch = pa.RecordBatch.from_arrays([*batch.columns, pa.array(numbers, pa.int64())], names=[*names, "request_index"])
        names = batch.schema.names
    batch = batch.filter(pc.is_valid(batch.column("decisions")))
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
