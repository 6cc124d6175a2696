"""The viewer's comparison of two or more runs (`/compare?run=A&run=B[&run=C]`).

The numbers are `lvu compare`'s: every pair of runs goes through lvu.analysis.compare.compare_runs
(paired bootstrap CI and p per cell of the benchmark's official tables, on the samples both runs
share; same resamples and seed as the command), so the page and `lvu compare A B` agree digit for
digit. This module only picks the runs, lines the cells up in one table and finds the samples
whose outcomes differ; it computes no statistic of its own.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from lvu.analysis.compare import Comparison, compare_runs
from lvu.analysis.runs import RunData
from lvu.analysis.stats import Estimate
from lvu.errors import LvuError
from lvu.runs.run_names import data_name, model_identity
from lvu.types import SampleResult
from lvu.web.catalog import outcome

MAX_RUNS = 6
"""Runs one comparison page takes (15 pairs): wider tables stop being readable."""
MAX_DIFFERING = 1000
"""Differing samples listed on the page (the count above the list is always complete)."""


@dataclass
class PairResult:
    """Run `b` against run `a` (positions in `RunsComparison.runs`): `lvu compare A B`'s result,
    or why there is none (no shared samples)."""

    a: int
    b: int
    comparison: Comparison | None
    problem: str | None = None

    def cells(self) -> dict[tuple[str, str], list[Any]]:
        """(table, row) -> compare_runs' row: [table, row, A, B, Δ Estimate, p, mark, n]."""
        if self.comparison is None:
            return {}
        return {(str(r[0]), str(r[1])): r for r in self.comparison.table.rows}


@dataclass
class RunsComparison:
    runs: list[RunData]
    """The compared runs, in the order they were picked."""
    left_out: list[tuple[RunData, str]] = field(default_factory=list)
    """Runs left out, with why (no answers: every stored sample failed)."""
    pairs: list[PairResult] = field(default_factory=list)
    cells: list[tuple[str, str]] = field(default_factory=list)
    """Every (table, row) of the runs' official tables, in the first run's order."""
    differing: list[tuple[str, list[SampleResult | None]]] = field(default_factory=list)
    """Samples in two or more runs whose outcomes differ: (id, each run's result or None)."""
    n_boot: int = 0
    seed: int = 0

    def score(self, k: int, cell: tuple[str, str]) -> float | None:
        """Run k's own value of the cell over all its stored samples (as its run page shows it)."""
        for table in self.runs[k].tables:
            if table.title == cell[0]:
                for name, _, value in table.rows:
                    if str(name) == cell[1]:
                        return None if math.isnan(value) else float(value)
        return None


def name(run: RunData) -> str:
    """How a run is named on the page: model identity and data (lvu.runs.run_names)."""
    return f"{model_identity(run.spec)} on {data_name(run.spec)}"


def refusal(runs: list[RunData]) -> str | None:
    """Why these runs cannot be compared here (one line), or None: they must be of one benchmark
    on one data file or folder, so their official tables line up cell by cell."""
    first = runs[0]
    for other in runs[1:]:
        same_data = (other.spec.settings.get("data") or other.spec.settings.get("root")) == \
                    (first.spec.settings.get("data") or first.spec.settings.get("root"))
        if other.spec.benchmark != first.spec.benchmark or not same_data:
            return (f"runs of different benchmarks or data are not compared here: {first.run_id} is on "
                    f"{data_name(first.spec)}, {other.run_id} on {data_name(other.spec)} — pick runs of one benchmark "
                    "and data (`lvu compare A B` compares any two runs on the samples they share)")
    return None


