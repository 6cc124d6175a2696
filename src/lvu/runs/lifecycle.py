"""One run's lifecycle, the same whichever executor computes it.

`execute` (the whole run) and `run_stages` (its part on the event loop) do everything around a
run that both executors need: open the store, make the judge, read which samples are stored and
still valid (resume), check the model and judge are reachable before anything is dropped, record
the run and its environment (`begin_run` takes the run's lock), regrade what other scoring code
scored, record the release's bad records, order the samples, show progress, take the run's final
status (done / interrupted / failed) whatever happens, close what was opened, aggregate the
summary, say how to resume after Ctrl-C, warn when --asr did nothing, judge leftovers and note
what the run's end says beyond its score (`finish_run`).

An executor supplies only its inner pipeline, as an `Executor`: lvu.runs.engine.Engine (decode
threads or processes, model workers) and lvu.runs.ray_executor.RayExecutor (decode tasks, model
replicas). Both therefore store identical records and resume each other's runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from lvu.benchmarks.base import Benchmark, Breakdown
from lvu.errors import LvuError
from lvu.progress import PipelineProgress
from lvu.runs.data_errors import bad_record_result, data_error_note, stored_data_errors
from lvu.runs.identity import loaded_digests, reusable_ids
from lvu.runs.judging import judge_env
from lvu.runs.options import RunOptions
from lvu.runs.pipeline import StoreFailed, ready_models, store_failed
from lvu.runs.regrade import regrade_reused
from lvu.runs.run_names import no_answers, unreadable_note
from lvu.runs.store import Store
from lvu.runs.store_files import StoreWriteError
from lvu.runs.summaries import code_stamp, run_tables
from lvu.runs.tracebacks import traced_failures
from lvu.runs.unreadable import unreadable_in_scope
from lvu.scoring.judges import Judge
from lvu.types import RunSpec, Sample, SampleResult


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
    """Raised by `execute()` (so by `lvu.api.run`) after a clean stop on Ctrl-C; says what is
    stored and how to resume."""

    def __init__(self, summary: RunSummary, n_stored: int) -> None:
        self.summary = summary
        super().__init__(f"interrupted — {n_stored} of {summary.n_total} samples of run {summary.run_id} are "
                         "done and stored; run the same command again to resume")


class Executor(Protocol):
    """An executor's inner pipeline: what `run_stages` drives."""

    bench: Benchmark
    store: Store
    judge: Judge | None
    llm_extract: bool
    progress: PipelineProgress
    """Set by `run_stages` before `pipeline`: the display every stage reports to."""

    def connect(self) -> None:
        """Before the event loop starts (Ray: join or start the cluster)."""

    def disconnect(self) -> None:
        """After the run, whatever happened (Ray: stop the Ray this run started)."""

    async def start(self, fresh: bool) -> None:
        """Build what answers (Ray: place the replicas; `fresh`: their models read no response cache)."""

    async def ready(self, fresh: bool, has_work: bool) -> None:
        """The model recomputes with `fresh`, and is reachable when it `has_work` (one line, else)."""

    def environment(self) -> dict[str, Any]:
        """What produced the answers (stored with the run): lvu.runs.engine.environment."""

    def described(self) -> dict[str, Any]:
        """How the run was executed, stored after the judge ({} for the local engine)."""

    def slots(self) -> tuple[dict[str, int], str]:
        """The progress display's slots per stage, and a note for its title."""

    async def pipeline(self, run_id: str, todo: list[Sample], ordinals: dict[str, int],
                       errors: list[tuple[str, str]], stop: asyncio.Event) -> None:
        """Compute and commit `todo` (each result stored the moment it is done); Ctrl-C sets `stop`."""

    async def close(self, status: str) -> None:
        """Release workers, pools, models; `status` is the run's final one."""


async def run_stages(executor: Executor, spec: RunSpec, *, fresh: bool = False, limit: int | None = None,
                     show_progress: bool = True, env: dict[str, Any] | None = None) -> RunSummary:
    """Run (or resume) `spec` through `executor`'s pipeline; `env` adds entries to the stored
    environment (e.g. a sweep tag). The run's status is stored however it ends."""
    bench, store, judge = executor.bench, executor.store, executor.judge
    samples, bad = bench.loaded()
    ordinals = {s.id: i for i, s in enumerate(samples)}
    if limit is not None:
        samples = samples[:limit]
    status = "interrupted"  # Ctrl-C, a cancelled task or a store that failed: resumable, nothing stored is lost
    try:
        await executor.start(fresh)
        # Before begin_run (which drops a --fresh run's samples): a dead endpoint loses nothing.
        stored = set() if fresh else reusable_ids(store.completed_digests(spec.run_id), samples,
                                                  loaded_digests(bench))  # hashed once, with the fingerprint
        await executor.ready(fresh, any(s.id not in stored for s in samples))
        await ready_models(None, judge, fresh=fresh, model_has_work=False)  # the judge
        slots, note = executor.slots()  # before begin_run: a cluster too small for them stores nothing
        judged = {"judge": judge_env(judge, executor.llm_extract, "lvu run")} if judge is not None else {}
        run_id = store.begin_run(spec, {**executor.environment(), **judged, **executor.described(), **(env or {})},
                                 fresh=fresh)
        store.set_total(run_id, len(ordinals) + len(bad))  # coverage, and `partial` for a --limit run
        done = stored - regrade_reused(store, run_id, bench, samples, stored)  # scored by other code: graded again
        errors: list[tuple[str, str]] = []
        for i, record in enumerate(bad):
            store.put(run_id, bad_record_result(record), len(ordinals) + i)  # a data error: not scored
            errors.append((record.id, record.error))
        todo = [s for s in samples if s.id not in done]
        # Same-video samples next to each other, so decoded frames are reused while still cached.
        todo.sort(key=lambda s: (s.video.path, ordinals[s.id]))
        progress = executor.progress = PipelineProgress(
            len(todo), slots=slots, title=f"{spec.benchmark} × {spec.model}  ({run_id}{note})", enabled=show_progress)
        stop = asyncio.Event()  # Ctrl-C sets it (lvu.runs.stage_runner)
        try:
            with progress:
                await executor.pipeline(run_id, todo, ordinals, errors, stop)
            status = "interrupted" if stop.is_set() else "done"
        except StoreFailed:
            raise
        except LvuError:  # e.g. pipeline.EndpointDown: stopped early, stored samples kept
            status = "failed"
            raise
        finally:
            finish_status(store, run_id, status)
    finally:
        await executor.close(status)
        if judge is not None:
            await judge.close()

    keep = {s.id for s in samples} | {b.id for b in bad}
    tables, n_failed = run_tables(store, run_id, bench, keep)  # cached when nothing changed
    return RunSummary(
        run_id=run_id, spec=spec, n_total=len(samples) + len(bad), n_done_before=len(done),
        n_failed=n_failed, tables=tables,
        results_dir=store.dir, errors=errors, interrupted=status == "interrupted",
        n_benchmark=len(ordinals) + len(bad),
        stage_utilisation={name: progress.utilisation(name) for name in ("decode", "model")},
    )


