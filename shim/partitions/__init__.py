"""The data plane of this broker: each topic's partitions with their logs and producer state (Kafka's ReplicaManager).

Plain state, changed only on the event loop: no wire types, no RequestContext, testable without a socket.
Handlers call it with plain values; it builds on ``cluster`` (which topics exist), ``log`` (the partition logs)
and ``producers`` (idempotent-producer state).
"""
