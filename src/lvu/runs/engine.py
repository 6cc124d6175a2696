"""The run engine: the one place that wires a benchmark, the media code and a model together.

Per sample: plan -> decode frames + select cues -> prompt (decode threads, or worker processes that
decode into the shared frame cache; prefetched ahead of the model into a bounded queue) -> generate
(bounded async concurrency; batching backends get batches) -> extract -> score -> store (committed at
once). One display shows each stage's progress (lvu/progress.py). The first Ctrl-C stops taking new
samples and lets the ones in the model finish (for `interrupt_grace` seconds); the second abandons them.
`Engine` is the local executor's inner pipeline; everything around the run (store, resume, status,
summary) is the lifecycle both executors share (lvu.runs.lifecycle). `resolve_spec` makes the run's
spec (so its id) from names or Benchmark / Model objects.
"""

from __future__ import annotations

import asyncio
import platform
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lvu.benchmarks.base import BENCHMARKS, Benchmark
from lvu.errors import LvuError, SubtitleError
from lvu.registry import Registry
from lvu.media.subtitles import load_cues, select_cues
from lvu.media.cache import FrameCache
from lvu.models import load_all as _load_models
from lvu.models.base import MODELS, Model, check_audio
from lvu.runs.identity import FINGERPRINT_KEY, data_fingerprint, digest_for, loaded_digests, resolve_paths
from lvu.runs.grading import (  # noqa: F401  (benchmark_of, score_saved, RUN_ONLY_SETTINGS: imported from here too)
    RUN_ONLY_SETTINGS,
    benchmark_of,
    grade,
    make_benchmark,
    score_saved,
)
from lvu.runs.data_errors import mark_data_error
from lvu.runs.lifecycle import (  # noqa: F401  (RunSummary, RunInterrupted, in_scope: imported from here too)
    RunInterrupted,
    RunSummary,
    execute,
    in_scope,
    run_stages,
)
from lvu.runs.options import RunOptions
from lvu.runs.tracebacks import traceback_text
from lvu.version import __version__
from lvu.runs.judging import judge_sample
from lvu.runs.pipeline import DecodeMode, Prepared, ProcessDecoder, model_batch_size, ready_models, run_pipeline
from lvu.progress import PipelineProgress
from lvu.runs.store import Store
from lvu.scoring.judges import Judge
from lvu.types import Frame, Prompt, RunSpec, Sample, SampleResult, Subtitle, VideoMeta


def environment(model: Model) -> dict[str, Any]:
    """What produced the numbers; stored with the run."""
    import av

    return {
        "lvu": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "decoder": f"pyav {av.__version__}",
        "model": model.identity,
    }


def make_spec(benchmark: str | Benchmark, model: str | Model, *, settings: dict[str, Any] | None = None,
              model_args: dict[str, Any] | None = None, asr: bool = False) -> tuple[RunSpec, Benchmark, Model]:
    """Resolve names (or objects) and settings; the spec holds the *effective* settings so the run
    id changes whenever anything that affects results changes."""
    spec, bench, model_cls = resolve_spec(benchmark, model, settings=settings, model_args=model_args, asr=asr)
    return spec, bench, model if isinstance(model, Model) else model_cls(**(model_args or {}))


def resolve_spec(benchmark: str | Benchmark, model: str | Model, *, settings: dict[str, Any] | None = None,
                 model_args: dict[str, Any] | None = None, asr: bool = False) -> tuple[RunSpec, Benchmark, type[Model]]:
    """`make_spec` without building the model (the Ray executor builds it on its replicas only).
    The spec's paths are absolute and it carries the data's fingerprint (runs/identity.py), so
    other or edited data is another run; this reads the benchmark's samples (`bench.loaded()`).
    A Benchmark or Model object makes the spec its registry name and settings (arguments) make:
    the same run id as the run given by name."""
    _load_models()
    name, bench = benchmark_object(benchmark, settings)
    model_name, model_cls, given_args = model_parts(model, model_args)
    check_audio(model_cls, bench.audio_mode, name)  # before weights load or a replica starts
    effective = {k: v for k, v in bench.settings.items() if k != "limit"}
    args = {k: v for k, v in given_args.items() if k not in model_cls.run_neutral_args}
    if (version := bench.data_version()) is not None:
        effective["data_version"] = version
    effective[FINGERPRINT_KEY] = data_fingerprint(*bench.loaded(), loaded_digests(bench))
    if asr:  # transcripts stand in for missing subtitles: a different input, so a different run
        effective["asr"] = True
    spec = RunSpec(benchmark=name, model=model_name, model_args=args, settings=effective)
    return spec, bench, model_cls


