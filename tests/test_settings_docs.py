"""Every benchmark's settings are documented where users look (issue #31): each field of each
registered benchmark's Settings model has a description, and `lvu list --settings BENCHMARK`
prints them, one row per setting (name, default, description), as a table."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from golden.record_benchmark_settings import builtin_benchmarks
from lvu.benchmarks.base import BENCHMARKS
from lvu.cli import app
from lvu.errors import LvuError


@pytest.mark.parametrize("name", builtin_benchmarks())
def test_every_setting_of_every_benchmark_has_a_description(name):
    docs = BENCHMARKS.get(name).Settings.docs()
    assert docs, f"{name} declares no settings"
    assert [key for key, text in docs.items() if not text.strip()] == [], f"{name}: settings without a description"


def test_lvu_list_settings_prints_one_row_per_setting():
    out = CliRunner().invoke(app, ["list", "--settings", "lvbench"], env={"COLUMNS": "250"})
    assert out.exit_code == 0, out.output
    rows = [line for line in out.output.splitlines() if line.startswith("│")]
    cells = [[cell.strip() for cell in row.strip("│").split("│")] for row in rows]
    assert [c[:2] for c in cells] == [["frames", "32"], ["fps", "unset"], ["resize", "unset"], ["compat", "official"]]
    docs = BENCHMARKS.get("lvbench").Settings.docs()
    assert [c[2] for c in cells] == list(docs.values())
    assert "lvbench settings" in out.output


def test_lvu_list_settings_shows_a_variants_own_defaults():
    out = CliRunner().invoke(app, ["list", "--settings", "neptune-asr"], env={"COLUMNS": "250"})
    assert out.exit_code == 0, out.output
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in out.output.splitlines()
            if line.startswith("│")}
    assert (rows["frames"], rows["subtitles"], rows["subset"]) == ("1fps", "all", "full")


def test_lvu_list_settings_of_an_unknown_benchmark_is_refused():
    out = CliRunner().invoke(app, ["list", "--settings", "neptun"])
    assert out.exit_code != 0
    assert isinstance(out.exception, LvuError) and "Did you mean 'neptune'?" in str(out.exception)


def test_lvu_list_without_settings_still_lists_benchmarks_and_models():
    out = CliRunner().invoke(app, ["list"], env={"COLUMNS": "250"})
    assert out.exit_code == 0 and "benchmarks" in out.output and "models" in out.output and "lvbench" in out.output
