"""Producer state: producer ids, epochs and per-partition sequence windows (issue 13, the idempotent producer).

What belongs here: allocating producer ids (InitProducerId without a transactional id), epoch bumps and fencing, and
the per (producer id, epoch, partition) sequence state with Kafka's five-batch window (duplicates answered with the
first append's offset, gaps and stale epochs refused with Kafka's codes), kept across restarts. Issue 17
feeds it transactional producers. Plain state: no asyncio transports, no decoded wire messages.

Modules: ``ids`` (producer id allocation, persisted by blocks), ``state`` (per-partition epochs and sequence windows:
``PartitionProducers.check_append`` / ``record_append``, ``rebuild`` from a log), ``snapshot`` (Kafka's
``<offset>.snapshot`` files).

May import (README, Layout; tests/test_layering.py checks it): layer 2 of shim. The stdlib, ``kafka_shim.protocol``,
``kafka_shim.authorizer``, and the shim layers below it (``javacompat``, ``config``); never ``requests``,
``handlers``, ``net`` or ``broker``. ``groups`` and ``txn`` may import it.
"""
