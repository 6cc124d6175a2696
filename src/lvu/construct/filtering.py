"""Running a blind filter (lvu.construct.blind) over a benchmark's samples, as a resumable ledger job.

The job (`JobLedger`, kind `blind-filter`) is the rule, its parameters, the models' identities and
the benchmark; its fingerprint is the checked samples' item keys. An item is one question, keyed
by everything its decision depends on: the sample's id and content (question, options, answer),
the prompt templates (neptune-qad's, or lvu's text-only question), the transcript's source
(--asr), the rule's parameters and every model's identity. Questions run on `run_each`
(`concurrency` questions in flight); each decision is committed the moment it is made, so kill -9
loses only the questions in flight and the same command resumes; a question whose model call
failed is committed as failed and asked again on the next run. Questions already decided by an
earlier job of the same spec (the data file before an edit) are reused (JobLedger.reuse).

Which questions are checked: multiple choice with an answer index. Others (open-ended, hidden
answers) are kept unchecked and listed as skipped.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lvu.construct.blind import (QAD_PROMPT, QAD_TRANSCRIPT, RULES, Decision, Vote, ask, lvbench_decision,
                             qad_decision, qad_filter_question, qad_options_str, text_only_decision,
                             text_only_prompt)
from lvu.errors import LvuError
from lvu.progress import LoggedProgress
from lvu.runs.ledger import JobLedger, item_key
from lvu.runs.stage_runner import run_each
from lvu.types import Sample

if TYPE_CHECKING:
    from lvu.benchmarks.base import BadRecord, Benchmark
    from lvu.models.base import Model

JOB_KIND = "blind-filter"
RULE_VERSION = 1
"""Bumped when a rule's decision logic changes: every stored decision is then made again."""
FAILED_IN_A_ROW = 8
"""Questions in a row whose model calls all failed that stop the filter (the endpoint is likely gone)."""


@dataclass(frozen=True)
class FilterSettings:
    """A rule and its parameters (seeds, threshold and seed_base matter to neptune-qad only)."""

    rule: str
    seeds: int = 3
    threshold: int = 2
    seed_base: int = 0
    asr: bool = False

    def check(self, n_models: int) -> None:
        if self.rule not in RULES:
            raise LvuError(f"--rule {self.rule!r} is unknown — use one of {', '.join(RULES)}")
        if not n_models:
            raise LvuError("no model given — pass -m MODEL (repeat -m for several)")
        if self.rule == "neptune-qad":
            if self.seeds < 1:
                raise LvuError(f"--seeds {self.seeds} — give at least 1 seed (the paper: 3)")
            if not 1 <= self.threshold <= self.seeds:
                raise LvuError(f"--threshold {self.threshold} must be between 1 and --seeds {self.seeds} (the paper: 2 of 3)")

    def params(self) -> dict[str, Any]:
        """What enters the job and the item keys."""
        own = {"seeds": self.seeds, "threshold": self.threshold, "seed_base": self.seed_base} \
            if self.rule == "neptune-qad" else {}
        return {"rule": self.rule, "version": RULE_VERSION, "asr": self.asr, **own}


@dataclass
class Checked:
    """One checked question and the rule's decision."""

    sample: Sample
    decision: Decision


@dataclass
class FilterOutcome:
    """What `filter_samples` did, samples in load order."""

    checked: list[Checked]
    skipped: list[tuple[Sample, str]]
    """Not checkable (open-ended, no answer): kept, never asked."""
    failed: list[tuple[Sample, str]]
    """Undecided: a model call failed (or the filter was interrupted before them); re-run to retry."""
    bad: list[BadRecord]
    job_id: str
    results_dir: Path
    calls: int = 0
    """Model calls made by this invocation (decisions taken from the ledger make none)."""
    n_reused: int = 0
    interrupted: bool = False
    wall: float = 0.0
    notes: list[str] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    """Every loaded sample, in load order."""

    @property
    def kept(self) -> list[Sample]:
        """Samples for the kept file: checked and not removed, plus the unchecked ones."""
        removed = {c.sample.id for c in self.checked if c.decision.removed}
        undecided = {s.id for s, _ in self.failed}
        return [s for s in self.samples if s.id not in removed and s.id not in undecided]

    @property
    def removed(self) -> list[Checked]:
        return [c for c in self.checked if c.decision.removed]


def model_identity(model: Model) -> dict[str, Any]:
    """The model's identity without the arguments that cannot change answers (retries, caching...)."""
    neutral = set(type(model).run_neutral_args)
    return {k: v for k, v in model.identity.items() if k not in neutral}


