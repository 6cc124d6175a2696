"""`lvu.judge`: post-hoc judging of a stored run (`lvu judge score`) with a judge given by registry
name, as a Model object or as a Judge; it returns the tables and counts the command prints."""

from __future__ import annotations

import pytest

import lvu
from lvu.api import JudgeResult, read_run, run
from lvu.errors import LvuError
from lvu.models import load_all
from lvu.models.base import MODELS
from test_headline_and_limit import invoke
from test_judge_runs import args, env, neptune_root, server  # noqa: F401  (fixtures: a fake OpenAI server, a Neptune release)


def test_judge_returns_what_lvu_judge_score_prints(tmp_path, server, env, neptune_root):  # noqa: F811
    plain = run("neptune-open", "openai", settings={"data": str(neptune_root), "frames": 2},
                model_args=dict(a.split("=", 1) for a in args(server, "vlm")), results_dir=tmp_path / "res",
                show_progress=False, report=False, frame_cache=False)
    judge_args = dict(a.split("=", 1) for a in args(server, "gem-judge"))
    judged = lvu.judge(plain.run_id, "openai", model_args=judge_args, results_dir=tmp_path / "res",
                       show_progress=False)
    assert isinstance(judged, JudgeResult) and (judged.n_judged, judged.n_skipped, judged.n_failed) == (3, 0, 0)
    assert (judged.run_id, judged.benchmark, judged.model) == (plain.run_id, "neptune-open", "openai")
    assert judged.tables == read_run(plain.run_id, tmp_path / "res").tables()
    assert judged.judge.endswith("threshold=0.5 (uncalibrated default)")

    cli = invoke("judge", "score", plain.run_id, "--judge", "openai", *[x for a in args(server, "gem-judge")
                                                                        for x in ("-J", a)],
                 "--results-dir", tmp_path / "res")
    assert cli.exit_code == 0, cli.output
    assert (f"run {plain.run_id}: judged 0, skipped 3 (already judged by this judge), failed 0 — judge {judged.judge}"
            in cli.stdout)

    model = (load_all(), MODELS.get("openai")(**judge_args))[1]  # a configured object: another judge
    again = lvu.judge(plain.run_id, model, threshold=0.9, results_dir=tmp_path / "res", show_progress=False)
    assert again.n_judged == 3 and again.judge.endswith("threshold=0.9 (given)")
    with pytest.raises(LvuError, match="carries its own arguments"):
        lvu.judge(plain.run_id, model, model_args={"model": "x"}, results_dir=tmp_path / "res")


def test_calibrate_judge_and_evaluate_dev_return_what_the_commands_print(tmp_path, monkeypatch):
    from lvu.api import DevEvaluation, JudgeCalibration, calibrate_judge, evaluate_dev, judge_dev
    from lvu.scoring.judges import read_dev_set
    from test_dev_judging_ledger import calls, judge, write_dev

    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))  # stored calibrations
    dev, log, results = write_dev(tmp_path / "dev.jsonl"), tmp_path / "calls.txt", tmp_path / "results"
    judged = judge_dev(judge(log), read_dev_set(dev), dev, results_dir=results, show_progress=False)
    assert judged.n_judged == 6 and judged.n_reused == 0 and not judged.failed and len(judged.kept()[0]) == 6

    cal = calibrate_judge(dev, "dev-judge-fake", model_args={"log": str(log)}, results_dir=results,
                          out=tmp_path / "cal.json", show_progress=False)
    assert isinstance(cal, JudgeCalibration) and cal.calibration is not None and (cal.n, cal.positives) == (6, 3)
    assert cal.path is not None and cal.path.is_file() and (tmp_path / "cal.json").is_file()
    cli = invoke("judge", "calibrate", "--dev", dev, "--judge", "dev-judge-fake", "-J", f"log={log}",
                 "--results-dir", results)
    assert cli.exit_code == 0, cli.output
    assert f"judge: {cal.judge.model_identity}\nstored: {cal.path}" in cli.stdout
    assert f"{100 * cal.calibration.f1:.1f}" in cli.stdout and len(calls(log)) == 6  # asked once: from the ledger since
    with pytest.raises(LvuError, match="no judge model"):
        calibrate_judge(dev, None)

    evaluated = evaluate_dev(dev, model="dev-judge-fake", model_args={"log": str(log)}, results_dir=results,
                             show_progress=False)
    assert isinstance(evaluated, DevEvaluation) and [name for name, _ in evaluated.rows] == \
        [evaluated.judge.short_name, f"  at its threshold ({evaluated.judge.threshold_source})"]
    assert evaluated.rows[0][1] == cal.calibration  # the same verdicts (the fake judge is deterministic)
    assert evaluated.judge.threshold == cal.calibration.threshold  # the stored calibration is used
    cli = invoke("judge", "eval", "--dev", dev, "--judge", "dev-judge-fake", "-J", f"log={log}",
                 "--results-dir", results)
    assert cli.exit_code == 0, cli.output
    assert evaluated.title in cli.stdout
    assert f"judge: {evaluated.judge.identity}" in cli.stdout and "Neptune Table 2" in cli.stdout
    with pytest.raises(LvuError, match="nothing to evaluate"):
        evaluate_dev(dev)
