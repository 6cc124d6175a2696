"""lvu.api's planning and run helpers: `plan_sweep` / `plan_sweep_file` (`lvu sweep`), `plan_spec`
(`lvu run -c`), `plan_benchmarks` (`lvu run -b a,b`), what a command shows after runs (`scores_of`,
`headline_of`, `tag_run`), where results are (`where_results_are`, `RESULTS_DIR_HELP`) and how the
`lvu` command stops (`note_stop_signal`, `stop_signal`, `bounded_exit`)."""

from __future__ import annotations

import signal

import pytest
from typer.testing import CliRunner

import fakes  # noqa: F401  (registers the fake benchmark and models)
from lvu.api import (RESULTS_DIR_HELP, Plan, RunOptions, bounded_exit, headline_of, note_stop_signal, plan_benchmarks,
                     plan_spec, plan_sweep, plan_sweep_file, run_planned, scores_of, stop_signal, tag_run,
                     where_results_are)
from lvu.cli import app
from lvu.errors import LvuError
from lvu.runs import stage_runner
from lvu.runs.store import Store


@pytest.mark.slow  # four runs
def test_plan_sweep_is_the_grid_lvu_sweep_runs_and_its_scores(tmp_path):
    args = ["sweep", "-b", "fake", "-m", "fake-follow", "--set", "n=4", "--probe", "full,blind", "--name", "probes",
            "--results-dir", str(tmp_path / "cli"), "--no-report"]
    cli = CliRunner().invoke(app, args, terminal_width=200)
    assert cli.exit_code == 0, cli.output

    plan = plan_sweep(["fake"], ["fake-follow"], {"probe": ["full", "blind"]}, name="probes", settings={"n": 4})
    assert isinstance(plan, Plan) and (plan.name, plan.axes) == ("probes", ["probe"])
    assert [(r.model, r.point) for r in plan.runs] == [("fake-follow", {"probe": "full"}), ("blind", {"probe": "blind"})]
    assert f"sweep {plan.name!r}: {len(plan.runs)} point(s)" in cli.output
    options = plan.options(RunOptions(results_dir=tmp_path / "api", report=False, show_progress=False))
    outcomes = run_planned(plan.runs, options, sweep=plan.sweep)
    cli_runs = {r.model: r.run_id for r in Store(tmp_path / "cli").runs()}
    assert {o.planned.model: o.summary.run_id for o in outcomes if o.summary} == cli_runs  # the same runs
    for outcome in outcomes:
        assert outcome.summary is not None
        top = headline_of(outcome.summary)
        assert top is not None and scores_of(outcome.summary)[0] == ("score", top.score)
        row = next(line for line in cli.output.splitlines() if line.startswith("│") and outcome.summary.run_id in line)
        assert f" {top.score:.1f} " in row  # the score the command's table shows for that run

    tag_run(tmp_path / "api", outcomes[0].summary.run_id, ["paper-v2"])
    assert Store(tmp_path / "api").tags().get(outcomes[0].summary.run_id) == ["paper-v2"]


def test_plan_spec_and_its_results_dir(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"benchmarks: [fake]\nmodels: [fake-follow, fake-follow-neutral]\nresults_dir: {tmp_path / 'spec'}\n")
    plan = plan_spec(spec)
    assert [r.model for r in plan.runs] == ["fake-follow", "fake-follow-neutral"] and plan.sweep is None
    assert plan.axes == [] and plan.name is None
    assert plan.options(RunOptions()).results_dir == tmp_path / "spec"  # the spec's folder, unless
    assert plan.options(RunOptions(results_dir=tmp_path / "cli")).results_dir == tmp_path / "cli"  # --results-dir
    with pytest.raises(LvuError, match="no `sweep:` section"):
        plan_sweep_file(spec)


def test_plan_benchmarks_checks_every_benchmark_before_running(tmp_path):
    options = RunOptions(limit=2)
    planned = plan_benchmarks(["fake", "fake"], "fake-follow", settings={"n": 3}, model_args={}, options=options)
    assert [(p.benchmark, p.settings, p.options) for p in planned] == [("fake", {"n": 3}, options.planned())] * 2
    assert planned[0].options["limit"] == 2
    with pytest.raises(LvuError, match="^--benchmark nope: "):
        plan_benchmarks(["fake", "nope"], "fake-follow", settings={}, model_args={}, options=options)


def test_where_results_are_is_the_line_and_the_help_every_command_gives(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LVU_RESULTS_DIR", raising=False)
    assert where_results_are(tmp_path / "r") == f"results: {tmp_path / 'r'} (--results-dir)"
    assert where_results_are().startswith(f"results: {tmp_path / 'lvu-results'} (no lvu-results in ")
    shown = CliRunner().invoke(app, ["results", "list", "--help"], terminal_width=2000).output
    assert " ".join(RESULTS_DIR_HELP.split()) in " ".join(shown.replace("│", " ").split())


def test_stop_signals_are_recorded_and_the_exit_bound_restored(monkeypatch):
    monkeypatch.setattr(stage_runner, "last_stop_signal", None)
    monkeypatch.setattr(stage_runner, "exit_bound", None)
    assert stop_signal() is None
    note_stop_signal(signal.SIGTERM)
    assert stop_signal() == signal.SIGTERM == stage_runner.last_stop_signal
    with bounded_exit():
        assert stage_runner.exit_bound == stage_runner.EXIT_MARGIN
    assert stage_runner.exit_bound is None
