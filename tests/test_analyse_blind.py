"""`lvu analyse blind`: the per-label answerable-blind table of stored blind-probe runs, and its
refusal of runs that saw the video."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import fakes  # noqa: F401  (registers fake-follow: it answers the letter its question names)
from lvu.analysis.blind import blind_runs, label_groups
from lvu.analysis.runs import load_runs
from lvu.api import run
from lvu.benchmarks.jsonl import write_samples
from lvu.errors import LvuError
from lvu.runs.store import Store
from lvu.types import Sample, VideoRef

HERE = Path(__file__).parent


def data(root: Path) -> Path:
    """12 questions: in group "easy" 5 of 6 name their answer (a leak), in "hard" 1 of 6 does."""
    samples = []
    for i in range(12):
        group = "easy" if i < 6 else "hard"
        leaks = (i % 6) < (5 if group == "easy" else 1)
        named = "ABCD"[i % 4] if leaks else "ABCD"[(i + 1) % 4]
        samples.append(Sample(id=f"q{i:02d}", benchmark="mine", video=VideoRef(path="none.mp4", duration=60.0),
                              question=f"question {i}: pick {named}", options=["a", "b", "c", "d"], answer=i % 4,
                              labels={"level": group, "kind": ["x", "y"] if i % 2 else "x"}))
    return write_samples(root / "mine.jsonl", samples)


def test_label_groups_follow_labels_and_multi_labels():
    groups = label_groups([{"k": "a"}, {"k": "b", "m": ["u", "v"]}, {"m": "u"}])
    assert groups == {"all": [0, 1, 2], "k: a": [0], "k: b": [1], "m: u": [1, 2], "m: v": [1]}


@pytest.mark.slow
def test_blind_table_per_label_and_the_cli(tmp_path):
    jsonl = data(tmp_path)
    results = tmp_path / "results"
    settings = {"data": str(jsonl), "frames": 0}
    blind = run("jsonl", "blind", settings=settings, model_args={"base": "fake-follow"}, results_dir=results,
                report=False, show_progress=False)
    full = run("jsonl", "fake-follow", settings=settings, results_dir=results, report=False, show_progress=False)
    store = Store(results)
    try:
        analysis = blind_runs(load_runs(store, [blind.run_id]), n_boot=200)
        with pytest.raises(LvuError, match="not a blind probe"):
            blind_runs(load_runs(store, [full.run_id]), n_boot=0)
    finally:
        store.close()
    (column,) = analysis.series.values()
    cells = dict(zip(analysis.x, column))
    assert cells["all"].value == pytest.approx(100 * 6 / 12) and cells["all"].n == 12
    assert cells["level: easy"].value == pytest.approx(100 * 5 / 6) and cells["level: hard"].value == pytest.approx(100 / 6)
    assert cells["kind: y"].n == 6 and cells["kind: x"].n == 12  # multi-label samples count in each group
    assert cells["all"].low < cells["all"].value < cells["all"].high
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(HERE)}
    out = subprocess.run([sys.executable, "-m", "lvu.cli", "analyse", "blind", blind.run_id, "--results-dir",
                          str(results), "--plot", str(tmp_path / "blind.png")], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "level: easy" in out.stdout and "83.3" in out.stdout and "answerable blind" in out.stdout
    assert (tmp_path / "blind.png").stat().st_size > 0
    refused = subprocess.run([sys.executable, "-m", "lvu.cli", "analyse", "blind", full.run_id, "--results-dir",
                              str(results)], capture_output=True, text=True, env=env)
    assert refused.returncode == 2 and "not a blind probe" in refused.stderr