def checkable(sample: Sample) -> str | None:
    """Why a sample cannot be checked, or None when it can (multiple choice with an answer index)."""
    if len(sample.options) < 2:
        return "not multiple choice"
    if not isinstance(sample.answer, int) or isinstance(sample.answer, bool) \
            or not 0 <= sample.answer < len(sample.options):
        return "no answer index"
    return None


# ---- transcripts (--asr) -----------------------------------------------------------------------------


def transcript_source(sample: Sample) -> list[Any]:
    """What the sample's transcript depends on (enters its key): the subtitle file's content, else
    the video file (its ASR transcript)."""
    sub = sample.subtitles
    if sub is not None and os.path.exists(sub.path):
        digest = hashlib.sha256(Path(sub.path).read_bytes()).hexdigest()[:16]
        return ["subtitles", digest, sub.offset]
    try:
        stat = os.stat(sample.video.path)
        return ["asr", sample.video.path, stat.st_size, stat.st_mtime_ns]
    except OSError:
        return ["asr", sample.video.path, None, None]


def load_transcript(sample: Sample) -> str:
    """The sample's subtitle cues, else the Whisper transcript of its audio (cached per video), as
    one cue per line."""
    from lvu.media.subtitles import cues_text, load_cues

    sub = sample.subtitles
    if sub is not None and os.path.exists(sub.path):
        return cues_text(load_cues(sub.path, offset=sub.offset, duration=sample.video.duration))
    from lvu.media.asr import transcribe

    return cues_text(transcribe(sample.video.path))


def needs_whisper(samples: list[Sample]) -> bool:
    return any(s.subtitles is None or not os.path.exists(s.subtitles.path) for s in samples)


# ---- one question ------------------------------------------------------------------------------------


def prompt_identity(rule: str) -> list[Any]:
    """The prompt templates a question's decision depends on (its text and transcript enter apart)."""
    if rule == "neptune-qad":
        return [QAD_PROMPT, QAD_TRANSCRIPT, qad_options_str(["x"])]
    p = text_only_prompt("x", ["y"], "z")
    return [p.text, p.max_tokens, p.temperature]


async def decide(sample: Sample, models: list[Model], settings: FilterSettings,
                 transcript: str | None = None) -> Decision:
    """The rule's decision on one checkable sample."""
    answer = int(sample.answer)  # type: ignore[arg-type]
    if settings.rule == "neptune-qad":
        verdicts = await asyncio.gather(*(
            qad_filter_question(m, sample.question, sample.options, answer, seeds=settings.seeds,
                                threshold=settings.threshold, transcript=transcript, seed_base=settings.seed_base,
                                sample_id=sample.id) for m in models))
        return qad_decision(list(verdicts))
    prompt = text_only_prompt(sample.question, sample.options, transcript)
    votes: list[Vote] = list(await asyncio.gather(*(ask(m, prompt, sample.options, answer, sample_id=sample.id)
                                                    for m in models)))
    return lvbench_decision(votes) if settings.rule == "lvbench" else text_only_decision(votes)


def calls_per_question(settings: FilterSettings, n_models: int) -> int:
    return n_models * (settings.seeds if settings.rule == "neptune-qad" else 1)


# ---- the job -----------------------------------------------------------------------------------------


