"""Comparisons: a run beside the paper's own rows (`lvu compare RUN --paper`), and two runs
against each other on their shared samples (`lvu compare RUN_A RUN_B`).

Paper rows come from each benchmark's `reference` (its `*_ref.py`); their breakdown keys are the
row names of the benchmark's `aggregate`, so columns line up key by key. Rows whose stated input
(task, split, frames, subtitles) matches the run's are shown by default; errata travel with them.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from typing import Any

from lvu.analysis.runs import RunData
from lvu.analysis.stats import (
    DEFAULT_BOOTSTRAP,
    Estimate,
    bootstrap_tables,
    format_p,
    mcnemar_exact,
    paired_bootstrap_tables,
)
from lvu.analysis.table import Table, choice_results, value
from lvu.errors import LvuError

META_KEYS = {"table", "model", "setting", "split", "task", "frames", "fps", "subtitles", "note", "group", "params",
             "metric", "open_source"}
"""Reference-row fields that describe the row; every other field is a breakdown value."""
MAIN_KEYS = ("all", "overall", "Overall", "M-Avg", "full")
"""The headline cell of each benchmark's tables (the Δ column and the rank use it)."""


@dataclass
class Comparison:
    """A comparison's table plus what to read beside it."""

    table: Table
    summary: list[tuple[str, str]] = field(default_factory=list)
    errata: list[str] = field(default_factory=list)


