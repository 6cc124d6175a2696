"""The run engine: the one place that wires a benchmark, the media code and a model together.

Per sample: plan -> decode frames + select cues -> prompt (decode threads, or worker processes that
decode into the shared frame cache; prefetched ahead of the model into a bounded queue) -> generate
(bounded async concurrency; batching backends get batches) -> extract -> score -> store (committed at
once). One display shows each stage's progress (lvu/progress.py). The first Ctrl-C stops taking new
samples and lets the ones in the model finish (for `interrupt_grace` seconds); the second abandons them.
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

import lvu
from lvu.benchmarks.base import Benchmark, Breakdown
from lvu.errors import LvuError, SubtitleError
from lvu.media.subtitles import load_cues, select_cues
from lvu.media.cache import FrameCache
from lvu.models import load_all as _load_models
from lvu.models.base import MODELS, Model, check_audio
from lvu.runs.regrade import regrade_reused
from lvu.runs.identity import FINGERPRINT_KEY, data_fingerprint, digest_for, loaded_digests, reusable_ids
from lvu.runs.asr_use import warn_if_asr_unused
from lvu.runs.grading import (  # noqa: F401  (benchmark_of, score_saved, RUN_ONLY_SETTINGS: imported from here too)
    RUN_ONLY_SETTINGS,
    benchmark_of,
    grade,
    make_benchmark,
    score_saved,
)
from lvu.runs.run_names import no_answers, unreadable_note
from lvu.runs.data_errors import bad_record_result, data_error_note, mark_data_error, stored_data_errors
from lvu.runs.summaries import code_stamp, run_tables
from lvu.runs.tracebacks import traceback_text, traced_failures
from lvu.runs.unreadable import unreadable_in_scope
from lvu.runs.judging import judge_env, judge_sample
from lvu.runs.pipeline import (
    DECODE_MODES,
    DecodeMode,
    Prepared,
    ProcessDecoder,
    StoreFailed,
    model_batch_size,
    ready_models,
    run_pipeline,
    store_failed,
)
from lvu.progress import PipelineProgress
from lvu.runs.store import Store
from lvu.runs.store_files import StoreWriteError
from lvu.scoring.judges import Judge
from lvu.types import Frame, Prompt, RunSpec, Sample, SampleResult, Subtitle, VideoMeta


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
    n_benchmark: int | None = None
    """The benchmark's sample count; more than `n_total` when `--limit` ran only some of them."""
    sample_ids: list[str] = field(default_factory=list)
    """The samples this invocation covers (the first `limit`, and records that could not be read):
    `tables` aggregate their stored results, and so does the run's report (lvu.api). Set by `finish_run`."""
    unreadable_note: str | None = None
    """How many replies of `sample_ids` held no readable answer, two of them, the likely causes (run_names)."""
    n_unreadable: int = 0
    traced: list[str] = field(default_factory=list)
    """Failed samples of `sample_ids` whose record keeps a traceback; `first_traceback` is the first one's."""
    first_traceback: str | None = None
    data_error_note: str | None = None
    """'3 data errors left out of the score (fix the data: lvu data check ...)', or None (runs/data_errors.py)."""

    @property
    def limited(self) -> bool:
        return self.n_benchmark is not None and self.n_total < self.n_benchmark

    @property
    def no_answers(self) -> str | None:
        """'no answers (8 of 8 failed)' when every sample failed (then there is no score), else None."""
        return no_answers(self.n_total - self.n_failed, self.n_failed)


