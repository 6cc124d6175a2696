"""The judge stage: after a sample is graded, ask a judge where the benchmark needs one.

Used by the engine (inline, stage 2) and by `lvu judge score` (post hoc over a stored run). Per sample:
1. Choice extraction, `bench.choice_task`: by default lvu's LLM choice extraction (only with
   `llm_extract`): a multiple-choice reply in which the rule extractor found no option — no
   prediction, a non-option string, or a random fallback pick (LongVideoBench's `method="random"`)
   — is shown to the judge with the lettered options; a harness whose own protocol asks a judge
   (VLMEvalKit's MLVU) gives its own task. An option the judge names becomes the prediction
   (method "llm-judge") and is scored by the benchmark.
2. `bench.judge_task(sample, prediction)`: open-ended / generation samples get a JudgeTask; the
   judgement becomes the score through `bench.judged_score`.
Every judgement is kept in `SampleResult.judge` (the Judgement: kind, value, verdict, method,
sub-scores, raw reply and the judge's identity). A judge call that fails makes the sample fail
with "judge failed: ..." (retried on resume, or by `lvu judge score`).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from lvu.errors import LvuError
from lvu.progress import LoggedProgress
from lvu.runs.stage_runner import run_each
from lvu.runs.tracebacks import traceback_text
from lvu.scoring.judges import Judge, Judgement
from lvu.types import Prediction, Response, Sample, SampleResult, Score

if TYPE_CHECKING:
    from lvu.benchmarks.base import Benchmark
    from lvu.runs.store import Store

JUDGE_FAILED = "judge failed: "
"""Prefix of the error of a sample whose judge call failed (its response is fine)."""


def _apply(result: SampleResult, prediction: Prediction, score: Score) -> None:
    result.prediction = prediction.value
    result.score, result.correct, result.counted = score.value, score.correct, score.counted
    result.explanation = score.explanation


def _checked(judgement: Judgement) -> Judgement:
    if judgement.error:
        raise LvuError(f"{JUDGE_FAILED}{judgement.error} (judge: {judgement.judge})")
    return judgement


async def judge_sample(bench: Benchmark, sample: Sample, result: SampleResult, judge: Judge, *,
                       llm_extract: bool = False) -> bool:
    """Judge one graded sample in place (its stored response); True when the judge was asked.
    Raises LvuError("judge failed: ...") when the judge call fails."""
    prediction = bench.extract(sample, Response(text=result.response or "", logged=result.logged))
    asked = False
    choice = bench.choice_task(sample, prediction, result.response or "", llm_extract=llm_extract)
    if choice is not None:
        judgement = _checked(await judge.judge(choice, sample_id=sample.id))
        result.judge, asked = judgement.model_dump(mode="json"), True
        if judgement.value is not None:
            prediction = Prediction(value=int(judgement.value), method="llm-judge")
            score = bench.score(sample, prediction)
            score.explanation = f"LLM choice extraction: {judgement.summary()}; {score.explanation or ''}".rstrip("; ")
            _apply(result, prediction, score)
        else:
            result.explanation = f"LLM choice extraction: {judgement.summary()}; {result.explanation or ''}".rstrip("; ")
    task = bench.judge_task(sample, prediction)
    if task is not None:
        judgement = _checked(await judge.judge(task, sample_id=sample.id))
        result.judge, asked = judgement.model_dump(mode="json"), True
        _apply(result, prediction, bench.judged_score(sample, prediction, judgement))
    return asked


def wants_judge(bench: Benchmark, sample: Sample, result: SampleResult, *, llm_extract: bool) -> bool:
    """Whether a stored sample has something for a judge: a response (not failed, unless its judge
    failed) that needs choice extraction (with `llm_extract`) or a judge task."""
    if result.response is None or (result.error and not result.error.startswith(JUDGE_FAILED)):
        return False
    prediction = bench.extract(sample, Response(text=result.response, logged=result.logged))
    if bench.choice_task(sample, prediction, result.response, llm_extract=llm_extract) is not None:
        return True
    return bench.judge_task(sample, prediction) is not None


def judged_by(result: SampleResult, judge: Judge) -> bool:
    """Whether the stored judgement came from this judge (same model and threshold) and succeeded."""
    record = result.judge or {}
    return not result.error and not record.get("error") and record.get("judge") == judge.label(str(record.get("kind")))


@dataclass
class JudgeSummary:
    n_judged: int = 0
    n_skipped: int = 0
    """Already judged by this judge (or nothing to judge)."""
    n_failed: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)


async def judge_stored(store: Store, run_id: str, bench: Benchmark, judge: Judge, *, llm_extract: bool = False,
                       fresh: bool = False, concurrency: int = 8, show_progress: bool = True,
                       mode: str = "lvu judge score") -> JudgeSummary:
    """Judge the stored samples of a run that need it, updating their records (each committed at
    once). Samples judged by this same judge are skipped unless `fresh` (which also bypasses the
    judge's response cache). Records the judge in the run's environment. The judge is closed at
    the end."""
    from lvu.runs.grading import grade

    from lvu.runs.identity import sample_digest

    samples, _ = bench.loaded()
    ordinals = {s.id: i for i, s in enumerate(samples)}
    by_id = {s.id: s for s in samples}
    summary = JudgeSummary()
    todo: list[tuple[Sample, SampleResult]] = []
    for result in store.iter_results(run_id):
        sample = by_id.get(result.sample_id)
        if sample is None or not wants_judge(bench, sample, result, llm_extract=llm_extract):
            continue
        if result.sample_digest is not None and result.sample_digest != sample_digest(sample):
            continue  # answered another version of the question: never judged against this one
        if not fresh and judged_by(result, judge):
            summary.n_skipped += 1
            continue
        todo.append((sample, result))
    if fresh:  # fresh judgements: no reply read from a response cache (maybe another model's)
        judge.model.bypass_cache()
    if todo:
        await judge.model.preflight()  # a dead judge endpoint: one line now, not every sample's retries
    _record_judge(store, run_id, judge, llm_extract, mode)
    progress = LoggedProgress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                              TextColumn("failed {task.fields[failed]}"), TimeElapsedColumn(), TextColumn("ETA"),
                              TimeRemainingColumn(), disable=not show_progress or not todo)
    bar = progress.add_task(f"judging {run_id}", total=len(todo), failed=0)

    async def judge_one(item: tuple[Sample, SampleResult]) -> SampleResult:
        sample, result = item
        result.error, result.judge, result.traceback = None, None, None
        try:
            grade(bench, sample, Response(text=result.response or "", logged=result.logged), result)  # start from the rule's grade
            await judge_sample(bench, sample, result, judge, llm_extract=llm_extract)
        except LvuError as e:
            result.error = str(e)
        except Exception as e:  # one bad sample never stops the others; its traceback is kept
            result.error, result.traceback = f"{JUDGE_FAILED}{sample.id}: {type(e).__name__}: {e}", traceback_text(e)
        return result

    def commit(item: tuple[Sample, SampleResult], result: SampleResult) -> None:
        sample = item[0]
        store.put(run_id, result, ordinals[sample.id])  # committed at once: an interrupted run resumes here
        if result.error:
            summary.n_failed += 1
            summary.errors.append((sample.id, result.error))
        else:
            summary.n_judged += 1
        progress.update(bar, advance=1, failed=summary.n_failed)

    stop = asyncio.Event()  # set by Ctrl-C (lvu.runs.stage_runner): the judgements in flight finish, then stop
    try:
        with progress:
            await run_each(todo, judge_one, commit, concurrency=concurrency, stop=stop, note=progress.say,
                           what="sample", where="with the judge")
    finally:
        await judge.close()
    if stop.is_set():
        interrupted = JudgingInterrupted(f"interrupted — {summary.n_judged + summary.n_failed} of {len(todo)} "
                                         f"samples of run {run_id} are judged and stored; run the same command "
                                         "again to judge the rest")
        Console(stderr=True, soft_wrap=True).print(str(interrupted), markup=False, highlight=False)
        raise interrupted  # said above: typer turns a KeyboardInterrupt into a silent exit 130
    return summary


class JudgingInterrupted(KeyboardInterrupt):
    """Raised by `judge_stored` after a clean stop on Ctrl-C (what is judged is stored)."""


def _record_judge(store: Store, run_id: str, judge: Judge, llm_extract: bool, mode: str) -> None:
    """The run's environment names its judge (not its spec: judging does not change responses)."""
    row = store.db.execute("SELECT env FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        return
    env = json.loads(row[0])
    env["judge"] = judge_env(judge, llm_extract, mode)
    store.db.execute("UPDATE runs SET env = ? WHERE run_id = ?", (json.dumps(env), run_id))


def judge_env(judge: Judge, llm_extract: bool, mode: str) -> dict[str, object]:
    return {"identity": judge.identity, "model": judge.model.identity, "llm_extract": llm_extract, "via": mode}
