"""What `lvu run` prints when it ends (issue 30, items 2 and 5): where the results are, in one line
by the one rule (lvu.runs.store.results_location), and "no answers (3 of 3 failed)" instead of a
score — and no tables of 0.0 — when every sample failed, also in the several-runs table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fakes
from lvu.api import run
from lvu.benchmarks.base import register_benchmark
from lvu.cli import app

ALL_FAIL = json.dumps(["q000", "q001", "q002"])  # fake-follow answers these with an HTTP 500 error


@register_benchmark("fake-end-lines")
class OtherFake(fakes.FakeBenchmark):
    """The fake benchmark under a second name (a run of two benchmarks)."""


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")


def invoke(*args: str | Path):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_lvu_run_prints_where_the_results_are(tmp_path, monkeypatch):
    given = tmp_path / "given"
    ran = invoke("run", "-b", "fake", "--set", "n=2", "-m", "fake-follow", "--results-dir", given, "--no-report")
    assert ran.exit_code == 0, ran.output
    assert f"results: {given.absolute()} (--results-dir)" in ran.stdout.splitlines()

    # No flag, no $LVU_RESULTS_DIR: the nearest lvu-results folder above the current one.
    monkeypatch.delenv("LVU_RESULTS_DIR", raising=False)
    (tmp_path / "lvu-results").mkdir()
    work = tmp_path / "project" / "sub"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    ran = invoke("run", "-b", "fake", "--set", "n=2", "-m", "fake-follow", "--no-report")
    assert ran.exit_code == 0, ran.output
    line = f"results: {tmp_path / 'lvu-results'} (the nearest lvu-results above {work})"
    assert line in ran.stdout.splitlines(), ran.stdout
    assert (tmp_path / "lvu-results" / "lvu.sqlite").is_file() and not (work / "lvu-results").exists()


def test_a_run_where_every_sample_failed_says_no_answers_instead_of_a_score(tmp_path):
    ran = invoke("run", "-b", "fake", "--set", "n=3", "-m", "fake-follow", "-a", f"error={ALL_FAIL}",
                 "--results-dir", tmp_path, "--no-report")
    assert ran.exit_code == 1, ran.output
    end = re.search(r"^run (\w{12}): 3 samples, 3 failed · (.*)$", ran.stdout, flags=re.M)
    assert end and end.group(2) == "no answers (3 of 3 failed)", ran.stdout
    assert "0.0" not in ran.stdout and "┃" not in ran.stdout  # no tables of zeros

    summary = run("fake", "fake-follow", settings={"n": 3}, model_args={"error": json.loads(ALL_FAIL)},
                  results_dir=tmp_path, show_progress=False, report=False)
    assert summary.no_answers == "no answers (3 of 3 failed)"  # the Python API's summary says it too
    some = run("fake", "fake-follow", settings={"n": 3}, model_args={"error": ["q000"]},
               results_dir=tmp_path, show_progress=False, report=False)
    assert some.no_answers is None


def test_the_table_of_several_runs_says_no_answers(tmp_path):
    ran = invoke("run", "-b", "fake,fake-end-lines", "--set", "n=3", "-m", "fake-follow", "-a", f"error={ALL_FAIL}",
                 "--results-dir", tmp_path, "--no-report")
    assert ran.exit_code == 1, ran.output
    rows = [line for line in ran.stdout.splitlines() if line.startswith("│")]
    assert len(rows) == 2 and all("no answers" in row and "0.0" not in row for row in rows), ran.stdout
    assert f"results: {tmp_path.absolute()} (--results-dir)" in ran.stdout.splitlines()
