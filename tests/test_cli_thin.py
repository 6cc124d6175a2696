"""The commands hold no logic the library lacks (issue #31, item 6): a module under lvu/cli/ imports
only lvu.api (the library's entry points), other command modules and the foundation (nouns, errors,
argument parsing, console output). Whatever a command needs from the layers in between (the run
store, the construction pipelines, the reports) it gets through an lvu.api function, so a Python
user has the same function. The checker is tests/test_layering.py's import graph: lazy, relative
and TYPE_CHECKING imports count."""

from __future__ import annotations

from test_layering import LAYERS, _matches, import_graph

ALLOWED = ("lvu.api.**", "lvu.cli.**", *dict(LAYERS)["foundation"])


def reaches_past_the_api(graph: dict) -> list[str]:
    out = []
    for name, imports in sorted(graph.items()):
        if not _matches(name, "lvu.cli.**"):
            continue
        for imp in imports:
            if not any(_matches(imp.target, pattern) for pattern in ALLOWED):
                out.append(f"{name} imports {imp.target}, line {imp.line}")
    return out


def test_commands_use_only_the_api_and_the_foundation():
    found = reaches_past_the_api(import_graph())
    assert not found, f"{len(found)} command import(s) past lvu.api:\n" + "\n".join(found)


def test_the_check_sees_a_command_reaching_into_the_store(tmp_path):
    pkg = tmp_path / "lvu"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "runs").mkdir()
    for path in (pkg / "__init__.py", pkg / "cli" / "__init__.py", pkg / "runs" / "__init__.py", pkg / "runs" / "store.py",
                 pkg / "errors.py"):
        path.write_text("")
    (pkg / "cli" / "x.py").write_text("from lvu.errors import LvuError\n\ndef f():\n    from lvu.runs.store import Store\n")
    assert reaches_past_the_api(import_graph(tmp_path)) == ["lvu.cli.x imports lvu.runs.store, line 4"]
