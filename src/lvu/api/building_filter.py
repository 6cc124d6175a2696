"""`build_filter`: the papers' blind filters over a benchmark or a JSONL file (`lvu build filter`;
docs/build.md, "Blind filters"): filter, the optional revision loop, the output files, the
options-only leak audit and the summary — what the command prints comes back as a `FilterResult`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lvu.errors import LvuError

if TYPE_CHECKING:
    from lvu.analysis.table import Analysis
    from lvu.benchmarks.base import Benchmark
    from lvu.construct.filter_files import FilterOutcome
    from lvu.construct.filtering import BlindFilter, FilterSettings
    from lvu.construct.revise import RevisionOutcome
    from lvu.models.base import Model

Reviews = Callable[[Path], tuple[dict[str, dict[str, Any]], dict[str, str]]]
"""A revision queue file -> (accepted revisions by id, rejected ids -> why)."""


@dataclass
class FilterResult:
    """What a blind filter did: its outcome (decisions, ledger job, counts), the revision loop's, and
    the files written (none when it was interrupted or stopped: `written` is False)."""

    out: Path
    outcome: FilterOutcome
    revision: RevisionOutcome | None = None
    written: bool = False
    paths: dict[str, Path] = field(default_factory=dict)
    """kept, removed, decisions: the JSONL files (empty when nothing was written)."""
    queue: Path | None = None
    """--revise: the questions waiting for revision (OUT/revision/questions.jsonl)."""
    analysis: Analysis | None = None
    """Removed % per group (None when no question was checked)."""
    single_model: bool = False
    """lvbench with one model (--allow-single): the rule reduced to one model."""
    plot: Path | None = None

    @property
    def interrupted(self) -> bool:
        return self.outcome.interrupted or (self.revision is not None and self.revision.interrupted)

    @property
    def kept_first_pass(self) -> int:
        """With a revision loop: the questions kept without being flagged."""
        kept = len(self.outcome.kept)
        return kept - len(self.revision.having("kept")) if self.revision is not None else kept


def review_app_reviews(queue: Path) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The review app's decisions on a revision queue file (its review file beside it)."""
    try:
        from lvu.web.review_export import reviewed_samples
    except ImportError as e:
        raise LvuError(f"reading the reviews of {queue} needs lvu's review app ({e}) — pip install 'lvu[web]'") from None
    got = reviewed_samples(queue)
    return {r["id"]: r for r in got.accepted}, dict(got.rejected)


def filter_pipeline(settings: FilterSettings, n_models: int) -> BlindFilter:
    """The blind-filter pipeline these settings make (its build.json; check_rebuild)."""
    from lvu.construct.filtering import BlindFilter, pipeline_options

    return BlindFilter(pipeline_options(settings, n_models))


def refuse_dropping_revisions(out: Path) -> None:
    """A filter without --revise into a folder revised before would put the revisions' questions
    back as removed and forget the kept revisions: refused, in one line."""
    import json

    try:
        revised = "revision" in json.loads((out / "summary.json").read_text())
    except (OSError, ValueError, TypeError):
        return
    if revised:
        raise LvuError(f"{out} holds a revision loop (--revise; {out / 'revision'}) — run its command with --revise "
                       "to go on, or pass --replace to filter without revising; nothing was changed")


async def _filter(bench: Benchmark, names: list[str], args: list[dict[str, Any]], settings: FilterSettings,
                  reviews: Reviews, revise_into: Path | None = None, max_rounds: int = 0,
                  **kwargs: Any) -> tuple[FilterOutcome, dict[str, Any]]:
    """The outcome (with `revise_into`: its revision's too), and the build.json that lets `lvu
    build status OUT` open the filter's folder."""
    from lvu.construct.filtering import filter_samples, model_roles, unique_items
    from lvu.construct.revise import revise_flagged
    from lvu.construct.store import build_config
    from lvu.models.probes import build_model

    models: list[Model] = []
    try:
        for name, a in zip(names, args):
            models.append(build_model(name, a))
        outcome = await filter_samples(bench, models, settings, **kwargs)
        if revise_into is not None and not outcome.interrupted and not outcome.notes:
            outcome.revision = await revise_flagged(
                outcome, models, settings, revise_into, max_rounds=max_rounds, reviews=reviews,
                concurrency=kwargs["concurrency"], fresh=kwargs["fresh"], show_progress=kwargs.get("show_progress", True))
            outcome.calls += outcome.revision.calls
        config = build_config(filter_pipeline(settings, len(models)), dict(zip(model_roles(len(models)), models)),
                              unique_items(outcome.samples), store_dir=outcome.results_dir)
        return outcome, config
    finally:
        for m in models:
            await m.close()


