"""RunOptions (lvu.runs.options): every run option once, with the one-line errors `lvu run` gives,
travelling CLI -> API -> executor -> run spec."""

from __future__ import annotations

import sys

import pytest

import fakes  # noqa: F401  (registers the fake benchmark and models)
from lvu.api import run
from lvu.cli import main
from lvu.errors import LvuError
from lvu.runs import spec_file
from lvu.runs.options import PlannedOptions, RunOptions


@pytest.mark.parametrize("values, message", [
    ({"limit": 0}, "--limit 0: must be at least 1 (the first K samples) — leave --limit out to run them all"),
    ({"concurrency": 0}, "--concurrency 0: must be at least 1"),
    ({"decode_workers": -1}, "--decode-workers -1: must be at least 1"),
    ({"decode": "gpu"}, "decode='gpu' is unknown — use threads or processes"),
    ({"executor": "dask"}, "executor 'dask' is unknown — use local or ray"),
    ({"limt": 3}, "limt: not a run option (did you mean limit?) — known: limit, concurrency"),
    ({"llm_extract": True}, "llm_extract needs a judge model — pass judge= (--judge NAME)"),
    ({"decode": "processes", "frame_cache": False},
     "decode=processes decodes into the frame cache — drop --no-cache or use --decode threads"),
    ({"concurrency": "many"}, "concurrency='many': Input should be a valid integer"),
])
def test_bad_options_are_the_one_line_errors_of_lvu_run(values, message):
    with pytest.raises(LvuError) as e:
        RunOptions.parse(values)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)
    with pytest.raises(LvuError):  # constructing one directly says the same
        RunOptions(**values)


def test_every_option_is_declared_once_with_a_description():
    fields = RunOptions.model_fields
    assert set(PlannedOptions.model_fields) < set(fields)
    assert all(f.description for f in fields.values()), [n for n, f in fields.items() if not f.description]
    assert RunOptions().concurrency == 4 and RunOptions().decode == "threads" and RunOptions().report


def test_given_fields_win_over_a_base_and_only_they_override_planned_runs(tmp_path):
    base = RunOptions(limit=2, results_dir=tmp_path)
    merged = RunOptions.parse({"concurrency": 8}, base=base)
    assert (merged.limit, merged.concurrency, merged.results_dir) == (2, 8, tmp_path)
    assert merged.given() == {"limit": 2, "results_dir": tmp_path, "concurrency": 8}  # not the defaults
    assert RunOptions(judge="random", judge_args={"seed": 1}).planned() == {
        "concurrency": 4, "decode": "threads", "decode_workers": 2, "asr": False, "judge": "random",
        "judge_args": {"seed": 1}, "llm_extract": False, "executor": "local"}


def test_api_run_takes_options_or_keywords_and_keywords_win(tmp_path):
    quiet = {"results_dir": tmp_path, "report": False, "show_progress": False}
    by_keywords = run("fake", "fake-follow", settings={"n": 6}, limit=3, **quiet)
    by_options = run("fake", "fake-follow", settings={"n": 6}, options=RunOptions(limit=5, **quiet))
    both = run("fake", "fake-follow", settings={"n": 6}, options=RunOptions(limit=5, **quiet), limit=2)
    assert (by_keywords.n_total, by_options.n_total, both.n_total) == (3, 5, 2)
    assert by_keywords.run_id == by_options.run_id == both.run_id  # options never change the run id
    with pytest.raises(LvuError, match="--limit 0: must be at least 1"):
        run("fake", "fake-follow", limit=0, **quiet)
    with pytest.raises(LvuError, match="limt: not a run option"):
        run("fake", "fake-follow", limt=2, **quiet)


def test_lvu_run_validates_its_flags_through_run_options(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "argv", ["lvu", "run", "-b", "fake", "-m", "fake-follow", "--concurrency", "0",
                                      "--results-dir", str(tmp_path), "--no-report"])
    with pytest.raises(SystemExit) as e:
        main()
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and err.endswith("--concurrency 0: must be at least 1") and "\n" not in err
    assert not (tmp_path / "lvu.sqlite").exists()  # refused before anything ran


def test_the_cli_hands_the_api_one_run_options(monkeypatch, tmp_path):
    seen = {}

    class Stop(Exception):
        pass

    def fake_run(benchmark, model, **kw):
        seen.update(kw)
        raise Stop

    monkeypatch.setattr("lvu.api.run", fake_run)
    monkeypatch.setattr(sys, "argv", ["lvu", "run", "-b", "fake", "-m", "fake-follow", "--limit", "3",
                                      "--judge", "random", "-J", "seed=2", "--results-dir", str(tmp_path)])
    with pytest.raises(Stop):
        main()
    options = seen["options"]
    assert isinstance(options, RunOptions)
    assert (options.limit, options.judge, options.judge_args, options.results_dir) == (3, "random", {"seed": 2},
                                                                                         tmp_path)


def test_a_run_spec_validates_its_run_keys_as_run_options():
    assert issubclass(spec_file.Settings, PlannedOptions)  # one declaration, not a third list
    with pytest.raises(LvuError, match=r"spec.yaml: settings.executor: Input should be 'local' or 'ray' \(got 'dask'\)"):
        spec_file.parse("benchmarks: [fake]\nmodels: [fake-follow]\nsettings: {executor: dask}\n", "spec.yaml")
    (only,) = spec_file.expand(spec_file.parse(
        "benchmarks: [fake]\nmodels: [{name: fake-follow, concurrency: 3}]\nsettings: {limit: 2, concurrency: 9}\n"))
    assert only.options == {"limit": 2, "concurrency": 3}  # set keys only, later layers winning
