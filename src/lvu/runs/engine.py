"""The run engine: the one place that wires a benchmark, the media code and a model together.

Per sample: plan -> decode frames + select cues -> prompt (decode threads, prefetched ahead of the
model into a bounded queue) -> generate (bounded async concurrency) -> extract -> score -> store
(committed at once).
"""

from __future__ import annotations

import asyncio
import platform
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

import lvu
from lvu.benchmarks import load_all as _load_benchmarks
from lvu.benchmarks.base import BENCHMARKS, Benchmark, Breakdown
from lvu.errors import LvuError
from lvu.media.subtitles import load_cues, select_cues
from lvu.media.cache import FrameCache
from lvu.models import load_all as _load_models
from lvu.models.base import MODELS, Model
from lvu.runs.store import Store
from lvu.types import Frame, Prompt, Response, RunSpec, Sample, SampleResult, Subtitle


@dataclass
class RunSummary:
    run_id: str
    spec: RunSpec
    n_total: int
    n_done_before: int
    n_failed: int
    tables: list[Breakdown]
    results_dir: Path
    report_path: Path | None = None
    errors: list[tuple[str, str]] = field(default_factory=list)


def environment(model: Model) -> dict[str, Any]:
    """What produced the numbers; stored with the run."""
    import av

    return {
        "lvu": lvu.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "decoder": f"pyav {av.__version__}",
        "model": model.identity,
    }


def make_spec(benchmark: str, model: str, *, settings: dict[str, Any] | None = None,
              model_args: dict[str, Any] | None = None, asr: bool = False) -> tuple[RunSpec, Benchmark, Model]:
    """Resolve names and settings; the spec holds the *effective* settings so the run id changes
    whenever anything that affects results changes."""
    _load_benchmarks()
    _load_models()
    bench = BENCHMARKS.get(benchmark)(**(settings or {}))
    mdl = MODELS.get(model)(**(model_args or {}))
    effective = {k: v for k, v in bench.settings.items() if k != "limit"}
    args = {k: v for k, v in (model_args or {}).items() if k not in type(mdl).run_neutral_args}
    if (version := bench.data_version()) is not None:
        effective["data_version"] = version
    if asr:  # transcripts stand in for missing subtitles: a different input, so a different run
        effective["asr"] = True
    spec = RunSpec(benchmark=benchmark, model=model, model_args=args, settings=effective)
    return spec, bench, mdl


def grade(bench: Benchmark, sample: Sample, response: Response, result: SampleResult) -> SampleResult:
    """Extract and score one response into `result` (shared by runs and `lvu score`)."""
    prediction = bench.extract(sample, response)
    score = bench.score(sample, prediction)
    result.prediction = prediction.value
    result.score, result.correct, result.counted = score.value, score.correct, score.counted
    result.explanation = score.explanation
    return result


def score_saved(bench: Benchmark, pairs: list[tuple[Sample, str]]) -> list[SampleResult]:
    """Score saved (sample, raw response) pairs without running a model."""
    results = []
    for sample, text in pairs:
        result = SampleResult(sample_id=sample.id, labels=sample.labels, answer=sample.answer, response=text)
        try:
            grade(bench, sample, Response(text=text), result)
        except LvuError as e:
            result.error = str(e)
        results.append(result)
    return results


RUN_ONLY_SETTINGS = ("data_version", "asr")
"""Keys make_spec adds to a spec's settings that are not benchmark settings."""


def benchmark_of(spec: RunSpec) -> Benchmark:
    """The benchmark object a stored run was made with (for show / submit / report)."""
    _load_benchmarks()
    settings = {k: v for k, v in spec.settings.items() if k not in RUN_ONLY_SETTINGS}
    return BENCHMARKS.get(spec.benchmark)(**settings)


