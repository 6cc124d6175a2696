"""The run engine: the one place that wires a benchmark, the media code and a model together.

Per sample: plan -> decode frames + select cues -> prompt (decode threads, or worker processes that
decode into the shared frame cache; prefetched ahead of the model into a bounded queue) -> generate
(bounded async concurrency; batching backends get batches) -> extract -> score -> store (committed at
once). One display shows each stage's progress (runs/progress.py). The first Ctrl-C stops taking new
samples and lets the ones in the model finish (for `interrupt_grace` seconds); the second abandons them.
"""

from __future__ import annotations

import asyncio
import os
import platform
import signal
import threading
import time
from collections import OrderedDict
from concurrent.futures import BrokenExecutor, Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import lvu
from lvu.benchmarks import load_all as _load_benchmarks
from lvu.benchmarks.base import BENCHMARKS, Benchmark, Breakdown
from lvu.errors import LvuError
from lvu.media.subtitles import load_cues, select_cues
from lvu.media.cache import FrameCache
from lvu.models import load_all as _load_models
from lvu.models.base import MODELS, Model
from lvu.runs.judging import judge_env, judge_sample
from lvu.runs.progress import PipelineProgress
from lvu.runs.store import Store
from lvu.scoring.judges import Judge
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
    interrupted: bool = False
    """Stopped by Ctrl-C before every sample was done (the stored ones are kept; rerun to resume)."""
    stage_utilisation: dict[str, float] = field(default_factory=dict)
    """Per pipeline stage, the fraction of its slot-time spent on samples (1 - idle)."""


class RunInterrupted(KeyboardInterrupt):
    """Raised by `run()` after a clean stop on Ctrl-C; says what is stored and how to resume."""

    def __init__(self, summary: RunSummary, n_stored: int) -> None:
        self.summary = summary
        super().__init__(f"interrupted — {n_stored} of {summary.n_total} samples of run {summary.run_id} are "
                         "done and stored; run the same command again to resume")


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
    spec, bench, model_cls = resolve_spec(benchmark, model, settings=settings, model_args=model_args, asr=asr)
    return spec, bench, model_cls(**(model_args or {}))


def resolve_spec(benchmark: str, model: str, *, settings: dict[str, Any] | None = None,
                 model_args: dict[str, Any] | None = None, asr: bool = False) -> tuple[RunSpec, Benchmark, type[Model]]:
    """`make_spec` without building the model (the Ray executor builds it on its replicas only)."""
    _load_benchmarks()
    _load_models()
    bench = BENCHMARKS.get(benchmark)(**(settings or {}))
    model_cls = MODELS.get(model)
    effective = {k: v for k, v in bench.settings.items() if k != "limit"}
    args = {k: v for k, v in (model_args or {}).items() if k not in model_cls.run_neutral_args}
    if (version := bench.data_version()) is not None:
        effective["data_version"] = version
    if asr:  # transcripts stand in for missing subtitles: a different input, so a different run
        effective["asr"] = True
    spec = RunSpec(benchmark=benchmark, model=model, model_args=args, settings=effective)
    return spec, bench, model_cls


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
        result = SampleResult(sample_id=sample.id, labels=sample.labels, answer=sample.answer, response=text,
                              n_options=len(sample.options) or None)
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


DecodeMode = Literal["threads", "processes"]
DECODE_MODES = ("threads", "processes")


def model_batch_size(model: Model) -> int:
    """The batch a batching backend (hf's `batch_size`) fills, also through a probe's `base`."""
    for m in (model, getattr(model, "base", None)):
        size = getattr(m, "batch_size", None)
        if isinstance(size, int) and size > 1:
            return size
    return 1


