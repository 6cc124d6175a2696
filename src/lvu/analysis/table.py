"""The small data objects analyses return: a Table (rows of cells) and an Analysis (a curve or
bar chart over ordered groups, with confidence intervals), plus the per-sample helpers they share."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from lvu.analysis.stats import DEFAULT_BOOTSTRAP, Estimate, bootstrap_mean
from lvu.scoring.choice import natural_key
from lvu.types import SampleResult


@dataclass
class Table:
    """A titled table; cells are text, numbers or Estimates (rendered '63.3 [51.7, 75.0]')."""

    title: str
    columns: list[str]
    rows: list[list[Any]]
    notes: list[str] = field(default_factory=list)
    filter_run: str | None = None
    """HTML reports: first-column values become links that filter this run's sample table."""


def cell_text(cell: Any, digits: int = 1) -> str:
    """How every renderer (rich, HTML, Markdown) writes a cell."""
    if cell is None:
        return "–"
    if isinstance(cell, Estimate):
        return cell.fmt()
    if isinstance(cell, bool):
        return "yes" if cell else "no"
    if isinstance(cell, float):
        return "–" if math.isnan(cell) else f"{cell:.{digits}f}"
    return str(cell)


@dataclass
class Analysis:
    """One analysis result: values of one or more series over ordered x groups.

    `table()` gives the numbers; `lvu.analysis.plots.plot_analysis` draws it (a matplotlib Figure)."""

    name: str
    """The `lvu analyse` name (frames-curve, depth, ...)."""
    title: str
    x_label: str
    x: list[str]
    series: Mapping[str, Sequence[Estimate | None]]
    y_label: str = "accuracy %"
    kind: Literal["line", "bar"] = "line"
    x_values: list[float] | None = None
    """Numeric x positions for line plots (frames); None plots the groups evenly."""
    log_x: bool = False
    chance: float | None = None
    """Chance level in y units, drawn as a dashed line."""
    summary: list[tuple[str, str]] = field(default_factory=list)
    """Findings as (name, value) lines, e.g. ('single-frame bias, all', '0.44 [0.31, 0.58]')."""
    notes: list[str] = field(default_factory=list)

    def table(self) -> Table:
        names = list(self.series)
        rows = []
        for i, x in enumerate(self.x):
            cells = [self.series[s][i] for s in names]
            n = next((c.n for c in cells if isinstance(c, Estimate) and c.n), None)
            rows.append([x, *cells, n])
        return Table(self.title, [self.x_label, *names, "n"], rows, list(self.notes))


# ---- per-sample helpers ------------------------------------------------------------------------


def value(r: SampleResult) -> float:
    """A sample's score as the tables count it: a failed sample (error or no score) is 0."""
    return r.score if r.score is not None and not r.error and not math.isnan(r.score) else 0.0


def choice_results(results: list[SampleResult]) -> list[SampleResult]:
    """Multiple-choice samples that count: an option-index answer, and counted by the scorer.
    Generation / open-ended samples (text answers) and hidden answers are left out."""
    return [r for r in results if r.counted and isinstance(r.answer, int) and not isinstance(r.answer, bool)]


def chance_of(results: list[SampleResult]) -> tuple[float, bool]:
    """(mean chance accuracy in %, known?): 1 / options per sample; 25 % when a run predates
    stored option counts."""
    counts = [r.n_options for r in results if r.n_options]
    if not counts:
        return 25.0, False
    return 100.0 * sum(1 / n for n in counts) / len(counts), True


def accuracy(results: list[SampleResult], *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> Estimate:
    return bootstrap_mean([value(r) for r in results], n_boot=n_boot, seed=seed)


def label_values(r: SampleResult, key: str) -> list[str]:
    """A label's values as a list (multi-label keys give several, a missing key none)."""
    v = r.labels.get(key)
    if v is None:
        return []
    return [str(x) for x in v] if isinstance(v, list) else [str(v)]


def ordered(values: set[str], order: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The benchmark's declared order first (lvu.analysis.analyses.label_order), then the rest in
    natural order (natural_key). Every table and plot of groups orders its labels here."""
    return [v for v in order if v in values] + sorted(values - set(order), key=natural_key)
