"""lvu.api's catalog: `list_parts` (the registered benchmarks and models, `lvu list`) and
`benchmark_settings` (one benchmark's settings, `lvu list --settings BENCHMARK`), returning what the
command prints."""

from __future__ import annotations

import re
from importlib.metadata import EntryPoint

import pytest
from typer.testing import CliRunner

from lvu.api import Catalog, Part, SettingDoc, benchmark_settings, list_parts
from lvu.cli import app
from lvu.errors import LvuError
from lvu.models.base import MODELS


def rows(output: str) -> list[list[str]]:
    """The cells of a rich table's rows, as printed (a wide terminal: one line per row)."""
    return [[cell.strip() for cell in line.strip("│ ").split("│")] for line in output.splitlines()
            if line.startswith("│")]


def test_list_parts_is_what_lvu_list_prints(monkeypatch):
    list_parts()  # every registry loaded; then one plugin whose import fails
    monkeypatch.setattr(MODELS, "_entry_points", {"broken": EntryPoint("broken", "no_such_module:Missing", "lvu.models")})
    cli = CliRunner().invoke(app, ["list"], terminal_width=400)
    assert cli.exit_code == 0, cli.output

    catalog = list_parts()
    assert isinstance(catalog, Catalog) and all(isinstance(p, Part) for p in catalog.benchmarks + catalog.models)
    assert {"haystack", "videomme", "jsonl"} <= {p.name for p in catalog.benchmarks}
    broken = [p for p in catalog.models if p.broken]
    assert [p.name for p in broken] == ["broken"] and broken[0].description.startswith("(cannot load: ")
    assert "ocr-match" in {p.name for p in catalog.models if not p.broken}  # the others still show
    assert rows(cli.output) == [[p.name, p.description] for p in catalog.benchmarks + catalog.models]


def test_benchmark_settings_is_what_lvu_list_settings_prints():
    cli = CliRunner().invoke(app, ["list", "--settings", "haystack"], terminal_width=400)
    assert cli.exit_code == 0, cli.output

    settings = benchmark_settings("haystack")
    assert settings and all(isinstance(s, SettingDoc) for s in settings)
    assert "frames" in {s.name for s in settings}
    shown = [[s.name, "unset" if s.default is None else str(s.default), s.description] for s in settings]
    assert rows(cli.output) == shown
    with pytest.raises(LvuError, match=re.escape("haystak")):
        benchmark_settings("haystak")