async def filter_samples(bench: Benchmark, models: list[Model], settings: FilterSettings, *,
                         samples: list[Sample] | None = None, bad: list[BadRecord] | None = None,
                         results_dir: str | Path | None = None, concurrency: int = 8, fresh: bool = False,
                         show_progress: bool = True) -> FilterOutcome:
    """Decide every checkable sample of `bench` (or `samples`) with `settings.rule`, resuming the
    ledger job; `fresh` asks again for every question (no cached replies either). Does not close
    the models."""
    settings.check(len(models))
    if samples is None:
        samples, bad = bench.loaded()
    bad = list(bad or [])
    started = time.perf_counter()
    skipped = [(s, why) for s in samples if (why := checkable(s)) is not None]
    to_check = [s for s in samples if checkable(s) is None]
    if settings.asr and needs_whisper(to_check):
        from lvu.media.asr import check_installed

        check_installed()  # one line when lvu[asr] is missing, before any call
    identities = [model_identity(m) for m in models]
    params = settings.params()
    keys: dict[str, int] = {}
    key_of: dict[str, str] = {}
    for i, s in enumerate(samples):
        if checkable(s) is not None:
            continue
        key = item_key(JOB_KIND, params, prompt_identity(settings.rule), identities, s.id,
                       [s.question, s.options, s.answer], transcript_source(s) if settings.asr else None)
        keys.setdefault(key, i)
        key_of[s.id] = key
    fingerprint = hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()[:16]
    spec = {**params, "models": identities, "benchmark": bench.name}
    ledger = JobLedger(results_dir)
    job = ledger.open_job(JOB_KIND, spec, fingerprint, fresh=fresh)
    status = "failed"
    outcome = FilterOutcome(checked=[], skipped=skipped, failed=[], bad=bad, job_id=job, results_dir=ledger.dir,
                            samples=list(samples))
    try:
        if fresh:
            for m in models:
                m.bypass_cache()
        else:
            ledger.reuse(job, keys)
        done = ledger.done_keys(job)
        todo = [(key, i, samples[i]) for key, i in keys.items() if key not in done]
        outcome.n_reused = len(keys) - len(todo)
        if todo:
            for m in models:
                await m.preflight()
        stop = asyncio.Event()
        await _run(ledger, job, todo, models, settings, outcome, stop, concurrency, show_progress)
        outcome.interrupted = stop.is_set() and not outcome.notes
        status = "interrupted" if stop.is_set() else "done"
        _collect(ledger, job, key_of, outcome)
        return outcome
    finally:
        outcome.wall = time.perf_counter() - started
        ledger.finish_job(job, status)
        ledger.close()


async def _run(ledger: JobLedger, job: str, todo: list[tuple[str, int, Sample]], models: list[Model],
               settings: FilterSettings, outcome: FilterOutcome, stop: asyncio.Event,
               concurrency: int, show_progress: bool) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn

    label = f"filter {settings.rule}"
    progress = LoggedProgress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(),
                              TextColumn("removed {task.fields[removed]} · failed {task.fields[failed]}"),
                              TimeRemainingColumn(), disable=not show_progress or not todo, label=label)
    bar = progress.add_task("", total=len(todo), removed=0, failed=0)
    counts = {"removed": 0, "failed": 0, "in_a_row": 0}
    per_question = calls_per_question(settings, len(models))

    async def work(item: tuple[str, int, Sample]) -> Decision | str:
        sample = item[2]
        try:
            transcript = await asyncio.to_thread(load_transcript, sample) if settings.asr else None
        except LvuError as e:
            return f"transcript: {e}"
        outcome.calls += per_question
        try:
            return await decide(sample, models, settings, transcript)
        except LvuError as e:  # e.g. the benchmark cannot build this question's prompt
            return str(e)

    def commit(item: tuple[str, int, Sample], done: Decision | str) -> BaseException | None:
        key, ordinal, _ = item
        error = done if isinstance(done, str) else next((v.error for v in done.votes if v.error), None)
        result = None if isinstance(done, str) else done.to_json()
        ledger.commit(job, key, ordinal=ordinal, result=result, error=error)
        counts["failed"] += error is not None
        counts["removed"] += error is None and isinstance(done, Decision) and done.removed
        counts["in_a_row"] = counts["in_a_row"] + 1 if error is not None else 0
        progress.update(bar, advance=1, removed=counts["removed"], failed=counts["failed"])
        if counts["in_a_row"] >= FAILED_IN_A_ROW:
            message = (f"the filter stopped: {FAILED_IN_A_ROW} questions in a row failed (last: {error}) — check "
                       "the model, then run the same command again to resume")
            outcome.notes.append(message)
            return LvuError(message)
        return None

    with progress:
        try:
            await run_each(todo, work, commit, concurrency=concurrency, stop=stop, note=progress.say,
                           what="question", where="with the model")
        except LvuError:
            if not outcome.notes:
                raise
            # the early stop: what was decided is committed, the note says why


def _collect(ledger: JobLedger, job: str, key_of: dict[str, str], outcome: FilterOutcome) -> None:
    """Decisions from the ledger (this run's and earlier ones), in sample order."""
    entries = {e.key: e for e in ledger.entries(job)}
    for s in outcome.samples:
        key = key_of.get(s.id)
        if key is None:
            continue
        entry = entries.get(key)
        if entry is None or entry.error is not None or entry.result is None:
            why = entry.error if entry is not None and entry.error else "not decided (interrupted)"
            outcome.failed.append((s, why))  # type: ignore[arg-type]
        else:
            outcome.checked.append(Checked(s, Decision.from_json(entry.result)))
