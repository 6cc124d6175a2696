"""One headline score per run, the same everywhere lvu prints it (the benchmark's own overall row,
failed samples counted as its protocol says), and `--limit` runs that report only what they cover:
never overwriting the full run's report, never listed as "done" while samples are missing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fakes  # noqa: F401  (registers the fake benchmark and model)
from lvu.cli import app
from lvu.api import run
from lvu.runs.engine import benchmark_of
from lvu.runs.store import Store


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # rich tables on one line each, so rows parse


def invoke(*args: str | Path):
    return CliRunner().invoke(app, [str(a) for a in args])


def table_rows(output: str) -> list[dict[str, str]]:
    """The rows of the first rich table in `output` as {column: cell}."""
    lines = output.splitlines()
    header = next(line for line in lines if line.startswith("┃"))
    names = [c.strip() for c in header.strip("┃").split("┃")]
    rows = [line for line in lines if line.startswith("│")]
    return [dict(zip(names, (c.strip() for c in line.strip("│").split("│")))) for line in rows]


def list_rows(results_dir: Path) -> dict[str, dict[str, str]]:
    result = invoke("results", "list", "--results-dir", results_dir)
    assert result.exit_code == 0, result.output
    return {row["run"]: row for row in table_rows(result.output)}


# ---- (a) one headline score ---------------------------------------------------------------------------


def test_a_run_with_failed_samples_has_one_headline_score_everywhere(tmp_path):
    pytest.importorskip("fastapi", reason="the viewer needs lvu[web]")
    from fastapi.testclient import TestClient

    from lvu.web.app import create_app

    results_dir = tmp_path / "r"
    failing = [f"q{i:03d}" for i in range(1, 8)]  # 7 of 8 fail; q000 is answered right
    ran = invoke("run", "-b", "fake", "-m", "fake-follow", "--set", "n=8", "-a", f"error={json.dumps(failing)}",
                 "--results-dir", results_dir, "--no-report")
    assert ran.exit_code == 1, ran.output  # some samples failed

    store = Store(results_dir)
    info = store.run()
    results = store.results(info.run_id)
    store.close()
    official = benchmark_of(info.spec).aggregate(results)[0]
    assert official.title == "overall" and official.rows[0] == ("all", 8, 12.5)  # failures count as wrong
    scored = [r.score for r in results if r.score is not None]
    assert sum(scored) / len(scored) == 1.0  # the mean over scored samples only, which lvu must not show

    assert "score 12.5 % (all, n=8)" in ran.output  # lvu run
    shown = invoke("results", "show", info.run_id, "--results-dir", results_dir)
    assert shown.exit_code == 0 and "score 12.5 % (all, n=8)" in shown.output
    listed = list_rows(results_dir)[info.run_id]
    assert listed["score %"] == "12.5" and listed["errors"] == "7" and listed["samples"] == "1/8"

    client = TestClient(create_app(results_dir))
    api = {r["run_id"]: r for r in client.get("/api/runs").json()}[info.run_id]
    assert (api["score"], api["score_row"], api["n_ok"], api["n_total"], api["n_failed"]) == (12.5, "all", 1, 8, 7)
    assert client.get(f"/api/runs/{info.run_id}").json()["score"] == 12.5
    runs_page = client.get("/").text
    row = re.search(rf"<tr class=run>.*?{info.run_id}.*?</tr>", runs_page, re.S).group(0)
    assert re.findall(r"<td class=num>([^<]*)</td>", row) == ["1/8", "7", "12.5"]
    run_page = client.get(f"/runs/{info.run_id}").text
    assert "score 12.5 % (all, n=8)" in run_page


def test_the_headline_is_each_benchmarks_own_overall_row():
    from lvu.benchmarks.base import Breakdown
    from lvu.runs.headline import headline_of_tables

    videomme = [Breakdown(title="overall", rows=[("short", 2, 50.0), ("long", 2, 0.0), ("overall", 4, 25.0)])]
    mlvu = [Breakdown(title="overall", rows=[("M-Avg", 9, 40.0), ("G-Avg", 3, 5.5)])]
    neptune_mma = [Breakdown(title="overall", rows=[("mma", 5, 60.0), ("mmh", 2, 50.0)])]
    assert headline_of_tables(videomme).row == "overall" and headline_of_tables(videomme).score == 25.0
    assert headline_of_tables(mlvu).row == "M-Avg"
    assert headline_of_tables(neptune_mma, subset="mma").score == 60.0
    pending = headline_of_tables([Breakdown(title="overall", rows=[("not judged yet", 0, float("nan"))])])
    assert pending.value is None and pending.text() == ""
    assert headline_of_tables([]) is None


# ---- (b) --limit -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_limit_reports_only_what_it_covers_and_never_overwrites_the_full_report(tmp_path):
    results_dir = tmp_path / "r"
    full = run("fake", "fake-follow", settings={"n": 60}, results_dir=results_dir, show_progress=False)
    assert full.report_path is not None
    before = full.report_path.read_bytes()
    assert "60 samples" in before.decode()

    limited = invoke("run", "-b", "fake", "-m", "fake-follow", "--set", "n=60", "--limit", "10",
                     "--results-dir", results_dir)
    assert limited.exit_code == 0, limited.output
    assert full.report_path.read_bytes() == before  # the full run's report is untouched
    assert re.search(r"│ all\s+│\s+10 │\s+100.0 │", limited.output)  # the printed table covers 10 samples
    assert "10 of 60 samples (--limit 10)" in limited.output and "10 reused from the store" in limited.output
    path = Path(re.search(r"report \(these 10 samples\): (\S+)", limited.output).group(1))
    assert path != full.report_path and path.name == f"{full.run_id}-limit10.html"
    assert "10 samples" in path.read_text() and "the first 10 of 60 samples" in path.read_text()

    listed = list_rows(results_dir)[full.run_id]  # the stored run itself is complete
    assert (listed["samples"], listed["status"], listed["score %"]) == ("60/60", "done", "100.0")


def test_a_run_with_only_some_samples_stored_is_partial_not_done(tmp_path):
    results_dir = tmp_path / "r"
    first = run("fake", "fake-follow", settings={"n": 60}, limit=10, results_dir=results_dir, show_progress=False)
    assert first.report_path is not None and first.report_path.name == f"{first.run_id}-limit10.html"
    assert not (results_dir / "reports" / f"{first.run_id}.html").exists()  # no "full" report of 10 samples
    listed = list_rows(results_dir)[first.run_id]
    assert (listed["samples"], listed["status"]) == ("10/60", "partial")
    rest = run("fake", "fake-follow", settings={"n": 60}, results_dir=results_dir, show_progress=False, report=False)
    assert rest.n_done_before == 10
    listed = list_rows(results_dir)[first.run_id]
    assert (listed["samples"], listed["status"]) == ("60/60", "done")


@pytest.mark.slow
def test_old_stores_without_a_sample_total_stay_readable(tmp_path):
    import sqlite3

    results_dir = tmp_path / "r"
    results_dir.mkdir()
    old = sqlite3.connect(results_dir / "lvu.sqlite")  # the schema before the n_total column
    old.executescript("""
        CREATE TABLE runs (run_id TEXT PRIMARY KEY, benchmark TEXT NOT NULL, model TEXT NOT NULL,
            spec TEXT NOT NULL, env TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL,
            status TEXT NOT NULL DEFAULT 'running');
        CREATE TABLE samples (run_id TEXT NOT NULL REFERENCES runs(run_id), sample_id TEXT NOT NULL,
            ordinal INTEGER NOT NULL, record TEXT NOT NULL, score REAL, correct INTEGER, error TEXT,
            completed REAL NOT NULL, PRIMARY KEY (run_id, sample_id));
    """)
    spec = json.dumps({"benchmark": "fake", "model": "fake-follow", "model_args": {}, "settings": {"n": 2}})
    old.execute("INSERT INTO runs VALUES ('abc', 'fake', 'fake-follow', ?, '{}', 0, 0, 'done')", (spec,))
    record = json.dumps({"sample_id": "q000", "score": 1.0, "correct": True, "answer": 0})
    old.execute("INSERT INTO samples VALUES ('abc', 'q000', 0, ?, 1.0, 1, NULL, 0)", (record,))
    old.commit()
    old.close()
    listed = list_rows(results_dir)["abc"]
    assert (listed["samples"], listed["score %"], listed["status"]) == ("1", "100.0", "done")
