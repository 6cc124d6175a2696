"""The build shortcuts, one function per `lvu build` command that configures a built-in pipeline:
`build_neptune` (Neptune's QAD pipeline), `build_subsets` (its MMA/MMH subsets), `build_needle`
and `build_ladder` (needles, MLVU's Time-ladder), `build_select` (a paper's video selection) and
`build_convert` (MLVU's converted tasks). Each is resumable like `build` (docs/build.md); the
commands print what these return."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lvu.api.building import BuildResult, ModelSpec, model_pair, run_pipeline
from lvu.construct.needle_llm_stages import QuestionsIncomplete
from lvu.errors import LvuError

if TYPE_CHECKING:
    from lvu.construct.convert_common import Problem
    from lvu.construct.ladder import LadderResult
    from lvu.construct.needles import BuildResult as NeedleResult
    from lvu.construct.neptune_subsets import SubsetsOutcome
    from lvu.construct.select_rules import SelectionRules

__all__ = ["QuestionsIncomplete", "build_convert", "build_ladder", "build_needle", "build_neptune", "build_select",
           "build_subsets", "rules_text", "selection_rules"]


def build_neptune(videos: str | Path, out: str | Path, *, llm: ModelSpec, vlm: ModelSpec | None = None,
                  filter_model: ModelSpec | None = None, options: Mapping[str, Any] | None = None,
                  limit: int | None = None, concurrency: int = 4, show_progress: bool = True, executor: str = "local",
                  ray_address: str | None = None, ray_args: dict[str, Any] | None = None, replace: bool = False,
                  on_note: Callable[[str], None] | None = None,
                  arg_flags: dict[str, str] | None = None) -> BuildResult:
    """Neptune's automatic QAD pipeline (`lvu build neptune`): a folder of videos (or the
    selected.jsonl of `build_select`) in, a filtered benchmark in `out`. `llm` writes captions,
    questions and decoys, `vlm` captions frames (captioner vlm), `filter_model` ranks for the QAD
    filter (default: `llm`); `options`: the pipeline's (`lvu build list neptune`), out's recorded
    ones kept where not given. `written` counts questions, videos and what the filter removed."""
    from lvu.construct.neptune import Neptune
    from lvu.construct.pipeline import find_videos
    from lvu.construct.store import recorded_options

    if limit is not None and limit < 1:
        raise LvuError(f"--limit {limit}: must be at least 1 (the first K samples) — leave --limit out to run them all")
    pipeline = Neptune(recorded_options(Neptune, out, dict(options or {})))  # the library checks every option
    if pipeline.options.get("captioner") == "vlm" and not vlm:
        raise LvuError("--captioner vlm needs --vlm MODEL (an image model for the frame captions) — "
                       "or pass --captioner ocr to caption frames with their on-screen text, offline")
    items = find_videos(videos, limit)
    models: dict[str, ModelSpec] = {"llm": llm, **({"filter": filter_model} if filter_model else {})}
    if vlm:
        models["vlm"] = vlm
    if on_note is not None:
        on_note(f"lvu build neptune: {len(items)} video(s) from {videos} into {out}")
    return run_pipeline(pipeline, items, out, models, concurrency=concurrency, show_progress=show_progress,
                        executor=executor, ray_address=ray_address, ray_args=ray_args, replace=replace,
                        arg_flags=arg_flags)


def build_subsets(source: str | Path, llm: ModelSpec, *, seeds: int = 3, threshold: int = 2, concurrency: int = 8,
                  show_progress: bool = True, arg_flags: dict[str, str] | None = None) -> SubsetsOutcome:
    """Neptune's hard subsets MMA and MMH (`lvu build subsets`), written beside the
    neptune_full.json of `source` (a `build_neptune` folder, or a `lvu review export` folder whose
    raters' modality labels make MMH); `llm` ranks for the QAD and ASR filters. Resumable."""
    from lvu.construct.neptune_subsets import build_subsets as subsets
    from lvu.construct.store import load_models

    if not 1 <= threshold <= seeds:
        raise LvuError(f"--threshold {threshold}: must be from 1 to --seeds ({seeds})")
    if concurrency < 1:
        raise LvuError(f"--concurrency {concurrency}: must be at least 1")
    model = load_models({"filter": model_pair("filter", llm)}, arg_flags)["filter"]

    async def go() -> SubsetsOutcome:
        try:
            return await subsets(source, [model], seeds=seeds, threshold=threshold, concurrency=concurrency,
                                 show_progress=show_progress)
        finally:
            await model.close()

    return asyncio.run(go())


def build_needle(background: str | Path, needles: str | Path, out: str | Path, *, options: Mapping[str, Any],
                 models: Mapping[str, ModelSpec] | None = None, workers: int = 2, concurrency: int = 8,
                 replace: bool = False, on_start: Callable[[int], None] | None = None,
                 progress: Callable[[str, bool], None] | None = None) -> NeedleResult:
    """Needles (clips, images, text) inserted into background videos (`lvu build needle`): an lvu
    JSONL benchmark in `out` (needle.jsonl, videos/). `options`: the needle pipeline's (task,
    depths, lengths, ...; `lvu build list needle`), checked with errors naming the flag; `models`:
    llm / vlm for model-written questions. `on_start` gets the number of videos to make, `progress`
    each one made. Raises QuestionsIncomplete when videos are made but some questions are not."""
    from lvu.construct.needle_pipeline import NeedleOptions, NeedlePipeline, build_needles, flag_options

    if workers < 1:
        raise LvuError(f"--workers {workers}: must be at least 1")
    pipeline = NeedlePipeline(flag_options(NeedleOptions, {"needles": str(needles), **options}))
    items = pipeline.items([str(background)])
    if on_start is not None:
        on_start(len(items))
    pairs = {role: model_pair(role, m) for role, m in (models or {}).items()}
    return build_needles(pipeline, items, out, workers=workers, progress=progress or (lambda item, made: None),
                         replace=replace, models=pairs, concurrency=concurrency)


def build_ladder(sources: Sequence[str | Path], out: str | Path, lengths: str | Sequence[float] = "180,360,600", *,
                 replace: bool = False) -> LadderResult:
    """MLVU's Time-ladder (`lvu build ladder`): the videos of `sources` (the MLVU release folder or
    lvu JSONL files, e.g. `build_needle` outputs) cut to each length, keeping the questions whose
    evidence stays inside."""
    from lvu.construct.ladder import LadderOptions, build_ladder as ladder, load_sources
    from lvu.construct.needle_pipeline import flag_options

    rungs = flag_options(LadderOptions, {"lengths": lengths}).lengths
    return ladder(load_sources([Path(s) for s in sources]), out, tuple(rungs), replace=replace)


def selection_rules(rules: str | Path | dict[str, Any] | SelectionRules) -> SelectionRules:
    """A paper's video-selection rules (longvideobench, videomme, lvbench, neptune) or a YAML/JSON
    file of the same fields, checked."""
    from lvu.construct.select_rules import load_rules

    return load_rules(rules)


def rules_text(rules: SelectionRules) -> str:
    """The rules as YAML, to copy and edit (`lvu build select --print-rules`)."""
    from lvu.construct.select_rules import rules_text as text

    return text(rules)


def build_select(videos: str | Path, out: str | Path, rules: str | Path | SelectionRules = "longvideobench", *,
                 seed: int = 0, as_of: str | None = None, quality: str | None = None,
                 quality_args: dict[str, Any] | None = None, language_model: str | None = None, concurrency: int = 4,
                 show_progress: bool = True, replace: bool = False,
                 on_note: Callable[[str], None] | None = None) -> BuildResult:
    """A paper's video selection (`lvu build select`) over a folder of videos: duration groups with
    targets, resolution, subtitles, metadata, an optional quality model; seeded sampling and a
    val/test split. `written["summary"]` is the summary.json path once complete."""
    from lvu.construct.pipeline import Pipeline
    from lvu.construct.select_pipeline import Select
    from lvu.construct.store import recorded_options

    loaded = selection_rules(rules)
    pipeline: Pipeline = Select(recorded_options(Select, out, {
        "rules": loaded.model_dump(mode="json"), "seed": seed, "as_of": as_of, "quality": quality,
        "quality_args": dict(quality_args or {}), "language_model": language_model}))
    items = pipeline.items([str(videos)])
    if on_note is not None:
        on_note(f"lvu build select: {len(items)} video(s) from {videos}, rules {loaded.name}, as of "
                f"{pipeline.options['as_of']}, into {out}")
    return run_pipeline(pipeline, items, out, {}, concurrency=concurrency, show_progress=show_progress, replace=replace)


def build_convert(dataset: Literal["ucf-crime", "ego4d-nlq"], inputs: Sequence[str | Path], out: str | Path, *,
                  options: Mapping[str, Any] | None = None, llm: ModelSpec | None = None, concurrency: int = 4,
                  show_progress: bool = True, replace: bool = False, arg_flags: dict[str, str] | None = None,
                  on_problems: Callable[[list[Problem], int], None] | None = None) -> BuildResult:
    """MLVU's converted tasks (`lvu build convert`): Anomaly Recognition from UCF-Crime labels or Ego
    Reasoning from Ego4D NLQ queries, as lvu JSONL in `out`. `inputs`: the annotation files, then
    the videos folder; `llm` chooses the decoys (default: the built-in rule). `on_problems` gets the
    records that cannot be converted and the number read, before anything runs; when none can be,
    a one-line error and nothing is written."""
    from collections import Counter

    from lvu.construct.convert_common import problems_of
    from lvu.construct.convert_nlq import Ego4dNlqConvert
    from lvu.construct.convert_ucf import UcfCrimeConvert
    from lvu.construct.pipeline import Pipeline

    classes: dict[str, type[Pipeline]] = {"ucf-crime": UcfCrimeConvert, "ego4d-nlq": Ego4dNlqConvert}
    if dataset not in classes:
        raise LvuError(f"no conversion {dataset!r} — use one of {', '.join(classes)}")
    pipeline = classes[dataset]({**(options or {}), "decoys": "llm" if llm else "default"})  # the library checks every option
    items = pipeline.items([str(p) for p in inputs])
    problems = problems_of(items)
    if on_problems is not None:
        on_problems(problems, len(items))
    if len(problems) == len(items):
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(Counter(p.kind for p in problems).items()))
        raise LvuError(f"{', '.join(str(p) for p in inputs[:-1])}: no record could be converted ({kinds or 'none found'}) "
                       "— see the lines above; nothing was written")
    return run_pipeline(pipeline, items, out, {"llm": llm} if llm else {}, concurrency=concurrency,
                        show_progress=show_progress, replace=replace, arg_flags=arg_flags)
