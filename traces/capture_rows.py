"""TappedRequests (shim.tap) as rows of the trace format (traces.format.SCHEMA), a batch at a time.

Runs in the capture writer process (traces.capture_writer), away from the broker's event loop; column by column,
with as little Python per row as it can.
"""

from __future__ import annotations

import marshal
import struct
from itertools import accumulate, chain
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_shim.authorizer.audit import rule_text
from kafka_shim.authorizer.model import AclOperation, ResourceType
from kafka_shim.traces.format import CAPTURE, CONFIG_ALTERING_APIS, DECISION, REQUEST, SCHEMA, redacted_request_json


def tapped_rows(batch: list[Any], source: str = CAPTURE, fields: tuple[str, ...] | None = None) -> pa.Table:
    """TappedRequests (shim.tap) as trace rows, column by column.

    The broker's records (RECORD_FIELDS) are spread into the trace's columns; other records hold the columns
    themselves, named by their ``fields`` (the capture proxy's: ROW_FIELDS and its ``response_rewritten``). The
    columns are one ``zip``, and the decisions are built as flat child arrays with the names looked up by Arrow.
    Plain tuples (as the capture writer process receives them) come with their ``fields``."""
    n = len(batch)
    if fields is None:
        fields = getattr(batch[0], "_fields", RECORD_FIELDS) if batch else RECORD_FIELDS
    built: dict[str, pa.Array] = {}  # columns already made as Arrow arrays on the way
    if tuple(fields) == RECORD_FIELDS:
        values, built = _broker_values(batch)
    else:
        columns = tuple("time" if f == "time_us" else f for f in fields)
        values = dict(zip(columns, zip(*batch, strict=True), strict=True)) if batch else dict.fromkeys(columns, ())
    api_keys = built.get("api_key")
    if CONFIG_ALTERING_APIS.intersection(values["api_key"]) if api_keys is None else config_altering(api_keys):
        # Config values may be passwords: such requests keep a redacted JSON body instead of their bytes.
        requests = list(values["request"])
        request_json = [None] * n
        keys = values["api_key"] if api_keys is None else api_keys.to_pylist()
        for i, (api_key, raw) in enumerate(zip(keys, requests, strict=True)):
            if api_key in CONFIG_ALTERING_APIS and raw is not None:
                request_json[i], requests[i] = redacted_request_json(raw), None
        values["request"] = requests
        values["request_json"] = request_json
        built.pop("request", None)
    return table_of(values, built, n, source)


def table_of(values: dict[str, Any], built: dict[str, pa.Array], n: int, source: str) -> pa.Table:
    """The trace's ``n`` rows from columns made as Arrow arrays (``built``) and columns of Python values; what
    neither holds is the request kind, the source, or null."""
    arrays = []
    for f in SCHEMA:
        name = f.name
        if name in built:
            arrays.append(built[name])
        elif name == "decisions":
            arrays.append(decisions_array(values[name]))
        elif name == "time":
            arrays.append(pa.array(values[name], pa.int64()).cast(f.type))
        elif name in values:
            arrays.append(_array(values[name], f.type))
        elif name == "kind":
            arrays.append(pa.repeat(pa.scalar(REQUEST, f.type), n))
        elif name == "source":
            arrays.append(pa.repeat(pa.scalar(source, f.type), n))
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def config_altering(api_keys: pa.Array) -> bool:
    """Whether a batch holds requests whose config values must be redacted."""
    return pc.any(pc.is_in(api_keys, _CONFIG_ALTERING_KEYS)).as_py() is True


# The broker's records (shim.tap.TappedRequest; traces may not import shim, tests check the two agree), and the
# fields of its ``session`` (shim.tap.TappedSession).
RECORD_FIELDS = ("time_us", "session", "principal", "request", "header", "answer", "outcome", "response_time_us",
                 "decisions")
SESSION_FIELDS = ("connection_id", "client_host", "client_port", "listener", "security_protocol",
                  "client_software_name", "client_software_version")
# A row in the trace's own column order ("time_us" for its time): what the capture proxy records (traces.proxy).
ROW_FIELDS = ("time_us", "connection_id", "client_host", "client_port", "listener", "security_protocol", "principal",
              "client_id", "client_software_name", "client_software_version", "api_key", "api_version",
              "correlation_id", "request", "response", "outcome", "response_time_us", "decisions")
# The fixed start of a request header (api key, version, correlation id, client id length), and of a credential
# frame's 8 bytes the broker keeps.
_HEADER_START = struct.Struct(">hhih")
_HEADER_FIXED = struct.Struct(">hhi")
# binary_slice's stop for "to the end" (pyarrow 26 fails a slice without one on some arrays).
_TO_THE_END = 2**31 - 1
_CONFIG_ALTERING_KEYS = pa.array(sorted(CONFIG_ALTERING_APIS), pa.int16())
_HEADER_DTYPE = np.dtype([("key", ">i2"), ("version", ">i2"), ("correlation", ">i4"), ("client_id_length", ">i2")])


