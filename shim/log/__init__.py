"""Partition logs: records appended, read back and kept (issue 13, the data plane).

What belongs here: the storage interface with its in-memory twin and the on-disk form in Kafka's own layout
(``<topic>-<partition>/<base offset>.log`` and its indexes, readable by ``kafka-dump-log.sh``), segments, offset
and time indexes, a partition's log (append, read, high watermark, later the last stable offset), the manager of all
partitions' logs, retention, and compaction (the log cleaner's work on one log: :mod:`.cleaner`). Plain state: no asyncio transports, no decoded wire messages, testable without a
socket, as ``authorizer/`` is. Record batches come from ``kafka_shim.protocol.records``.

May import (README, Layout; tests/test_layering.py checks it): layer 2 of shim. The stdlib, ``kafka_shim.protocol``,
``kafka_shim.authorizer``, and the shim layers below it (``javacompat``, ``config``); never ``requests``,
``handlers``, ``net`` or ``broker``. ``groups`` and ``txn`` may import it.
"""
