"""tests/differential/test_classic_groups.py with both brokers on Kafka's new group coordinator (see this folder's conftest)."""

from tests.differential.test_classic_groups import *  # noqa: F403 (the tests and their fixtures, collected here again)