def _broker_values(batch: list[Any]) -> tuple[dict[str, Any], dict[str, pa.Array]]:
    """The broker's records as trace columns: the session's fields spread out, the header read from the frame, the
    answer's first frame without its size prefix (work the broker leaves to the writer). Also the columns made as
    Arrow arrays on the way (all but the few ``tapped_rows`` makes from the values)."""
    if not batch:
        return dict.fromkeys(("time", *SESSION_FIELDS, "principal", "client_id", "api_key", "api_version",
                              "correlation_id", "request", "response", "outcome", "response_time_us", "decisions"), ()), {}
    time_us, sessions, principal, requests, headers, answers, outcome, response_time_us, decisions = zip(*batch, strict=True)
    distinct: dict[bytes | tuple[Any, ...], int] = {}
    index = pa.array([distinct.setdefault(session, len(distinct)) for session in sessions], pa.int32())
    built = session_columns([marshal.loads(s) if isinstance(s, bytes) else s for s in distinct], index)
    request_array = pa.array(requests, pa.binary())
    built["api_key"], built["api_version"], built["correlation_id"], built["client_id"] = header_columns(
        request_array, pa.array(headers, pa.binary()))
    built["request"] = request_array
    built["response"] = first_frames(pa.array(answers, pa.binary()))
    values = dict(time=time_us, principal=principal, request=requests, outcome=outcome,
                  response_time_us=response_time_us, decisions=decisions)
    return values, built


def session_columns(distinct: list[tuple[Any, ...]], index: pa.Array) -> dict[str, pa.Array]:
    """The session's fields as columns: a batch holds the requests of a few connections, so each distinct session
    (``distinct``, as tuples) is made into Arrow values once, and the rows take theirs by ``index``. The broker
    hands each session marshalled (shim.tap.TappedSession)."""
    return {name: _array(column, SCHEMA.field(name).type).take(index)
            for name, column in zip(SESSION_FIELDS, zip(*distinct, strict=True), strict=True)}


