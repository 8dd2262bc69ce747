"""The import contract (README, "Layout") holds for the source tree; the checker itself catches what it should.

The rules and the checker are in tests/support/import_contract.py.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.support.import_contract import check, find_modules

ROOT = Path(__file__).resolve().parent.parent


def test_the_source_tree_keeps_the_import_contract() -> None:
    violations = check(ROOT)
    if violations:
        pytest.fail("imports that break the contract (README, Layout):\n" + "\n".join(map(str, violations)), pytrace=False)


def test_the_checker_sees_every_module_of_the_tree() -> None:
    # A checker that found nothing to read would pass every tree.
    modules = find_modules(ROOT)
    assert {"kafka_shim.protocol.codes", "kafka_shim.authorizer.engine", "kafka_shim.shim.net.connection"} <= modules.keys()


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


# A small tree that keeps every rule: relative imports, re-exports, a lazy package init, allowed siblings.
CLEAN = {
    "protocol/__init__.py": "",
    "protocol/codes.py": "import enum\n",
    "protocol/records.py": "import struct\nimport crc32c\nfrom . import codes\n",
    "authorizer/__init__.py": "from kafka_shim.authorizer.engine import Engine\n",
    "authorizer/engine.py": "import structlog\nfrom kafka_shim.protocol.codes import X\n",
    "traces/__init__.py": "from kafka_shim.protocol import records\nfrom kafka_shim.authorizer import Engine\n",
    "shim/__init__.py": """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from kafka_shim.shim.broker import Broker
        def __getattr__(name):
            from kafka_shim.shim.broker import Broker
            return Broker
    """,
    "shim/config/__init__.py": "",
    "shim/log/__init__.py": "from kafka_shim.shim.config import C\n",
    "shim/groups/__init__.py": "from kafka_shim.shim import log\n",
    "shim/handlers/__init__.py": "",
    "shim/handlers/metadata.py": "from ..requests.context import RequestContext\nfrom kafka_shim.shim.log import X\n",
    "shim/requests/__init__.py": "",
    "shim/requests/context.py": "from kafka_shim.shim.groups import G\n",
    "shim/net/__init__.py": "from kafka_shim.shim.requests import context\n",
    "shim/broker.py": "from kafka_shim.shim.net import N\nfrom kafka_shim.shim.handlers import metadata\n",
    "shim/tools/__init__.py": "from kafka_shim.shim.broker import Broker\n",
}


def test_a_tree_that_keeps_the_rules_passes(tmp_path: Path) -> None:
    assert check(_tree(tmp_path, CLEAN)) == []


def test_the_checker_names_each_broken_rule(tmp_path: Path) -> None:
    broken = {
        **CLEAN,
        # protocol reaching up, and into a third-party package it may not use.
        "protocol/codes.py": "import enum\nimport yaml\nfrom kafka_shim.shim.broker import Broker\n",
        # authorizer importing more of protocol than its codes, inside a function (still counted).
        "authorizer/engine.py": "def f():\n    from kafka_shim.protocol.records import R\n",
        "traces/__init__.py": "import kafka_shim.shim.net\nimport protocol.codes\n",
        # An eager re-export in the package init.
        "shim/__init__.py": "from kafka_shim.shim.broker import Broker\n",
        # security (layer 2) reaching a handler under TYPE_CHECKING; the handler imports it back: a circle.
        "shim/security/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..handlers import metadata\n",
        "shim/handlers/metadata.py": "from kafka_shim.shim.security import S\n",
        # net may not reach handlers even lazily; log and quotas are siblings.
        "shim/net/__init__.py": "def f():\n    from kafka_shim.shim.handlers.metadata import M\n",
        "shim/quotas/__init__.py": "from kafka_shim.shim.log import L\nfrom kafka_shim.shim.nothing import N\n",
        "shim/requests/context.py": "from kafka_shim.shim.broker import Broker\nfrom kafka_shim.shim import Broker as B\n",
        "shim/gadgets.py": "from kafka_shim.shim.config import C\n",
    }
    found = [str(violation).split("  [")[0] for violation in check(_tree(tmp_path, broken))]
    assert found == [
        "kafka_shim.authorizer.engine -> kafka_shim.protocol.records (authorizer imports only kafka_shim.protocol.codes from the project)",
        "kafka_shim.protocol.codes -> kafka_shim.shim.broker (protocol imports nothing of the project outside itself)",
        "kafka_shim.protocol.codes -> yaml (protocol imports only the stdlib, crc32c and compression libraries)",
        "kafka_shim.shim -> kafka_shim.shim.broker (shim/__init__.py re-exports lazily: import inside __getattr__ (or under TYPE_CHECKING))",
        "kafka_shim.shim.gadgets -> kafka_shim.shim.config (shim.gadgets has no layer: add it to the contract (README Layout, tests/support/import_contract.py))",
        "kafka_shim.shim.handlers.metadata -> kafka_shim.shim.security (circle through shim.handlers.metadata, shim.security)",
        "kafka_shim.shim.net -> kafka_shim.shim.handlers.metadata (net never imports handlers (it goes through requests))",
        "kafka_shim.shim.quotas -> kafka_shim.shim.log (same layer: quotas and log (layer 2) may not import each other)",
        "kafka_shim.shim.quotas -> kafka_shim.shim.nothing (no such module in the project)",
        "kafka_shim.shim.requests.context -> kafka_shim.shim (inside shim, import the defining module, not kafka_shim.shim's re-exports)",
        "kafka_shim.shim.requests.context -> kafka_shim.shim.broker (broker is the composition root: only client, tools and testing import it)",
        "kafka_shim.shim.security -> kafka_shim.shim.handlers.metadata (circle through shim.handlers.metadata, shim.security)",
        "kafka_shim.shim.security -> kafka_shim.shim.handlers.metadata (upward: security (layer 2) may not import handlers (layer 4))",
        "kafka_shim.traces -> kafka_shim.shim.net (traces never imports shim)",
        "kafka_shim.traces -> protocol.codes (bare name: write kafka_shim.protocol.codes)",
    ]


def test_a_violation_says_where_it_is(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {**CLEAN, "protocol/codes.py": "import enum\n\nfrom kafka_shim.shim.tools import T\n"})
    assert [str(violation) for violation in check(tree)] == [
        "kafka_shim.protocol.codes -> kafka_shim.shim.tools (protocol imports nothing of the project outside itself)  [protocol/codes.py:3]"
    ]