def compare(runs: list[RunData], *, include_failed: bool = False, n_boot: int, seed: int = 0) -> RunsComparison:
    """Every pair of `runs` through `compare_runs`, runs with no answers left out unless
    `include_failed`. Raises LvuError (one line) when fewer than two runs remain or they are of
    different benchmarks or data."""
    if len(runs) > MAX_RUNS:
        raise LvuError(f"{len(runs)} runs picked: the comparison takes at most {MAX_RUNS}")
    if len(runs) < 2:
        raise LvuError("pick two or more runs to compare (tick them in the run list)")
    if (why := refusal(runs)) is not None:
        raise LvuError(why)
    kept: list[RunData] = []
    left_out: list[tuple[RunData, str]] = []
    for run in runs:
        if run.no_answers and not include_failed:  # every stored sample failed: its 0 % is no score
            left_out.append((run, run.no_answers))
        else:
            kept.append(run)
    if len(kept) < 2:
        names = "; ".join(f"{r.run_id} ({name(r)}): {why}" for r, why in left_out)
        raise LvuError(f"fewer than two runs left to compare — left out: {names}; "
                       "tick 'include runs with no answers' (include_failed=1) to compare them anyway")
    out = RunsComparison(kept, left_out, n_boot=n_boot, seed=seed)
    for i, j in itertools.combinations(range(len(kept)), 2):
        try:
            out.pairs.append(PairResult(i, j, compare_runs(kept[i], kept[j], n_boot=n_boot, seed=seed)))
        except LvuError as e:  # no shared samples: say so in the pair's column
            out.pairs.append(PairResult(i, j, None, str(e)))
    seen: dict[tuple[str, str], None] = {}
    for run in kept:
        for table in run.tables:
            for row in table.rows:
                seen.setdefault((table.title, str(row[0])), None)
    out.cells = list(seen)
    out.differing = differing(kept)
    return out


def differing(runs: list[RunData]) -> list[tuple[str, list[SampleResult | None]]]:
    """Samples stored by two or more of the runs whose outcomes (correct, wrong, failed...) are not
    all the same, in the first run's order (then the others')."""
    by_run = [{r.sample_id: r for r in run.results} for run in runs]
    order = dict.fromkeys(sid for run in runs for sid in (r.sample_id for r in run.results))
    out = []
    for sid in order:
        results = [m.get(sid) for m in by_run]
        present = [r for r in results if r is not None]
        if len(present) >= 2 and len({outcome(r) for r in present}) > 1:
            out.append((sid, results))
    return out


def delta_text(row: list[Any] | None) -> str:
    """A compare_runs row's Δ [CI] as `lvu compare` prints it ('' when the pair lacks the cell)."""
    if row is None:
        return ""
    delta = row[4]
    return delta.fmt() if isinstance(delta, Estimate) else str(delta)


def _number(x: Any) -> float | None:
    """A float for JSON (NaN, which JSON lacks, as null)."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def as_json(c: RunsComparison) -> dict[str, Any]:
    """The comparison for `/api/compare`: the same numbers as the page."""
    def pair(p: PairResult) -> dict[str, Any]:
        cells = [{"table": r[0], "row": r[1], "a": _number(r[2]), "b": _number(r[3]), "delta": _number(r[4].value),
                  "low": _number(r[4].low), "high": _number(r[4].high), "p": r[5], "n": r[7]}
                 for r in p.cells().values()]
        return {"a": c.runs[p.a].run_id, "b": c.runs[p.b].run_id, "problem": p.problem, "cells": cells,
                "notes": p.comparison.table.notes if p.comparison else [],
                "summary": [list(s) for s in p.comparison.summary] if p.comparison else []}

    return {
        "runs": [{"run_id": r.run_id, "model_identity": model_identity(r.spec), "data": data_name(r.spec)}
                 for r in c.runs],
        "left_out": [{"run_id": r.run_id, "why": why} for r, why in c.left_out],
        "scores": [{"table": t, "row": n, "values": [c.score(k, (t, n)) for k in range(len(c.runs))]}
                   for t, n in c.cells],
        "pairs": [pair(p) for p in c.pairs],
        "differing": [{"sample_id": sid, "outcomes": [None if r is None else outcome(r) for r in results]}
                      for sid, results in c.differing],
        "bootstrap": c.n_boot, "seed": c.seed,
    }