class RunInterrupted(KeyboardInterrupt):
    """Raised by `run_local()` (so by `lvu.api.run`) after a clean stop on Ctrl-C; says what is
    stored and how to resume."""

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
    """`make_spec` without building the model (the Ray executor builds it on its replicas only).
    The spec's paths are absolute and it carries the data's fingerprint (runs/identity.py), so
    other or edited data is another run; this reads the benchmark's samples (`bench.loaded()`)."""
    _load_models()
    bench = make_benchmark(benchmark, settings)
    model_cls = MODELS.get(model)
    check_audio(model_cls, bench.audio_mode, benchmark)  # before weights load or a replica starts
    effective = {k: v for k, v in bench.settings.items() if k != "limit"}
    args = {k: v for k, v in (model_args or {}).items() if k not in model_cls.run_neutral_args}
    if (version := bench.data_version()) is not None:
        effective["data_version"] = version
    effective[FINGERPRINT_KEY] = data_fingerprint(*bench.loaded(), loaded_digests(bench))
    if asr:  # transcripts stand in for missing subtitles: a different input, so a different run
        effective["asr"] = True
    spec = RunSpec(benchmark=benchmark, model=model, model_args=args, settings=effective)
    return spec, bench, model_cls


def video_meta(sample: Sample) -> VideoMeta:
    """What `Benchmark.plan` gets to know of the sample's video: the release's duration when it
    gives one; the rest from the file's probe (memoised per process), read only when asked for."""
    path = sample.video.path

    def probed() -> VideoMeta:
        from lvu.media.video import probe_cached  # each video is probed once per process

        info = probe_cached(path)
        return VideoMeta(info.duration, info.fps, info.num_frames or round(info.duration * info.fps))

    return VideoMeta(float(sample.video.duration) if sample.video.duration else None, probe=probed)


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
        batch = model_batch_size(model)
        self.concurrency = max(1, concurrency, 2 * batch if batch > 1 else 1)
        self.decode_workers = max(1, decode_workers)
        self.decode = decode
        self.interrupt_grace = interrupt_grace
        self.pool = ThreadPoolExecutor(max_workers=self.decode_workers, thread_name_prefix="lvu-decode")
        self.processes = ProcessDecoder(self.decode_workers, frame_cache) if decode == "processes" and frame_cache else None
        self.frames = _MediaCache()
        self.cues = _MediaCache(size=64)
        self.audio = _MediaCache(size=4)  # whole tracks, 16 kHz int16: 115 MB per hour of video
        self.asr_cue_counts: dict[str, int] = {}
        """Sample id -> cues its prompt got from the Whisper transcript (set by `prepare`)."""
        self.progress = PipelineProgress(0, enabled=False)  # replaced per run; counts stages for callers too

    # ---- media (runs in worker threads) ----------------------------------------------------------

    def _duration(self, sample: Sample) -> float:
        return video_meta(sample).duration

    def prepare(self, sample: Sample, video: VideoMeta | None = None) -> tuple[Prompt, list[float]]:
        video = video if video is not None else video_meta(sample)
        plan = self.bench.plan(sample, video)
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
        # The plan names the mode the protocol wants *if* cues exist; their source is the sample's
        # subtitle file, else (no file, or a named one that is missing) the transcript with --asr.
        cues: list[Subtitle] = []
        all_cues: list[Subtitle] | None = None
        sub, from_asr = sample.subtitles, False
        has_file = sub is not None and Path(sub.path).exists()
        if plan.subtitle_mode != "none" and sub is not None and (has_file or not self.asr):
            if not has_file:
                raise SubtitleError(f"{sub.path}: file not found — add it, or pass --asr to transcribe the audio")
            duration = sample.video.duration  # LongVideoBench: a cue with no end runs to the clip's end
            all_cues = self.cues.get((sub.path, sub.offset),
                                     lambda: load_cues(sub.path, offset=sub.offset, duration=duration))
        elif plan.subtitle_mode != "none" and self.asr:
            from lvu.media.asr import transcribe  # cached on disk per video content

            all_cues = self.cues.get(("asr", sample.video.path), lambda: transcribe(sample.video.path))
            from_asr = True
        if all_cues is not None:
            cues = select_cues(all_cues, [f.timestamp for f in frames], plan.subtitle_mode)
        if from_asr:  # stored with the record (prepare_sample): the run can tell whether --asr did anything
            self.asr_cue_counts[sample.id] = len(cues)
        prompt = self.bench.build_prompt(sample, frames, cues)
        if (mode := self.bench.audio_mode) != "none":
            prompt = self._add_audio(sample, prompt, mode, [f.timestamp for f in frames], video)
        prompt.video = prompt.video or sample.video.path
        return prompt, [f.timestamp for f in frames]

    def _add_audio(self, sample: Sample, prompt: Prompt, mode: str, times: list[float], video: VideoMeta) -> Prompt:
        """The benchmark's prompt with the sample's audio clips placed (lvu.media.audio): the track is
        decoded once per video (disk cache unless --no-cache) and cut into the mode's spans."""
        from lvu.media.audio import audio_track, spans

        path = sample.video.path
        track = self.audio.get(("audio", path), lambda: audio_track(path, cache=self.disk is not None))
        clips = [track.clip(a, b) for a, b in spans(mode, times, video.duration)]
        return self.bench.place_audio(sample, prompt, clips)

    # ---- one sample, in two stages -----------------------------------------------------------------

    async def prepare_sample(self, sample: Sample) -> Prepared:
        """Stage 1 (decode threads): plan, frames, cues, prompt. A failure is the sample's error."""
        result = SampleResult(sample_id=sample.id, labels=sample.labels, answer=sample.answer,
                              n_options=len(sample.options) or None,
                              sample_digest=digest_for(self.bench, sample),
                              question=sample.question, options=sample.options)
        started = time.perf_counter()
        prompt = None
        with self.progress.stage("decode") as decoded:
            try:
                loop = asyncio.get_running_loop()
                video = video_meta(sample)  # no I/O here: the file is probed when the plan asks
                if self.processes is not None:
                    await self._decode_in_process(sample, video)
                prompt, times = await loop.run_in_executor(self.pool, self.prepare, sample, video)
                result.prompt, result.frame_timestamps = prompt.summary(), times
                if (n_asr := self.asr_cue_counts.pop(sample.id, None)) is not None:
                    result.prompt["asr_cues"] = n_asr  # cues from the Whisper transcript (runs/asr_use.py)
            except LvuError as e:
                result.error = str(e)
            except Exception as e:  # one bad sample never kills a run
                result.error, result.traceback = f"{sample.id}: {type(e).__name__}: {e}", traceback_text(e)
            if result.error is not None and (missing := self.bench.missing_video(sample)) is not None:
                mark_data_error(result, missing)  # the data's fault, not the model's: left out of the score
            decoded.failed = prompt is None
        return Prepared(sample, result, prompt, started)

    async def _decode_in_process(self, sample: Sample, video: VideoMeta) -> None:
        """Have a worker process decode this sample's frames into the disk cache, which `prepare`
        then reads (unless another sample of the video already brought them into memory)."""
        assert self.processes is not None
        plan = await asyncio.get_running_loop().run_in_executor(
            self.pool, lambda: self.bench.plan(sample, video))
        if plan.timestamps and (sample.video.path, tuple(plan.timestamps), plan.resize) not in self.frames.items:
            await self.processes.decode(sample.video.path, plan.timestamps, plan.resize)

    async def answer_sample(self, item: Prepared) -> SampleResult:
        """Stage 2 (the event loop): generate, extract, score."""
        result = item.result
        if item.prompt is not None:
            try:
                with self.progress.stage("model") as called:
                    response = await self.model.generate(item.prompt, sample_id=item.sample.id)
                    called.failed = bool(response.error)
                item.unreachable, item.permanent = response.unreachable, response.permanent
                result.response, result.latency = response.text, response.latency
                if response.error:
                    raise LvuError(f"model error: {response.error}")
                grade(self.bench, item.sample, response, result)
                if self.judge is not None:
                    await judge_sample(self.bench, item.sample, result, self.judge, llm_extract=self.llm_extract)
            except LvuError as e:
                result.error = str(e)
            except Exception as e:  # a plugin's bug: its traceback is kept (lvu results show RUN --trace ID)
                result.error, result.traceback = f"{item.sample.id}: {type(e).__name__}: {e}", traceback_text(e)
        if not result.latency:
            result.latency = time.perf_counter() - item.started
        return result

    async def run_sample(self, sample: Sample) -> SampleResult:
        return await self.answer_sample(await self.prepare_sample(sample))

    # ---- the run ----------------------------------------------------------------------------------

    async def run(self, spec: RunSpec, *, fresh: bool = False, limit: int | None = None,
                  show_progress: bool = True, env: dict[str, Any] | None = None) -> RunSummary:
        """Run (or resume) `spec`; `env` adds entries to the stored environment (e.g. a sweep tag)."""
        samples, bad = self.bench.loaded()
        ordinals = {s.id: i for i, s in enumerate(samples)}
        if limit is not None:
            samples = samples[:limit]
        judged = {"judge": judge_env(self.judge, self.llm_extract, "lvu run")} if self.judge is not None else {}
        # Before begin_run (which drops a --fresh run's samples): a dead endpoint loses nothing.
        digests = loaded_digests(self.bench)  # hashed once with the fingerprint
        stored = set() if fresh else reusable_ids(self.store.completed_digests(spec.run_id), samples, digests)
        check_audio(self.model, self.bench.audio_mode, spec.benchmark)  # before any call: never drop the sound
        await ready_models(self.model, self.judge, fresh=fresh,
                           model_has_work=any(s.id not in stored for s in samples))
        run_id = self.store.begin_run(spec, {**environment(self.model), **judged, **(env or {})}, fresh=fresh)
        self.store.set_total(run_id, len(ordinals) + len(bad))  # coverage, and `partial` for a --limit run
        done = stored  # read above (never a changed question's answer); --fresh: nothing
        done -= regrade_reused(self.store, run_id, self.bench, samples, done)  # scored by other code: graded again
        errors: list[tuple[str, str]] = []
        for i, record in enumerate(bad):
            self.store.put(run_id, bad_record_result(record), len(ordinals) + i)  # a data error: not scored
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
                await run_pipeline(self, run_id, todo, ordinals, errors, stop)
            if stop.is_set():
                status = "interrupted"
        except (KeyboardInterrupt, asyncio.CancelledError, StoreFailed):  # resumable: nothing stored is lost
            status = "interrupted"
            raise
        except LvuError:  # e.g. pipeline.EndpointDown: stopped early, stored samples kept
            status = "failed"
            raise
        finally:
            finish_status(self.store, run_id, status)
            self.pool.shutdown(wait=False, cancel_futures=True)
            if self.processes is not None:
                self.processes.shutdown(wait=status == "done")
            await self.model.close()
            if self.judge is not None:
                await self.judge.close()

        keep = {s.id for s in samples} | {b.id for b in bad}
        tables, n_failed = run_tables(self.store, run_id, self.bench, keep)  # cached when nothing changed
        return RunSummary(
            run_id=run_id, spec=spec, n_total=len(samples) + len(bad), n_done_before=len(done),
            n_failed=n_failed, tables=tables,
            results_dir=self.store.dir, errors=errors, interrupted=status == "interrupted",
            n_benchmark=len(ordinals) + len(bad),
            stage_utilisation={name: self.progress.utilisation(name) for name in ("decode", "model")},
        )