def benchmark_object(benchmark: str | Benchmark, settings: dict[str, Any] | None) -> tuple[str, Benchmark]:
    """(registry name, benchmark) of a run: made from the name (as typed: an alias or module:Class
    is what the spec stores) and settings, or the object given — its class registered, rebuilt with
    its local paths made absolute as a name's settings are."""
    if not isinstance(benchmark, Benchmark):
        return benchmark, make_benchmark(benchmark, settings)
    cls = type(benchmark)
    if settings:
        raise LvuError(f"settings= is for a benchmark name: the {cls.__name__} object has its own — "
                       "set them when you make it")
    _refuse_unregistered(cls, BENCHMARKS, "benchmark", "@register_benchmark(NAME)")
    absolute = resolve_paths(benchmark.settings)
    return cls.name, benchmark if absolute == benchmark.settings else cls(**absolute)


def model_parts(model: str | Model, model_args: dict[str, Any] | None) -> tuple[str, type[Model], dict[str, Any]]:
    """(registry name, class, arguments) of a run's model, named or given as an object (its class
    registered; its arguments those it was made with, `Model.args`)."""
    if not isinstance(model, Model):
        return model, MODELS.get(model), dict(model_args or {})
    cls = type(model)
    if model_args:
        raise LvuError(f"model_args= is for a model name: the {cls.__name__} object has its own — "
                       "pass them when you make it")
    _refuse_unregistered(cls, MODELS, "model", "@register_model(NAME)")
    args = getattr(model, "args", None)
    if not isinstance(args, dict):
        raise LvuError(f"model {cls.__name__}: no `args` (its __init__ must call super().__init__(**args)) — "
                       "a run's id is made of its model's arguments")
    return cls.name, cls, dict(args)


def _refuse_unregistered(cls: type[Benchmark] | type[Model], registry: Registry[Any], kind: str,
                         how: str) -> None:
    """A one-line LvuError unless `cls` is the class its registry name resolves to (a run is
    stored, resumed and reported by that name)."""
    if registry.registered_name(cls) is None:
        raise LvuError(f"{kind} class {cls.__module__}.{cls.__qualname__} is not registered — register it with "
                       f"{how} (docs/plugins.md): a run is stored, resumed and reported by that name")


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
        RunOptions(decode=decode, frame_cache=frame_cache is not None)  # the same one-line errors as `lvu run`
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

    # ---- the run: the lifecycle (lvu.runs.lifecycle) drives these -------------------------------------

    async def run(self, spec: RunSpec, *, fresh: bool = False, limit: int | None = None,
                  show_progress: bool = True, env: dict[str, Any] | None = None) -> RunSummary:
        """Run (or resume) `spec`; `env` adds entries to the stored environment (e.g. a sweep tag)."""
        return await run_stages(self, spec, fresh=fresh, limit=limit, show_progress=show_progress, env=env)

    def connect(self) -> None:
        """Nothing to join: the run is this process's."""

    def disconnect(self) -> None:
        """Nothing to leave."""

    async def start(self, fresh: bool) -> None:
        check_audio(self.model, self.bench.audio_mode, self.bench.name)  # before any call: never drop the sound

    async def ready(self, fresh: bool, has_work: bool) -> None:
        await ready_models(self.model, None, fresh=fresh, model_has_work=has_work)

    def environment(self) -> dict[str, Any]:
        return environment(self.model)

    def described(self) -> dict[str, Any]:
        return {}

    def slots(self) -> tuple[dict[str, int], str]:
        return {"decode": self.decode_workers, "model": self.concurrency}, ""

    async def pipeline(self, run_id: str, todo: list[Sample], ordinals: dict[str, int],
                       errors: list[tuple[str, str]], stop: asyncio.Event) -> None:
        await run_pipeline(self, run_id, todo, ordinals, errors, stop)

    async def close(self, status: str) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        if self.processes is not None:
            self.processes.shutdown(wait=status == "done")
        await self.model.close()


def run_local(benchmark: str | Benchmark, model: str | Model, *, settings: dict[str, Any] | None = None,
              model_args: dict[str, Any] | None = None, options: RunOptions | None = None) -> RunSummary:
    """Run (or resume) one benchmark × model in this process and return its summary; no report.
    `lvu.api.run` (what `lvu run` calls) chooses this or the Ray executor, then writes the report;
    RunOptions explains the options. Ctrl-C stops cleanly and raises `RunInterrupted`."""
    options = options or RunOptions()
    spec, bench, mdl = make_spec(benchmark, model, settings=settings, model_args=model_args, asr=options.asr)

    def engine(store: Store, judge: Judge | None) -> Engine:
        return Engine(bench, mdl, store, concurrency=options.concurrency, decode=options.decode,
                      decode_workers=options.decode_workers, frame_cache=FrameCache() if options.frame_cache else None,
                      asr=options.asr, judge=judge, llm_extract=options.llm_extract)

    return execute(spec, bench, options, engine)
