"""Field-by-field comparison of a recorded answer with the replayed one.

Both answers are decoded with ``kafka_shim.protocol`` at the request's version and walked in parallel (structs by
field name, arrays by index: a length difference is reported on the array, then the common prefix is compared).
Fields a version does not carry decode to their defaults on both sides, so "messages only where the version
carries them" holds by itself. ``records`` byte fields (Fetch) are compared batch by batch, header field by header
field and the records' bytes as a whole.

IGNORED below is the one table of what legitimately differs between two runs; ``--ignore FIELD`` adds a field name,
``--compare FIELD`` takes one out. Ids that the replay re-maps (``remap.py``: producer, member, topic and fetch
session ids) are not ignored but compared *through the mapping*: the first pair teaches it, later answers must agree
with it, and a null on one side only (a zero topic id for a topic the replay may no longer describe, producer id -1
where one was given) is a difference.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kafka_shim.traces.replay.remap import LEARNT, IdMap, is_null

# Field name -> why it is not compared. Matched on the last part of the path, at any depth and in any API.
IGNORED: dict[str, str] = {
    "cluster_id": "a new cluster gets a new id (Metadata, DescribeCluster)",
    "host": "broker addresses depend on where the broker runs (Metadata brokers, FindCoordinator, DescribeCluster)",
    "port": "as host",
    "rack": "as host: a deployment setting",
    "client_host": "the address the broker saw: the replayer's, not the original client's (DescribeGroups members)",
    "throttle_time_ms": "quota throttling depends on load, not on what was asked",
    "log_append_time_ms": "the broker's clock when it appended (Produce, LogAppendTime topics)",
    "leader_epoch": "counts leader changes in the partition's history: another cluster or a restarted broker has another",
    "current_leader_epoch": "as leader_epoch",
    "partition_leader_epoch": "as leader_epoch (record batch headers in Fetch answers)",
    "finalized_features_epoch": "the metadata log offset where the features were finalized: differs per cluster (ApiVersions v3+)",
    "generation_id": "a group's rebalance count: timing (a late heartbeat, a slow member) can add a rebalance in one run",
    "member_epoch": "as generation_id, for KIP-848 groups",
    "producer_epoch": "compared with producer_id through the producer mapping, never alone",
}
# Answer class -> (its array that Kafka shuffles, why): compared whatever the order, entries paired after sorting
# both sides by name, error code and message.
SHUFFLED: dict[str, tuple[str, str]] = {
    "DeleteTopicsResponse": ("responses", "ControllerApis shuffles the results so that positions tell nothing"),
}
# Compared unless --ignore-error-messages: texts are Kafka's, but a release or another broker may word them apart.
ERROR_MESSAGE_FIELDS = ("error_message",)
# Compared on purpose, although one might expect them ignored: log_start_offset and offsets (a fresh broker given the
# same workload assigns the same ones; a difference means records or DeleteRecords went differently), node ids
# (set node.id alike, or --ignore node_id,leader_id,controller_id when comparing brokers with other ids).

_LOG_APPEND_TIME = 0x08  # the timestamp-type bit of a batch's attributes
_BATCH = struct.Struct(">qiibIhiqqqhii")  # the 61-byte magic-2 batch header
_BATCH_FIELDS = ("base_offset", "batch_length", "partition_leader_epoch", "magic", "crc", "attributes", "last_offset_delta",
                 "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "records_count")


@dataclass(frozen=True, slots=True)
class Difference:
    path: str
    recorded: Any
    replayed: Any


class Differ:
    """Compares answers with one set of ignored fields, learning ids into ``ids`` as it goes."""

    def __init__(self, ids: IdMap, ignore: set[str] | None = None, ignore_error_messages: bool = False) -> None:
        self.ids = ids
        self.ignore = set(IGNORED) if ignore is None else set(ignore)
        if ignore_error_messages:
            self.ignore.update(ERROR_MESSAGE_FIELDS)

    def compare(self, recorded: Any, replayed: Any) -> list[Difference]:
        """Differences between two decoded answers (protocol messages)."""
        out: list[Difference] = []
        a, b = recorded.to_dict(), replayed.to_dict()
        shuffled = SHUFFLED.get(type(recorded).__name__)
        if shuffled is not None:
            for side in (a, b):
                if isinstance(side.get(shuffled[0]), list):
                    side[shuffled[0]] = sorted(side[shuffled[0]], key=_canonical)
        self._walk(a, b, "", out)
        return out

    def _walk(self, a: Any, b: Any, path: str, out: list[Difference]) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            self._struct(a, b, path, out)
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                out.append(Difference(f"{path}.length" if path else "length", len(a), len(b)))
                key = _entry_key(a, b)
                if key is not None:  # e.g. ApiVersions' api_keys: name what is missing or extra, not every shifted index
                    self._keyed(a, b, key, path, out)
                    return
            for i, (x, y) in enumerate(zip(a, b, strict=False)):
                self._walk(x, y, f"{path}[{i}]", out)
        elif a != b:
            out.append(Difference(path, _plain(a), _plain(b)))

    def _keyed(self, a: list[dict], b: list[dict], key: str, path: str, out: list[Difference]) -> None:
        theirs = {entry[key]: entry for entry in b}
        ours = {entry[key] for entry in a}
        for entry in a:
            where = f"{path}[{key}={entry[key]!r}]"
            if entry[key] in theirs:
                self._walk(entry, theirs[entry[key]], where, out)
            else:
                out.append(Difference(where, "present", "missing"))
        for entry in b:
            if entry[key] not in ours:
                out.append(Difference(f"{path}[{key}={entry[key]!r}]", "missing", "present"))

    def _struct(self, a: dict, b: dict, path: str, out: list[Difference]) -> None:
        if "producer_id" in a and "producer_epoch" in a:
            self._producer(a, b, path, out)
        for name, x in a.items():
            y = b.get(name)
            where = f"{path}.{name}" if path else name
            kind = LEARNT.get(name)
            if kind == "producer" and "producer_epoch" in a:
                continue  # done as a pair above
            if kind is not None and not isinstance(x, list):
                self._mapped(kind, x, y, where, name in self.ignore, out)
            elif name in self.ignore:
                continue
            elif name == "records" and isinstance(x, bytes | None) and isinstance(y, bytes | None) and x != y:
                self._records(x or b"", y or b"", where, out)
            else:
                self._walk(x, y, where, out)

    def _mapped(self, kind: str, x: Any, y: Any, where: str, ignored: bool, out: list[Difference]) -> None:
        known = self.ids.known(kind, x)
        if known is None:
            self.ids.learn(kind, x, y)
            if not ignored and is_null(kind, x) != is_null(kind, y):
                out.append(Difference(where, _plain(x), _plain(y)))
        elif not ignored and known != y:
            out.append(Difference(where, f"{_plain(x)} (replayed as {_plain(known)} before)", _plain(y)))

    def _producer(self, a: dict, b: dict, path: str, out: list[Difference]) -> None:
        rec, rep = (a["producer_id"], a["producer_epoch"]), (b.get("producer_id"), b.get("producer_epoch"))
        expected = self.ids.producer_pairs.get(rec)
        if expected is None:
            if rec[0] >= 0 and rep[0] is not None and rep[0] >= 0:
                self.ids.learn_producer(rec, rep)
            elif (rec[0] < 0) != (rep[0] is None or rep[0] < 0) and "producer_id" not in self.ignore:
                out.append(Difference(f"{path}.producer_id" if path else "producer_id", rec[0], rep[0]))
        elif expected != rep and "producer_id" not in self.ignore:
            out.append(Difference(f"{path}.producer_id" if path else "producer_id", f"{rec} (replayed as {expected} before)", rep))

    def _records(self, a: bytes, b: bytes, path: str, out: list[Difference]) -> None:
        xs, ys = _batches(a), _batches(b)
        if xs is None or ys is None:
            out.append(Difference(path, f"{len(a)} bytes", f"{len(b)} bytes"))
            return
        if len(xs) != len(ys):
            out.append(Difference(f"{path}.batches", len(xs), len(ys)))
        for i, (x, y) in enumerate(zip(xs, ys, strict=False)):
            self._struct(x, y, f"{path}.batch[{i}]", out)


# Fields that identify an entry of an array, tried in this order, for arrays whose lengths differ (where a comparison
# by index would report every entry after the first one missing). Arrays of equal length are compared by index, so
# a different order is reported as such.
ENTRY_KEYS = ("api_key", "name", "topic", "topic_id", "partition_index", "partition", "group_id", "member_id", "node_id",
              "broker_id", "key", "resource_name")


def _canonical(entry: Any) -> tuple[str, int, str]:
    """Where an entry of a shuffled array sorts: by what does not depend on the cluster (ids do)."""
    if not isinstance(entry, dict):
        return ("", 0, repr(entry))
    return (entry.get("name") or "", entry.get("error_code") or 0, entry.get("error_message") or "")


def _entry_key(a: list, b: list) -> str | None:
    entries = a + b
    if not entries or not all(isinstance(e, dict) for e in entries):
        return None
    for key in ENTRY_KEYS:
        if all(key in e for e in entries):
            values = [e[key] for e in a], [e[key] for e in b]
            if all(len(set(map(repr, v))) == len(v) for v in values):  # unique on each side
                return key
    return None


def _batches(data: bytes) -> list[dict[str, Any]] | None:
    """Magic-2 batch headers with their records' bytes; None for anything else (legacy message sets), compared raw."""
    out = []
    pos = 0
    while pos < len(data):
        if pos + _BATCH.size > len(data):
            out.append({"partial_tail": data[pos:]})  # a Fetch may cut its last batch
            break
        header = dict(zip(_BATCH_FIELDS, _BATCH.unpack_from(data, pos), strict=True))
        end = pos + 12 + header["batch_length"]
        if header["magic"] != 2:
            return None
        header["records_bytes"] = data[pos + _BATCH.size:end]
        del header["crc"]  # covers the producer id, which may be re-mapped; the bytes around it are compared
        if header["attributes"] & _LOG_APPEND_TIME:
            del header["max_timestamp"]  # the broker's clock at the append (as log_append_time_ms)
        out.append(header)
        pos = end
    return out


def _plain(value: Any) -> Any:
    """A JSON-friendly value for the report."""
    if isinstance(value, bytes | bytearray):
        return value.hex() if len(value) <= 64 else f"{len(value)} bytes, {bytes(value[:32]).hex()}..."
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value)