def header_columns(request_array: pa.Array, header_array: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
    """api_key, api_version, correlation_id and client_id per request, as the broker would read them: nothing from
    a frame too short for a header, no client id from a credential frame (only its ``header``). The headers' fixed
    starts are cut out by Arrow and read by numpy; the client ids are cut per distinct length (a batch holds few)."""
    n = len(request_array)
    whole = pc.fill_null(pc.greater_equal(pc.binary_length(request_array), _HEADER_START.size), False)
    framed_rows = np.flatnonzero(whole.to_numpy(zero_copy_only=False))
    framed = request_array if len(framed_rows) == n else request_array.filter(whole)
    keys = np.zeros(n, np.int16)
    versions = np.zeros(n, np.int16)
    correlations = np.zeros(n, np.int32)
    present = np.zeros(n, np.bool_)
    lengths = np.zeros(0, np.int16)
    if len(framed):
        starts = pc.binary_slice(framed, 0, _HEADER_START.size)
        fixed = np.frombuffer(starts.buffers()[2], _HEADER_DTYPE, count=len(starts))
        keys[framed_rows], versions[framed_rows], correlations[framed_rows] = fixed["key"], fixed["version"], fixed["correlation"]
        present[framed_rows] = True
        lengths = fixed["client_id_length"]
    if header_array.null_count != n:  # credential frames: only their fixed start was kept
        credential = pc.and_(pc.is_valid(header_array), pc.is_null(request_array))
        rows = np.flatnonzero(credential.to_numpy(zero_copy_only=False))
        for row, header in zip(rows, header_array.take(pa.array(rows, pa.int64())).to_pylist(), strict=True):
            keys[row], versions[row], correlations[row] = _HEADER_FIXED.unpack_from(header)
            present[row] = True
    missing = ~present
    return (pa.array(keys, pa.int16(), mask=missing), pa.array(versions, pa.int16(), mask=missing),
            pa.array(correlations, pa.int32(), mask=missing), _client_ids(framed, framed_rows, lengths, n))


def _client_ids(framed: pa.Array, framed_rows: np.ndarray, lengths: np.ndarray, n: int) -> pa.Array:
    """The client id of each framed request (null for length -1, U+FFFD for bytes that are not UTF-8), placed at its
    row among ``n``; rows without a readable header get null."""
    pieces: list[pa.Array] = []
    positions: list[np.ndarray] = []
    for length in np.unique(lengths):
        picked = np.flatnonzero(lengths == length)
        positions.append(framed_rows[picked])
        if length < 0:
            pieces.append(pa.nulls(len(picked), pa.string()))
            continue
        cut = pc.binary_slice(framed.take(picked), _HEADER_START.size, _HEADER_START.size + int(length))
        try:
            pieces.append(cut.cast(pa.string()))
        except pa.ArrowInvalid:  # not UTF-8: decoded as Kafka's Java client would show it
            pieces.append(pa.array([raw.decode("utf-8", "replace") for raw in cut.to_pylist()], pa.string()))
    unread = np.setdiff1d(np.arange(n), framed_rows, assume_unique=True)
    if len(unread):
        positions.append(unread)
        pieces.append(pa.nulls(len(unread), pa.string()))
    if not pieces:
        return pa.nulls(n, pa.string())
    order = np.concatenate(positions)
    row_of = np.empty(n, np.int64)
    row_of[order] = np.arange(n)
    return pa.concat_arrays(pieces).take(pa.array(row_of))


def first_frames(queued: pa.Array) -> pa.Array:
    """Each answer's first frame without its size prefix (null when nothing was sent). The broker queues one frame
    per request, cut by Arrow in one call; the rare answer of several frames is cut on its own."""
    sizes = pc.binary_length(queued)
    sent = pc.fill_null(pc.greater(sizes, 0), False)
    prefixed = pc.fill_null(pc.greater_equal(sizes, 4), False)
    if prefixed.true_count != sent.true_count or not _one_frame_each(queued.filter(prefixed), sizes.filter(prefixed)):
        return pa.array([a[4:4 + int.from_bytes(a[:4], "big")] if a else None for a in queued.to_pylist()],
                        pa.binary())
    # Empty answers (nothing sent) are null, as the frame-by-frame cut makes them.
    return pc.if_else(sent, pc.binary_slice(queued, 4, _TO_THE_END), pa.scalar(None, pa.binary()))


def _one_frame_each(queued: pa.Array, sizes: pa.Array) -> bool:
    """Whether each answer's size prefix covers exactly the rest of it."""
    if not len(queued):
        return True
    prefixes = np.frombuffer(pc.binary_slice(queued, 0, 4).buffers()[2], ">i4", count=len(queued))
    return bool(np.array_equal(prefixes, sizes.to_numpy() - 4))


def decisions_array(per_request: tuple[list[Any], ...]) -> pa.Array:
    # None (the proxy's rows: no decisions seen) holds no entries; counted and flattened in C calls, not per row.
    present = [d or () for d in per_request] if None in per_request else per_request
    offsets = list(accumulate(map(len, present), initial=0))
    flat = list(chain.from_iterable(present))
    # A batch asks the same few questions again and again (a client, the same topics): each distinct decision is
    # made into Arrow values once, and the rows take theirs by index.
    distinct: dict[tuple[Any, ...], int] = {}
    index = [distinct.setdefault(decision, len(distinct)) for decision in flat]
    kind, operation, resource_type, name, allowed, rule, ref_count, operations = (
        zip(*distinct, strict=True) if distinct else ((),) * 8)
    children = [
        pa.array(kind, pa.string()),
        pc.take(_OPERATION_NAMES, pa.array(operation, pa.int32())),
        pc.take(_RESOURCE_TYPE_NAMES, pa.array(resource_type, pa.int32())),
        _array(name, pa.string()),
        pa.array(allowed, pa.bool_()),
        _rule_texts(rule),
        pa.array(ref_count, pa.int32()),
        pa.array(operations, pa.int32()),
    ]
    struct = pc.take(pa.StructArray.from_arrays(children, fields=list(DECISION)), pa.array(index, pa.int32()))
    # None: the source saw no decisions (the capture proxy), a null list; () : the broker asked nothing, an empty one.
    mask = pa.array([d is None for d in per_request]) if None in per_request else None
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), struct, type=SCHEMA.field("decisions").type, mask=mask)


def _rule_texts(rules: tuple[Any, ...]) -> pa.Array:
    """The rules as text: the broker records them as text already; other sources may hand Rule objects."""
    try:
        return _array(rules, pa.string())
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return _array([r if r is None or type(r) is str else rule_text(r) for r in rules], pa.string())


def _array(values: Any, type_: pa.DataType) -> pa.Array:
    """``pa.array``, with a string holding a lone surrogate (an OAUTHBEARER token's ``"\\ud800"`` escape, which
    Kafka keeps in its principal) written as Java's UTF-8 encoder writes it: ``?``. Arrow refuses such strings, and
    one would otherwise fail the whole batch."""
    try:
        return pa.array(values, type_)
    except UnicodeEncodeError:
        return pa.array([_java_utf8(v) for v in values], type_)


def _java_utf8(value: Any) -> Any:
    return value.encode("utf-8", "replace").decode("utf-8") if isinstance(value, str) else value


# Kafka's codes index these (AclOperation 0-14, ResourceType 0-7); a code beyond is a bug upstream and fails the batch.
_OPERATION_NAMES = pa.array([AclOperation.from_code(code).name for code in range(max(map(int, AclOperation)) + 1)])
_RESOURCE_TYPE_NAMES = pa.array([ResourceType.from_code(code).name for code in range(max(map(int, ResourceType)) + 1)])

