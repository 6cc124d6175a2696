"""The blind filters (lvu.construct.blind_rules) as a build pipeline on the one mechanism.

`blind-filter`'s items are a benchmark's samples; its one stage, `blind.decide`, has one unit per
checkable question (multiple choice with an answer index; the others are skipped with the reason,
kept unchecked), keyed by everything its decision depends on: the sample's id and content
(question, options, answer), the rule's prompt templates and parameters, the transcript's source
(--asr) and every model's identity. Units run and are committed by lvu.construct.runner like every
build's: kill -9 loses only the questions in flight and the same command resumes; a question whose
model call failed is stored as failed and asked again on the next run; 8 failed in a row stop the
filter. Decisions are content-keyed, so a question already decided in the same store (the data file
before an edit, another output folder) is not asked again.

`lvu build filter` keeps the store in the results folder (`<results-dir>/lvu.sqlite`) and writes
OUT only when every question is decided or failed (`filter_samples`, then lvu.construct.filter_files);
`lvu build run blind-filter SOURCE -o OUT` is the same pipeline with its store in OUT (it writes
the three JSONL files; summary.json and the removed-% table are the shortcut's, lvu.analysis.blind).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from pydantic import Field, model_validator

from lvu.construct.blind import Decision
from lvu.construct.blind_rules import FilterSettings, rule_named
from lvu.construct.filter_files import Checked, FilterOutcome, checkable
from lvu.construct.pipeline import (STAGES, Item, Pipeline, PipelineOptions, Skip, Stage, StageFailure, Unit,
                                    register_pipeline, register_stage)
from lvu.errors import LvuError
from lvu.types import Sample

if TYPE_CHECKING:
    from lvu.benchmarks.base import BadRecord, Benchmark
    from lvu.construct.runner import BuildState
    from lvu.models.base import Model

FAILED_IN_A_ROW = 8
"""Questions in a row whose model calls all failed that stop the filter (the endpoint is likely gone)."""
PIPELINE = "blind-filter"
__all__ = ["BlindFilter", "Checked", "FilterOutcome", "FilterSettings", "checkable", "filter_samples"]


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


# ---- the pipeline ------------------------------------------------------------------------------------


class BlindFilterOptions(PipelineOptions):
    rule: str = Field(default="neptune-qad", description="neptune-qad | lvbench | text-only (or a registered rule)")
    seeds: int = Field(default=3, description="neptune-qad: rankings per question, options re-shuffled per seed")
    threshold: int = Field(default=2, description="neptune-qad: removed when the answer is top-ranked in this many seeds")
    seed_base: int = Field(default=0, description="neptune-qad: first seed")
    asr: bool = Field(default=False, description="give the transcript too: the sample's subtitles, else Whisper")
    allow_single: bool = Field(default=False, description="lvbench: allow one model (the paper's rule needs two: GLM-4 "
                                                  "and GPT-4); then removed when that model is correct")
    models: int = Field(default=1, ge=1, description="how many models vote (roles llm, llm2, ...)")
    data: Optional[str] = Field(default=None, description="the benchmark's data (lvu build run: a benchmark name as INPUT)")

    @model_validator(mode="after")
    def _rule(self) -> BlindFilterOptions:
        self.settings.check(self.models)
        return self

    @property
    def settings(self) -> FilterSettings:
        return FilterSettings(self.rule, self.seeds, self.threshold, self.seed_base, self.asr, self.allow_single)


def pipeline_options(settings: FilterSettings, n_models: int) -> dict[str, Any]:
    """The blind-filter pipeline's options for `settings` and `n_models` voting models."""
    return {"rule": settings.rule, "seeds": settings.seeds, "threshold": settings.threshold,
            "seed_base": settings.seed_base, "asr": settings.asr, "allow_single": settings.allow_single,
            "models": n_models}


def model_roles(n: int) -> list[str]:
    """The roles of `n` voting models: llm, llm2, llm3, ..."""
    return ["llm"] + [f"llm{k}" for k in range(2, n + 1)]


def sample_of(item: Item) -> Sample:
    return Sample.model_validate(item.data)


