"""Which node coordinates a group: in a cluster of several nodes in one process, the leader of the group's
``__consumer_offsets`` partition; the others answer NOT_COORDINATOR, as Kafka's GroupCoordinator does for a group
whose partition it does not lead (``isLocal``)."""

from __future__ import annotations

from kafka_shim.shim.groups.offsets_log import OFFSETS_TOPIC
from kafka_shim.shim.requests.context import RequestContext


def coordinates(ctx: RequestContext, group_id: str | None) -> bool:
    """Whether the node the request reached coordinates ``group_id``. True for a missing or empty id and while
    ``__consumer_offsets`` does not exist: the group coordinator's own checks answer those."""
    cluster = ctx.services.cluster
    if not group_id or len(cluster.node_ids) == 1:
        return True
    node = cluster.coordinator(OFFSETS_TOPIC, group_id)
    return node is None or node == ctx.node_id
