"""Broker addresses in answers, rewritten so a client keeps talking through the capture proxy.

Kafka's clients learn where to connect from three answers: Metadata (every version: ``brokers``), FindCoordinator
(v0-3: ``node_id``/``host``/``port``; v4+: one entry per key in ``coordinators``) and DescribeCluster (``brokers``).
Each advertised node gets the address the proxy gives it (``address_for``: its own listen address, or a port per
node); entries for no node (a coordinator error's node -1, host "", port -1) stay as the broker sent them. The answer is decoded and re-encoded
with kafka_shim.protocol at the request's version; answers without an address to change are passed on as they are.
"""

from __future__ import annotations

from collections.abc import Callable

from kafka_shim.protocol.codes import ApiKey
from kafka_shim.protocol.framing import decode_response, encode_response

# node id -> the (host, port) to advertise for it; None leaves the node as the broker advertised it.
AddressFor = Callable[[int], tuple[str, int] | None]

REWRITTEN_APIS = frozenset({ApiKey.METADATA, ApiKey.FIND_COORDINATOR, ApiKey.DESCRIBE_CLUSTER})


def rewrite_addresses(api_key: int, api_version: int, payload: bytes, address_for: AddressFor) -> bytes | None:
    """The response frame (without size prefix) with its broker addresses replaced, or None when nothing changed.

    Raises the codec's errors for an answer that does not decode (the caller passes such an answer on unchanged)."""
    if api_key not in REWRITTEN_APIS:
        return None
    correlation_id, body = decode_response(api_key, api_version, payload)
    if api_key == ApiKey.FIND_COORDINATOR and api_version < 4:
        changed = _move(body, address_for)
    else:
        entries = body.coordinators if api_key == ApiKey.FIND_COORDINATOR else body.brokers
        changed = False
        for entry in entries:
            changed = _move(entry, address_for) or changed
    if not changed:
        return None
    return encode_response(api_key, api_version, correlation_id, body)[4:]


def advertised_nodes(api_key: int, api_version: int, payload: bytes) -> list[tuple[int, str, int]]:
    """(node id, host, port) of every node the answer advertises (none for other APIs and placeholder entries)."""
    if api_key not in REWRITTEN_APIS:
        return []
    _, body = decode_response(api_key, api_version, payload)
    if api_key == ApiKey.FIND_COORDINATOR and api_version < 4:
        entries = [body]
    else:
        entries = body.coordinators if api_key == ApiKey.FIND_COORDINATOR else body.brokers
    nodes = []
    for entry in entries:
        node_id = entry.broker_id if hasattr(entry, "broker_id") else entry.node_id
        if node_id >= 0:
            nodes.append((node_id, entry.host, entry.port))
    return nodes


def _move(entry: object, address_for: AddressFor) -> bool:
    node_id = entry.broker_id if hasattr(entry, "broker_id") else entry.node_id  # type: ignore[attr-defined]
    if node_id < 0:
        return False  # no node: an error answer's placeholder
    target = address_for(node_id)
    if target is None:
        return False
    host, port = target
    if (entry.host, entry.port) == (host, port):  # type: ignore[attr-defined]
        return False
    entry.host, entry.port = host, port  # type: ignore[attr-defined]
    return True
