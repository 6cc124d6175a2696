"""A run's headline score: the one number lvu prints for a run, everywhere it prints one.

It is the benchmark's own official aggregate — the headline row of the "overall" table that
`benchmark.aggregate(results)` returns (the table `lvu run` prints) — so failed samples count as
the benchmark's protocol says (wrong, except where an official scorer leaves them out: LVBench),
never "mean over the samples that happened to be scored". `lvu run`, `lvu results list/show`, sweep tables, the viewer,
`/api/runs` and reports all go through here.

Imports stay light (no engine, no models): the CLI and the viewer both import this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lvu.runs.run_names import no_answers

if TYPE_CHECKING:
    from lvu.benchmarks.base import Benchmark, Breakdown
    from lvu.types import RunSpec, SampleResult

HEADLINE_ROWS = ("all", "overall", "Overall", "M-Avg", "full")
"""Names of the headline row in the benchmarks' overall tables: haystack / jsonl / LongVideoBench /
LVBench `all`, Video-MME `overall` (after short/medium/long), MLVU `M-Avg`, Neptune `full`
(a subset run: its subset's row). The same keys as lvu.analysis.compare.MAIN_KEYS."""


@dataclass(frozen=True)
class Headline:
    row: str
    """The row of the overall table it is: 'all', 'overall', 'M-Avg', a Neptune subset..."""
    n: int
    """Samples in its denominator."""
    score: float
    """Percent; NaN when nothing is scored yet (e.g. an open-ended run not judged)."""

    @property
    def value(self) -> float | None:
        return None if math.isnan(self.score) else self.score

    def text(self) -> str:
        """'12.5', or '' when there is no score yet."""
        return "" if self.value is None else f"{self.score:.1f}"

    def describe(self) -> str:
        """'score 12.5 % (all, n=8)', or 'score pending (...)' when there is none yet."""
        what = f"{self.text()} %" if self.value is not None else "pending"
        return f"score {what} ({self.row}, n={self.n})"


def score_cell(top: Headline | None, n_ok: int, n_failed: int) -> str:
    """A run's score as a table cell: '12.5'; 'no answers (8 of 8 failed)' for a run where every
    stored sample failed (its 0.0 would read as a model that answered everything wrong); '' when
    nothing is scored yet."""
    return no_answers(n_ok, n_failed) or (top.text() if top is not None else "")


def describe_run(top: Headline | None, n_ok: int, n_failed: int) -> str | None:
    """A run's headline in a sentence: 'score 12.5 % (all, n=8)', 'no answers (8 of 8 failed)'
    (`score_cell`), or None when there are no tables at all. The end line of `lvu run` and
    `lvu results show` use it."""
    return no_answers(n_ok, n_failed) or (top.describe() if top is not None else None)


def headline_of_tables(tables: list[Breakdown], subset: Any = None) -> Headline | None:
    """The headline row of already-aggregated tables (the first, "overall" table): the row named
    `subset` (Neptune: the run's subset), else the first of HEADLINE_ROWS present, else its first row."""
    if not tables or not tables[0].rows:
        return None
    rows = tables[0].rows
    for wanted in (subset, *HEADLINE_ROWS):
        for name, n, score in rows:
            if wanted is not None and name == wanted:
                return Headline(str(name), int(n), float(score))
    name, n, score = rows[0]
    return Headline(str(name), int(n), float(score))


def headline_score(bench: Benchmark, results: list[SampleResult]) -> Headline | None:
    """The headline of `results` under `bench`'s official aggregate."""
    return headline_of_tables(bench.aggregate(results), bench.settings.get("subset"))


def stored_headline(spec: RunSpec, results: list[SampleResult]) -> Headline | None:
    """The headline of a stored run. A run whose benchmark cannot be rebuilt here (a plugin not
    installed, settings it no longer accepts) falls back to the per-label tables the viewer then
    shows (failed samples counted wrong), so the two still agree."""
    tables, bench = stored_tables(spec, results)
    return headline_of_tables(tables, bench.settings.get("subset") if bench is not None else None)


def stored_tables(spec: RunSpec, results: list[SampleResult]) -> tuple[list[Breakdown], Benchmark | None]:
    """(the run's tables, the benchmark that aggregated them): its benchmark's official aggregate,
    else the per-label tables with None (the fallback of `stored_headline`)."""
    from lvu.runs.grading import benchmark_of  # reads no data: only when a run is scored

    try:
        bench = benchmark_of(spec)
        return bench.aggregate(results), bench
    except Exception:
        from lvu.scoring.choice import breakdowns_by_label

        return breakdowns_by_label(results), None