def item_of(sample: Sample) -> Item:
    return Item(sample.id, sample.video.path, sample.model_dump(mode="json"))


@register_stage("blind.decide")
class Decide(Stage):
    """One question's decision under the rule, asked without the video."""

    output = "decision"
    role = "llm"
    unit = "question"
    stop_after_failures = FAILED_IN_A_ROW

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.filter = BlindFilterOptions.model_validate(self.options).settings
        self.rule = rule_named(self.filter.rule)
        self.prompt = repr(self.rule.prompt_identity())  # in every key: a changed template recomputes

    def uses_models(self) -> list[str]:
        return model_roles(int(self.options.get("models") or 1))

    def settings(self) -> Any:
        return self.filter.params()

    def plan(self, video: Item, inputs: dict[str, Any]) -> list[Unit] | Skip:
        sample = sample_of(video)
        if (why := checkable(sample)) is not None:
            return Skip(why)
        return [Unit(video.id, "question", {"id": sample.id, "qa": [sample.question, sample.options, sample.answer],
                                            "transcript": transcript_source(sample) if self.filter.asr else None})]

    async def run(self, unit: Unit, ctx: Any) -> dict[str, Any]:
        sample = sample_of(ctx.video)
        transcript = None
        if self.filter.asr:
            try:
                transcript = await asyncio.to_thread(load_transcript, sample)
            except LvuError as e:
                raise StageFailure(f"transcript: {e}") from None
        models = [ctx.model(role) for role in self.uses_models()]
        decision = await self.rule.decide(sample, models, self.filter, transcript)
        if decision.failed:
            raise StageFailure(next(v.error for v in decision.votes if v.error))
        return decision.to_json()

    def collect(self, video: Item, results: dict[str, Any]) -> Any:
        return results["question"]

    def stop_message(self, failures: int, error: str | None) -> str:
        return (f"the filter stopped: {failures} questions in a row failed (last: {error}) — check the model, then "
                "run the same command again to resume")


@register_pipeline(PIPELINE)
class BlindFilter(Pipeline):
    """The papers' blind filters: remove the questions a model answers without the video
    (Neptune's QAD filter, LVBench's, Video-MME's); kept.jsonl, removed.jsonl, decisions.jsonl."""

    Options = BlindFilterOptions
    config: BlindFilterOptions
    models = {"llm": "the model asked without the video", "llm2": "a second voting model (--opt models=2), ..."}

    def __init__(self, options: dict[str, Any] | PipelineOptions | None = None) -> None:
        super().__init__(options)
        self.bad: list[Any] = []

    def stages(self) -> list[Stage]:
        return [Decide(self.options)]

    def items(self, inputs: Sequence[str]) -> list[Item]:
        from lvu.construct.filter_files import source_benchmark

        if len(inputs) != 1:
            raise LvuError(f"{PIPELINE} build: pass one benchmark name or lvu JSONL file (got {len(inputs)} inputs)")
        bench = source_benchmark(inputs[0], {"data": self.options["data"]} if self.options.get("data") else {})
        samples, self.bad = bench.loaded()
        return unique_items(samples)

    def export(self, state: Any, videos: Sequence[Item], out: Path) -> dict[str, Any]:
        from lvu.construct.filter_files import write_outputs

        if state.interrupted or state.stopped:
            return {}  # an interrupted filter writes no file
        samples = [sample_of(v) for v in videos]
        outcome = outcome_of(state, samples, self.config.settings, self.bad, job_id="", results_dir=out)
        paths = write_outputs(outcome, out)  # summary.json and its table: the `lvu build filter` shortcut's
        return {"kept": len(outcome.kept), "removed": len(outcome.removed), "failed": len(outcome.failed),
                **{k: str(v) for k, v in paths.items()}}

    def benchmark_file(self, written: dict[str, Any], out: Path) -> Path | None:
        return out / "kept.jsonl" if written else None  # the benchmark it makes; removed.jsonl is evidence


