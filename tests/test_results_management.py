"""Run management: `lvu results delete/tag`, `--tag` on run and sweep, `results list` filters, the date
column and `--json`, runs in several sweeps at once, and `lvu run` with several benchmarks."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fakes
from lvu.benchmarks.base import register_benchmark
from lvu.cli import app
from lvu.api import run
from lvu.runs.store import Store


@register_benchmark("fake-framed")
class FramedBenchmark(fakes.FakeBenchmark):
    """The fake benchmark with a `frames` setting (the frames sweep axis); the model ignores it."""

    defaults = {"n": 3, "bad_records": 0, "frames": 8}


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # rich tables on one line each, so rows parse


def invoke(*args: str | Path, input: str | None = None):
    return CliRunner().invoke(app, [str(a) for a in args], input=input)


def table_rows(output: str) -> list[dict[str, str]]:
    lines = output.splitlines()
    header = next(line for line in lines if line.startswith("┃"))
    names = [c.strip() for c in header.strip("┃").split("┃")]
    return [dict(zip(names, (c.strip() for c in line.strip("│").split("│")))) for line in lines if line.startswith("│")]


def one_run(results_dir: Path, n: int = 2, benchmark: str = "fake", **kw):
    return run(benchmark, "fake-follow", settings={"n": n}, results_dir=results_dir, show_progress=False,
               report=False, **kw)


def listed(results_dir: Path, *args: str) -> list[dict]:
    result = invoke("results", "list", "--json", "--results-dir", results_dir, *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # stderr says why when no run matches


# ---- delete ---------------------------------------------------------------------------------------------


def test_delete_removes_the_run_its_samples_tags_and_reports_after_confirmation(tmp_path):
    keep, gone = one_run(tmp_path, 2), one_run(tmp_path, 3)
    store = Store(tmp_path)
    store.add_tag(gone.run_id, "old")
    reports = tmp_path / "reports"
    reports.mkdir()
    for name in (f"{gone.run_id}.html", f"{gone.run_id}-limit2.html", f"{keep.run_id}.html"):
        (reports / name).write_text("<html></html>")

    refused = invoke("results", "delete", gone.run_id[:8], "--results-dir", tmp_path, input="n\n")
    assert refused.exit_code == 1 and "nothing deleted" in refused.output
    assert {r.run_id for r in store.runs()} == {keep.run_id, gone.run_id}

    result = invoke("results", "delete", gone.run_id[:8], "--results-dir", tmp_path, input="y\n")
    assert result.exit_code == 0, result.output
    assert f"deleted run {gone.run_id}" in result.output and "2 report file(s)" in result.output
    assert [r.run_id for r in store.runs()] == [keep.run_id]
    assert store.db.execute("SELECT COUNT(*) FROM samples WHERE run_id = ?", (gone.run_id,)).fetchone() == (0,)
    assert gone.run_id not in store.tags()
    assert sorted(p.name for p in reports.iterdir()) == [f"{keep.run_id}.html"]
    assert len(store.results(keep.run_id)) == 2  # the other run is untouched


def test_delete_with_yes_asks_nothing_and_bad_ids_are_one_line_errors(tmp_path):
    a, b = one_run(tmp_path, 2), one_run(tmp_path, 3)
    unknown = invoke("results", "delete", "zzzz", "--yes", "--results-dir", tmp_path)
    assert unknown.exit_code != 0 and "no run in" in str(unknown.exception) and "'zzzz'" in str(unknown.exception)
    ambiguous = invoke("results", "delete", "", "--yes", "--results-dir", tmp_path)
    assert ambiguous.exit_code != 0 and "2 runs in" in str(ambiguous.exception)
    assert len(Store(tmp_path).runs()) == 2
    result = invoke("results", "delete", a.run_id, "--yes", "--results-dir", tmp_path)
    assert result.exit_code == 0 and "?" not in result.output
    assert [r.run_id for r in Store(tmp_path).runs()] == [b.run_id]


# ---- tags -----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_tag_untag_and_filter_by_tag(tmp_path):
    a, b = one_run(tmp_path, 2), one_run(tmp_path, 3)
    assert invoke("results", "tag", a.run_id, "paper", "--results-dir", tmp_path).exit_code == 0
    assert invoke("results", "tag", a.run_id, "paper", "--results-dir", tmp_path).exit_code == 0  # idempotent
    assert invoke("results", "tag", b.run_id, "draft", "--results-dir", tmp_path).exit_code == 0
    rows = {r["run_id"]: r for r in listed(tmp_path)}
    assert rows[a.run_id]["tags"] == ["paper"] and rows[b.run_id]["tags"] == ["draft"]
    assert [r["run_id"] for r in listed(tmp_path, "--tag", "paper")] == [a.run_id]
    table = {r["run"]: r for r in table_rows(invoke("results", "list", "--results-dir", tmp_path).output)}
    assert table[a.run_id]["tags"] == "paper"

    assert invoke("results", "tag", a.run_id, "paper", "--untag", "--results-dir", tmp_path).exit_code == 0
    assert listed(tmp_path, "--tag", "paper") == []
    again = invoke("results", "tag", a.run_id, "paper", "--untag", "--results-dir", tmp_path)
    assert again.exit_code != 0 and "has no tag 'paper'" in str(again.exception)
    bad = invoke("results", "tag", a.run_id, "two words", "--results-dir", tmp_path)
    assert bad.exit_code != 0 and "without spaces or commas" in str(bad.exception)


def test_run_and_sweep_store_their_tags(tmp_path):
    result = invoke("run", "-b", "fake", "-m", "fake-follow", "--set", "n=2", "--tag", "base", "--tag", "v1",
                    "--results-dir", tmp_path, "--no-report")
    assert result.exit_code == 0, result.output
    (only,) = Store(tmp_path).runs()
    assert Store(tmp_path).tags()[only.run_id] == ["base", "v1"]
    result = invoke("sweep", "-b", "fake-framed", "-m", "fake-follow", "--frames", "1,2", "--tag", "grid",
                    "--results-dir", tmp_path, "--no-report")
    assert result.exit_code == 0, result.output
    tagged = listed(tmp_path, "--tag", "grid")
    assert sorted(r["settings"]["frames"] for r in tagged) == [1, 2]


# ---- list filters, date column, --json ------------------------------------------------------------------


@pytest.mark.slow
def test_list_filters_by_benchmark_model_and_since(tmp_path):
    a = one_run(tmp_path, 2)
    b = one_run(tmp_path, 2, benchmark="fake-framed")
    assert [r["run_id"] for r in listed(tmp_path, "--benchmark", "fake-framed")] == [b.run_id]
    assert {r["run_id"] for r in listed(tmp_path, "--model", "fake-follow")} == {a.run_id, b.run_id}
    assert listed(tmp_path, "--model", "random") == []
    store = Store(tmp_path)  # make run a look last touched in 2020
    store.db.execute("UPDATE runs SET created = ?, updated = ? WHERE run_id = ?",
                     (time.mktime((2020, 5, 1, 12, 0, 0, 0, 0, -1)),) * 2 + (a.run_id,))
    assert [r["run_id"] for r in listed(tmp_path, "--since", "2021-01-01")] == [b.run_id]
    assert {r["run_id"] for r in listed(tmp_path, "--since", "2020-05-01")} == {a.run_id, b.run_id}
    bad = invoke("results", "list", "--since", "yesterday", "--results-dir", tmp_path)
    assert bad.exit_code != 0 and "--since 'yesterday': not a date" in str(bad.exception)
    rows = {r["run"]: r for r in table_rows(invoke("results", "list", "--results-dir", tmp_path).output)}
    assert rows[a.run_id]["updated"] == "2020-05-01 12:00"  # local time, minutes
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", rows[b.run_id]["updated"])


def test_list_and_show_json_for_scripts(tmp_path):
    summary = one_run(tmp_path, 4, model_args={"fail": ["q001"]})
    Store(tmp_path).add_tag(summary.run_id, "t")
    (row,) = listed(tmp_path)
    assert set(row) == {"run_id", "benchmark", "data", "model", "backend", "settings", "coverage", "errors",
                        "unreadable", "score", "no_answers", "status", "tags", "created", "updated"}
    assert row["coverage"] == {"n_ok": 3, "n_total": 4} and row["errors"] == 1 and row["tags"] == ["t"]
    assert row["score"] == {"value": 75.0, "row": "all", "n": 4}  # the failed sample counts wrong
    assert row["settings"]["n"] == 4 and row["status"] in ("done", "partial", "failed")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", row["updated"])

    result = invoke("results", "show", summary.run_id, "--json", "--results-dir", tmp_path)
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["spec"]["benchmark"] == "fake" and shown["env"]["model"]["backend"] == "fake-follow"
    overall = shown["tables"][0]
    assert {"name": "all", "n": 4, "score": 75.0} in overall["rows"]
    assert [f["sample_id"] for f in shown["failures"]] == ["q001"] and "exploded" in shown["failures"][0]["error"]


# ---- a run in several sweeps ------------------------------------------------------------------------------


def test_two_sweeps_sharing_points_each_keep_all_their_runs(tmp_path):
    from lvu.analysis.runs import RunData, frame_sweeps, sweep_name

    for name, frames in (("low", "1,2,4,8"), ("high", "4,8,16,32")):
        result = invoke("sweep", "-b", "fake-framed", "-m", "fake-follow", "--frames", frames, "--name", name,
                        "--results-dir", tmp_path, "--no-report")
        assert result.exit_code == 0, result.output
    store = Store(tmp_path)
    runs = store.runs()
    assert len(runs) == 6  # 4 and 8 frames are one run each, shared
    shared = next(r for r in runs if r.spec.settings["frames"] == 8)
    assert [m["name"] for m in shared.env["sweeps"]] == ["low", "high"]
    assert shared.env["sweep"]["name"] == "high"  # the latest, where older lvu looks

    groups = frame_sweeps([RunData(i, store.results(i.run_id)) for i in runs])
    by_name = {sweep_name(g): [r.frames for r in g] for g in groups}
    assert by_name == {"low": [1, 2, 4, 8], "high": [4, 8, 16, 32]}

    report = invoke("report", "--all", "--no-plots", "--bootstrap", "10", "--results-dir", tmp_path)
    assert report.exit_code == 0, report.output
    html = (tmp_path / "reports" / "all-runs.html").read_text()
    assert "(sweep low)" in html and "(sweep high)" in html


def test_old_single_sweep_tags_are_read_and_kept_when_another_sweep_reopens_the_run(tmp_path):
    old = {"name": "old", "axes": {"frames": [2, 4]}, "point": {"frames": 2}}
    first = run("fake-framed", "fake-follow", settings={"frames": 2}, results_dir=tmp_path, show_progress=False,
                report=False, env={"sweep": old})  # as lvu stored it before env["sweeps"]
    from lvu.analysis.runs import RunData

    store = Store(tmp_path)
    assert RunData(store.run(first.run_id), []).sweeps == [old]
    new = {"name": "new", "axes": {"frames": [2, 8]}, "point": {"frames": 2}}
    run("fake-framed", "fake-follow", settings={"frames": 2}, results_dir=tmp_path, show_progress=False,
        report=False, env={"sweep": new, "sweeps": [new]})
    assert store.run(first.run_id).env["sweeps"] == [old, new]
    run("fake-framed", "fake-follow", settings={"frames": 2}, results_dir=tmp_path, show_progress=False,
        report=False, fresh=True)  # a plain (even --fresh) rerun keeps the memberships
    assert RunData(store.run(first.run_id), []).sweeps == [old, new]


# ---- several benchmarks in one lvu run ----------------------------------------------------------------


def test_run_accepts_several_benchmarks(tmp_path):
    result = invoke("run", "-b", "fake,fake-framed", "-m", "fake-follow", "--set", "n=2", "--tag", "both",
                    "--results-dir", tmp_path, "--no-report")
    assert result.exit_code == 0, result.output
    runs = Store(tmp_path).runs()
    assert sorted(r.benchmark for r in runs) == ["fake", "fake-framed"]
    assert all(r.n_ok == 2 for r in runs)
    assert {tuple(v) for v in Store(tmp_path).tags().values()} == {("both",)}
    rows = table_rows(result.output[result.output.index("fake, fake-framed × fake-follow"):])
    assert {r["benchmark"]: r["score %"] for r in rows} == {"fake": "100.0", "fake-framed": "100.0"}

    repeated = invoke("run", "-b", "fake", "-b", "fake-framed", "-m", "fake-follow", "--set", "n=2",
                      "--results-dir", tmp_path, "--no-report")
    assert repeated.exit_code == 0, repeated.output
    assert len(Store(tmp_path).runs()) == 2  # the same two runs, resumed

    typo = invoke("run", "-b", "fake,fake-frame", "-m", "fake-follow", "--results-dir", tmp_path / "t")
    assert typo.exit_code != 0 and "fake-frame" in str(typo.exception)
    assert not (tmp_path / "t" / "lvu.sqlite").exists() or Store(tmp_path / "t").runs() == []  # nothing ran


def test_one_benchmark_keeps_the_single_run_output(tmp_path):
    result = invoke("run", "-b", "fake", "-m", "fake-follow", "--set", "n=2", "--results-dir", tmp_path, "--no-report")
    assert result.exit_code == 0, result.output
    assert re.search(r"run \w{12}: 2 samples, 0 failed", result.output) and "next:" in result.output
