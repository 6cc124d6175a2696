"""How samples flow through a local run: decode tasks -> bounded queue -> model workers -> store.

`run_pipeline` drives an Engine's two stage functions (`prepare_sample`, `answer_sample`) with
`decode_workers` decode tasks and `concurrency` model workers, stores each result the moment it
completes, and handles Ctrl-C (first: stop taking samples, let those in the model finish within the
grace; second: abandon them). `ProcessDecoder` is the `decode="processes"` back end: worker processes
that decode into the shared on-disk frame cache, which the run then reads. `ready_models` (before a
run: --fresh and the reachability check), `EndpointWatch` (stop when the endpoint is gone) and
`FirstCallsWatch` (stop when the first calls all fail the same way) serve the Ray executor too;
`watch_endpoint` stops a local run whose endpoint has refused every attempt for a minute.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from concurrent.futures import BrokenExecutor, Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from lvu.errors import LvuError
from lvu.media.cache import FrameCache
from lvu.models.base import Model
from lvu.models.retry import RETRY_WATCH, RetryWatch
from lvu.runs.stage_runner import StageRunner
from lvu.runs.store_files import StoreWriteError
from lvu.types import Prompt, Sample, SampleResult

if TYPE_CHECKING:
    from lvu.progress import PipelineProgress
    from lvu.runs.store import Store
    from lvu.scoring.judges import Judge

DecodeMode = Literal["threads", "processes"]
DECODE_MODES = ("threads", "processes")
DEAD_ENDPOINT_CALLS = 8
"""Model calls in a row that never reached the endpoint (after their retries) that stop a run."""
DEAD_ENDPOINT_SECONDS = 60.0
"""Seconds of attempts that all failed to reach the endpoint (no answer in between) that stop a
run, whatever the concurrency: long enough to ride out a proxy or a small server restarting,
short enough not to leave a run that cannot go on sitting in its retries (docs/runs.md)."""
FIRST_CALLS = 8
"""A run whose first this many model calls (all, in a shorter run) fail with one and the same
error that retrying cannot change stops (`FirstCallsWatch`)."""


@dataclass
class Prepared:
    """A sample between the two stages: its prompt (None when preparing it failed) and its record."""

    sample: Sample
    result: SampleResult
    prompt: Prompt | None
    started: float
    unreachable: bool = False
    """Its model call never reached the endpoint (see EndpointWatch)."""
    permanent: bool = False
    """Its model call failed with an error that retrying cannot change (see FirstCallsWatch)."""


class Stages(Protocol):
    """What `run_pipeline` drives: lvu.runs.engine.Engine (named by its shape, so this module
    need not import the engine that imports it)."""

    concurrency: int
    decode_workers: int
    interrupt_grace: float
    progress: PipelineProgress
    store: Store

    async def prepare_sample(self, sample: Sample) -> Prepared: ...

    async def answer_sample(self, item: Prepared) -> SampleResult: ...


async def ready_models(model: Model | None, judge: Judge | None, *, fresh: bool, model_has_work: bool) -> None:
    """Before a run: with `fresh`, the model and the judge recompute every answer (they read no
    response cache, which may hold another model's answers under the same name or URL); then each
    is checked to be reachable (`Model.preflight`: a one-line LvuError now, not every sample's
    retries later). `model` None: checked elsewhere (the Ray replicas)."""
    if fresh:
        for m in (model, judge.model if judge is not None else None):
            if m is not None:
                m.bypass_cache()
    if model is not None and model_has_work:
        await model.preflight()
    if judge is not None:
        await judge.model.preflight()


class EndpointDown(LvuError):
    """The run stopped early: its model calls kept failing to reach the endpoint."""


class EndpointWatch:
    """Counts finished model calls; `saw` says stop once `limit` calls in a row (all of them when
    the run has fewer) failed at the connection level (`Response.unreachable`: refused, dropped,
    unknown host) with no answer in between: every other sample would wait out its retries and
    fail the same way."""

    def __init__(self, n_calls: int, limit: int = DEAD_ENDPOINT_CALLS) -> None:
        self.limit = max(1, min(limit, n_calls))
        self.in_a_row = 0
        self.last_error = ""

    def saw(self, unreachable: bool, error: str | None) -> bool:
        if not unreachable:
            self.in_a_row = 0
            return False
        self.in_a_row += 1
        self.last_error = (error or "").removeprefix("model error: ")
        return self.in_a_row >= self.limit

    def error(self) -> EndpointDown:
        return EndpointDown(f"stopped: the model endpoint is gone — the last {self.in_a_row} model call(s) could "
                            f"not reach it ({self.last_error}); the samples answered so far are stored — run the "
                            "same command again to resume once the endpoint is back")


async def watch_endpoint(retries: RetryWatch, runner: StageRunner, seconds: float | None = None,
                         every: float = 1.0) -> None:
    """Stop `runner` (EndpointDown) once every attempt for `seconds` (DEAD_ENDPOINT_SECONDS) failed
    to reach the endpoint — at least DEAD_ENDPOINT_CALLS of them, and one more since the last look
    (it still fails now: a blip followed by long answers in flight is not a dead endpoint) —
    however many calls are still waiting out their retries (EndpointWatch counts finished calls)."""
    seconds = DEAD_ENDPOINT_SECONDS if seconds is None else seconds
    seen = 0
    while True:
        await asyncio.sleep(every)
        failed, seen = seen, retries.unreachable_attempts
        if retries.unreachable_for() >= seconds and seen >= DEAD_ENDPOINT_CALLS and seen > failed:
            runner.fail(EndpointDown(
                f"stopped: the model endpoint is gone — no attempt has reached it for {seconds:g} s "
                f"({retries.last_unreachable}); the samples answered so far are stored — run the same command "
                "again to resume once the endpoint is back"))
            return


class WrongSetup(LvuError):
    """The run stopped early: its first model calls all failed with the same error that asking
    again cannot change (a wrong URL, model name or key)."""


class FirstCallsWatch:
    """Watches the first model calls of a run: when the first `limit` of them (all, in a shorter
    run; and from at least two videos when the run has several, so one video the server cannot
    take does not stop the others) failed with one and the same error that the backend does not
    retry (`Response.permanent`: 404, 400, 401 ...), `saw` says stop — every other call would
    fail the same way. One answer, or one other error, disarms it for the rest of the run."""

    def __init__(self, n_calls: int, n_videos: int = 1, limit: int = FIRST_CALLS) -> None:
        self.limit = max(1, min(limit, n_calls))
        self.need_videos = min(2, max(1, n_videos))
        self.armed = True
        self.error: str | None = None
        self.count = 0
        self.videos: set[str] = set()

    def saw(self, error: str | None, permanent: bool, video: str = "") -> bool:
        if not self.armed:
            return False
        if error is None or not permanent or (self.error is not None and error != self.error):
            self.armed = False
            return False
        self.error, self.count = error, self.count + 1
        self.videos.add(video)
        return self.count >= self.limit and len(self.videos) >= self.need_videos

    def stop(self) -> WrongSetup:
        error = (self.error or "").removeprefix("model error: ")
        return WrongSetup(f"stopped: the first {self.count} model calls all failed with the same error ({error}) "
                          "— fix that and run the same command again (the samples stored so far are kept)")


def model_batch_size(model: Model) -> int:
    """The batch a batching backend (hf's `batch_size`) fills, also through a probe's `base`."""
    for m in (model, getattr(model, "base", None)):
        size = getattr(m, "batch_size", None)
        if isinstance(size, int) and size > 1:
            return size
    return 1


class ProcessDecoder:
    """Decode frames in `workers` spawned processes straight into `cache` (nothing is pickled back
    but a count). The pool starts on first use, so a run whose frames are all cached starts none."""

    def __init__(self, workers: int, cache: FrameCache) -> None:
        self.workers, self.cache = workers, cache
        self.pool: Executor | None = None
        self.pending: dict[Any, asyncio.Future] = {}  # entries being decoded: samples sharing one wait together

    async def decode(self, video: str, timestamps: list[float], resize: int | None) -> None:
        """Return once the entry is in the cache; a decode failure is a one-line LvuError."""
        from lvu.media.extract import warm_video  # one video's entries into the cache; errors as a line

        key = (video, tuple(timestamps), resize)
        if key not in self.pending:
            if self.pool is None:  # spawned workers that exit with this process (lvu.runs.worker_processes)
                from lvu.runs.worker_processes import decode_pool

                self.pool = decode_pool(self.workers)
            threads = max(1, (os.cpu_count() or 1) // self.workers)
            plans: list[tuple[float, ...] | str] = [key[1]]
            future = asyncio.get_running_loop().run_in_executor(self.pool, warm_video, self.cache, video, plans,
                                                                resize, False, threads)
            self.pending[key] = future
            future.add_done_callback(lambda _: self.pending.pop(key, None))
        try:
            _, _, _, error = await asyncio.shield(self.pending[key])
        except BrokenExecutor as e:  # a worker died (e.g. the decoder crashed): a fresh pool next time
            self.pool = None
            raise LvuError(f"{video}: decode worker process died ({type(e).__name__})") from None
        if error:
            raise LvuError(error)

    def shutdown(self, wait: bool) -> None:
        """`wait`: let the workers finish what they decode; else end them now (a stopped run must
        not wait on a long decode: its cache entry is written atomically, or not at all)."""
        if self.pool is None:
            return
        workers = list(getattr(self.pool, "_processes", {}).values())  # no public way to reach them
        self.pool.shutdown(wait=wait, cancel_futures=True)
        if not wait:
            for worker in workers:
                if worker.is_alive():
                    worker.kill()
        self.pool = None


class StoreFailed(LvuError):
    """The run stopped at once: the store could not take a sample (a full disk, a locked database)."""


def store_failed(store: Store, run_id: str, error: StoreWriteError) -> StoreFailed:
    """'results disk full: 196 of 2000 samples stored ...; free space and run the same command to
    resume' (the counts are read back: reading works on a full disk)."""
    try:
        n_stored, n_failed, _ = store.stats(run_id)
        n_ok = n_stored - n_failed
        total = store.db.execute("SELECT n_total FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        counts = f"{n_ok} of {total[0]} samples" if total and total[0] is not None else f"{n_ok} samples"
    except Exception:  # noqa: BLE001  (the message must come out whatever else is broken)
        counts = "the samples answered so far"
    if error.full:
        return StoreFailed(f"results disk full: {counts} of run {run_id} stored in {store.dir}; free space and "
                           "run the same command to resume")
    return StoreFailed(f"cannot store results: {counts} of run {run_id} stored ({error}); fix that and run the "
                       "same command to resume")


class CommitSample:
    """The commit stage of both executors: store a sample's record the moment it is done (one
    commit: nothing half-written), note its error, and stop the run (return EndpointDown) when the
    model endpoint is gone, or at once (StoreFailed) when the store cannot take the record. An
    item has `sample`, `prompt` (None: it failed before the model, so no model call) and `unreachable`."""

    def __init__(self, store: Store, run_id: str, ordinals: dict[str, int], errors: list[tuple[str, str]],
                 progress: PipelineProgress, n_calls: int, n_videos: int = 1) -> None:
        self.store, self.run_id, self.ordinals, self.errors, self.progress = store, run_id, ordinals, errors, progress
        self.watch = EndpointWatch(n_calls)
        self.first_calls = FirstCallsWatch(n_calls, n_videos)
        self.n_stored = 0

    def __call__(self, item: Prepared, result: SampleResult) -> LvuError | None:
        try:
            with self.progress.stage("scored") as scored:
                self.store.put(self.run_id, result, self.ordinals[item.sample.id])
                scored.failed = bool(result.error)
        except StoreWriteError as e:  # every later sample would fail the same way: stop now
            return store_failed(self.store, self.run_id, e)
        self.n_stored += 1
        if result.error:
            self.errors.append((item.sample.id, result.error))
        if item.prompt is not None and self.watch.saw(item.unreachable, result.error):
            return self.watch.error()
        if item.prompt is not None and self.first_calls.saw(result.error, getattr(item, "permanent", False),
                                                            item.sample.video.path):
            return self.first_calls.stop()
        return None


async def run_pipeline(engine: Stages, run_id: str, todo: list[Sample], ordinals: dict[str, int],
                       errors: list[tuple[str, str]], stop: asyncio.Event) -> None:
    """A run on the stage runner (lvu.runs.stage_runner): decode tasks prepare prompts ahead into a
    bounded queue (so the model never waits on the decoder, and memory holds at most `concurrency`
    prepared prompts); model workers take them, answer, and the store commits each result the
    moment it completes (one commit: nothing half-written). Ctrl-C sets `stop`: no new samples
    start, those in the model finish within the grace. An endpoint that is gone stops the run."""
    progress = engine.progress

    async def prepare(group: list[Sample]):
        for sample in group:
            yield await engine.prepare_sample(sample)

    async def answer(item: Prepared) -> SampleResult:
        if item.prompt is None:
            progress.skip("model")  # failed before the model: not a model call
        return await engine.answer_sample(item)

    # A decode task takes all samples of one video (todo is sorted by video): the first decodes,
    # the others reuse its frames, and the decode tasks work on different videos in parallel.
    groups = (list(group) for _, group in itertools.groupby(todo, key=lambda s: s.video.path))
    commit = CommitSample(engine.store, run_id, ordinals, errors, progress, len(todo),
                          n_videos=len({s.video.path for s in todo}))
    runner = StageRunner(consumers=[answer] * engine.concurrency, commit=commit, produce=prepare,
                         producers=engine.decode_workers, grace=engine.interrupt_grace, stop=stop,
                         note=progress.note, what="sample", where="in the model")
    # The model's retries report to `retries` (a context variable: the runner's tasks inherit it);
    # the model row of the progress shows them, and a watcher stops a run whose endpoint is gone.
    retries = RetryWatch()
    progress.describe("model", retries.summary)
    token = RETRY_WATCH.set(retries)
    watcher = asyncio.create_task(watch_endpoint(retries, runner))
    try:
        await runner.run(groups)
    finally:
        watcher.cancel()
        RETRY_WATCH.reset(token)
        progress.describe("model", None)
