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
