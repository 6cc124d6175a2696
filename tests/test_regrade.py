"""Stored scores follow the scoring code (runs/regrade.py): a resumed run grades the records that
other extraction/scoring code graded again from their stored responses, with no model call, and the
headline is the current code's. Before, a resume reused the old scores beside new ones."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import fakes
from lvu.api import run
from lvu.benchmarks.base import register_benchmark
from lvu.runs import grading
from lvu.runs.store import Store
from lvu.types import Prediction

SHIFT = {"on": False}


@register_benchmark("regrade-fake")
class ShiftingBenchmark(fakes.FakeBenchmark):
    """The fake benchmark whose extractor, once "fixed" (SHIFT on), reads the letter after the one given."""

    def extract(self, sample, response):
        value = super().extract(sample, response).value
        if SHIFT["on"] and isinstance(value, int):
            value = (value + 1) % len(sample.options)
        return Prediction(value=value)


@pytest.fixture(autouse=True)
def _reset(monkeypatch):
    SHIFT["on"] = False
    yield
    SHIFT["on"] = False


def new_code(monkeypatch) -> None:
    """What an lvu upgrade does: other extraction code, another stamp."""
    SHIFT["on"] = True
    real = getattr(grading, "_stamp_of_class", lambda cls: "")
    monkeypatch.setattr(grading, "_stamp_of_class", lambda cls: "new-" + real(cls), raising=False)


def calls(log: Path) -> int:
    return len(log.read_text().split()) if log.exists() else 0


def test_a_resume_grades_records_of_other_code_again(tmp_path: Path, monkeypatch, capsys) -> None:
    log = tmp_path / "calls.txt"
    first = run("regrade-fake", "fake-follow-neutral", model_args={"log": str(log)}, results_dir=tmp_path,
                show_progress=False, report=False, frame_cache=False)
    assert first.tables[0].rows[0][2] == pytest.approx(100.0) and calls(log) == 10

    new_code(monkeypatch)
    again = run("regrade-fake", "fake-follow-neutral", model_args={"log": str(log)}, results_dir=tmp_path,
                show_progress=False, report=False, frame_cache=False)
    assert again.run_id == first.run_id and again.n_done_before == 10
    assert calls(log) == 10  # graded from the stored responses: no model call
    assert again.tables[0].rows[0][2] == pytest.approx(0.0)  # the new code's score, for every sample
    assert "10 stored answers were scored by other (or older) lvu code" in capsys.readouterr().err
    store = Store(tmp_path)
    try:
        results = store.results(first.run_id)
        assert {r.graded_by for r in results} == {grading.grading_stamp(ShiftingBenchmark())}
        assert all(r.score == 0.0 for r in results)
        assert store.stale_graded(first.run_id, grading.grading_stamp(ShiftingBenchmark())) == []
    finally:
        store.close()


def test_up_to_date_records_are_not_touched(tmp_path: Path, capsys) -> None:
    first = run("regrade-fake", "fake-follow", results_dir=tmp_path, show_progress=False, report=False, frame_cache=False)
    db = sqlite3.connect(tmp_path / "lvu.sqlite")
    before = db.execute("SELECT sample_id, completed FROM samples ORDER BY sample_id").fetchall()
    run("regrade-fake", "fake-follow", results_dir=tmp_path, show_progress=False, report=False, frame_cache=False)
    assert db.execute("SELECT sample_id, completed FROM samples ORDER BY sample_id").fetchall() == before
    assert "scored by other (or older) lvu code" not in capsys.readouterr().err
    assert first.run_id


def test_records_from_before_the_stamp_are_graded_once_and_judged_ones_kept(tmp_path: Path, monkeypatch) -> None:
    first = run("regrade-fake", "fake-follow", results_dir=tmp_path, show_progress=False, report=False, frame_cache=False)
    db = sqlite3.connect(tmp_path / "lvu.sqlite")
    rows = db.execute("SELECT sample_id, record FROM samples").fetchall()
    for sample_id, record in rows:  # as an older lvu stored them: no stamp; q000 decided by a judge
        d = json.loads(record)
        d.pop("graded_by", None)
        if sample_id == "q000":
            d["judge"] = {"kind": "choice", "verdict": "A"}
        db.execute("UPDATE samples SET record = ? WHERE sample_id = ?", (json.dumps(d), sample_id))
    db.commit()
    SHIFT["on"] = True  # the same stamp as now, but the records carry none
    again = run("regrade-fake", "fake-follow", results_dir=tmp_path, show_progress=False, report=False, frame_cache=False)
    store = Store(tmp_path)
    try:
        by_id = {r.sample_id: r for r in store.results(first.run_id)}
    finally:
        store.close()
    assert by_id["q000"].score == 1.0 and getattr(by_id["q000"], "graded_by", None) is None  # the judge's stands
    assert all(by_id[f"q{i:03d}"].score == 0.0 for i in range(1, 10))
    assert again.tables[0].rows[0][2] == pytest.approx(10.0)


def test_results_show_names_scores_of_other_code(tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from lvu.cli import app

    first = run("regrade-fake", "fake-follow", results_dir=tmp_path, show_progress=False, report=False, frame_cache=False)
    shown = CliRunner().invoke(app, ["results", "show", first.run_id, "--results-dir", str(tmp_path)])
    assert shown.exit_code == 0 and "other lvu scoring code" not in shown.output
    new_code(monkeypatch)
    shown = CliRunner().invoke(app, ["results", "show", first.run_id, "--results-dir", str(tmp_path)])
    assert shown.exit_code == 0
    assert f"note: 10 of run {first.run_id}'s scores were computed by other lvu scoring code" in shown.output
