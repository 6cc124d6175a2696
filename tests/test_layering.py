"""Imports flow one way through the package (docs/architecture.md): no module imports a module of
a higher layer, and no two modules import each other, however indirectly.

Every `import` counts, wherever it is: at module level, inside a function (a lazy import is still
a dependency), under `if TYPE_CHECKING:` (a type names the module it comes from), and
`importlib.import_module("lvu....")` with a literal name. Where a lower layer has to reach up (a
registry finding plugins, the engine running a model), it takes the thing as an argument or looks
it up in a registry (lvu/registry.py) instead of importing it.
"""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # (layer, module patterns), lowest first: `*` matches within one dotted part, a trailing `**` a
    # package and everything under it. A module may import its own layer and the ones listed before it.
    ("foundation", ("lvu.version", "lvu.types", "lvu.errors", "lvu.registry", "lvu.paths", "lvu.args", "lvu.textlines",
                    "lvu.progress", "lvu.console_output")),
    ("media", ("lvu.media.**",)),
    ("models", ("lvu.models.**",)),
    ("scoring", ("lvu.scoring.**",)),
    ("benchmarks", ("lvu.benchmarks.**",)),
    ("runs", ("lvu.runs.**",)),
    ("construct", ("lvu.construct.**",)),
    ("analysis", ("lvu.analysis.**",)),
    ("web", ("lvu.web.**",)),
    ("api", ("lvu.api.**",)),
    ("public", ("lvu",)),  # the package module: `import lvu; lvu.run(...)` re-exports the api (lazily)
    ("commands", ("lvu.cli.**",)),
]


class Import(NamedTuple):
    target: str
    line: int


# ---- the graph ----------------------------------------------------------------------------------------


