"""README's "Layout" section stays true to the tree: every shim folder and module has its line, the handler table
matches the ``@handles`` registrations, and the layer table is the one tests/test_layering.py enforces."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from kafka_shim.protocol.codes import ApiKey
from tests.support.import_contract import SHIM_LAYERS

ROOT = Path(__file__).resolve().parent.parent
LAYOUT = ROOT.joinpath("README.md").read_text(encoding="utf-8").split("## Layout", 1)[1].split("\n## ", 1)[0]
TREE = LAYOUT.split("```", 2)[1]


def test_every_shim_folder_and_module_has_a_line_in_the_tree() -> None:
    shim = ROOT / "shim"
    folders = {f"{init.parent.name}/" for init in shim.rglob("__init__.py") if init.parent != shim}
    modules = {path.name for path in shim.glob("*.py") if path.name != "__init__.py"}
    listed = set(re.findall(r"^\s+(\S+)", TREE, re.MULTILINE))
    assert folders | modules <= listed, f"add a line to README's Layout tree for: {sorted((folders | modules) - listed)}"


def _registered() -> dict[int, str]:
    """API key -> the handler module that registers it with @handles(ApiKey.NAME, ...) (or a bare number)."""
    found: dict[int, str] = {}
    for path in sorted((ROOT / "shim" / "handlers").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "handles" and node.args:
                key = node.args[0]
                number = ApiKey[key.attr] if isinstance(key, ast.Attribute) else ast.literal_eval(key)
                found[int(number)] = path.relative_to(ROOT).as_posix()
    return found


def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).upper()


def test_the_handler_table_matches_the_registrations() -> None:
    rows = re.findall(r"^\| (\d+) \| (\w+) \| `([^`]+)` \|$", LAYOUT, re.MULTILINE)
    table = {int(key): module for key, _, module in rows}
    assert table == _registered(), "README's Layout handler table differs from the @handles registrations"
    for key, name, _ in rows:
        assert ApiKey(int(key)).name == _snake(name), f"key {key} is {ApiKey(int(key)).name}, not {name}"


def test_the_layer_table_is_the_one_the_checker_enforces() -> None:
    rows = re.findall(r"^\s+\| (\d+) \| (`.+`) \|$", LAYOUT, re.MULTILINE)
    table = {int(layer): tuple(re.findall(r"`(\w+)`", units)) for layer, units in rows}
    assert table == dict(enumerate(SHIM_LAYERS, start=1))
