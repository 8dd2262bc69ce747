"""Consumer groups and committed offsets: the group coordinator of a single-broker Kafka 3.9 (issue 14).

What belongs here: the classic protocol's state table (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead),
members, generations, static membership, session and rebalance timeouts; the consumer protocol (KIP-848) with its
server-side assignors and member epochs; committed offsets kept in the log. A coordinator takes plain values, not
wire messages; the thin handlers in ``handlers/`` call it. It may await asyncio events (a JoinGroup that waits for
the rebalance), never touch a transport or a RequestContext.

May import (README, Layout; tests/test_layering.py checks it): layer 2 of shim. The stdlib, ``kafka_shim.protocol``,
``kafka_shim.authorizer``, the shim layers below it (``javacompat``, ``config``), and of its own layer only ``log``
and ``producers``; never ``requests``, ``handlers``, ``net`` or ``broker``.
"""