def build_filter(source: str, rule: str, out: str | Path, models: Sequence[str], *,
                 model_args: Sequence[dict[str, Any]] | None = None, seeds: int = 3, threshold: int = 2,
                 seed_base: int = 0, asr: bool = False, allow_single: bool = False, revise: bool = False,
                 max_rounds: int | None = None, settings: dict[str, Any] | None = None, limit: int | None = None,
                 concurrency: int = 8, fresh: bool = False, plot: str | Path | None = None, bootstrap: int = 1000,
                 results_dir: str | Path | None = None, replace: bool = False, reviews: Reviews | None = None,
                 show_progress: bool = True, on_note: Callable[[str], None] | None = None) -> FilterResult:
    """Remove the questions `models` (registry names, `model_args` each) answer without the video:
    rule neptune-qad, lvbench or text-only over `source` (a benchmark name with its `settings`, or
    an lvu JSONL file), into the folder `out` (kept / removed / decisions JSONL, summary.json,
    leak.json). Decisions are committed to the ledger as they come: the same call resumes. `revise`:
    flagged questions wait for revision (`reviews` reads the reviewers' verdicts; default the review
    app's) instead of being removed. `on_note` gets the leak audit's lines (what it found, if anything).

        done = build_filter("videomme", "text-only", "vmme-clean", ["openai"], model_args=[{"model": "gpt-4o"}],
                            settings={"data": "~/data/Video-MME"})
        print(len(done.outcome.kept), done.paths)
    """
    from lvu.construct.filter_files import source_benchmark
    from lvu.construct.filtering import FilterSettings, model_roles, unique_items
    from lvu.construct.revise import DEFAULT_MAX_ROUNDS
    from lvu.construct.store import build_lock, check_rebuild, refuse_other_build
    from lvu.runs.location import default_results_dir

    if limit is not None and limit < 1:
        raise LvuError(f"--limit {limit}: must be at least 1 (the first K samples) — leave --limit out to run them all")
    if concurrency < 1:
        raise LvuError(f"--concurrency {concurrency} is not a positive number of questions — e.g. --concurrency 8")
    names = list(models)
    filter_settings = FilterSettings(rule=rule, seeds=seeds, threshold=threshold, seed_base=seed_base, asr=asr,
                                     allow_single=allow_single)
    filter_settings.check(len(names))
    if max_rounds is not None and not revise:
        raise LvuError("--max-rounds counts revision rounds: pass it with --revise")
    rounds = DEFAULT_MAX_ROUNDS if max_rounds is None else max_rounds
    if rounds < 1:
        raise LvuError(f"--max-rounds {rounds} — give at least 1 round of revision (default {DEFAULT_MAX_ROUNDS})")
    out = Path(out)
    refuse_other_build(out, "blind-filter")  # before any call: OUT is another build's folder
    bench = source_benchmark(source, dict(settings or {}))
    samples, bad = bench.loaded()
    if limit is not None:
        samples = samples[:limit]
    args = [dict(a) for a in model_args] if model_args is not None else [{} for _ in names]
    # one builder per output folder; the lock sits beside the filter's ledger, so a killed filter leaves OUT as it was
    with build_lock(out, lock_dir=results_dir if results_dir is not None else default_results_dir()):
        check_rebuild(out, filter_pipeline(filter_settings, len(names)), unique_items(samples),
                      dict(zip(model_roles(len(names)), names)), replace=replace)
        if not revise and not replace:
            refuse_dropping_revisions(out)
        outcome, config = asyncio.run(_filter(
            bench, names, args, filter_settings, reviews or review_app_reviews, revise_into=out if revise else None,
            max_rounds=rounds if revise else 0, samples=samples, bad=bad, results_dir=results_dir,
            concurrency=concurrency, fresh=fresh, show_progress=show_progress))
        return _write(out, outcome, config, filter_settings, names, plot=Path(plot) if plot else None,
                      bootstrap=bootstrap, on_note=on_note)


def _write(out: Path, outcome: FilterOutcome, config: dict[str, Any], settings: FilterSettings, names: list[str], *,
           plot: Path | None, bootstrap: int, on_note: Callable[[str], None] | None) -> FilterResult:
    """The filter's files, unless it was interrupted or stopped (then the decisions stay in the ledger)."""
    from lvu.analysis.blind import write_filter_summary
    from lvu.construct.filter_files import write_outputs
    from lvu.construct.revise import RevisionOutcome, write_queue
    from lvu.construct.runner import audit_benchmark
    from lvu.construct.store import BuildStore

    revision = outcome.revision
    assert revision is None or isinstance(revision, RevisionOutcome)  # what _filter's revise_flagged put there
    if revision is not None and revision.stopped:
        outcome.notes.append(revision.stopped)
    result = FilterResult(out=out, outcome=outcome, revision=revision,
                          single_model=settings.rule == "lvbench" and len(names) == 1)
    if result.interrupted or outcome.notes:
        return result
    result.paths = write_outputs(outcome, out)
    result.queue = write_queue(revision) if revision is not None else None
    audit_benchmark(result.paths["kept"], out, say=on_note)
    extra: dict[str, Any] = {}
    if settings.rule == "lvbench":
        extra["single_model"] = result.single_model
    if revision is not None:
        extra.update(removed=len(revision.having("dropped")), flagged=len(outcome.removed),
                     revision={"kept_first_pass": result.kept_first_pass, **revision.counts()},
                     groups_measure="removed_pct: the share the first pass flagged (sent for revision)")
    result.analysis = write_filter_summary(outcome, out, settings, names, bootstrap=bootstrap, extra=extra)
    BuildStore.write_config_to(out, config)  # `lvu build status OUT` / `show OUT ID` open it
    if result.analysis is not None and plot:
        from lvu.analysis.plots import plot_analysis, save

        plot.parent.mkdir(parents=True, exist_ok=True)
        save(plot_analysis(result.analysis), plot)
        result.plot = plot
    result.written = True
    return result
