"""The pipelined engine: per-stage progress, process-pool decoding, batches for batching models."""

from __future__ import annotations

import asyncio
import io

import pytest
from rich.console import Console

import fakes  # noqa: F401  (registers the fake benchmark and models)
from lvu.benchmarks.jsonl import write_samples
from lvu.errors import LvuError
from lvu.media.cache import FrameCache
from lvu.media.testing import make_video
from lvu.models.base import Model, register_model
from lvu.api import run
from lvu.runs.engine import Engine, make_spec
from lvu.progress import PipelineProgress
from lvu.runs.store import Store
from lvu.types import Prompt, Response, Sample, VideoRef


@pytest.fixture(scope="module")
def video_data(tmp_path_factory):
    """3 videos x 2 questions, plus one question whose video is missing."""
    root = tmp_path_factory.mktemp("pipeline")
    samples = []
    for v in range(3):
        video = make_video(root / f"v{v}.mp4", seconds=2 + v, fps=10, gop=10, size=(64, 48))  # distinct content
        for q in range(2):
            samples.append(Sample(id=f"v{v}q{q}", benchmark="jsonl", video=VideoRef(path=str(video.path)),
                                  question=f"Question {v}{q}: pick {'ABCD'[q]}", options=list("abcd"), answer=q))
    samples.append(Sample(id="missing", benchmark="jsonl", video=VideoRef(path=str(root / "gone.mp4")),
                          question="Question: pick A", options=list("abcd"), answer=0))
    return write_samples(root / "data.jsonl", samples)


def _engine(tmp_path, benchmark, model, settings, model_args=None, **kw):
    spec, bench, mdl = make_spec(benchmark, model, settings=settings, model_args=model_args)
    store = Store(tmp_path / "results")
    return spec, Engine(bench, mdl, store, **kw), store


def test_every_stage_counts_its_samples_and_failures(tmp_path):
    spec, engine, store = _engine(tmp_path, "fake", "fake-follow", {"n": 8},
                                  {"fail": ["q001"], "error": ["q002"]}, concurrency=3)
    summary = asyncio.run(engine.run(spec, show_progress=False))
    stats = engine.progress.stats
    assert (stats["decode"].done, stats["decode"].failed) == (8, 0)
    assert (stats["model"].done, stats["model"].failed) == (8, 2)  # a raised exception and an error response
    assert (stats["scored"].done, stats["scored"].failed) == (8, 2) and summary.n_failed == 2
    assert all(s.in_flight == 0 for s in stats.values())
    assert 0 < summary.stage_utilisation["model"] <= 1 and set(summary.stage_utilisation) == {"decode", "model"}
    store.close()


def test_a_sample_that_fails_to_decode_skips_the_model_row(tmp_path, video_data, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    spec, engine, store = _engine(tmp_path, "jsonl", "fake-follow", {"data": str(video_data), "frames": 3})
    summary = asyncio.run(engine.run(spec, show_progress=False))
    stats = engine.progress.stats
    assert (stats["decode"].done, stats["decode"].failed) == (7, 1)
    assert (stats["model"].done, stats["model"].expected) == (6, 6)  # the missing video never reached it
    error = dict(summary.errors)["missing"]  # a data error: names the video and every path tried
    assert "video gone.mp4 not found" in error and str(video_data.parent / "gone.mp4") in error
    stored = {r.sample_id: r for r in store.results(summary.run_id)}["missing"]
    assert stored.data_error and not stored.counted
    store.close()


def test_progress_display_shows_one_row_per_stage():
    out = io.StringIO()
    console = Console(file=out, width=120, force_terminal=False)
    with PipelineProgress(2, slots={"model": 2}, title="bench × model", console=console) as progress:
        for failed in (False, True):
            for stage in ("decode", "model", "scored"):
                with progress.stage(stage) as outcome:
                    outcome.failed = failed and stage != "decode"
        progress.display.refresh()
    text = out.getvalue()
    assert "bench × model" in text
    for stage, failed in (("decode", 0), ("model", 1), ("scored", 1)):
        assert any(line.split()[:1] == [stage] and "2/2" in line and f"failed {failed}" in line
                   for line in text.splitlines()), (stage, text)


def test_progress_stage_counts_an_exception_as_failed_and_a_cancel_as_nothing():
    progress = PipelineProgress(3, enabled=False)
    with progress:
        with pytest.raises(ValueError):
            with progress.stage("model"):
                raise ValueError("boom")
        with pytest.raises(asyncio.CancelledError):
            with progress.stage("model"):
                raise asyncio.CancelledError
    model = progress.stats["model"]
    assert (model.done, model.failed, model.in_flight) == (1, 1, 0)


@pytest.mark.slow
def test_process_decoding_gives_the_same_results_through_the_frame_cache(tmp_path, video_data, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    kw = {"settings": {"data": str(video_data), "frames": 3}, "show_progress": False, "report": False}
    threads = run("jsonl", "fake-follow", results_dir=tmp_path / "t", frame_cache=False, **kw)
    procs = run("jsonl", "fake-follow", results_dir=tmp_path / "p", decode="processes", decode_workers=2, **kw)
    assert procs.run_id == threads.run_id  # how frames are decoded is not part of the run
    assert len(list((tmp_path / "cache" / "frames").rglob("*.frames"))) == 3  # one entry per video, by the workers

    def rows(path, run_id):
        return sorted((r.sample_id, r.prediction, r.error, tuple(r.frame_timestamps), r.prompt.get("text"))
                      for r in Store(path).results(run_id))

    assert rows(tmp_path / "p", procs.run_id) == rows(tmp_path / "t", threads.run_id)
    assert procs.n_failed == 1 and "gone.mp4" in dict(procs.errors)["missing"]


def test_bad_decode_settings_are_one_line_errors(tmp_path):
    with pytest.raises(LvuError, match="decode='gpu' is unknown"):
        _engine(tmp_path, "fake", "fake-follow", {"n": 1}, decode="gpu")
    with pytest.raises(LvuError, match="drop --no-cache or use --decode threads"):
        _engine(tmp_path, "fake", "fake-follow", {"n": 1}, decode="processes", frame_cache=None)


@register_model("fake-batching")
class BatchingModel(Model):
    """Records how many calls are in flight at once; `batch_size` like the hf backend."""

    def __init__(self, **args):
        super().__init__(**args)
        self.batch_size = int(args.get("batch_size", 1))
        self.in_flight = self.most = 0

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0.02)
        self.in_flight -= 1
        return Response(text="(A)")


def test_a_batching_model_gets_enough_samples_in_flight_to_fill_its_batches(tmp_path):
    spec, engine, store = _engine(tmp_path, "fake", "fake-batching", {"n": 24}, {"batch_size": 4}, concurrency=1)
    assert engine.concurrency == 8  # two batches' worth: one encodes while the other generates
    asyncio.run(engine.run(spec, show_progress=False))
    assert engine.model.most >= 4
    spec, plain, _ = _engine(tmp_path, "fake", "fake-batching", {"n": 4}, concurrency=1)
    assert plain.concurrency == 1
    store.close()


def test_extra_environment_is_stored_with_the_run(tmp_path):
    tag = {"sweep": {"name": "frames", "axes": {"frames": [1, 2]}, "point": {"frames": 1}}}
    summary = run("fake", "fake-follow", settings={"n": 2}, results_dir=tmp_path, show_progress=False,
                  report=False, env=tag)
    info = Store(tmp_path).run(summary.run_id)
    assert info.env["sweep"] == tag["sweep"] and info.env["model"]["backend"] == "fake-follow"
