"""TappedRequests (shim.tap) as rows of the trace format (traces.format.SCHEMA), a batch at a time.

Runs in the capture writer process (traces.capture_writer), away from the broker's event loop; column by column,
with as little Python per row as it can.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_shim.authorizer.audit import rule_text
from kafka_shim.authorizer.model import AclOperation, ResourceType
from kafka_shim.traces.format import CAPTURE, CONFIG_ALTERING_APIS, DECISION, REQUEST, SCHEMA, redacted_request_json


def tapped_rows(batch: list[Any], source: str = CAPTURE, fields: tuple[str, ...] | None = None) -> pa.Table:
    """TappedRequests (shim.tap) as trace rows, column by column.

    A TappedRequest is a tuple in column order, so the columns are one ``zip``, and the decisions are built as flat
    child arrays with the names looked up by Arrow. A record type may carry further trace columns after
    TappedRequest's (the capture proxy's ``response_rewritten``); its field names are the column names. Plain
    tuples (as the capture writer process receives them) come with their ``fields``."""
    n = len(batch)
    if fields is None:
        fields = getattr(batch[0], "_fields", RECORD_FIELDS) if batch else RECORD_FIELDS
    columns = _RECORD_COLUMNS if fields == RECORD_FIELDS else tuple("time" if f == "time_us" else f for f in fields)
    values = dict(zip(columns, zip(*batch, strict=True), strict=True)) if batch else dict.fromkeys(columns, ())
    if CONFIG_ALTERING_APIS.intersection(values["api_key"]):
        # Config values may be passwords: such requests keep a redacted JSON body instead of their bytes.
        requests = list(values["request"])
        request_json = [None] * n
        for i, (api_key, raw) in enumerate(zip(values["api_key"], requests, strict=True)):
            if api_key in CONFIG_ALTERING_APIS and raw is not None:
                request_json[i], requests[i] = redacted_request_json(raw), None
        values["request"] = requests
        values["request_json"] = request_json
    arrays = []
    for f in SCHEMA:
        name = f.name
        if name == "decisions":
            arrays.append(_decisions_array(values[name]))
        elif name == "time":
            arrays.append(pa.array(values[name], pa.int64()).cast(f.type))
        elif name in values:
            arrays.append(pa.array(values[name], f.type))
        elif name == "kind":
            arrays.append(pa.repeat(pa.scalar(REQUEST, f.type), n))
        elif name == "source":
            arrays.append(pa.repeat(pa.scalar(source, f.type), n))
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


# A TappedRequest's fields as trace columns ("time" is its time_us).
_RECORD_COLUMNS = ("time", "connection_id", "client_host", "client_port", "listener", "security_protocol", "principal",
                   "client_id", "client_software_name", "client_software_version", "api_key", "api_version",
                   "correlation_id", "request", "response", "outcome", "response_time_us", "decisions")
# The same as the record tuples hold them (shim.tap.TappedRequest; traces may not import shim).
RECORD_FIELDS = ("time_us", *_RECORD_COLUMNS[1:])


def _decisions_array(per_request: tuple[list[Any], ...]) -> pa.Array:
    offsets = [0]
    flat: list[Any] = []
    for decisions in per_request:
        if decisions:
            flat.extend(decisions)
        offsets.append(len(flat))
    kind, operation, resource_type, name, allowed, rule, ref_count, operations = (
        zip(*flat, strict=True) if flat else ((),) * 8)
    children = [
        pa.array(kind, pa.string()),
        pc.take(_OPERATION_NAMES, pa.array(operation, pa.int32())),
        pc.take(_RESOURCE_TYPE_NAMES, pa.array(resource_type, pa.int32())),
        pa.array(name, pa.string()),
        pa.array(allowed, pa.bool_()),
        pa.array([r if r is None or type(r) is str else rule_text(r) for r in rule], pa.string()),
        pa.array(ref_count, pa.int32()),
        pa.array(operations, pa.int32()),
    ]
    struct = pa.StructArray.from_arrays(children, fields=list(DECISION))
    # None: the source saw no decisions (the capture proxy), a null list; () : the broker asked nothing, an empty one.
    mask = pa.array([d is None for d in per_request]) if None in per_request else None
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), struct, type=SCHEMA.field("decisions").type, mask=mask)


# Kafka's codes index these (AclOperation 0-14, ResourceType 0-7); a code beyond is a bug upstream and fails the batch.
_OPERATION_NAMES = pa.array([AclOperation.from_code(code).name for code in range(max(map(int, AclOperation)) + 1)])
_RESOURCE_TYPE_NAMES = pa.array([ResourceType.from_code(code).name for code in range(max(map(int, ResourceType)) + 1)])

