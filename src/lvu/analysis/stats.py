"""Uncertainty for every number lvu reports: seeded percentile bootstrap CIs and paired tests.

- `bootstrap_mean`: CI of a mean score (one group of samples), vectorised.
- `bootstrap_tables`: CI of *every cell* of a benchmark's official tables. It resamples samples
  (with replacement) and re-runs the benchmark's own `aggregate` on each resample, so macro
  averages (MLVU M-Avg), answered-only denominators (Video-MME) and multi-label rows (LVBench)
  get intervals computed exactly the way their point estimates are.
- `bootstrap_cells`: the same resamples for cells given as positions (the analyses' depth bins,
  label groups), so a cell shown by a table and by an analysis has one interval.
- `paired_bootstrap_tables`: A vs B on the samples both runs share. Both runs are resampled with
  the *same* indices, each cell's delta gets a percentile CI and a two-sided bootstrap p-value
  p = min(1, 2 * min(P*(delta <= 0), P*(delta >= 0))) (the paired bootstrap of Koehn 2004 /
  Efron & Tibshirani ch. 16; it works for any cell, including macro averages).
- `mcnemar_exact`: the exact (binomial) McNemar test on discordant pairs, for the overall
  comparison of 0/1 scores — no large-sample approximation, so it is valid for small runs.

Everything is seeded (default seed 0): the same runs give byte-identical reports.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lvu.scoring.choice import natural_key

DEFAULT_BOOTSTRAP = 1000
"""Resamples per estimate; `--bootstrap N` changes it (0 turns intervals off)."""
DEFAULT_LEVEL = 0.95


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its percentile-bootstrap interval (NaN bounds: no interval)."""

    value: float
    low: float = math.nan
    high: float = math.nan
    n: int = 0
    digits: int = 1
    """Decimals when printed (scores in % use 1; ratios such as the single-frame bias use 2)."""

    @property
    def has_ci(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))

    def fmt(self, digits: int | None = None) -> str:
        """'63.3 [51.7, 75.0]' ('63.3' without an interval, '–' for NaN)."""
        digits = self.digits if digits is None else digits
        if math.isnan(self.value):
            return "–"
        text = f"{self.value:.{digits}f}"
        return f"{text} [{self.low:.{digits}f}, {self.high:.{digits}f}]" if self.has_ci else text


