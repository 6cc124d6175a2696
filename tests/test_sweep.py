"""Sweeps: the grid, probe points, the env tag reports read, and accuracy rising with frames."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

import fakes  # noqa: F401  (registers the fake benchmark and models)
from lvu.cli import app
from lvu.runs.headline import stored_headline
from lvu.runs.store import Store
from lvu.runs.sweep import apply_probe, name_of, points


def test_points_are_the_grid_first_axis_slowest():
    sweep = {"frames": [8, 16], "subtitles": ["none", "interleave"], "name": "grid"}
    assert points(sweep) == [{"frames": 8, "subtitles": "none"}, {"frames": 8, "subtitles": "interleave"},
                             {"frames": 16, "subtitles": "none"}, {"frames": 16, "subtitles": "interleave"}]
    assert name_of(sweep) == "grid" and name_of({"frames": [1], "probe": ["full"]}) == "frames-probe"


def test_probes_wrap_the_model_and_keep_its_arguments():
    assert apply_probe("openai", {"model": "m"}, "full") == ("openai", {"model": "m"})
    assert apply_probe("openai", {"model": "m"}, "single-frame") == (
        "single-frame", {"base": "openai", "base_args": {"model": "m"}})
    assert apply_probe("ocr-match", {}, "blind") == ("blind", {"base": "ocr-match"})


def test_sweep_runs_each_point_as_its_own_tagged_run_and_resumes(tmp_path):
    runner = CliRunner()
    args = ["sweep", "-b", "fake", "-m", "fake-follow", "--set", "n=4", "--probe", "full,blind,single-frame",
            "--name", "probes", "--results-dir", str(tmp_path), "--no-report"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output  # single-frame needs frames: the fake benchmark has none
    store = Store(tmp_path)
    runs = {r.model: r for r in store.runs()}
    assert set(runs) == {"fake-follow", "blind", "single-frame"}
    for model, probe in (("fake-follow", "full"), ("blind", "blind"), ("single-frame", "single-frame")):
        assert runs[model].env["sweep"] == {"name": "probes", "axes": {"probe": ["full", "blind", "single-frame"]},
                                            "point": {"probe": probe}}
    assert runs["blind"].spec.model_args == {"base": "fake-follow"}
    assert (runs["fake-follow"].n_errors, runs["blind"].n_errors, runs["single-frame"].n_errors) == (0, 0, 4)
    table = result.output[result.output.index("sweep probes"):]
    assert re.search(r"│ blind\s+│\s+4 │\s+0 │\s+100.0 │", table) and re.search(r"│ single-frame\s+│\s+4 │\s+4 │", table)
    again = runner.invoke(app, args)
    assert {r.run_id for r in Store(tmp_path).runs()} == {r.run_id for r in runs.values()}
    assert again.output.count("0/0") >= 6  # full and blind had nothing left to do (decode/model/scored rows)


def test_bad_sweep_options_are_one_line_errors(tmp_path):
    result = CliRunner().invoke(app, ["sweep", "-b", "fake", "-m", "fake-follow", "--probe", "full,deaf"])
    assert isinstance(result.exception, Exception) and "lvu sweep: sweep.probe: unknown probe(s) deaf" in str(result.exception)
    result = CliRunner().invoke(app, ["sweep", "-b", "fake", "-m", "fake-follow"])
    assert "lvu sweep: sweep: no axes" in str(result.exception)


@pytest.fixture(scope="module")
def small_haystack(tmp_path_factory):
    from lvu.benchmarks.haystack import generate

    return generate(tmp_path_factory.mktemp("hay") / "small", seed=0, n_videos=2, scale=0.25)


@pytest.mark.slow
def test_ocr_match_accuracy_rises_with_frames_on_a_small_haystack(tmp_path, small_haystack, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(app, ["sweep", "-b", "haystack", "-m", "ocr-match", "--data", str(small_haystack),
                                      "--frames", "2,8,32", "--results-dir", str(tmp_path / "r"), "--no-report"])
    assert result.exit_code == 0, result.output
    store = Store(tmp_path / "r")
    by_frames = {r.env["sweep"]["point"]["frames"]: r for r in store.runs()}
    assert sorted(by_frames) == [2, 8, 32]
    assert all(r.env["sweep"]["axes"] == {"frames": [2, 8, 32]} and r.n_samples == 20 for r in by_frames.values())
    accuracy = [stored_headline(by_frames[f].spec, store.results(by_frames[f].run_id)).score for f in (2, 8, 32)]
    assert accuracy[0] <= accuracy[1] <= accuracy[2] and accuracy[2] >= accuracy[0] + 30, accuracy
    for f, score in zip((2, 8, 32), accuracy):  # the printed table has the same numbers
        assert re.search(rf"│\s+{f} │\s+20 │\s+0 │\s+{score:.1f} │", result.output)
