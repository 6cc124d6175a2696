"""`judge_stored` (`lvu judge score`, a run's leftover judging) on the stage runner: each judgement is
committed as it completes, so a Ctrl-C'd judging resumes without asking the judge again for what it
stored; a sample whose content changed since it was answered is not judged against the new one."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from fakes import FakeBenchmark
from lvu.api import run
from lvu.benchmarks.base import register_benchmark
from lvu.models.base import Model, register_model
from lvu.runs.judging import JudgingInterrupted, judge_stored
from lvu.runs.store import Store
from lvu.scoring.judges import Judge
from lvu.types import Prompt, Response

N = 12


@register_model("fake-vague")
class VagueModel(Model):
    """Never names a letter: every sample needs LLM choice extraction."""

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        return Response(text="Hard to tell, maybe the third one.")


class CountingJudgeModel(Model):
    """The judge's model: answers "C", records every sample it is asked about, and after
    `interrupt_after` calls presses Ctrl-C (SIGINT to this process) once."""

    def __init__(self, interrupt_after: int | None = None) -> None:
        super().__init__(model="counting-judge")
        self.calls: list[str] = []
        self.interrupt_after = interrupt_after

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        self.calls.append(sample_id)
        if len(self.calls) == self.interrupt_after:
            os.kill(os.getpid(), signal.SIGINT)
        await asyncio.sleep(0.05)  # the calls in flight at the Ctrl-C finish within the grace
        return Response(text="C")


@register_benchmark("fake-edited")
class EditedBenchmark(FakeBenchmark):
    """The fake benchmark after its data was edited: q003 has another question and reference."""

    def load(self):
        samples, bad = super().load()
        edited = samples[3].model_copy(update={"question": samples[3].question + " (revised)", "answer": 0})
        return [edited if s.id == "q003" else s for s in samples], bad


@pytest.fixture()
def answered(tmp_path, monkeypatch):
    """A run of the fake benchmark whose replies all need the judge; its store and run id."""
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    summary = run("fake", "fake-vague", settings={"n": N}, results_dir=tmp_path / "res", show_progress=False,
                  report=False)
    store = Store(tmp_path / "res")
    yield store, summary.run_id
    store.close()


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to this process")
def test_interrupted_judging_resumes_without_judging_anything_twice(answered):
    store, run_id = answered
    bench = FakeBenchmark(n=N)
    first = CountingJudgeModel(interrupt_after=3)
    with pytest.raises(JudgingInterrupted, match=r"run the same command again"):
        asyncio.run(judge_stored(store, run_id, bench, Judge(first), llm_extract=True, concurrency=2,
                                 show_progress=False))
    judged_first = {r.sample_id for r in store.results(run_id) if r.judge}
    assert judged_first == set(first.calls) and 3 <= len(judged_first) < N  # in flight at Ctrl-C: finished, stored

    second = CountingJudgeModel()
    done = asyncio.run(judge_stored(store, run_id, bench, Judge(second), llm_extract=True, concurrency=2,
                                    show_progress=False))
    assert not set(second.calls) & judged_first and len(second.calls) == N - len(judged_first)
    assert (done.n_judged, done.n_skipped, done.n_failed) == (N - len(judged_first), len(judged_first), 0)
    assert all(r.prediction == 2 and r.judge for r in store.results(run_id))


def test_a_sample_changed_since_it_was_answered_is_not_judged(answered):
    store, run_id = answered
    judge_model = CountingJudgeModel()
    done = asyncio.run(judge_stored(store, run_id, EditedBenchmark(n=N), Judge(judge_model), llm_extract=True,
                                    show_progress=False))
    assert "q003" not in judge_model.calls and len(judge_model.calls) == N - 1
    assert done.n_judged == N - 1
    q003 = next(r for r in store.results(run_id) if r.sample_id == "q003")
    assert q003.judge is None and q003.prediction is None  # its stored answer is left as it was