class _MediaCache:
    """Samples of one video usually share a frame plan: decode once, hand out the same frames.
    Small LRU in memory; one lock per key so two workers never decode the same frames twice."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self.items: OrderedDict[Any, Any] = OrderedDict()
        self.lock = threading.Lock()
        self.key_locks: dict[Any, threading.Lock] = {}

    def get(self, key: Any, make):
        with self.lock:
            key_lock = self.key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self.lock:
                if key in self.items:
                    self.items.move_to_end(key)
                    return self.items[key]
            value = make()
            with self.lock:
                self.items[key] = value
                while len(self.items) > self.size:
                    old, _ = self.items.popitem(last=False)
                    self.key_locks.pop(old, None)
            return value


@dataclass
class _Prepared:
    """A sample between the two stages: its prompt (None when preparing it failed) and its record."""

    sample: Sample
    result: SampleResult
    prompt: Prompt | None
    started: float


class Engine:
    def __init__(self, bench: Benchmark, model: Model, store: Store, *, concurrency: int = 4,
                 decode_workers: int = 2, frame_cache: FrameCache | None = None, asr: bool = False) -> None:
        self.bench, self.model, self.store = bench, model, store
        self.asr = asr
        self.disk = frame_cache
        self.concurrency = max(1, concurrency)
        self.decode_workers = max(1, decode_workers)
        self.pool = ThreadPoolExecutor(max_workers=self.decode_workers, thread_name_prefix="lvu-decode")
        self.frames = _MediaCache()
        self.cues = _MediaCache(size=64)

    # ---- media (runs in worker threads) ----------------------------------------------------------

    def _duration(self, sample: Sample) -> float:
        if sample.video.duration:
            return float(sample.video.duration)
        from lvu.media.video import probe_cached  # shared with the benchmarks: each video is probed once

        return probe_cached(sample.video.path).duration

    def prepare(self, sample: Sample) -> tuple[Prompt, list[float]]:
        plan = self.bench.plan(sample, self._duration(sample))
        frames: list[Frame] = []
        if plan.timestamps:
            key = (sample.video.path, tuple(plan.timestamps), plan.resize)

            def decode():
                if self.disk is not None:  # shared across runs and processes; a hit opens no decoder
                    return self.disk.get_or_decode(sample.video.path, plan.timestamps, resize=plan.resize)
                from lvu.media.video import VideoReader

                with VideoReader(sample.video.path) as reader:
                    return reader.get_frames_played_at(plan.timestamps, resize=plan.resize)

            batch = self.frames.get(key, decode)
            frames = [Frame(image=img, timestamp=t) for img, t in zip(batch.data, batch.pts_seconds)]
        cues: list[Subtitle] = []
        all_cues: list[Subtitle] | None = None
        if plan.subtitle_mode != "none" and sample.subtitles is not None:
            sub = sample.subtitles
            duration = sample.video.duration  # LongVideoBench: a cue with no end runs to the clip's end
            all_cues = self.cues.get((sub.path, sub.offset),
                                     lambda: load_cues(sub.path, offset=sub.offset, duration=duration))
        elif plan.subtitle_mode != "none" and self.asr:
            from lvu.media.asr import transcribe  # cached on disk per video content

            all_cues = self.cues.get(("asr", sample.video.path), lambda: transcribe(sample.video.path))
        if all_cues is not None:
            cues = select_cues(all_cues, [f.timestamp for f in frames], plan.subtitle_mode)
        prompt = self.bench.build_prompt(sample, frames, cues)
        prompt.video = prompt.video or sample.video.path
        return prompt, [f.timestamp for f in frames]

    # ---- one sample, in two stages -----------------------------------------------------------------

    async def prepare_sample(self, sample: Sample) -> _Prepared:
        """Stage 1 (decode threads): plan, frames, cues, prompt. A failure is the sample's error."""
        result = SampleResult(sample_id=sample.id, labels=sample.labels, answer=sample.answer)
        started = time.perf_counter()
        prompt = None
        try:
            loop = asyncio.get_running_loop()
            prompt, times = await loop.run_in_executor(self.pool, self.prepare, sample)
            result.prompt, result.frame_timestamps = prompt.summary(), times
        except LvuError as e:
            result.error = str(e)
        except Exception as e:  # one bad sample never kills a run
            result.error = f"{sample.id}: {type(e).__name__}: {e}"
        return _Prepared(sample, result, prompt, started)

    async def answer_sample(self, item: _Prepared) -> SampleResult:
        """Stage 2 (the event loop): generate, extract, score."""
        result = item.result
        if item.prompt is not None:
            try:
                response = await self.model.generate(item.prompt, sample_id=item.sample.id)
                result.response, result.latency = response.text, response.latency
                if response.error:
                    raise LvuError(f"model error: {response.error}")
                grade(self.bench, item.sample, response, result)
            except LvuError as e:
                result.error = str(e)
            except Exception as e:
                result.error = f"{item.sample.id}: {type(e).__name__}: {e}"
        if not result.latency:
            result.latency = time.perf_counter() - item.started
        return result

    async def run_sample(self, sample: Sample) -> SampleResult:
        return await self.answer_sample(await self.prepare_sample(sample))

    # ---- the run ----------------------------------------------------------------------------------

    async def run(self, spec: RunSpec, *, fresh: bool = False, limit: int | None = None,
                  show_progress: bool = True) -> RunSummary:
        samples, bad = self.bench.load()
        ordinals = {s.id: i for i, s in enumerate(samples)}
        if limit is not None:
            samples = samples[:limit]
        run_id = self.store.begin_run(spec, environment(self.model), fresh=fresh)
        done = self.store.completed_ids(run_id)
        errors: list[tuple[str, str]] = []
        for i, record in enumerate(bad):
            self.store.put(run_id, SampleResult(sample_id=record.id, error=record.error), len(ordinals) + i)
            errors.append((record.id, record.error))
        todo = [s for s in samples if s.id not in done]
        # Same-video samples next to each other, so decoded frames are reused while still cached.
        todo.sort(key=lambda s: (s.video.path, ordinals[s.id]))

        progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"), TextColumn("failed {task.fields[failed]}"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), disable=not show_progress,
        )
        task = progress.add_task(f"{spec.benchmark} × {spec.model}", total=len(todo), rate="", failed=0)
        started = time.perf_counter()
        n_finished = 0
        # The pipeline: decode tasks prepare prompts ahead into a bounded queue (so the model never
        # waits on the decoder, and memory holds at most `concurrency` prepared prompts); model
        # workers take them, answer, and store each result the moment it completes.
        to_prepare = iter(todo)
        ready: asyncio.Queue[_Prepared | None] = asyncio.Queue(maxsize=self.concurrency)

        async def decoder() -> None:
            for sample in to_prepare:  # shared by the decode tasks; the loop runs one at a time
                await ready.put(await self.prepare_sample(sample))

        async def worker() -> None:
            nonlocal n_finished
            while (item := await ready.get()) is not None:
                result = await self.answer_sample(item)
                self.store.put(run_id, result, ordinals[item.sample.id])
                if result.error:
                    errors.append((item.sample.id, result.error))
                n_finished += 1
                rate = n_finished / max(1e-9, time.perf_counter() - started)
                progress.update(task, advance=1, rate=f"{rate:.2f}/s", failed=len(errors))

        async def pipeline() -> None:
            workers = [asyncio.create_task(worker()) for _ in range(self.concurrency)]
            decoders = [asyncio.create_task(decoder()) for _ in range(self.decode_workers)]
            try:
                await asyncio.gather(*decoders)
                for _ in workers:
                    await ready.put(None)
                await asyncio.gather(*workers)
            finally:  # an interrupt: abandon in-flight work (nothing half-written: a sample is one commit)
                for t in (*workers, *decoders):
                    t.cancel()

        status = "done"
        try:
            with progress:
                await pipeline()
        except (KeyboardInterrupt, asyncio.CancelledError):
            status = "interrupted"
            raise
        finally:
            self.store.finish_run(run_id, status)
            self.pool.shutdown(wait=False, cancel_futures=True)
            await self.model.close()

        keep = {s.id for s in samples} | {b.id for b in bad}
        results = [r for r in self.store.results(run_id) if r.sample_id in keep]
        return RunSummary(
            run_id=run_id, spec=spec, n_total=len(samples) + len(bad), n_done_before=len(done),
            n_failed=sum(1 for r in results if r.error), tables=self.bench.aggregate(results),
            results_dir=self.store.dir, errors=errors,
        )


def run(benchmark: str, model: str, *, settings: dict[str, Any] | None = None,
        model_args: dict[str, Any] | None = None, results_dir: str | Path | None = None,
        fresh: bool = False, limit: int | None = None, concurrency: int = 4,
        show_progress: bool = True, report: bool = True, frame_cache: bool = True,
        asr: bool = False) -> RunSummary:
    """Run (or resume) one benchmark × model and return its summary. The library entry point.
    `frame_cache=False` decodes every time instead of using the shared on-disk frame cache;
    `asr=True` transcribes the audio (Whisper, `lvu[asr]`) of samples that have no subtitles."""
    spec, bench, mdl = make_spec(benchmark, model, settings=settings, model_args=model_args, asr=asr)
    store = Store(results_dir)
    try:
        engine = Engine(bench, mdl, store, concurrency=concurrency,
                        frame_cache=FrameCache() if frame_cache else None, asr=asr)
        summary = asyncio.run(engine.run(spec, fresh=fresh, limit=limit, show_progress=show_progress))
        if report:
            from lvu.analysis.report import write_report

            info = store.run(summary.run_id)
            summary.report_path = write_report(info, store.results(summary.run_id), summary.tables, store.dir)
        return summary
    finally:
        store.close()