def run_values(run: RunData, *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> dict[str, Estimate]:
    """Row name -> Estimate over the run's official tables (the first table naming a row wins,
    which is the paper's main table: 'all', 'overall', 'M-Avg', subsets...)."""
    out: dict[str, Estimate] = {}
    for (_, name), est in bootstrap_tables(run.results, run.aggregate, n_boot=n_boot, seed=seed,
                                           by_label=run.aggregates_by_label).items():
        out.setdefault(name, est)
    return out


def paper_errata(run: RunData) -> list[str]:
    """The benchmark's documented errata (its `*_ref.py` ERRATA), one line each."""
    bench = run.bench
    if bench is None:
        return []
    try:
        module = importlib.import_module(type(bench).__module__ + "_ref")
    except ImportError:
        return []
    errata = getattr(module, "ERRATA", [])
    if isinstance(errata, dict):
        return [f"{', '.join(map(str, k)) if isinstance(k, tuple) else k}: {v}" for k, v in errata.items()]
    return [str(e) for e in errata]


def _same(row_value: Any, run_value: Any) -> bool | None:
    """True/False when the row states a value; None when it does not (or the run has none)."""
    if row_value is None or run_value is None:
        return None
    return str(row_value) == str(run_value)


def setting_match(row: dict[str, Any], run: RunData) -> bool:
    """Whether a paper row's stated input matches the run's: task, split, frames and subtitles,
    each compared when the row states it (a row with unstated frames does not match)."""
    settings = run.spec.settings
    if row.get("task") is not None and row["task"] != run.spec.benchmark:
        return False
    if _same(row.get("split"), settings.get("split")) is False:
        return False
    if not any(k in row for k in ("task", "split", "frames", "subtitles")):
        return False  # a row that states no input cannot be said to match (e.g. LVBench Table 4)
    frames = settings.get("frames")
    if run.spec.model == "single-frame":  # the probe's centre/first frame: Neptune's "center" rows
        frames = run.spec.model_args.get("which", "center")
    elif run.spec.model in ("blind", "blind-asr"):
        frames = 0
    if "frames" in row and _same(row.get("frames"), frames) is not True:
        return False
    return _same(row.get("subtitles"), settings.get("subtitles")) is not False


def _in_scope(row: dict[str, Any], run: RunData) -> bool:
    """Rows of the run's task and split (the numbers are comparable at all)."""
    if row.get("task") is not None and row["task"] != run.spec.benchmark:
        return False
    return _same(row.get("split"), run.spec.settings.get("split")) is not False


def compare_paper(run: RunData, *, model: str | None = None, table: str | None = None, all_rows: bool = False,
                  n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> Comparison:
    """The run's numbers (with CIs) above the paper rows they line up with, key by key."""
    bench = run.bench
    reference = list(getattr(bench, "reference", []) or [])
    if not reference:
        raise LvuError(f"{run.spec.benchmark} has no paper reference numbers — `lvu compare --paper` works on "
                       "longvideobench, videomme, mlvu, lvbench and neptune runs")
    rows = [r for r in reference if _in_scope(r, run)]
    if model:
        rows = [r for r in rows if model.lower() in str(r.get("model", "")).lower()]
    if table:
        rows = [r for r in rows if table.lower() in str(r.get("table", "")).lower()]
    mine = run_values(run, n_boot=n_boot, seed=seed)
    matched = [r for r in rows if setting_match(r, run)]
    notes = []
    if not all_rows:
        if matched:
            rows = matched
        else:
            notes.append(f"no paper row states this run's input ({_describe(run)}): showing every row of the "
                         "task and split")
    keys = [k for k in mine if any(k in r and k not in META_KEYS for r in rows)]
    if not rows or not keys:
        raise LvuError(f"no paper row of {run.spec.benchmark} lines up with this run — try --all-rows, or drop "
                       "--model / --table")
    main = next((k for k in MAIN_KEYS if k in keys), keys[0])
    columns = ["source", "table", "setting", *keys, f"Δ {main}", "note"]
    out: list[list[Any]] = [["this run", "", _describe(run), *[mine[k] for k in keys], None, ""]]
    for r in rows:
        ref = r.get(main)
        delta = mine[main].value - ref if isinstance(ref, (int, float)) else None
        out.append([str(r.get("model", "")), str(r.get("table", "")), str(r.get("setting", "")),
                    *[r.get(k) for k in keys], delta, str(r.get("note", ""))])
    ranked = sorted([x for x in (r.get(main) for r in rows) if isinstance(x, (int, float))], reverse=True)
    value_main = mine[main].value
    summary = [(f"{main}", mine[main].fmt())]
    if ranked and not math.isnan(value_main):
        summary.append(("rank among the rows shown", f"{1 + sum(x > value_main for x in ranked)} of {len(ranked) + 1}"))
    errata = paper_errata(run) + sorted({str(r["note"]) for r in rows if r.get("note")})
    title = f"{run.spec.benchmark}: this run beside the paper ({len(rows)} rows)"
    return Comparison(Table(title, columns, out, notes), summary, list(dict.fromkeys(errata)))


def _describe(run: RunData) -> str:
    from lvu.runs.run_names import model_identity

    s = run.spec.settings
    bits = [f"{k}={s[k]}" for k in ("split", "subset", "frames", "subtitles", "compat") if s.get(k) is not None]
    return ", ".join([model_identity(run.spec), *bits])


def answered_runs(runs: list[RunData], *, include_failed: bool = False) -> tuple[list[RunData], str | None]:
    """(the runs to compare, a one-line note naming those left out): a run whose every sample failed
    has no answers to compare — its 0 % would count as a model answering everything wrong — so it
    is left out unless `include_failed`."""
    if include_failed:
        return runs, None
    empty = [(r, r.no_answers) for r in runs if r.no_answers]
    if not empty:
        return runs, None
    named = "; ".join(f"{r.run_id} ({r.label}): {why}" for r, why in empty)
    return [r for r in runs if not r.no_answers], f"left out, no answers to compare — {named} (--include-failed keeps them)"


def compare_runs(a: RunData, b: RunData, *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0,
                 alpha: float = 0.05) -> Comparison:
    """B − A for every cell of the official tables, on the samples both runs have: paired-bootstrap
    CI and p per cell, and an exact McNemar test on the overall 0/1 scores."""
    ids_a = {r.sample_id: r for r in a.results}
    ids_b = {r.sample_id: r for r in b.results}
    shared = [sid for sid in ids_a if sid in ids_b]
    if not shared:
        raise LvuError(f"runs {a.run_id} and {b.run_id} share no samples — compare runs of one benchmark")
    ra, rb = [ids_a[s] for s in shared], [ids_b[s] for s in shared]
    cells = paired_bootstrap_tables(ra, rb, a.aggregate, b.aggregate, n_boot=n_boot, seed=seed)
    rows = [[title, name, c.a, c.b, Estimate(c.delta, c.low, c.high), format_p(c.p, n_boot),
             "*" if not math.isnan(c.p) and c.p < alpha else "", c.n_a]
            for (title, name), c in cells.items()]
    notes = [f"A = {a.run_id} ({a.label}); B = {b.run_id} ({b.label})",
             f"{len(shared)} shared samples; {len(ids_a) - len(shared)} only in A, {len(ids_b) - len(shared)} only in B",
             f"Δ = B − A with a {n_boot}-resample paired bootstrap CI and two-sided p (seed {seed}); * p < {alpha}"]
    if a.spec.benchmark != b.spec.benchmark:
        notes.append(f"each run's cells use its own benchmark's aggregate ({a.spec.benchmark}, {b.spec.benchmark})")
    summary = []
    ca = {r.sample_id: r for r in choice_results(ra)}
    cb = {r.sample_id: r for r in choice_results(rb)}
    both = [s for s in ca if s in cb]
    pairs = [(value(ca[s]), value(cb[s])) for s in both]
    if pairs and all(x in (0.0, 1.0) and y in (0.0, 1.0) for x, y in pairs):
        only_a = sum(1 for x, y in pairs if x > y)
        only_b = sum(1 for x, y in pairs if y > x)
        summary.append(("exact McNemar (overall, shared multiple-choice samples)",
                        f"{only_a} right only in A, {only_b} right only in B of {len(pairs)}: "
                        f"p = {mcnemar_exact(only_a, only_b):.3g}"))
    table = Table(f"{b.spec.benchmark}: B − A per breakdown", ["table", "row", "A", "B", "Δ (B − A) [CI]", "p", "",
                                                               "n"], rows, notes)
    return Comparison(table, summary)
