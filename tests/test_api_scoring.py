"""`lvu.score` and `lvu.import_results`: the library entries of `lvu score` and `lvu import`, taking a
benchmark by registry name or as an object, and returning what the commands print."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import lvu
import lvu.cli.scoring as scoring_cli
from lvu.api import ImportResult, ScoreResult, import_results, read_run, score
from lvu.benchmarks.base import BENCHMARKS
from lvu.cli import app
from lvu.errors import LvuError

OFFICIAL = Path(__file__).parent / "fixtures" / "videomme_output_test_template.json"
"""Video-MME's official results file: self-contained (its questions come with it), 9 answers."""


def videomme(**settings):
    from lvu.benchmarks import load_all

    load_all()
    return BENCHMARKS.get("videomme")(**settings)


def test_score_returns_the_tables_and_records_lvu_score_prints(tmp_path, monkeypatch):
    printed = []
    real = scoring_cli.print_tables
    monkeypatch.setattr(scoring_cli, "print_tables", lambda tables, title: (printed.append((tables, title)),
                                                                            real(tables, title)))
    out = tmp_path / "rows.jsonl"
    cli = CliRunner().invoke(app, ["score", "videomme", str(OFFICIAL), "--out", str(out)])
    assert cli.exit_code == 0, cli.output

    result = score("videomme", OFFICIAL)
    assert isinstance(result, ScoreResult) and result.benchmark == "videomme"
    assert printed == [(result.tables, f"videomme — {OFFICIAL.name}")]
    assert ("overall", 9, pytest.approx(700 / 9)) in result.tables[0].rows
    assert len(result.samples) == 9 and result.saved.format == "official" and result.problems == []
    assert f"wrote 9 rows to {out}" in cli.output
    assert out.read_text() == "".join(r.model_dump_json() + "\n" for r in result.samples)
    assert not (tmp_path / "lvu-results").exists()  # nothing stored


def test_score_takes_a_benchmark_object_and_refuses_settings_twice():
    by_name = score("videomme", OFFICIAL, settings={"compat": "lmms-eval"})
    by_object = lvu.score(videomme(compat="lmms-eval"), OFFICIAL)
    assert by_object.tables == by_name.tables and by_object.benchmark == "videomme"
    with pytest.raises(LvuError, match="settings are given twice"):
        score(videomme(), OFFICIAL, settings={"compat": "lmms-eval"})
    with pytest.raises(LvuError, match="file not found"):
        score("videomme", OFFICIAL.with_name("missing.json"))


def test_import_results_returns_the_run_lvu_import_prints(tmp_path):
    cli = CliRunner().invoke(app, ["import", str(OFFICIAL), "-b", "videomme", "--results-dir", str(tmp_path / "cli")])
    assert cli.exit_code == 0, cli.output
    cli_run = re.search(r"run (\w{12}): imported 9 of 9 rows \(official\) for 9 of 9 samples · (.+)", cli.output)

    imported = import_results(OFFICIAL, "videomme", results_dir=tmp_path / "api")
    assert isinstance(imported, ImportResult) and imported.run_id == cli_run.group(1)
    assert imported.headline is not None and imported.headline.describe() == cli_run.group(2).strip()
    assert (imported.n_total, imported.n_failed, imported.problems) == (9, 0, [])
    assert imported.spec.model == "imported:videomme_output_test_template"
    assert read_run(imported.run_id, tmp_path / "api").tables() == imported.tables


def test_import_results_with_an_object_is_the_same_run_as_with_its_name(tmp_path):
    by_name = import_results(OFFICIAL, "videomme", settings={"frames": 64}, results_dir=tmp_path / "a")
    by_object = lvu.import_results(OFFICIAL, videomme(frames=64), results_dir=tmp_path / "b")
    assert by_object.run_id == by_name.run_id and by_object.tables == by_name.tables


def test_an_unregistered_benchmark_class_is_refused_in_one_line(tmp_path):
    class Mine(type(videomme())):  # type: ignore[misc]
        pass

    with pytest.raises(LvuError, match="class .*Mine is not a registered benchmark"):
        import_results(OFFICIAL, Mine(), results_dir=tmp_path)
    assert not tmp_path.joinpath("lvu.sqlite").exists()
