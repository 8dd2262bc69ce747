"""Transactions: the transaction coordinator (issue 17).

What belongs here: the transaction state table (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit,
CompleteAbort, ...), ``transaction.timeout.ms`` and ``transaction.max.timeout.ms``, producer fencing, the partitions and
group offsets added to a transaction, and the control batches (transaction markers) written to the logs, so that
``read_committed`` fetches see the last stable offset and the aborted transactions. Plain state with the rules at the
top of the file, as the groups' state table; it may await asyncio events, never touch a transport.

May import (README, Layout; tests/test_layering.py checks it): layer 2 of shim. The stdlib, ``kafka_shim.protocol``,
``kafka_shim.authorizer``, the shim layers below it (``javacompat``, ``config``), and of its own layer only ``log``
and ``producers``; never ``requests``, ``handlers``, ``net`` or ``broker``.
"""
