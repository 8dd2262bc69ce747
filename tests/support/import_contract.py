"""kafka-shim's import contract (README, "Layout"), checked on the source files with ``ast``.

Every import counts: module level, inside functions, and under ``if TYPE_CHECKING:`` (where circles used to hide).
The rules:

- ``protocol`` imports only the stdlib, crc32c and the optional compression libraries; nothing else of the project
  outside itself.
- ``authorizer`` imports only ``kafka_shim.protocol.codes`` from the rest of the project.
- ``shim`` and ``traces`` import ``protocol`` and ``authorizer``, never each other; the one exception: the composition
  roots ``shim/tools/cli.py`` and ``shim/testing/*`` may import ``traces`` inside functions (the capture sink).
- Inside ``shim``, imports go downward through ``SHIM_LAYERS``: a module may import its own subpackage and any lower
  layer; siblings in one layer may not import each other (except ``SIBLING_IMPORTS``); ``net`` never imports
  ``handlers``. ``shim/__init__.py`` only re-exports lazily (imports inside functions or under TYPE_CHECKING).
- No circle: the imports that run when a module is loaded (module level, TYPE_CHECKING included) form no cycle.

A violation reads ``importer -> imported (rule)  [file:line]``.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

PACKAGE = "kafka_shim"
# The repository's code folders; setup.py installs each as kafka_shim.<folder>.
CODE_FOLDERS = ("protocol", "authorizer", "shim", "traces")
# Names that resolve only inside a checkout, never in an installed wheel.
BARE_NAMES = frozenset((*CODE_FOLDERS, "schemas"))

PROTOCOL_THIRD_PARTY = frozenset({"crc32c", "cramjam", "lz4", "snappy", "zstandard"})
AUTHORIZER_MAY_IMPORT = frozenset({f"{PACKAGE}.protocol.codes"})

# Lowest first. A shim module may import its own subpackage (or top-level module) and anything in a lower layer.
SHIM_LAYERS: tuple[tuple[str, ...], ...] = (
    ("javacompat", "config", "os_threads"),
    ("cluster", "log", "producers", "partitions", "groups", "txn", "quotas", "releases", "security", "metrics"),
    ("requests", "faults", "tap"),
    ("handlers",),
    ("net",),
    ("broker",),
    ("client",),
    ("tools", "testing"),
)
# Same-layer imports that are allowed: the coordinators build on the log and the producer state.
SIBLING_IMPORTS = frozenset({("partitions", "cluster"), ("partitions", "log"), ("partitions", "producers"), ("groups", "log"), ("groups", "producers"), ("txn", "log"), ("txn", "producers"),
                             # the request pipeline hands each request to a RequestTap (shim/tap.py) when one is attached
                             ("requests", "tap"),
                             # and asks the fault rules (shim/faults/) between decoding a request and handling it
                             ("requests", "faults")})
# Lower-layer imports that are still refused: the connection reaches handlers only through requests (dispatch).
FORBIDDEN_DOWNWARD = frozenset({("net", "handlers")})

LAYER_OF = {unit: number for number, units in enumerate(SHIM_LAYERS, start=1) for unit in units}
SHIM = f"{PACKAGE}.shim"

When = Literal["eager", "type_checking", "function"]


@dataclass(frozen=True, slots=True)
class Import:
    importer: str
    target: str  # the module imported (``from m import name`` is m.name when that is a module, else m)
    where: str  # path:line
    when: When  # eager: runs at import; type_checking: under ``if TYPE_CHECKING``; function: inside a def


@dataclass(frozen=True, slots=True, order=True)
class Violation:
    importer: str
    target: str
    rule: str
    where: str

    def __str__(self) -> str:
        return f"{self.importer} -> {self.target} ({self.rule})  [{self.where}]"


def find_modules(root: Path, folders: Iterable[str] = CODE_FOLDERS) -> dict[str, Path]:
    """The project's modules under ``root``, by their installed name (``shim/net/connection.py`` is
    ``kafka_shim.shim.net.connection``)."""
    modules: dict[str, Path] = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join((PACKAGE, *parts))] = path
    return modules


def collect_imports(module: str, path: Path, known: dict[str, Path], root: Path) -> list[Import]:
    """Every import statement of one module, resolved to module names."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: list[Import] = []
    for node, when in _walk(tree.body, "eager"):
        where = f"{path.relative_to(root)}:{node.lineno}"
        if isinstance(node, ast.Import):
            found.extend(Import(module, alias.name, where, when) for alias in node.names)
            continue
        base = _from_base(module, is_package, node)
        for alias in node.names:
            candidate = f"{base}.{alias.name}"
            found.append(Import(module, candidate if candidate in known else base, where, when))
    return found


def _walk(body: list[ast.stmt], when: When) -> Iterator[tuple[ast.Import | ast.ImportFrom, When]]:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, when
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from _walk_all(node, "function")
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _walk(node.body, "function" if when == "function" else "type_checking")
            yield from _walk(node.orelse, when)
        else:
            # Class bodies, try/except, with, other ifs: they run at import time, but may hold functions.
            for child_body in _bodies(node):
                yield from _walk(child_body, when)


