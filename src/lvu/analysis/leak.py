"""`lvu analyse leak`: can a benchmark's questions be answered from their options alone?

The options-only rules, the halves, the tie rule, the intervals and leak.json are
lvu.scoring.leak's (a layer the build runner may import: every build audits what it wrote). This
module adds what a build does not need: the optional text-only model row, the printed table and
the bar chart.

The text-only model is the blind filters' `text-only` rule with one model (lvu.construct.filtering):
lvu's plain text question — the question, "(A) option" lines, no frames, no subtitles — asked once
per question, its decisions committed to the results folder's ledger (the same command resumes; a
question `lvu build filter --rule text-only` already decided with that model is not asked again).
A reply that names no option scores 0 (counted in a note); a failed call leaves its question out
of the row (`LeakResult.failed`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lvu.analysis.stats import Estimate
from lvu.analysis.table import Analysis, Table
from lvu.errors import LvuError
from lvu.scoring.leak import (ALL, RULES, LeakResult, Row, audit_rules, audited_samples, leak_warnings,
                              write_leak)
from lvu.types import Sample

__all__ = ["LeakResult", "Row", "audit", "leak_analysis", "leak_table", "leak_warnings", "write_leak"]
TEXT_MODEL = "text-model"


def audit(samples: Sequence[Sample], *, by: str | None = None, seed: int = 0,
          text_model: tuple[str, dict[str, Any]] | None = None, results_dir: str | Path | None = None,
          concurrency: int = 8, fresh: bool = False, show_progress: bool = False, source: str = "") -> LeakResult:
    """Every options-only rule (lvu.scoring.leak) over `samples`, overall and per value of the label
    `by` (None: the `task` label, else `question_type`, ... — lvu.scoring.leak.default_by; "" none);
    `seed` picks the halves of the fitted priors. `text_model`: (name, args) of an lvu model asked
    each question without the video, one more row (its decisions in `results_dir`'s ledger)."""
    extra: dict[str, Sequence[float | None]] = {}
    notes: list[str] = []
    failed = 0
    if text_model is not None:
        audited, _ = audited_samples(samples)
        if audited:
            name, args = text_model
            scores, notes = asyncio.run(_text_model_scores(audited, name, args, results_dir=results_dir,
                                                           concurrency=concurrency, fresh=fresh,
                                                           show_progress=show_progress))
            extra[f"{TEXT_MODEL}: {name}"] = scores
            failed = sum(s is None for s in scores)
    result = audit_rules(samples, by=by, seed=seed, source=source, extra=extra)
    result.notes += notes
    result.failed = failed
    return result


async def _text_model_scores(samples: list[Sample], name: str, args: dict[str, Any], *,
                             results_dir: str | Path | None, concurrency: int, fresh: bool,
                             show_progress: bool) -> tuple[list[float | None], list[str]]:
    """1 / 0 per sample (None: its call failed) from the text-only rule with one model; notes."""
    from lvu.construct.filtering import FilterSettings, filter_samples
    from lvu.models.probes import build_model

    model = build_model(name, args)
    try:
        outcome = await filter_samples(None, [model], FilterSettings("text-only"), samples=samples,  # type: ignore[arg-type]
                                       bad=[], results_dir=results_dir, concurrency=concurrency, fresh=fresh,
                                       show_progress=show_progress)
    finally:
        await model.close()
    if outcome.interrupted:
        raise LvuError(f"interrupted — {len(outcome.checked)} text-model answers are in the ledger "
                       f"({outcome.results_dir}); run the same command again to resume")
    correct = {c.sample.id: float(c.decision.removed) for c in outcome.checked}  # text-only: removed = correct
    notes = [f"{TEXT_MODEL} {name}: asked without the video (the text-only rule's prompt), job {outcome.job_id} in "
             f"{outcome.results_dir}: {outcome.calls} calls, {outcome.n_reused} answers from the ledger"]
    notes += [f"{TEXT_MODEL} {name}: {note}" for note in outcome.notes]  # e.g. stopped: the endpoint is gone
    if outcome.unchecked:
        notes.append(f"{TEXT_MODEL} {name}: {len(outcome.unchecked)} replies named no option (scored wrong)")
    if outcome.failed:
        notes.append(f"{TEXT_MODEL} {name}: {len(outcome.failed)} question(s) left out (model errors, e.g. "
                     f"{outcome.failed[0][0].id}: {outcome.failed[0][1]}) — run again to retry them")
    return [correct.get(s.id) for s in samples], notes


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.1f}"


def leak_table(result: LeakResult) -> Table:
    """rule, group, n, accuracy, chance, CI, verdict: every rule overall, and per group where it applies."""
    rows = [[r.rule, r.group, r.n, _pct(r.accuracy), _pct(r.chance),
             "–" if r.low is None else f"[{r.low:.1f}, {r.high:.1f}]", r.verdict]
            for r in result.rows if r.group == ALL or r.n]
    skipped = "; ".join(f"{n} {why}" for why, n in sorted(result.skipped.items()))
    notes = [f"{result.audited} of {result.samples} samples audited (multiple choice with an answer index)"
             + (f"; not audited: {skipped}" if skipped else ""),
             f"groups: {result.by}" if result.by else "groups: overall only",
             "tied best options score 1/k; priors fitted on one half, scored on the other (2-fold, seed "
             f"{result.seed}); 95 % Wilson intervals; leaks = lower bound above chance, below = upper bound "
             "under chance", *result.notes]
    title = f"Options-only leak audit — {result.source}" if result.source else "Options-only leak audit"
    return Table(title, ["rule", "group", "n", "accuracy %", "chance %", "95 % CI", "verdict"], rows, notes)


def leak_analysis(result: LeakResult) -> Analysis:
    """The overall rows as bars: accuracy with its interval beside chance (plots.plot_analysis)."""
    overall = [r for r in result.rows if r.group == ALL and r.n]
    accuracy = [Estimate(r.accuracy, r.low, r.high, r.n) for r in overall]  # type: ignore[arg-type]
    chance = [Estimate(r.chance, n=r.n) for r in overall]  # type: ignore[arg-type]
    title = f"Options-only leak audit — {result.source}" if result.source else "Options-only leak audit"
    return Analysis("leak", title, "rule", [r.rule for r in overall],
                    {"accuracy %": accuracy, "chance %": chance},
                    y_label="accuracy without the video %", kind="bar",
                    notes=[f"{r.name}: {r.what}" for r in RULES])
