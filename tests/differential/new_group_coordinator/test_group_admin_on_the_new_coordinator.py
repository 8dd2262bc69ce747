"""tests/differential/test_group_admin.py with both brokers on Kafka's new group coordinator (see this folder's conftest)."""

from tests.differential.test_group_admin import *  # noqa: F403 (the tests and their fixtures, collected here again)