def _percentiles(draws: np.ndarray, level: float) -> tuple[float, float]:
    draws = draws[~np.isnan(draws)]
    if draws.size == 0:
        return math.nan, math.nan
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(draws, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_mean(values: Sequence[float], *, n_boot: int = DEFAULT_BOOTSTRAP, level: float = DEFAULT_LEVEL,
                   seed: int = 0, scale: float = 100.0) -> Estimate:
    """Mean of `values` times `scale` (percent for 0/1 scores) with a percentile bootstrap CI."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return Estimate(math.nan)
    point = float(arr.mean() * scale)
    if n_boot <= 0 or arr.size < 2:
        return Estimate(point, n=int(arr.size))
    rng = np.random.default_rng(seed)
    draws = arr[rng.integers(0, arr.size, size=(n_boot, arr.size))].mean(axis=1) * scale
    low, high = _percentiles(draws, level)
    return Estimate(point, low, high, int(arr.size))


Aggregate = Callable[[list[Any]], list[Any]]
"""A benchmark's `aggregate`: results -> tables of (name, n, value) rows (lvu.benchmarks.base.Breakdown)."""
CellKey = tuple[str, str]
"""(table title, row name)."""


def table_cells(tables: list[Any]) -> dict[CellKey, tuple[int, float]]:
    """{(title, row): (n, value)} of aggregate's tables (the first row of a repeated name wins)."""
    cells: dict[CellKey, tuple[int, float]] = {}
    for table in tables:
        for name, n, value in table.rows:
            cells.setdefault((table.title, str(name)), (int(n), float(value)))
    return cells


def _resamples(n: int, n_boot: int, seed: int) -> np.ndarray:
    """Row k: the positions drawn (with replacement) for resample k. `bootstrap_mean`,
    `bootstrap_cells`, `bootstrap_tables` and `paired_bootstrap_tables` all draw exactly these, so
    the same samples and seed give the same interval whichever of them computes it."""
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def bootstrap_cells(values: Sequence[float], cells: Mapping[Any, Sequence[int]], *, n_boot: int = DEFAULT_BOOTSTRAP,
                    level: float = DEFAULT_LEVEL, seed: int = 0, scale: float = 100.0) -> dict[Any, Estimate]:
    """The mean of each cell (a list of positions in `values`) with a CI from resampling the
    *whole* list, as `bootstrap_tables` does: a cell's size varies between resamples, a resample
    without the cell is skipped, and a label cell gets the very interval the official table
    prints for it (same seed, same list)."""
    arr = np.asarray(values, dtype=float)
    keys = list(cells)
    membership = np.zeros((arr.size, len(keys)))  # times each position counts in each cell
    for k, key in enumerate(keys):
        np.add.at(membership[:, k], np.asarray(cells[key], dtype=int), 1.0)
    sizes = membership.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        points = scale * (arr @ membership) / sizes  # 100 * sum / n, as the tables compute it
        if n_boot > 0 and arr.size >= 2:
            rows = _resamples(arr.size, n_boot, seed)
            drawn = np.bincount((rows + arr.size * np.arange(n_boot)[:, None]).ravel(),
                                minlength=n_boot * arr.size).reshape(n_boot, arr.size).astype(float)
            draws = scale * (drawn @ (arr[:, None] * membership)) / (drawn @ membership)  # NaN: cell not drawn
    out = {}
    for k, key in enumerate(keys):
        if not sizes[k]:
            out[key] = Estimate(math.nan)
        elif n_boot > 0 and arr.size >= 2:
            out[key] = Estimate(float(points[k]), *_percentiles(draws[:, k], level), int(sizes[k]))
        else:
            out[key] = Estimate(float(points[k]), n=int(sizes[k]))
    return out


def label_cells(results: list[Any]) -> tuple[list[float], dict[CellKey, list[int]]]:
    """`scoring.choice.breakdowns_by_label`'s tables as cells of positions: (score per position —
    a failed sample's 0 —, {(title, row): positions}); uncounted samples are in no cell."""
    values = [r.score if r.score is not None else 0.0 for r in results]
    cells: dict[CellKey, list[int]] = {("overall", "all"): []}
    by_key: dict[str, dict[str, list[int]]] = {}
    for i, r in enumerate(results):
        if not r.counted:
            continue
        cells[("overall", "all")].append(i)
        for key, value in r.labels.items():
            for v in value if isinstance(value, list) else [value]:
                if v is not None:
                    by_key.setdefault(key, {}).setdefault(str(v), []).append(i)
    for key in sorted(by_key):
        for group in sorted(by_key[key], key=natural_key):
            cells[(key, group)] = by_key[key][group]
    return values, cells


def bootstrap_tables(results: list[Any], aggregate: Aggregate, *, n_boot: int = DEFAULT_BOOTSTRAP,
                     level: float = DEFAULT_LEVEL, seed: int = 0, by_label: bool = False) -> dict[CellKey, Estimate]:
    """An Estimate for every cell `aggregate(results)` produces, by re-aggregating resamples.
    `by_label`: `aggregate` is the label breakdown (`breakdowns_by_label`, every benchmark without
    its own aggregate): the same resamples are then counted with matrix products (`bootstrap_cells`)
    instead of calling it n_boot times — the same intervals, 10,000 samples in well under a second."""
    if by_label:
        values, cells = label_cells(results)
        return bootstrap_cells(values, cells, n_boot=n_boot, level=level, seed=seed)
    point = table_cells(aggregate(results))
    if n_boot <= 0 or len(results) < 2:
        return {k: Estimate(v, n=n) for k, (n, v) in point.items()}
    draws: dict[CellKey, list[float]] = {k: [] for k in point}
    for idx in _resamples(len(results), n_boot, seed):
        for key, (_, value) in table_cells(aggregate([results[i] for i in idx])).items():
            if key in draws:
                draws[key].append(value)
    out = {}
    for key, (n, value) in point.items():
        low, high = _percentiles(np.asarray(draws[key], dtype=float), level) if not math.isnan(value) else (math.nan,) * 2
        out[key] = Estimate(value, low, high, n)
    return out


@dataclass(frozen=True)
class PairedCell:
    """One cell of an A/B comparison on shared samples."""

    a: float
    b: float
    n_a: int
    n_b: int
    delta: float
    """b - a."""
    low: float
    high: float
    p: float
    """Two-sided paired-bootstrap p-value of delta != 0 (NaN when not computable)."""


def paired_bootstrap_tables(a: list[Any], b: list[Any], agg_a: Aggregate, agg_b: Aggregate, *,
                            n_boot: int = DEFAULT_BOOTSTRAP, level: float = DEFAULT_LEVEL,
                            seed: int = 0) -> dict[CellKey, PairedCell]:
    """Per-cell deltas B - A with paired-bootstrap CIs and p-values. `a[i]` and `b[i]` must be
    the same sample (the caller aligns the shared samples)."""
    if len(a) != len(b):
        raise ValueError("paired results must be aligned: one entry per shared sample in each list")
    pa, pb = table_cells(agg_a(a)), table_cells(agg_b(b))
    keys = [k for k in pa if k in pb]
    draws: dict[CellKey, list[float]] = {k: [] for k in keys}
    if n_boot > 0 and len(a) >= 2:
        for idx in _resamples(len(a), n_boot, seed):
            ca, cb = table_cells(agg_a([a[i] for i in idx])), table_cells(agg_b([b[i] for i in idx]))
            for k in keys:
                if k in ca and k in cb:
                    draws[k].append(cb[k][1] - ca[k][1])
    out = {}
    for k in keys:
        (na, va), (nb, vb) = pa[k], pb[k]
        d = np.asarray(draws[k], dtype=float)
        d = d[~np.isnan(d)]
        delta = vb - va
        if d.size and not math.isnan(delta):
            low, high = _percentiles(d, level)
            p = min(1.0, 2 * min(float(np.mean(d <= 0)), float(np.mean(d >= 0))))
        else:
            low = high = p = math.nan
        out[k] = PairedCell(va, vb, na, nb, delta, low, high, p)
    return out


def format_p(p: float, n_boot: int | None = None) -> str:
    """A p-value for tables: 3 significant digits; a bootstrap p of 0 is '< 1/n_boot'."""
    if math.isnan(p):
        return "–"
    if p == 0 and n_boot:
        return f"< {1 / n_boot:.2g}"
    return f"{p:.3g}"


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: b = pairs only A got right, c = pairs only B got right.
    Under H0 the discordant pairs split Binomial(b + c, 1/2); p = 2 * P(X <= min(b, c)), capped at 1."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)
