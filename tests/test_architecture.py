"""The layout's rules (docs/architecture.md), read from the import graph of the code.

Every import of a project module is an edge, wherever it stands in a file (top level,
inside a function, under TYPE_CHECKING). The rules: every project import uses the one
import name (`outcomes.<folder>…`); each top-level folder imports only the folders below
it; `streams/` and `sinks/` never import each other; there is no cycle among modules; a
project import inside a function says why, with a `# lazy:` comment on its line or the
line above (a measured start-up cost is the only reason); each folder imports only the
third-party packages its row allows, and the SDK an agent worker installs alone reaches
no module that needs more than the base dependencies of pyproject.toml.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
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
    "importers": frozenset({"streams", "common", "reducers", "schemas"}),
    "devtools": frozenset({"streams", "sinks", "common", "reducers", "schemas"}),
    "browser": frozenset({"streams", "sinks", "reports", "common", "reducers", "schemas"}),
    "cli": frozenset(
        {
            "browser",
            "devtools",
            "importers",
            "streams",
            "sinks",
            "reports",
            "common",
            "reducers",
            "schemas",
        }
    ),
    "bench": frozenset(
        {"browser", "devtools", "streams", "sinks", "common", "reducers", "schemas"}
    ),
}
PACKAGES = tuple(ALLOWED)

# The third-party packages (import names) each folder may import; a subfolder listed on
# its own row (`reducers.claims`) is checked against that row instead.
THIRD_PARTY: dict[str, frozenset[str]] = {
    "reducers": frozenset({"orjson"}),
    "reducers.claims": frozenset({"orjson", "markdown_it"}),
    "schemas": frozenset(),
    # starlette, uvicorn and h11: the HTTP door (common/door.py), which streams/, sinks/
    # and importers/ mount their routes behind.
    "common": frozenset({"confluent_kafka", "fastavro", "orjson", "starlette", "uvicorn", "h11"}),
    "streams": frozenset(
        {
            "confluent_kafka",
            "orjson",
            "prometheus_client",
            "rocksdict",
            "faust",
            "aiokafka",
            "starlette",
        }
    ),
    "streams.sdk": frozenset({"confluent_kafka", "orjson"}),
    "sinks": frozenset(
        {"clickhouse_connect", "chdb", "confluent_kafka", "orjson", "rich", "starlette"}
    ),
    "reports": frozenset({"orjson"}),
    # opentelemetry-proto and protobuf (`google.protobuf`): the OTLP receiver.
    "importers": frozenset({"orjson", "opentelemetry", "google", "starlette"}),
    "browser": frozenset({"starlette", "jinja2", "orjson"}),
    "devtools": frozenset({"confluent_kafka", "orjson", "rich"}),
    "cli": frozenset({"click", "rich", "orjson"}),
    "bench": frozenset({"matplotlib", "fastavro", "orjson", "confluent_kafka", "faust"}),
}
# What the SDK alone (`pip install outcomes`) is: these modules and every project module
# they import at module level.
SDK_ROOTS = (
    "outcomes.streams.sdk.producer",
    "outcomes.streams.sdk.consumer",
    "outcomes.streams.sdk.webhook",
    "outcomes.streams.sdk.relay",
)


def _module_name(path: Path) -> str:
    parts = ["outcomes", *path.relative_to(ROOT).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _folder(module: str) -> str:
    """`outcomes.streams.sdk.producer` -> `streams`."""
    return module.split(".")[1]


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
        if (src := _folder(name)) != (dst := _folder(target)) and dst not in ALLOWED[src]
    ]
    assert wrong == []


def test_every_project_import_uses_the_one_import_name() -> None:
    """`from sinks import writer` would import a second copy from a checkout's root, and
    nothing at all from a wheel: every project import starts with `outcomes.`."""
    bare = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in [*MODULES.values(), *sorted((ROOT / "tests").rglob("*.py"))]
        for name, line in _top_level_names(path)
        if name.split(".")[0] in PACKAGES
    ]
    assert bare == []


def _top_level_names(path: Path) -> Iterator[tuple[str, int]]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, node.lineno


def _third_party_row(module: str) -> str:
    parts = module.split(".")[1:]
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in THIRD_PARTY:
            return ".".join(parts[:n])
    raise AssertionError(f"{module} is in no row of THIRD_PARTY")


def _third_party(path: Path) -> Iterator[tuple[str, int]]:
    for name, line in _top_level_names(path):
        top = name.split(".")[0]
        if top not in sys.stdlib_module_names and top not in {"outcomes", "__future__", *PACKAGES}:
            yield top, line


def test_each_folder_imports_only_its_third_party_packages() -> None:
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {top} (row {row})"
        for name, path in MODULES.items()
        for top, line in _third_party(path)
        if top not in THIRD_PARTY[row := _third_party_row(name)]
    ]
    assert wrong == []


def _base_dependencies() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {re.split(r"[\[<>=!~ ;]", dep, maxsplit=1)[0] for dep in project["dependencies"]}
    return {name.lower().replace("-", "_") for name in names}


def _module_level_closure(roots: tuple[str, ...]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        # the modules a package's import runs first
        parent = name.rpartition(".")[0]
        if parent in MODULES:
            todo.append(parent)
        todo.extend(t for t, _, inside in _imports(MODULES[name]) if not inside)
    return seen


def test_the_sdk_alone_needs_only_the_base_dependencies() -> None:
    """What `pip install outcomes` brings (pyproject's base dependencies) is all that the
    producer, consumer, relay and webhook modules and what they import need."""
    base = _base_dependencies()
    closure = _module_level_closure(SDK_ROOTS)
    assert {_folder(m) for m in closure} <= {"streams", "common", "reducers", "schemas"}
    wrong = [
        f"{m} imports {top}"
        for m in sorted(closure)
        for top, _ in _third_party(MODULES[m])
        if top not in base
    ]
    assert wrong == []


def test_streams_and_sinks_never_import_each_other() -> None:
    graph = _edges()
    crossing = [
        f"{a} -> {b}"
        for a, targets in graph.items()
        for b in targets
        if {_folder(a), _folder(b)} == {"streams", "sinks"}
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
    source.write_text("def f():\n    from outcomes.sinks import writer\n")
    found = list(_imports(source))
    assert found == [("outcomes.sinks.writer", 2, True)]
    source.write_text("import markdown_it\nfrom sinks import writer\n")
    assert list(_third_party(source)) == [("markdown_it", 1)]
    assert [name for name, _ in _top_level_names(source)] == ["markdown_it", "sinks"]
    # The graph is read at all: a rename that left the names behind would give no edges.
    edges = _edges()
    assert sum(map(len, edges.values())) > 300
    assert "outcomes.reducers.events" in edges["outcomes.streams.sdk.producer"]