def unique_items(samples: Sequence[Sample]) -> list[Item]:
    """One item per sample id (the first of duplicates: a decision is per question id)."""
    seen: dict[str, Item] = {}
    for s in samples:
        seen.setdefault(s.id, item_of(s))
    return list(seen.values())


def outcome_of(state: BuildState, samples: list[Sample], settings: FilterSettings, bad: list[Any], *,
               job_id: str, results_dir: Path, stage_index: int = 0) -> FilterOutcome:
    """The decisions of one filter stage of a built (or replanned) build, in sample order."""
    stage = state.stages[stage_index]
    outcome = FilterOutcome(checked=[], skipped=[], failed=[], bad=list(bad), job_id=job_id, results_dir=results_dir,
                            samples=list(samples), calls=stage.ran_calls, n_reused=stage.reused,
                            interrupted=state.interrupted and not state.stopped,
                            notes=[state.stopped] if state.stopped else [])
    decided = state.outputs.get(STAGES.get(stage.name).output_name(), {})
    views = state.units.get(stage.name, {})
    for s in samples:
        if (why := checkable(s)) is not None:
            outcome.skipped.append((s, why))
        elif s.id in decided:
            outcome.checked.append(Checked(s, Decision.from_json(decided[s.id])))
        else:
            entry = next((v.entry for v in views.get(s.id, []) if v.entry is not None), None)
            outcome.failed.append((s, entry.error if entry is not None and entry.error else "not decided (interrupted)"))
    return outcome


async def decide_samples(pipeline: str, stages: Sequence[Stage], samples: Sequence[Sample], models: list[Model], *,
                         results_dir: str | Path | None = None, concurrency: int = 8, fresh: bool = False,
                         show_progress: bool = True, items: Sequence[Item] | None = None
                         ) -> tuple[BuildState, str, Path]:
    """Run filter stages (`Decide` and its kin) over `samples` (one item per id; or the `items`
    given) on the build store in `results_dir` (the results folder by default), resuming; the
    state, the first stage's job id and the store's folder. Does not close the models."""
    from lvu.construct.runner import execute
    from lvu.construct.store import BuildStore, model_key
    from lvu.runs.store import default_results_dir

    roles = dict(zip(model_roles(len(models)), models))
    store_dir = Path(results_dir) if results_dir is not None else default_results_dir()
    store = BuildStore(store_dir, store_dir)
    if fresh:
        for m in models:
            m.bypass_cache()

    async def preflight() -> None:
        for m in models:
            await m.preflight()

    try:
        state = await execute(pipeline, stages, unique_items(samples) if items is None else items, store,
                              identities={r: model_key(m) for r, m in roles.items()}, models=roles,
                              concurrency=concurrency, show_progress=show_progress, fresh=fresh,
                              before_work=preflight)
        job = store.job(pipeline, stages[0].name, create=False)
    finally:
        store.close()
    return state, job, store_dir


async def filter_samples(bench: Benchmark, models: list[Model], settings: FilterSettings, *,
                         samples: list[Sample] | None = None, bad: list[BadRecord] | None = None,
                         results_dir: str | Path | None = None, concurrency: int = 8, fresh: bool = False,
                         show_progress: bool = True) -> FilterOutcome:
    """Decide every checkable sample of `bench` (or `samples`) with `settings.rule`, resuming from
    the build store in `results_dir` (the results folder by default); `fresh` asks again for every
    question (no cached replies either). Does not close the models."""
    settings.check(len(models))
    if samples is None:
        samples, bad = bench.loaded()
    started = time.perf_counter()
    if settings.asr and needs_whisper([s for s in samples if checkable(s) is None]):
        from lvu.media.asr import check_installed

        check_installed()  # one line when lvu[asr] is missing, before any call
    pipeline = BlindFilter(pipeline_options(settings, len(models)))
    state, job, store_dir = await decide_samples(PIPELINE, pipeline.stages(), samples, models, results_dir=results_dir,
                                                 concurrency=concurrency, fresh=fresh, show_progress=show_progress)
    outcome = outcome_of(state, list(samples), settings, list(bad or []), job_id=job, results_dir=store_dir)
    outcome.wall = time.perf_counter() - started
    return outcome
