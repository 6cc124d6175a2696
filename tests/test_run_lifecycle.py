"""One run lifecycle (lvu.runs.lifecycle) for both executors, which supply only their inner
pipeline; and `lvu.api.run` given Benchmark / Model objects instead of names."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

import fakes  # noqa: F401  (registers the fake benchmark and models)
from fakes import FakeBenchmark, FollowModel
from lvu.api import run
from lvu.benchmarks.base import Benchmark
from lvu.errors import LvuError
from lvu.progress import PipelineProgress
from lvu.runs import engine, lifecycle, ray_executor
from lvu.runs.engine import make_spec, resolve_spec
from lvu.runs.identity import digest_for
from lvu.runs.lifecycle import execute, run_stages
from lvu.runs.options import RunOptions
from lvu.runs.store import Store
from lvu.types import Sample, SampleResult


class Scripted:
    """The smallest inner pipeline: answers every sample it is given correctly (or raises
    `fail`), and records what the lifecycle asked of it."""

    def __init__(self, bench: Benchmark, store: Store, fail: BaseException | None = None) -> None:
        self.bench, self.store, self.judge, self.llm_extract = bench, store, None, False
        self.progress = PipelineProgress(0, enabled=False)
        self.fail = fail
        self.calls: list[str] = []
        self.given: list[str] = []

    def connect(self) -> None:
        self.calls.append("connect")

    def disconnect(self) -> None:
        self.calls.append("disconnect")

    async def start(self, fresh: bool) -> None:
        self.calls.append("start")

    async def ready(self, fresh: bool, has_work: bool) -> None:
        self.calls.append(f"ready(has_work={has_work})")

    def environment(self) -> dict[str, Any]:
        return {"model": {"backend": "scripted"}}

    def described(self) -> dict[str, Any]:
        return {"executor": {"name": "scripted"}}

    def slots(self) -> tuple[dict[str, int], str]:
        return {"decode": 1, "model": 1}, ", scripted"

    async def pipeline(self, run_id: str, todo: list[Sample], ordinals: dict[str, int],
                       errors: list[tuple[str, str]], stop: asyncio.Event) -> None:
        self.calls.append("pipeline")
        for sample in todo:
            if self.fail is not None and self.given:
                raise self.fail
            self.given.append(sample.id)
            result = SampleResult(sample_id=sample.id, labels=sample.labels, answer=sample.answer,
                                  sample_digest=digest_for(self.bench, sample), prediction=sample.answer, score=1.0,
                                  correct=True)  # the digest makes it reusable on resume
            self.store.put(run_id, result, ordinals[sample.id])

    async def close(self, status: str) -> None:
        self.calls.append(f"close({status})")


def test_any_inner_pipeline_gets_the_whole_lifecycle(tmp_path):
    spec, bench, _ = resolve_spec("fake", "fake-follow", settings={"n": 4, "bad_records": 1})
    made: list[Scripted] = []

    def build(store, judge):
        made.append(Scripted(bench, store))
        return made[-1]

    summary = execute(spec, bench, RunOptions(results_dir=tmp_path, show_progress=False, limit=3), build)
    (executor,) = made
    assert executor.calls == ["connect", "start", "ready(has_work=True)", "pipeline", "close(done)", "disconnect"]
    assert executor.given == ["q000", "q001", "q002"]  # the --limit, in order
    assert (summary.n_total, summary.n_benchmark, summary.n_failed) == (4, 5, 1)  # the bad record: a data error
    assert summary.sample_ids == ["q000", "q001", "q002", "bad0"]
    info = Store(tmp_path).run(summary.run_id)
    assert info.status == "partial" and info.env["executor"] == {"name": "scripted"}
    again = execute(spec, bench, RunOptions(results_dir=tmp_path, show_progress=False), build)
    assert made[-1].given == ["q003"] and again.n_done_before == 3  # resumed: only what is missing


@pytest.mark.parametrize("error, status", [(LvuError("endpoint gone"), "failed"),
                                           (RuntimeError("a bug"), "interrupted")])
def test_the_status_is_stored_and_everything_closed_however_the_pipeline_ends(tmp_path, error, status):
    spec, bench, _ = resolve_spec("fake", "fake-follow", settings={"n": 3})
    store = Store(tmp_path)
    executor = Scripted(bench, store, fail=error)
    with pytest.raises(type(error)):
        asyncio.run(run_stages(executor, spec, show_progress=False))
    assert executor.calls[-1] == f"close({status})"
    assert store.run(spec.run_id).status == status and [r.sample_id for r in store.results(spec.run_id)] == ["q000"]
    store.close()


def test_both_executors_leave_the_lifecycle_to_lvu_runs_lifecycle():
    for module in (engine, ray_executor):
        source = inspect.getsource(module)
        for step in ("begin_run", "set_total", "finish_status", "regrade_reused", "warn_if_asr_unused"):
            assert step not in source, (module.__name__, step)
        assert "as the local engine" not in source
    assert "begin_run" in inspect.getsource(lifecycle)


# ---- objects instead of names ---------------------------------------------------------------------


def test_objects_make_the_same_run_as_their_names(tmp_path):
    quiet = {"results_dir": tmp_path, "report": False, "show_progress": False}
    by_name = run("fake", "fake-follow", settings={"n": 5}, model_args={"fail": ["q001"]}, **quiet)
    by_object = run(FakeBenchmark(n=5), FollowModel(fail=["q001"]), **quiet)
    assert by_object.run_id == by_name.run_id and by_object.n_done_before == 4  # resumed, q001 retried
    assert by_object.spec == by_name.spec
    assert make_spec(FakeBenchmark(n=5), "fake-follow")[0].run_id == make_spec("fake", "fake-follow",
                                                                              settings={"n": 5})[0].run_id
    model = FollowModel(delay=0)
    assert make_spec("fake", model)[2] is model  # the object itself answers
    other = run(FakeBenchmark(n=3), "fake-follow", **quiet)
    assert other.run_id != by_name.run_id  # other settings: another run


def test_relative_paths_of_an_object_are_made_absolute_as_for_a_name(tmp_path, monkeypatch):
    from lvu.benchmarks.jsonl import write_samples
    from lvu.types import VideoRef

    monkeypatch.chdir(tmp_path)
    write_samples(tmp_path / "q.jsonl", [Sample(id="a", benchmark="jsonl", video=VideoRef(path="v.mp4"),
                                                question="pick A", options=["x", "y"], answer=0)])
    from lvu.benchmarks.jsonl import JsonlBenchmark

    named = resolve_spec("jsonl", "random", settings={"data": "q.jsonl"})[0]
    given = resolve_spec(JsonlBenchmark(data="q.jsonl"), "random")[0]
    assert given.run_id == named.run_id and given.settings["data"] == str(tmp_path / "q.jsonl")


def test_unregistered_objects_and_settings_beside_an_object_are_refused_in_one_line(tmp_path):
    class Mine(FakeBenchmark):  # not registered: a run could not be resumed or reported by name
        pass

    class MyModel(FollowModel):
        pass

    for bench, model, match in [(Mine(), "fake-follow", "benchmark class .*Mine is not registered"),
                                ("fake", MyModel(), "model class .*MyModel is not registered")]:
        with pytest.raises(LvuError, match=match) as e:
            run(bench, model, results_dir=tmp_path, report=False, show_progress=False)
        assert "\n" not in str(e.value)
    with pytest.raises(LvuError, match="settings= is for a benchmark name"):
        run(FakeBenchmark(n=2), "fake-follow", settings={"n": 3}, results_dir=tmp_path)
    with pytest.raises(LvuError, match="model_args= is for a model name"):
        run("fake", FollowModel(), model_args={"delay": 0}, results_dir=tmp_path)
