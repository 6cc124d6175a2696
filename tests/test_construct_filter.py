"""The blind filter on the one construction mechanism: `lvu build run blind-filter` writes what
`lvu build filter` writes, `lvu build status / show` open a filter's folder (every skipped question
with its reason, every decision with its evidence), and a new rule is one registered class."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lvu.benchmarks.jsonl import write_samples
from lvu.construct.blind import Decision, ask, text_only_prompt
from lvu.construct.blind_rules import BlindRule, register_rule
from lvu.construct.filtering import FilterSettings, filter_samples
from lvu.models.probes import build_model
from lvu.runs.grading import make_benchmark
from lvu.types import Sample, VideoRef


def lvu(*argv: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lvu.cli", *argv], capture_output=True, text=True, env=env, check=False)


@pytest.fixture()
def env(tmp_path):
    return {**os.environ, "LVU_CACHE_DIR": str(tmp_path / "cache"), "LVU_OFFLINE": "1", "COLUMNS": "200",
            "LVU_RESULTS_DIR": str(tmp_path / "results"), "LVU_PROGRESS_INTERVAL": "0"}


@pytest.fixture()
def data(tmp_path) -> Path:
    """12 multiple-choice questions and one open-ended one (skipped: not multiple choice)."""
    video = tmp_path / "v.mp4"
    video.write_bytes(b"")
    samples = [Sample(id=f"q{i:02d}", benchmark="t", video=VideoRef(path=str(video), duration=10.0),
                      question=f"Which colour is object {i}?", options=["red", "green", "blue", "black"],
                      answer=i % 4, labels={"task": "colour" if i % 2 else "shape"}) for i in range(12)]
    samples.append(Sample(id="open", benchmark="t", video=VideoRef(path=str(video), duration=10.0),
                          question="Describe the video.", options=[], answer="a video"))
    return Path(write_samples(tmp_path / "data.jsonl", samples))


@pytest.mark.slow
def test_build_run_blind_filter_writes_what_the_shortcut_writes(tmp_path, env, data):
    short = lvu("build", "filter", str(data), "--rule", "neptune-qad", "-m", "random", "-o", str(tmp_path / "a"), env=env)
    assert short.returncode == 0, short.stderr
    run = lvu("build", "run", "blind-filter", str(data), "-o", str(tmp_path / "b"), "--opt", "rule=neptune-qad",
              "--model", "llm=random", "-q", env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    for name in ("kept.jsonl", "removed.jsonl", "decisions.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert (tmp_path / "b" / "lvu.sqlite").exists()  # build run keeps its store in OUT
    assert not (tmp_path / "a" / "lvu.sqlite").exists()  # the shortcut keeps it in the results folder


@pytest.mark.slow
def test_status_and_show_open_a_filter_folder(tmp_path, env, data):
    done = lvu("build", "filter", str(data), "--rule", "text-only", "-m", "random", "-o", str(tmp_path / "f"), env=env)
    assert done.returncode == 0, done.stderr
    status = lvu("build", "status", str(tmp_path / "f"), env=env)
    assert status.returncode == 0, status.stderr
    assert "blind.decide" in status.stdout and "skipped (1):" in status.stdout
    assert "open at blind.decide: not multiple choice" in status.stdout
    shown = lvu("build", "show", str(tmp_path / "f"), "q03", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    unit = json.loads(shown.stdout)[0]["units"][0]
    assert unit["state"] == "done" and unit["output"]["rule"] == "text-only"
    assert "Which colour is object 3?" in unit["calls"][0]["prompt"]
    decisions = {json.loads(line)["id"]: json.loads(line) for line in (tmp_path / "f" / "decisions.jsonl").open()}
    assert decisions["q03"]["status"] == ("removed" if unit["output"]["removed"] else "kept")


class RemoveEven(BlindRule):
    """A user's rule: removes the questions whose answer index is even, asking each model once."""

    source = "a test"

    async def decide(self, sample, models, settings, transcript) -> Decision:
        votes = [await ask(m, text_only_prompt(sample.question, sample.options), sample.options, sample.answer)
                 for m in models]
        return Decision(removed=sample.answer % 2 == 0, rule="remove-even", votes=votes, reason="even answer index")


def test_a_new_rule_is_one_registered_class(tmp_path, data):
    register_rule("remove-even")(RemoveEven)
    bench = make_benchmark("jsonl", {"data": str(data)})
    model = build_model("random", {})
    outcome = asyncio.run(filter_samples(bench, [model], FilterSettings("remove-even"), results_dir=tmp_path / "r",
                                         show_progress=False))
    assert {c.sample.id for c in outcome.removed} == {f"q{i:02d}" for i in range(0, 12, 2)}
    assert [s.id for s, _ in outcome.skipped] == ["open"] and outcome.calls == 12
    again = asyncio.run(filter_samples(bench, [model], FilterSettings("remove-even"), results_dir=tmp_path / "r",
                                       show_progress=False))
    assert again.calls == 0 and again.n_reused == 12  # resumed from the build store