def finish_status(store: Store, run_id: str, status: str) -> None:
    """Store the run's final status (and unlock it). A status that cannot be written after a
    stop is left to the lock (the run lists as `interrupted`); after a clean run it is an error."""
    try:
        store.finish_run(run_id, status)
    except StoreWriteError as e:
        if status == "done":
            raise store_failed(store, run_id, e) from None


def run_local(benchmark: str, model: str, *, settings: dict[str, Any] | None = None,
              model_args: dict[str, Any] | None = None, results_dir: str | Path | None = None,
              fresh: bool = False, limit: int | None = None, concurrency: int = 4,
              show_progress: bool = True, frame_cache: bool = True,
              asr: bool = False, decode: DecodeMode = "threads", decode_workers: int = 2,
              env: dict[str, Any] | None = None, judge: str | None = None, judge_args: dict[str, Any] | None = None,
              llm_extract: bool = False) -> RunSummary:
    """Run (or resume) one benchmark × model in this process and return its summary; no report.
    `lvu.api.run` (what `lvu run` calls) chooses this or the Ray executor, then writes the report;
    its docstring explains the arguments. Ctrl-C stops cleanly and raises `RunInterrupted`."""
    spec, bench, mdl = make_spec(benchmark, model, settings=settings, model_args=model_args, asr=asr)
    judge_obj = make_run_judge(judge, judge_args, llm_extract)
    store = Store(results_dir)
    try:
        engine = Engine(bench, mdl, store, concurrency=concurrency, decode=decode, decode_workers=decode_workers,
                        frame_cache=FrameCache() if frame_cache else None, asr=asr, judge=judge_obj,
                        llm_extract=llm_extract)
        summary = asyncio.run(engine.run(spec, fresh=fresh, limit=limit, show_progress=show_progress, env=env))
        raise_if_interrupted(summary, store)
        if asr:
            warn_if_asr_unused(store.results(summary.run_id), bench, summary.run_id)
        return finish_run(summary, store, bench, judge_obj, llm_extract=llm_extract, concurrency=concurrency,
                          show_progress=show_progress, limit=limit)
    finally:
        store.close()