def module_files(src: Path, package: str = "lvu") -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of `package` under `src`."""
    out = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    """The package's modules `name` imports, each with the line of its first import statement."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    root = name.split(".")[0]
    found: dict[str, int] = {}

    def add(dotted: str | None, line: int) -> None:
        while dotted and dotted not in modules:  # `from lvu.x import Thing`: lvu.x
            dotted = dotted.rpartition(".")[0]
        if dotted and dotted != name:
            found.setdefault(dotted, line)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from . import x, from ..runs import y
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:  # `from lvu.media import cache` imports the module lvu.media.cache
                sub = f"{source}.{alias.name}"
                add(sub if sub in modules else source, node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
              and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            add(node.args[0].value, node.lineno)
    return [Import(t, line) for t, line in sorted(found.items()) if t == root or t.startswith(root + ".")]


def import_graph(src: Path = SRC, package: str = "lvu") -> dict[str, list[Import]]:
    modules = module_files(src, package)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


# ---- the checks ---------------------------------------------------------------------------------------


def _matches(name: str, pattern: str) -> bool:
    parts, want = name.split("."), pattern.split(".")
    if want[-1] == "**":
        return len(parts) >= len(want) - 1 and all(map(fnmatch.fnmatchcase, parts, want[:-1]))
    return len(parts) == len(want) and all(map(fnmatch.fnmatchcase, parts, want))


def layer_of(name: str, layers: list[tuple[str, tuple[str, ...]]] = LAYERS) -> int | None:
    hits = [i for i, (_, patterns) in enumerate(layers) if any(_matches(name, p) for p in patterns)]
    assert len(hits) <= 1, f"{name} matches layers {[layers[i][0] for i in hits]}: make the patterns disjoint"
    return hits[0] if hits else None


def back_edges(graph: dict[str, list[Import]], layers: list[tuple[str, tuple[str, ...]]] = LAYERS) -> list[str]:
    out = []
    for name, imports in sorted(graph.items()):
        mine = layer_of(name, layers)
        for imp in imports:
            theirs = layer_of(imp.target, layers)
            if mine is not None and theirs is not None and theirs > mine:
                out.append(f"{name} ({layers[mine][0]}) imports {imp.target} ({layers[theirs][0]}), line {imp.line}")
    return out


def cycles(graph: dict[str, list[Import]]) -> list[tuple[list[str], list[str]]]:
    """Per group of modules that import each other (a strongly connected component): one cycle
    through it (a -> b -> ... -> a) and all its modules."""
    edges = {name: [i.target for i in imports if i.target in graph] for name, imports in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(v: str) -> None:  # Tarjan; the package is small enough for recursion
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [(_cycle_in(sorted(g)[0], g, edges), sorted(g)) for g in groups]


def _cycle_in(start: str, group: set[str], edges: dict[str, list[str]]) -> list[str]:
    """The shortest path start -> ... -> start inside the group (breadth first)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v]):
                if w not in group:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if w not in came_from:
                    came_from[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover  (a group always has one)


# ---- the package --------------------------------------------------------------------------------------


def test_every_module_has_a_layer():
    unplaced = [name for name in import_graph() if layer_of(name) is None]
    assert not unplaced, (f"modules in no layer: {', '.join(unplaced)} — add them to LAYERS here and to the "
                          "table in docs/architecture.md")


def test_no_module_imports_a_higher_layer():
    found = back_edges(import_graph())
    assert not found, "imports against the layers (docs/architecture.md):\n  " + "\n  ".join(found)


def test_no_import_cycles():
    found = [" -> ".join(cycle) + (f"  (in one loop with {', '.join(m for m in group if m not in cycle)})"
                                   if len(group) > len(cycle) - 1 else "")
             for cycle, group in cycles(import_graph())]
    assert not found, "modules that import each other:\n  " + "\n  ".join(found)


def test_docs_show_the_same_layers():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("|") and "`" in line]
    for layer, patterns in LAYERS:
        row = next((r for r in rows if f"| {layer} " in r), None)
        assert row is not None, f"docs/architecture.md has no row for layer {layer!r}"
        for pattern in patterns:
            assert f"`{pattern}`" in row, f"docs/architecture.md: layer {layer!r} does not list `{pattern}`"
    names = [layer for layer, _ in LAYERS]
    order = sorted(names, key=lambda n: next(i for i, r in enumerate(rows) if f"| {n} " in r))
    assert order == names, f"docs/architecture.md lists the layers as {order}, the test as {names}"


# ---- the checker finds what it should -----------------------------------------------------------------


def _package(tmp_path: Path, files: dict[str, str]) -> dict[str, list[Import]]:
    for rel, text in files.items():
        path = tmp_path / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return import_graph(tmp_path, "pkg")


def test_checker_sees_lazy_relative_and_type_only_imports(tmp_path):
    graph = _package(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "def f():\n    from pkg.high import b\n",  # lazy, and against the layers
        "high/__init__.py": "",
        "high/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..low import c\n",
        "low/c.py": "import importlib\nimportlib.import_module('pkg.high.b')\nfrom . import a\n",
    })
    layers = [("low", ("pkg", "pkg.low.**")), ("high", ("pkg.high.**",))]
    assert {(m, i.target) for m, imps in graph.items() for i in imps} == {
        ("pkg.low.a", "pkg.high.b"), ("pkg.high.b", "pkg.low.c"), ("pkg.low.c", "pkg.high.b"), ("pkg.low.c", "pkg.low.a")}
    assert back_edges(graph, layers) == ["pkg.low.a (low) imports pkg.high.b (high), line 2",
                                         "pkg.low.c (low) imports pkg.high.b (high), line 2"]
    assert cycles(graph) == [(["pkg.high.b", "pkg.low.c", "pkg.high.b"], ["pkg.high.b", "pkg.low.a", "pkg.low.c"])]


def test_checker_reports_a_long_cycle_in_order(tmp_path):
    graph = _package(tmp_path, {"__init__.py": "", "a.py": "import pkg.b\n", "b.py": "from pkg import c\n",
                                "c.py": "from pkg.a import thing\n", "d.py": "import pkg.a\n"})
    assert cycles(graph) == [(["pkg.a", "pkg.b", "pkg.c", "pkg.a"], ["pkg.a", "pkg.b", "pkg.c"])]
