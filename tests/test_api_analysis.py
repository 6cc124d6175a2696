"""`lvu.report` and `lvu.compare`: the library entries of `lvu report` and `lvu compare`, returning
the file written, the comparison and the notes the commands print."""

from __future__ import annotations

import pytest

import fakes  # noqa: F401  (registers the fake benchmark and the fake-follow model)
import lvu
from lvu.api import CompareResult, ReportResult, compare, report, run
from lvu.errors import LvuError
from test_headline_and_limit import invoke


@pytest.fixture(autouse=True)
def _results_env(tmp_path, monkeypatch):
    monkeypatch.delenv("LVU_RESULTS_DIR", raising=False)
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))


def fake_run(results_dir, **model_args):
    return run("fake", "fake-follow", settings={"n": 4}, model_args=model_args, results_dir=results_dir,
               show_progress=False, report=False)


def test_report_writes_the_file_lvu_report_names(tmp_path):
    done = fake_run(tmp_path)
    cli = invoke("report", done.run_id, "--results-dir", tmp_path, "--format", "md", "--no-plots", "--bootstrap", "20")
    assert cli.exit_code == 0, cli.output
    written = report(done.run_id, results_dir=tmp_path, format="md", plots=False, bootstrap=20)
    assert isinstance(written, ReportResult) and cli.stdout.strip() == f"report: {written.path}"
    assert written.path == tmp_path / "reports" / f"{done.run_id}.md" and written.path.is_file()
    assert written.run_ids == [done.run_id] and written.report.sections
    with pytest.raises(LvuError, match="--format 'pdf' is not supported"):
        report(done.run_id, results_dir=tmp_path, format="pdf")
    with pytest.raises(LvuError, match="no runs: --results-dir"):
        lvu.report(results_dir=tmp_path / "empty")
    assert not (tmp_path / "empty").exists()


def test_compare_returns_the_deltas_and_notes_lvu_compare_prints(tmp_path):
    a = fake_run(tmp_path, fail=["q001"])
    b = fake_run(tmp_path, fail=["q002"])
    failed = fake_run(tmp_path, fail=["q000", "q001", "q002", "q003"])
    cli = invoke("compare", failed.run_id, a.run_id, b.run_id, "--bootstrap", "20", "--results-dir", tmp_path)
    assert cli.exit_code == 0, cli.output

    notes: list[str] = []
    deltas = compare([failed.run_id, a.run_id, b.run_id], bootstrap=20, results_dir=tmp_path, on_note=notes.append)
    assert isinstance(deltas, CompareResult) and deltas.run_ids == [a.run_id, b.run_id]
    assert notes == deltas.notes and len(notes) == 1 and notes[0] in cli.stderr
    assert notes[0].startswith(f"left out, no answers to compare — {failed.run_id}")
    for key, value in deltas.comparison.summary:
        assert f"{key}: {value}" in cli.stdout
    assert [c for c in deltas.comparison.table.columns if c] and deltas.comparison.table.rows

    with pytest.raises(LvuError, match="--paper compares one run"):
        compare([a.run_id, b.run_id], paper=True, results_dir=tmp_path)