def _ignore_sigint() -> None:
    """Decode processes leave Ctrl-C (sent to the whole process group) to the run's own handling."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Engine:
    """`decode="threads"` decodes in `decode_workers` threads; `"processes"` in as many worker
    processes that write the shared on-disk frame cache, which the run then reads (no frame arrays
    are pickled). A model with `batch_size` > 1 gets at least twice that many samples in flight, so
    one batch is encoded while the previous one generates."""

    def __init__(self, bench: Benchmark, model: Model, store: Store, *, concurrency: int = 4,
                 decode_workers: int = 2, frame_cache: FrameCache | None = None, asr: bool = False,
                 decode: DecodeMode = "threads", interrupt_grace: float = 10.0,
                 judge: Judge | None = None, llm_extract: bool = False) -> None:
        if decode not in DECODE_MODES:
            raise LvuError(f"decode={decode!r} is unknown — use threads or processes")
        if decode == "processes" and frame_cache is None:
            raise LvuError("decode=processes decodes into the frame cache — drop --no-cache or use --decode threads")
        self.bench, self.model, self.store = bench, model, store
        self.asr = asr
        if llm_extract and judge is None:
            raise LvuError("LLM choice extraction needs a judge model — add --judge NAME (and -J KEY=VALUE)")
        self.judge, self.llm_extract = judge, llm_extract  # see runs/judging.py
        self.disk = frame_cache
        self.concurrency = max(1, concurrency, 2 * model_batch_size(model))
        self.decode_workers = max(1, decode_workers)
        self.decode = decode
        self.interrupt_grace = interrupt_grace
        self.pool = ThreadPoolExecutor(max_workers=self.decode_workers, thread_name_prefix="lvu-decode")
        self.procs: Executor | None = None  # started on first use: a run that hits the cache needs none
        self.decoding: dict[Any, asyncio.Future] = {}  # frame entries being decoded by the processes
        self.frames = _MediaCache()
        self.cues = _MediaCache(size=64)
        self.progress = PipelineProgress(0, enabled=False)  # replaced per run; counts stages for callers too

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
        result = SampleResult(sample_id=sample.id, labels=sample.labels, answer=sample.answer,
                              n_options=len(sample.options) or None)
        started = time.perf_counter()
        prompt = None
        with self.progress.stage("decode") as decoded:
            try:
                loop = asyncio.get_running_loop()
                if self.decode == "processes":
                    await self._decode_in_process(sample)
                prompt, times = await loop.run_in_executor(self.pool, self.prepare, sample)
                result.prompt, result.frame_timestamps = prompt.summary(), times
            except LvuError as e:
                result.error = str(e)
            except Exception as e:  # one bad sample never kills a run
                result.error = f"{sample.id}: {type(e).__name__}: {e}"
            decoded.failed = prompt is None
        return _Prepared(sample, result, prompt, started)

    async def _decode_in_process(self, sample: Sample) -> None:
        """Have a worker process decode this sample's frames into the disk cache (once per entry;
        samples sharing an entry wait for the same decode). `prepare` then reads the cache."""
        from lvu.media.extract import _warm_video  # one video's entries into the cache; errors as a line

        loop = asyncio.get_running_loop()
        plan = await loop.run_in_executor(self.pool, lambda: self.bench.plan(sample, self._duration(sample)))
        key = (sample.video.path, tuple(plan.timestamps), plan.resize)
        if not plan.timestamps or key in self.frames.items:
            return
        if key not in self.decoding:
            if self.procs is None:
                from concurrent.futures import ProcessPoolExecutor
                from multiprocessing import get_context

                self.procs = ProcessPoolExecutor(self.decode_workers, mp_context=get_context("spawn"),
                                                 initializer=_ignore_sigint)
            threads = max(1, (os.cpu_count() or 1) // self.decode_workers)
            future = loop.run_in_executor(self.procs, _warm_video, self.disk, sample.video.path,
                                          [key[1]], plan.resize, False, threads)
            self.decoding[key] = future
            future.add_done_callback(lambda _: self.decoding.pop(key, None))
        try:
            _, _, _, error = await asyncio.shield(self.decoding[key])
        except BrokenExecutor as e:  # a worker died (e.g. the decoder crashed): a fresh pool next time
            self.procs = None
            raise LvuError(f"{sample.video.path}: decode worker process died ({type(e).__name__})") from None
        if error:
            raise LvuError(error)

    async def answer_sample(self, item: _Prepared) -> SampleResult:
        """Stage 2 (the event loop): generate, extract, score."""
        result = item.result
        if item.prompt is not None:
            try:
                with self.progress.stage("model") as called:
                    response = await self.model.generate(item.prompt, sample_id=item.sample.id)
                    called.failed = bool(response.error)
                result.response, result.latency = response.text, response.latency
                if response.error:
                    raise LvuError(f"model error: {response.error}")
                grade(self.bench, item.sample, response, result)
                if self.judge is not None:
                    await judge_sample(self.bench, item.sample, result, self.judge, llm_extract=self.llm_extract)
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
                  show_progress: bool = True, env: dict[str, Any] | None = None) -> RunSummary:
        """Run (or resume) `spec`; `env` adds entries to the stored environment (e.g. a sweep tag)."""
        samples, bad = self.bench.load()
        ordinals = {s.id: i for i, s in enumerate(samples)}
        if limit is not None:
            samples = samples[:limit]
        judged = {"judge": judge_env(self.judge, self.llm_extract, "lvu run")} if self.judge is not None else {}
        run_id = self.store.begin_run(spec, {**environment(self.model), **judged, **(env or {})}, fresh=fresh)
        done = self.store.completed_ids(run_id)
        errors: list[tuple[str, str]] = []
        for i, record in enumerate(bad):
            self.store.put(run_id, SampleResult(sample_id=record.id, error=record.error), len(ordinals) + i)
            errors.append((record.id, record.error))
        todo = [s for s in samples if s.id not in done]
        # Same-video samples next to each other, so decoded frames are reused while still cached.
        todo.sort(key=lambda s: (s.video.path, ordinals[s.id]))

        self.progress = PipelineProgress(
            len(todo), slots={"decode": self.decode_workers, "model": self.concurrency},
            title=f"{spec.benchmark} × {spec.model}  ({run_id})", enabled=show_progress)
        stop = asyncio.Event()
        status = "done"
        try:
            with self.progress:
                await self._pipeline(run_id, todo, ordinals, errors, stop)
            if stop.is_set():
                status = "interrupted"
        except (KeyboardInterrupt, asyncio.CancelledError):
            status = "interrupted"
            raise
        finally:
            self.store.finish_run(run_id, status)
            self.pool.shutdown(wait=False, cancel_futures=True)
            if self.procs is not None:
                self.procs.shutdown(wait=status == "done", cancel_futures=True)
            await self.model.close()
            if self.judge is not None:
                await self.judge.close()

        keep = {s.id for s in samples} | {b.id for b in bad}
        results = [r for r in self.store.results(run_id) if r.sample_id in keep]
        return RunSummary(
            run_id=run_id, spec=spec, n_total=len(samples) + len(bad), n_done_before=len(done),
            n_failed=sum(1 for r in results if r.error), tables=self.bench.aggregate(results),
            results_dir=self.store.dir, errors=errors, interrupted=status == "interrupted",
            stage_utilisation={name: self.progress.utilisation(name) for name in ("decode", "model")},
        )

    async def _pipeline(self, run_id: str, todo: list[Sample], ordinals: dict[str, int],
                        errors: list[tuple[str, str]], stop: asyncio.Event) -> None:
        """Decode tasks prepare prompts ahead into a bounded queue (so the model never waits on the
        decoder, and memory holds at most `concurrency` prepared prompts); model workers take them,
        answer, and store each result the moment it completes (one commit: nothing half-written).
        Ctrl-C sets `stop`: no new samples start, those in the model finish within the grace."""
        to_prepare = iter(todo)
        ready: asyncio.Queue[_Prepared | None] = asyncio.Queue(maxsize=self.concurrency)
        answering: set[asyncio.Task] = set()

        async def decoder() -> None:
            for sample in to_prepare:  # shared by the decode tasks; the loop runs one at a time
                if stop.is_set():
                    return
                await ready.put(await self.prepare_sample(sample))

        async def worker() -> None:
            while not stop.is_set() and (item := await ready.get()) is not None:
                if item.prompt is None:
                    self.progress.skip("model")  # failed before the model: not a model call
                answering.add(me := asyncio.current_task())  # type: ignore[arg-type]
                try:
                    result = await self.answer_sample(item)
                finally:
                    answering.discard(me)  # type: ignore[arg-type]
                with self.progress.stage("scored") as scored:
                    self.store.put(run_id, result, ordinals[item.sample.id])
                    scored.failed = bool(result.error)
                if result.error:
                    errors.append((item.sample.id, result.error))

        async def end_of_input() -> None:
            try:
                await asyncio.gather(*decoders)
            finally:
                for _ in workers:
                    await ready.put(None)

        workers = [asyncio.create_task(worker()) for _ in range(self.concurrency)]
        decoders = [asyncio.create_task(decoder()) for _ in range(self.decode_workers)]
        feeder = asyncio.create_task(end_of_input())
        loop = asyncio.get_running_loop()
        timers: list[asyncio.TimerHandle] = []

        def abandon() -> None:
            for t in workers:
                t.cancel()

        def on_interrupt() -> None:
            if stop.is_set():  # the second Ctrl-C: abandon what is still in the model
                self.progress.note("abandoning the samples in flight")
                abandon()
                return
            stop.set()
            for t in (feeder, *decoders, *(w for w in workers if w not in answering)):
                t.cancel()
            self.progress.note(f"stopping: waiting up to {self.interrupt_grace:g} s for {len(answering)} "
                               "sample(s) in the model — Ctrl-C again to abandon them")
            timers.append(loop.call_later(self.interrupt_grace, abandon))

        try:
            loop.add_signal_handler(signal.SIGINT, on_interrupt)
            handling_sigint = True
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
            handling_sigint = False
        try:
            await asyncio.wait(workers)
        finally:
            if handling_sigint:
                loop.remove_signal_handler(signal.SIGINT)
            for timer in timers:
                timer.cancel()
            for t in (feeder, *decoders, *workers):
                t.cancel()
            await asyncio.gather(feeder, *decoders, *workers, return_exceptions=True)
        for t in (feeder, *decoders, *workers):  # a bug in the pipeline itself is not swallowed
            if not t.cancelled() and t.exception() is not None:
                raise t.exception()  # type: ignore[misc]


def run(benchmark: str, model: str, *, settings: dict[str, Any] | None = None,
        model_args: dict[str, Any] | None = None, results_dir: str | Path | None = None,
        fresh: bool = False, limit: int | None = None, concurrency: int = 4,
        show_progress: bool = True, report: bool = True, frame_cache: bool = True,
        asr: bool = False, decode: DecodeMode = "threads", decode_workers: int = 2,
        env: dict[str, Any] | None = None, judge: str | None = None, judge_args: dict[str, Any] | None = None,
        llm_extract: bool = False, executor: Literal["local", "ray"] = "local", ray_address: str | None = None,
        ray_args: dict[str, Any] | None = None) -> RunSummary:
    """Run (or resume) one benchmark × model and return its summary. The library entry point.
    `frame_cache=False` decodes every time instead of using the shared on-disk frame cache;
    `asr=True` transcribes the audio (Whisper, `lvu[asr]`) of samples that have no subtitles;
    `decode`/`decode_workers`: see `Engine`; `env` is stored with the run (e.g. a sweep tag).
    Ctrl-C stops cleanly and raises `RunInterrupted` (a KeyboardInterrupt) saying how to resume.
    `judge`/`judge_args`: a model (registry name + args) that judges open-ended and generation
    samples, and with `llm_extract` maps replies without an option to one (runs/judging.py). The
    judge is not part of the run id; stored samples it has not judged yet are judged on resume.
    `executor="ray"` runs the same pipeline on a Ray cluster (lvu.runs.ray_executor, docs/ray.md)."""
    if executor == "ray":
        from lvu.runs.ray_executor import run_on_ray

        return run_on_ray(benchmark, model, settings=settings, model_args=model_args, results_dir=results_dir,
                          fresh=fresh, limit=limit, concurrency=concurrency, show_progress=show_progress,
                          report=report, frame_cache=frame_cache, asr=asr, env=env, judge=judge,
                          judge_args=judge_args, llm_extract=llm_extract, address=ray_address, ray_args=ray_args)
    if executor != "local":
        raise LvuError(f"executor {executor!r} is unknown — use local or ray")
    spec, bench, mdl = make_spec(benchmark, model, settings=settings, model_args=model_args, asr=asr)
    judge_obj = None
    if judge is not None:
        from lvu.scoring.judges import make_judge

        judge_obj = make_judge(judge, judge_args)
    elif llm_extract:
        raise LvuError("llm_extract needs a judge model — pass judge= (--judge NAME)")
    store = Store(results_dir)
    try:
        engine = Engine(bench, mdl, store, concurrency=concurrency, decode=decode, decode_workers=decode_workers,
                        frame_cache=FrameCache() if frame_cache else None, asr=asr, judge=judge_obj,
                        llm_extract=llm_extract)
        summary = asyncio.run(engine.run(spec, fresh=fresh, limit=limit, show_progress=show_progress, env=env))
        if summary.interrupted:
            raise RunInterrupted(summary, sum(r.error is None for r in store.iter_results(summary.run_id)))
        if judge_obj is not None:  # samples stored before (e.g. by a run without this judge)
            _judge_leftovers(summary, store, bench, judge_obj, llm_extract, concurrency, show_progress, limit)
        if report:
            from lvu.analysis.report import write_report

            info = store.run(summary.run_id)
            summary.report_path = write_report(info, store.results(summary.run_id), summary.tables, store.dir)
        return summary
    finally:
        store.close()


def _judge_leftovers(summary: RunSummary, store: Store, bench: Benchmark, judge: Judge, llm_extract: bool,
                     concurrency: int, show_progress: bool, limit: int | None) -> None:
    """Judge stored samples of the run that this judge has not judged, then refresh the summary."""
    from lvu.runs.judging import judge_stored

    done = asyncio.run(judge_stored(store, summary.run_id, bench, judge, llm_extract=llm_extract,
                                    concurrency=concurrency, show_progress=show_progress, mode="lvu run"))
    if done.n_judged or done.n_failed:
        samples, bad = bench.load()
        keep = {s.id for s in samples[:limit]} | {b.id for b in bad}
        results = [r for r in store.results(summary.run_id) if r.sample_id in keep]
        summary.tables = bench.aggregate(results)
        summary.errors = [(r.sample_id, r.error) for r in results if r.error]
        summary.n_failed = len(summary.errors)
