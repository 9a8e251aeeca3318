"""The layout's rules (docs/architecture.md), read from the import graph of the code.

Every import of a project module is an edge, wherever it stands in a file (top level,
inside a function, under TYPE_CHECKING). The rules: each top-level folder imports only
the folders below it; `streams/` and `sinks/` never import each other; there is no cycle
among modules; and a project import inside a function says why, with a `# lazy:` comment
on its line or the line above (a measured start-up cost is the only reason).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Who may import whom: each folder may import itself and the folders listed.
ALLOWED: dict[str, frozenset[str]] = {
    "reducers": frozenset(),
    "schemas": frozenset({"reducers"}),
    "common": frozenset({"reducers", "schemas"}),
    "streams": frozenset({"common", "reducers", "schemas"}),
    "sinks": frozenset({"common", "reducers", "schemas"}),
    "reports": frozenset({"common", "reducers", "schemas"}),
    "devtools": frozenset({"streams", "sinks", "common", "reducers", "schemas"}),
    "cli": frozenset({"devtools", "streams", "sinks", "reports", "common", "reducers", "schemas"}),
    "bench": frozenset({"devtools", "streams", "sinks", "common", "reducers", "schemas"}),
}
PACKAGES = tuple(ALLOWED)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module that `name` names (a module, or the package that holds it)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(path: Path) -> Iterator[tuple[str, int, bool]]:
    """(imported project module, line, inside a function) of every import in a file."""
    tree = ast.parse(path.read_text(), str(path))
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    nested = {id(n) for f in functions for n in ast.walk(f) if n is not f}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names] or [node.module]
        else:
            continue
        for name in names:
            target = _resolve(name)
            if target is not None:
                yield target, node.lineno, id(node) in nested


def _edges() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for target, _, _ in _imports(path):
            if target != name:
                graph[name].add(target)
    return graph


def test_each_folder_imports_only_the_folders_below_it() -> None:
    wrong = [
        f"{name} imports {target}"
        for name, targets in _edges().items()
        for target in sorted(targets)
        if (src := name.split(".")[0]) != (dst := target.split(".")[0]) and dst not in ALLOWED[src]
    ]
    assert wrong == []


def test_streams_and_sinks_never_import_each_other() -> None:
    graph = _edges()
    crossing = [
        f"{a} -> {b}"
        for a, targets in graph.items()
        for b in targets
        if {a.split(".")[0], b.split(".")[0]} == {"streams", "sinks"}
    ]
    assert crossing == []


def test_no_import_cycles() -> None:
    graph = _edges()
    # Tarjan's strongly connected components, iteratively; a component of two or more
    # modules is a cycle (a module importing itself is not counted).
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    assert cycles == []


def test_imports_inside_functions_say_why() -> None:
    unexplained = []
    for path in MODULES.values():
        lines = path.read_text().splitlines()
        for target, line, inside in _imports(path):
            if not inside:
                continue
            here = lines[line - 1]
            above = lines[line - 2] if line > 1 else ""
            if "# lazy:" not in here and "# lazy:" not in above:
                unexplained.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert unexplained == []


def test_the_rules_catch_a_violation(tmp_path: Path) -> None:
    """The checks can fail: a function-level import with no reason is found."""
    source = tmp_path / "probe.py"
    source.write_text("def f():\n    from sinks import writer\n")
    found = list(_imports(source))
    assert found == [("sinks.writer", 2, True)]
