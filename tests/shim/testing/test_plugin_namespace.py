"""Installing kafka-shim never collides with a user's own modules (issue 16): a project with its own ``schemas``,
``protocol`` and ``authorizer`` packages uses the ``kafka_shim`` fixture in a fresh pytest process, and both its
modules and kafka-shim work. scripts/check-wheel runs the same project against the built wheel."""

from __future__ import annotations

import pytest

from tests.support.namespace_project import write_project

pytest_plugins = ["pytester"]


def test_user_packages_named_like_kafka_shim_folders_still_import(pytester: pytest.Pytester) -> None:
    write_project(pytester.path)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_user_project.py", timeout=300)
    result.assert_outcomes(passed=1)
