"""tests/differential/test_txn_offset_commits.py with both brokers on Kafka's new group coordinator (see this folder's conftest)."""

from tests.differential.test_txn_offset_commits import *  # noqa: F403 (the tests and their fixtures, collected here again)
