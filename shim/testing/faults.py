"""Faults on an in-process broker, from the test's thread: ``broker.faults.add("Produce", error_code=...)``.

The rules live on the broker's event loop (``shim.faults.FaultSet``); every call here runs there and waits for it,
so a rule added before a client sends is in force for that request. ``Broker.reset`` (the pytest plugin, between
tests) drops every rule.
"""

from __future__ import annotations

from typing import Any

from kafka_shim.shim.faults.rules import FaultRule


class FaultControl:
    def __init__(self, embedded: Any) -> None:  # an EmbeddedBroker
        self._embedded = embedded

    def add(self, api: int | str, action: str = "error", *, error_code: int | str = 0, delay_ms: int = 0,
            count: int | None = 1, fraction: float = 1.0, topic: str | None = None, group: str | None = None,
            principal: str | None = None, throttle_ms: int = 0) -> int:
        """Make the next ``count`` matching requests of ``api`` (a name like "Produce" or a key) answer ``error_code``
        (Kafka's whole-request error answer), wait ``delay_ms`` first (``action="delay"``), close the connection
        (``action="close"``) or be throttled (``action="throttle"``: answered with ``throttle_time_ms``, then the
        connection muted that long); ``count=None``: every one until removed. Returns the rule's id."""
        rule = FaultRule(api, action, error_code=error_code, delay_ms=delay_ms, count=count, fraction=fraction,
                         topic=topic, group=group, principal=principal, throttle_ms=throttle_ms)
        return self._embedded.call(lambda: self._faults().add(rule).rule_id)

    def error(self, api: int | str, error_code: int | str, count: int | None = 1, **match: Any) -> int:
        return self.add(api, "error", error_code=error_code, count=count, **match)

    def delay(self, api: int | str, delay_ms: int, count: int | None = 1, **match: Any) -> int:
        return self.add(api, "delay", delay_ms=delay_ms, count=count, **match)

    def close(self, api: int | str, count: int | None = 1, **match: Any) -> int:
        return self.add(api, "close", count=count, **match)

    def throttle(self, api: int | str, throttle_ms: int, count: int | None = 1, **match: Any) -> int:
        return self.add(api, "throttle", throttle_ms=throttle_ms, count=count, **match)

    def leaderless(self, topic: str, partition: int | None = None, duration_ms: int | None = None) -> int:
        """The partition (every one of the topic when None) loses its leader for ``duration_ms`` (None: until
        removed): Metadata shows leader -1 (LEADER_NOT_AVAILABLE), Produce and Fetch get NOT_LEADER_OR_FOLLOWER; then
        it is led again under a new leader epoch. Returns the fault's id (for ``remove``)."""
        return self._embedded.call(lambda: self._faults().hold("leaderless", topic, partition, duration_ms).fault_id)

    def stall_fetch(self, topic: str, partition: int | None = None, duration_ms: int | None = None) -> int:
        """Fetches read no records of the partition (every one of the topic when None) for ``duration_ms`` (None:
        until removed), waiting their max_wait_ms as on an idle partition. Returns the fault's id."""
        return self._embedded.call(lambda: self._faults().hold("stall_fetch", topic, partition, duration_ms).fault_id)

    def remove(self, fault_id: int) -> bool:
        """Remove a rule or a partition fault (a leaderless partition is led again at once)."""
        return self._embedded.call(lambda: self._faults().remove(fault_id))

    def clear(self) -> None:
        self._embedded.call(lambda: self._faults().clear())

    def rules(self) -> list[dict[str, Any]]:
        """The rules in force, each with how many requests it has taken (an exhausted one is gone), then the
        partition faults in force, each with its time left."""
        return self._embedded.call(lambda: [rule.describe() for rule in self._faults().rules]
                                   + self._faults().partition_faults.describe())

    def _faults(self) -> Any:
        return self._embedded.broker.services.faults

    # -- a cluster of several nodes in one process (kafka.shim.brokers) ------------------------------------------------
    def stop_broker(self, node_id: int) -> None:
        """The node goes down as a killed Kafka broker does: its partitions' leadership moves to another in-sync
        replica (or is lost), its listeners close, its clients are disconnected. ``start_broker`` brings it back."""
        self._embedded.call_async(lambda broker: broker.stop_node(node_id))

    def start_broker(self, node_id: int) -> None:
        """A stopped node listens again on the same ports and leads the partitions left without a leader."""
        self._embedded.call_async(lambda broker: broker.start_node(node_id))

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        """Another replica (``node_id``) leads the partition, under a new leader epoch: the old leader answers
        NOT_LEADER_OR_FOLLOWER and clients refresh their metadata."""
        self._embedded.call(lambda: self._embedded.broker.move_leader(topic, partition, node_id))
