"""The library's entry points: `run` (one benchmark × model, then its report) and `run_planned`
(a list of runs: a run spec's combinations, a sweep's points). `lvu run` and `lvu sweep` call them;
so can Python:

    from lvu.api import run
    summary = run("haystack", "ocr-match", limit=20)
    print(summary.tables[0].rows, summary.report_path)

They sit above the run engine (lvu.runs) and the reports (lvu.analysis), so a run ends with its
report while the engine knows nothing of reports (docs/architecture.md).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lvu.errors import LvuError
from lvu.runs.lifecycle import RunSummary, in_scope
from lvu.runs.options import RunOptions
from lvu.runs.store import Store
from lvu.runs.sweep import add_tags, axes_of, name_of

if TYPE_CHECKING:
    from lvu.benchmarks.base import Benchmark
    from lvu.models.base import Model
    from lvu.runs.headline import Headline


def run(benchmark: str | Benchmark, model: str | Model, *, settings: dict[str, Any] | None = None,
        model_args: dict[str, Any] | None = None, options: RunOptions | None = None,
        **option_kwargs: Any) -> RunSummary:
    """Run (or resume) one benchmark × model and return its summary; `report=True` (the default)
    writes its HTML report (`summary.report_path`, see `write_run_report`).

    `benchmark` is a registry name (`settings` then override its defaults) or a Benchmark object;
    `model` a registry name (with `model_args`) or a Model object. Objects make the run id their
    registry name and settings (arguments) make, so an object and the same name + settings resume
    one run; their classes must be registered (docs/plugins.md).
    How the run goes is `options` (lvu.runs.options.RunOptions: limit, concurrency, results_dir,
    fresh, judge, executor, ...) or the same as keywords (`run("haystack", "ocr-match", limit=20)`;
    keywords win over `options`'s fields); a bad one is a one-line LvuError.
    Ctrl-C stops cleanly and raises `RunInterrupted` (a KeyboardInterrupt) saying how to resume.
    A judge (`judge`/`judge_args`) is not part of the run id; stored samples it has not judged
    yet are judged on resume. `executor="ray"` runs the same pipeline on a Ray cluster (docs/ray.md)."""
    opts = RunOptions.parse(option_kwargs, base=options)
    if opts.asr:  # before anything starts: a missing lvu[asr] is one line, not an error per sample
        from lvu.runs.asr_use import require_asr

        require_asr()
    if opts.executor == "ray":
        from lvu.runs.ray_executor import run_on_ray

        summary = run_on_ray(benchmark, model, settings=settings, model_args=model_args, options=opts)
    else:
        from lvu.runs.engine import run_local

        summary = run_local(benchmark, model, settings=settings, model_args=model_args, options=opts)
    if opts.report:
        summary.report_path = write_run_report(summary, opts.limit)
    return summary


def write_run_report(summary: RunSummary, limit: int | None = None) -> Path:
    """The report of exactly the samples a run's invocation covered: `reports/<run_id>.html` under
    the results dir. A `--limit` run writes `reports/<run_id>-limit<K>.html`, saying so, and never
    overwrites the run's full report."""
    from lvu.analysis.report import write_report

    store = Store(summary.results_dir)
    try:
        info, results = store.run(summary.run_id), in_scope(store, summary)
    finally:
        store.close()
    out, notes = None, []
    if summary.limited:
        out = summary.results_dir / "reports" / f"{summary.run_id}-limit{limit}.html"
        notes.append(f"--limit {limit}: this report covers the first {limit} of {summary.n_benchmark} samples; "
                     f"a run without --limit (or `lvu report {summary.run_id}`) reports the whole run")
    return write_report(info, results, summary.tables, summary.results_dir, out, notes=notes)


# ---- a list of planned runs ---------------------------------------------------------------------------


@dataclass
class Outcome:
    """One planned run and how it went: its summary, or the one-line error that stopped it."""

    planned: Any
    """The lvu.runs.spec_file.PlannedRun."""
    summary: RunSummary | None = None
    """Its summary, when the run ran."""
    error: str | None = None


def run_options(options: dict[str, Any]) -> RunOptions:
    """A planned run's options (a run spec's keys, lvu.runs.spec_file) as RunOptions."""
    return RunOptions.parse(options)


def run_planned(planned: list[Any], options: RunOptions | None = None, *, sweep: dict[str, Any] | None = None,
                on_done: Any = None, tags: list[str] | None = None) -> list[Outcome]:
    """Run each planned run (lvu.runs.spec_file.PlannedRun) in order, each resumable; a run that
    cannot start (e.g. a bad model argument) is recorded as an error and the next one goes on.
    Ctrl-C (RunInterrupted) stops all. `options`: the fields set in it (e.g. a command line's
    --limit, --results-dir, --fresh) win over each run's planned options. `sweep`: the sweep
    section the runs are points of (recorded with each run, lvu.runs.sweep); `on_done(outcome)` is
    called after each run; `tags` are added to every run that ran."""
    given = options.given() if options is not None else {}
    tag = None if sweep is None else {"name": name_of(sweep), "axes": axes_of(sweep)}
    show_progress = given.get("show_progress", True)
    outcomes = []
    for i, item in enumerate(planned, start=1):
        if show_progress:  # which grid point (or spec run) the progress bar below belongs to
            print(progress_line(item, i, len(planned)), file=sys.stderr, flush=True)
        outcome = Outcome(item)
        try:
            membership = None if tag is None else {**tag, "point": dict(item.point)}
            env = {} if membership is None else {"env": {"sweep": membership, "sweeps": [membership]}}
            opts = run_options({**item.options, **env, **given})
            outcome.summary = run(item.benchmark, item.model, settings=item.settings, model_args=item.model_args,
                                  options=opts)
            if tags:
                add_tags(opts.results_dir, outcome.summary.run_id, tags)
        except LvuError as e:
            outcome.error = str(e)
        outcomes.append(outcome)
        if on_done is not None:
            on_done(outcome)
    return outcomes


def progress_line(item: Any, i: int, n: int) -> str:
    """'point 2/4: frames=16' for a sweep point, 'run 2/3: lvbench × openai' for a spec's run."""
    if item.point:
        return f"point {i}/{n}: " + ", ".join(f"{k}={v}" for k, v in item.point.items())
    return f"run {i}/{n}: {item.benchmark} × {item.model}"


# ---- what a command shows after its runs (lvu.cli) --------------------------------------------------


def tag_run(results_dir: str | Path | None, run_id: str, tags: list[str]) -> None:
    """Store `tags` with a stored run (`lvu run --tag`; `lvu results list --tag NAME` finds it)."""
    add_tags(results_dir, run_id, tags)


def headline_of(summary: RunSummary) -> Headline | None:
    """A run's headline score (the row `lvu results list` shows: 'all', Video-MME's 'overall',
    MLVU's 'M-Avg', a Neptune run's subset), None without tables."""
    from lvu.runs.headline import headline_of_tables

    return headline_of_tables(summary.tables, summary.spec.settings.get("subset"))


def scores_of(summary: RunSummary) -> list[tuple[str, float]]:
    """A run's scores as (column, score %) for a table of runs: ("score", the headline) first, then
    the overall table's other rows (Video-MME's short / medium / long, MLVU's G-Avg, ...)."""
    from lvu.runs.sweep import headline

    return headline(summary)