def _walk_all(node: ast.AST, when: When) -> Iterator[tuple[ast.Import | ast.ImportFrom, When]]:
    for child in ast.walk(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, when


def _bodies(node: ast.stmt) -> Iterator[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(node, field, None)
        if isinstance(block, list):
            yield block
    for handler in getattr(node, "handlers", ()):
        yield handler.body
    for case in getattr(node, "cases", ()):
        yield case.body


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _from_base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module if is_package else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def check(root: Path, folders: Iterable[str] = CODE_FOLDERS) -> list[Violation]:
    """Every violation of the contract in the tree under ``root``, sorted."""
    known = find_modules(root, folders)
    imports = [found for module, path in known.items() for found in collect_imports(module, path, known, root)]
    violations = {v for found in imports if (v := _rule_violation(found, known)) is not None}
    violations.update(_circles(imports, known))
    return sorted(violations)


def _rule_violation(found: Import, known: dict[str, Path]) -> Violation | None:
    rule = _broken_rule(found, known)
    return None if rule is None else Violation(found.importer, found.target, rule, found.where)


def _broken_rule(found: Import, known: dict[str, Path]) -> str | None:
    importer, target = found.importer, found.target
    source = _folder(importer)
    top = target.split(".")[0]
    if top in BARE_NAMES:
        return f"bare name: write {PACKAGE}.{target}"
    if top != PACKAGE:
        if source == "protocol" and top not in sys.stdlib_module_names and top != "__future__" and top not in PROTOCOL_THIRD_PARTY:
            return "protocol imports only the stdlib, crc32c and compression libraries"
        return None
    if target not in known:
        return "no such module in the project"
    destination = _folder(target)
    if source == destination:
        return _shim_rule(found) if source == "shim" else None
    if source == "protocol":
        return "protocol imports nothing of the project outside itself"
    if source == "authorizer":
        return None if target in AUTHORIZER_MAY_IMPORT else "authorizer imports only kafka_shim.protocol.codes from the project"
    if destination in ("protocol", "authorizer"):
        return None
    if source == "shim" and destination == "traces" and found.when == "function" and _is_composition_root(importer):
        return None  # the command line and the test harness plug a trace capture sink into shim.tap, lazily
    return f"{source} never imports {destination}"


def _is_composition_root(module: str) -> bool:
    return module == f"{SHIM}.tools.cli" or module.startswith(f"{SHIM}.testing.")


def _shim_rule(found: Import) -> str | None:
    importer, target = found.importer, found.target
    if importer == SHIM:
        if found.when == "eager":
            return "shim/__init__.py re-exports lazily: import inside __getattr__ (or under TYPE_CHECKING)"
        return None
    if target == SHIM:
        return "inside shim, import the defining module, not kafka_shim.shim's re-exports"
    source, destination = _unit(importer), _unit(target)
    for unit in (source, destination):
        if unit not in LAYER_OF:
            return f"shim.{unit} has no layer: add it to the contract (README Layout, tests/support/import_contract.py)"
    if source == destination:
        return None
    low, high = LAYER_OF[destination], LAYER_OF[source]
    if destination == "broker" and low >= high:
        return "broker is the composition root: only client, tools and testing import it"
    if low > high:
        return f"upward: {source} (layer {high}) may not import {destination} (layer {low})"
    if low == high and (source, destination) not in SIBLING_IMPORTS:
        return f"same layer: {source} and {destination} (layer {low}) may not import each other"
    if (source, destination) in FORBIDDEN_DOWNWARD:
        return f"{source} never imports {destination} (it goes through requests)"
    return None


def _folder(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def _unit(module: str) -> str:
    """The shim subpackage (or top-level module) a shim module belongs to: kafka_shim.shim.net.connection -> net."""
    return module.split(".")[2]


def _circles(imports: list[Import], known: dict[str, Path]) -> set[Violation]:
    """Each import between modules of one strongly connected component of the load-time import graph."""
    edges: dict[str, dict[str, Import]] = {module: {} for module in known}
    for found in imports:
        if found.when != "function" and found.target in known and found.target != found.importer:
            edges[found.importer].setdefault(found.target, found)
    violations: set[Violation] = set()
    for component in _strongly_connected(edges):
        if len(component) < 2:
            continue
        members = ", ".join(sorted(module.removeprefix(f"{PACKAGE}.") for module in component))
        for importer in component:
            for target, found in edges[importer].items():
                if target in component:
                    violations.add(Violation(importer, target, f"circle through {members}", found.where))
    return violations


def _strongly_connected(edges: dict[str, dict[str, Import]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative so that deep import chains cannot hit the recursion limit."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for start in edges:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(edges[start]))]
        index[start] = lowlink[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = lowlink[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(edges[successor])))
                    advanced = True
                    break
                if successor in on_stack:
                    lowlink[node] = min(lowlink[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                lowlink[parent] = min(lowlink[parent], lowlink[node])
            if lowlink[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components
