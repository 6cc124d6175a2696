"""Answerable-blind tables: how many questions a model answers without the video, overall and per
label, with percentile-bootstrap CIs (lvu.analysis.stats.bootstrap_cells, the intervals the other
tables use).

- `filter_summary`: a blind filter's removals (`lvu build filter`, lvu.construct.filtering) — removed %
  of the checked questions per label (`write_filter_summary`: the filter's summary.json);
- `blind_runs`: stored blind-probe runs (`-m blind` / `-m blind-asr`, or a sweep's `--probe blind`)
  — the share of multiple-choice questions each run answered correctly, per label (`lvu analyse blind`).

Both are an Analysis over groups "all" and "<label>: <value>" (one series per filter or run), so
`table()` prints it and lvu.analysis.plots.plot_analysis draws it.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lvu.analysis.analyses import label_order
from lvu.analysis.stats import DEFAULT_BOOTSTRAP, Estimate, bootstrap_cells
from lvu.analysis.table import Analysis, chance_of, choice_results, ordered, value
from lvu.errors import LvuError

if TYPE_CHECKING:
    from lvu.analysis.runs import RunData
    from lvu.construct.filtering import FilterOutcome, FilterSettings

Labels = dict[str, "str | list[str]"]
ALL = "all"
BLIND_MODELS = ("blind", "blind-asr")


def _values(labels: Labels, key: str) -> list[str]:
    v = labels.get(key)
    if v is None:
        return []
    return [str(x) for x in v] if isinstance(v, list) else [str(v)]


def label_groups(labels: Sequence[Labels]) -> dict[str, list[int]]:
    """Positions per group: "all", then "<key>: <value>" for every label key (sorted) and value
    (the paper's order where lvu knows it, else natural order: `0%, 25%, 100%`; table.ordered); a
    multi-label sample is in each of its groups."""
    groups: dict[str, list[int]] = {ALL: list(range(len(labels)))}
    by_key: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for i, lab in enumerate(labels):
        for key in lab:
            for v in _values(lab, key):
                by_key[key][v].append(i)
    for key in sorted(by_key):
        for v in ordered(set(by_key[key]), label_order(key)):
            groups[f"{key}: {v}"] = by_key[key][v]
    return groups


def rates(values: Sequence[float], labels: Sequence[Labels], *, n_boot: int = DEFAULT_BOOTSTRAP,
          seed: int = 0) -> dict[str, Estimate]:
    """Mean of 0/1 `values` in % per group of `label_groups`, each with its bootstrap CI."""
    return bootstrap_cells(list(values), label_groups(labels), n_boot=n_boot, seed=seed)


def filter_summary(outcome: FilterOutcome, *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> Analysis:
    """Removed % of the checked questions (the ones the rule could judge), overall and per label."""
    checked = outcome.decided
    if not checked:
        raise LvuError("no question was decided — nothing to summarise (see the skipped, unchecked and failed counts)")
    rule = checked[0].decision.rule
    est = rates([float(c.decision.removed) for c in checked], [c.sample.labels for c in checked],
                n_boot=n_boot, seed=seed)
    n_removed = sum(c.decision.removed for c in checked)
    summary = [("removed", f"{n_removed} of {len(checked)} checked questions ({est[ALL].fmt()} %)"),
               ("kept", f"{len(outcome.kept)} samples (unchecked ones included)")]
    if outcome.unchecked:
        summary.append(("unchecked", f"{len(outcome.unchecked)} asked, but the replies named no option: kept "
                        "unchecked, not counted above"))
    if outcome.skipped:
        summary.append(("skipped", f"{len(outcome.skipped)} not multiple choice with an answer: kept unchecked"))
    if outcome.failed:
        summary.append(("failed", f"{len(outcome.failed)} undecided (model errors): in neither file — run the "
                        "same command again to retry them"))
    notes = [f"{n_boot}-resample percentile bootstrap 95 % CIs" if n_boot else "no intervals (--bootstrap 0)"]
    return Analysis("blind-filter", f"Blind filter {rule}: removed questions", "group", list(est),
                    {"removed %": list(est.values())}, y_label="removed %", kind="bar", summary=summary,
                    notes=notes)


def _is_blind(run: RunData) -> bool:
    return run.spec.model in BLIND_MODELS


def blind_runs(runs: list[RunData], *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> Analysis:
    """Answerable-blind % per label for each blind-probe run: the share of its multiple-choice
    questions answered correctly without the video (blind-asr: with the subtitles or transcript)."""
    if not runs:
        raise LvuError("pass the blind-probe runs to analyse (`lvu results list` shows their ids)")
    for run in runs:
        if not _is_blind(run):
            raise LvuError(f"run {run.run_id} is model {run.spec.model!r}, not a blind probe — make one with "
                           f"`lvu run -b {run.spec.benchmark} -m blind -a base={run.spec.model} ...` "
                           "(or `lvu sweep --probe blind`)")
    per_run = []
    for run in runs:
        results = choice_results(run.results)
        if not results:
            raise LvuError(f"run {run.run_id}: no counted multiple-choice samples — nothing answerable to count")
        per_run.append((run, results, rates([value(r) for r in results], [r.labels for r in results],
                                            n_boot=n_boot, seed=seed)))
    groups = list(dict.fromkeys(g for _, _, est in per_run for g in est))
    series = {f"{r.spec.model} ({r.run_id})": [est.get(g) for g in groups] for r, _, est in per_run}
    chance, known = chance_of(per_run[0][1])
    summary = [(f"answerable blind, {r.spec.model} ({r.run_id})", f"{est[ALL].fmt()} % of {len(results)} questions")
               for r, results, est in per_run]
    notes = [f"chance: {chance:.1f} %" + ("" if known else " (assumed: 4 options)"),
             "answerable blind = answered correctly with no frames (blind-asr: with subtitles/transcript)",
             *(f"{r.run_id}: {r.label}" for r in runs),
             *(n for r in runs for n in dict.fromkeys(r.notes))]
    benchmarks = sorted({r.spec.benchmark for r in runs})
    return Analysis("blind", f"Answerable blind — {', '.join(benchmarks)}", "group", groups, series,
                    y_label="answerable blind %", kind="bar", chance=chance, summary=summary, notes=notes)


def write_filter_summary(outcome: FilterOutcome, out: str | Path, settings: FilterSettings, models: list[str], *,
                  bootstrap: int = 1000, extra: dict[str, Any] | None = None) -> Analysis | None:
    """Write OUT/summary.json (counts; removed % per group with `bootstrap`-resample intervals;
    `extra`: the command's own fields, e.g. --revise's counts, which replace the defaults); returns
    the per-group analysis (None when no question was checked)."""
    analysis = filter_summary(outcome, n_boot=bootstrap) if outcome.decided else None
    replies, unread = outcome.replies()
    summary = {"rule": settings.rule, "models": models, "seeds": settings.seeds, "threshold": settings.threshold,
               "asr": settings.asr, "checked": len(outcome.decided), "unchecked": len(outcome.unchecked),
               "replies": replies, "unparsable_replies": len(unread), "removed": len(outcome.removed),
               "kept": len(outcome.kept), "skipped": len(outcome.skipped), "failed": len(outcome.failed),
               "bad_records": len(outcome.bad), "calls": outcome.calls, "reused": outcome.n_reused,
               "job": outcome.job_id,
               "groups": {} if analysis is None else {
                   g: {"n": e.n, "removed_pct": e.value, "low": e.low, "high": e.high}
                   for g, e in zip(analysis.x, analysis.series["removed %"]) if e is not None},
               **(extra or {})}
    path = Path(out) / "summary.json"
    tmp = path.with_name(f".summary.json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(summary, indent=1, allow_nan=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return analysis