def raise_if_interrupted(summary: RunSummary, store: Store) -> None:
    """After a run stopped by Ctrl-C (either executor): say what is stored and raise RunInterrupted."""
    if summary.interrupted:
        stop = RunInterrupted(summary, sum(r.error is None for r in store.iter_results(summary.run_id)))
        from rich.console import Console  # said here: typer turns a KeyboardInterrupt into a silent exit 130

        Console(stderr=True, soft_wrap=True).print(str(stop), markup=False, highlight=False)
        raise stop


def make_run_judge(judge: str | None, judge_args: dict[str, Any] | None, llm_extract: bool) -> Judge | None:
    """The judge of a run (shared by the local and Ray executors), or None."""
    if judge is not None:
        from lvu.scoring.judges import make_judge

        return make_judge(judge, judge_args)
    if llm_extract:
        raise LvuError("llm_extract needs a judge model — pass judge= (--judge NAME)")
    return None


def finish_run(summary: RunSummary, store: Store, bench: Benchmark, judge: Judge | None, *, llm_extract: bool,
               concurrency: int, show_progress: bool, limit: int | None) -> RunSummary:
    """After the pipeline (either executor): record which samples this invocation covers, and
    judge samples stored before without this judge. The report is lvu.api's to write (it sits
    above the engine and the reports)."""
    samples, bad = bench.loaded()
    summary.sample_ids = [s.id for s in samples[:limit]] + [b.id for b in bad]
    if judge is not None:
        judge_leftovers(summary, store, bench, judge, llm_extract, concurrency, show_progress)
    keep = set(summary.sample_ids)  # what the run's end says beyond its score (lvu run prints it)
    bad, n_answered = unreadable_in_scope(store, summary.run_id, keep, code_stamp(type(bench)))
    summary.n_unreadable, summary.unreadable_note = len(bad), unreadable_note(bad, scored=n_answered)
    if summary.n_failed:
        summary.traced, summary.first_traceback = traced_failures(store, summary.run_id, keep)
        summary.data_error_note = data_error_note(stored_data_errors(store, summary.run_id, keep), summary.spec)
    return summary


def in_scope(store: Store, summary: RunSummary) -> list[SampleResult]:
    """The run's stored results for the samples the invocation covers (`summary.sample_ids`), as
    its summary tables were aggregated."""
    keep = set(summary.sample_ids)
    return [r for r in store.results(summary.run_id) if r.sample_id in keep]


def judge_leftovers(summary: RunSummary, store: Store, bench: Benchmark, judge: Judge, llm_extract: bool,
                    concurrency: int, show_progress: bool) -> None:
    """Judge stored samples of the run that this judge has not judged, then refresh the summary."""
    from lvu.runs.judging import judge_stored

    done = asyncio.run(judge_stored(store, summary.run_id, bench, judge, llm_extract=llm_extract,
                                    concurrency=concurrency, show_progress=show_progress, mode="lvu run"))
    if done.n_judged or done.n_failed:
        results = in_scope(store, summary)
        summary.tables = bench.aggregate(results)
        summary.errors = [(r.sample_id, r.error) for r in results if r.error]
        summary.n_failed = len(summary.errors)