def execute(spec: RunSpec, bench: Benchmark, options: RunOptions,
            build: Callable[[Store, Judge | None], Executor]) -> RunSummary:
    """Run (or resume) one spec with the executor `build(store, judge)` makes, then finish it
    (`finish_run`); no report (lvu.api writes it). Ctrl-C stops cleanly and raises RunInterrupted."""
    judge = make_run_judge(options)
    store = Store(options.results_dir)
    executor: Executor | None = None
    try:
        executor = build(store, judge)
        executor.connect()
        summary = asyncio.run(run_stages(executor, spec, fresh=options.fresh, limit=options.limit,
                                         show_progress=options.show_progress, env=options.env))
        raise_if_interrupted(summary, store)
        if options.asr:  # the records say whether the transcripts reached any prompt
            from lvu.runs.asr_use import warn_if_asr_unused

            warn_if_asr_unused(store.results(summary.run_id), bench, summary.run_id)
        return finish_run(summary, store, bench, judge, options)
    finally:
        store.close()
        if executor is not None:
            executor.disconnect()


def finish_status(store: Store, run_id: str, status: str) -> None:
    """Store the run's final status (and unlock it). A status that cannot be written after a
    stop is left to the lock (the run lists as `interrupted`); after a clean run it is an error."""
    try:
        store.finish_run(run_id, status)
    except StoreWriteError as e:
        if status == "done":
            raise store_failed(store, run_id, e) from None


def raise_if_interrupted(summary: RunSummary, store: Store) -> None:
    """After a run stopped by Ctrl-C: say what is stored and raise RunInterrupted."""
    if summary.interrupted:
        stop = RunInterrupted(summary, sum(r.error is None for r in store.iter_results(summary.run_id)))
        from rich.console import Console  # said here: typer turns a KeyboardInterrupt into a silent exit 130

        Console(stderr=True, soft_wrap=True).print(str(stop), markup=False, highlight=False)
        raise stop


def make_run_judge(options: RunOptions) -> Judge | None:
    """The run's judge (RunOptions has checked that llm_extract comes with one), or None."""
    if options.judge is None:
        return None
    from lvu.scoring.judges import make_judge

    return make_judge(options.judge, options.judge_args)


def finish_run(summary: RunSummary, store: Store, bench: Benchmark, judge: Judge | None,
               options: RunOptions) -> RunSummary:
    """After the pipeline: record which samples this invocation covers, and judge samples stored
    before without this judge. The report is lvu.api's to write (it sits above the engine and the
    reports)."""
    samples, bad = bench.loaded()
    summary.sample_ids = [s.id for s in samples[:options.limit]] + [b.id for b in bad]
    if judge is not None:
        judge_leftovers(summary, store, bench, judge, options)
    keep = set(summary.sample_ids)  # what the run's end says beyond its score (lvu run prints it)
    unreadable, n_answered = unreadable_in_scope(store, summary.run_id, keep, code_stamp(type(bench)))
    summary.n_unreadable, summary.unreadable_note = len(unreadable), unreadable_note(unreadable, scored=n_answered)
    if summary.n_failed:
        summary.traced, summary.first_traceback = traced_failures(store, summary.run_id, keep)
        summary.data_error_note = data_error_note(stored_data_errors(store, summary.run_id, keep), summary.spec)
    return summary


def in_scope(store: Store, summary: RunSummary) -> list[SampleResult]:
    """The run's stored results for the samples the invocation covers (`summary.sample_ids`), as
    its summary tables were aggregated."""
    keep = set(summary.sample_ids)
    return [r for r in store.results(summary.run_id) if r.sample_id in keep]


def judge_leftovers(summary: RunSummary, store: Store, bench: Benchmark, judge: Judge, options: RunOptions) -> None:
    """Judge stored samples of the run that this judge has not judged, then refresh the summary."""
    from lvu.runs.judging import judge_stored

    done = asyncio.run(judge_stored(store, summary.run_id, bench, judge, llm_extract=options.llm_extract,
                                    concurrency=options.concurrency, show_progress=options.show_progress,
                                    mode="lvu run"))
    if done.n_judged or done.n_failed:
        results = in_scope(store, summary)
        summary.tables = bench.aggregate(results)
        summary.errors = [(r.sample_id, r.error) for r in results if r.error]
        summary.n_failed = len(summary.errors)
