"""What the broker received: the decoded requests, each with its principal, for a test's assertions (kfake's
``KeepControl`` log, librdkafka mock's ``rd_kafka_mock_get_requests``).

Kept only while recording is on (the pytest fixture turns it on; ``EmbeddedBroker.received.start()`` otherwise), in
arrival order, the oldest dropped beyond ``limit`` requests or ``limit_bytes`` of request frames (a decoded Produce
keeps its records: a suite that writes much must not keep it all). Plain Python on the broker's event loop; the test's thread reads
it through ``shim.testing.received``, which copies what it returns.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka_shim.authorizer.api_checks import requirements
from kafka_shim.authorizer.model import ResourceType
from kafka_shim.protocol.codes import ApiKey

DEFAULT_LIMIT = 10_000
DEFAULT_LIMIT_BYTES = 64 << 20


@dataclass(frozen=True, slots=True)
class Received:
    api: str  # Kafka's name of the API, e.g. "Produce"
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    principal: str  # "User:alice", "User:ANONYMOUS"
    listener: str
    client_host: str
    request: Any  # the decoded request body (protocol.messages)
    node_id: int  # the node it reached (one of a cluster in one process)
    size: int = 0  # the request frame's bytes

    def names(self, resource_type: ResourceType, topic_name_of: TopicNameOf | None = None) -> set[str]:
        """The topics / groups / transactional ids the request names (those Kafka would authorize it on); topics
        named by id (Fetch v13+) through ``topic_name_of``."""
        return requested_names(self.api_key, self.api_version, self.request, resource_type, topic_name_of)


TopicNameOf = Callable[[uuid.UUID], "str | None"]


def requested_names(api_key: int, version: int, request: Any, resource_type: ResourceType,
                    topic_name_of: TopicNameOf | None = None) -> set[str]:
    """The names of ``resource_type`` a request would be authorized on (``authorizer.api_checks``), topic ids
    resolved through ``topic_name_of`` (the broker's topics)."""
    try:
        asked = requirements(api_key, version, request)
    except KeyError:
        return set()
    out = set()
    for r in asked:
        if r.resource_type != resource_type:
            continue
        name = r.name
        if name is None and r.resource_id is not None and topic_name_of is not None:
            name = topic_name_of(r.resource_id)
        if name is not None:
            out.add(name)
    return out


class ReceivedLog:
    def __init__(self, limit: int = DEFAULT_LIMIT, topic_name_of: TopicNameOf | None = None,
                 limit_bytes: int = DEFAULT_LIMIT_BYTES) -> None:
        self.recording = False
        self.topic_name_of = topic_name_of  # the broker's topic ids, for requests that name topics by id
        self.limit, self.limit_bytes = limit, limit_bytes
        self._entries: deque[Received] = deque()
        self._bytes = 0
        self.dropped = 0  # entries pushed out by the limits since the last clear

    def add(self, entry: Received) -> None:
        entries = self._entries
        entries.append(entry)
        self._bytes += entry.size
        while len(entries) > self.limit or (self._bytes > self.limit_bytes and len(entries) > 1):
            self._bytes -= entries.popleft().size
            self.dropped += 1

    def clear(self) -> None:
        self._entries.clear()
        self._bytes = 0
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._entries)

    def matching(self, api: int | str | None = None, *, principal: str | None = None, topic: str | None = None,
                 group: str | None = None) -> list[Received]:
        key = None if api is None else api_key_of(api)
        out = []
        for entry in self._entries:
            if key is not None and entry.api_key != key:
                continue
            if principal is not None and entry.principal != principal:
                continue
            if topic is not None and topic not in entry.names(ResourceType.TOPIC, self.topic_name_of):
                continue
            if group is not None and group not in entry.names(ResourceType.GROUP, self.topic_name_of):
                continue
            out.append(entry)
        return out


def api_key_of(api: int | str) -> int:
    """An API named as Kafka names it ("Produce", "OffsetFetch", "OFFSET_FETCH") or by key; ValueError otherwise."""
    if isinstance(api, str):
        name = api.strip().upper().replace("-", "_")
        by_camel = {key.name.replace("_", ""): key for key in ApiKey}
        key = ApiKey.__members__.get(name) or by_camel.get(name.replace("_", ""))
        if key is None:
            raise ValueError(f"api={api!r} is not a Kafka API; use a name such as Produce, Fetch, Metadata or a key number")
        return int(key)
    try:
        return int(ApiKey(api))
    except ValueError:
        raise ValueError(f"api key {api} is not a Kafka API key") from None
