"""`lvu run -c spec.yaml` and `lvu sweep`: many runs, one summary table; and what `lvu run` prints
after one run (`print_run_end`). Registered in lvu/cli/root.py.

Imports stay light (typer, rich): `lvu --help` must not load pydantic models, yaml or the engine.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.table import Table

from lvu.cli.common import ResultsDir, check_tags, console, err_console, parse_kv, print_tables
from lvu.console_output import add_id_column, fold_cells, failure_line

if TYPE_CHECKING:
    from lvu.api import RunOptions


def _label(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def _pct(score: float | None) -> str:
    """A score cell: '' when there is none (not in this run, or NaN: nothing scored yet)."""
    return "" if score is None or score != score else f"{score:.1f}"


def outcomes_table(outcomes: list[Any], title: str, axes: list[str] | None = None) -> Table:
    """One row per run: what differs between the runs, then samples, failed, scores, run id."""
    from lvu.api import scores_of

    planned = [o.planned for o in outcomes]
    columns: list[str] = []
    if len({p.benchmark for p in planned}) > 1:
        columns.append("benchmark")
    if len({(p.model, _label(p.model_args)) for p in planned}) > 1 and "probe" not in (axes or []):
        columns.append("model")
    # Effective settings (benchmark defaults included) where the run ran, else those asked for.
    settings = [o.summary.spec.settings if o.summary else o.planned.settings for o in outcomes]
    setting_keys = sorted({k for s in settings for k in s})
    varying = [k for k in setting_keys if len({_label(s.get(k)) for s in settings}) > 1]
    shown = list(axes or []) + [k for k in varying if k not in (axes or [])]
    score_names: list[str] = []
    for o in outcomes:
        for name, _ in scores_of(o.summary) if o.summary else []:
            if name not in score_names:
                score_names.append(name)
    table = Table(title=title, title_justify="left")
    for col in (*columns, *shown, "samples", "failed"):
        table.add_column(col, justify="right" if col in ("samples", "failed", "frames", "fps", "resize") else "left")
    for name in score_names:
        table.add_column("score %" if name == "score" else f"{name} %", justify="right")
    add_id_column(table)
    for o, effective in zip(outcomes, settings):
        p = o.planned
        row = []
        for col in columns:
            row.append(p.benchmark if col == "benchmark" else f"{p.model} {_label(p.model_args) if p.model_args else ''}".strip())
        for key in shown:
            row.append(_label(p.point[key]) if key in p.point else _label(effective.get(key, "")))
        if o.summary is None:
            table.add_row(*row, "", "", *([""] * len(score_names)), f"[red]error: {o.error}[/]")
            continue
        scores = dict(scores_of(o.summary))
        cells = [_pct(scores.get(n)) for n in score_names]
        if o.summary.no_answers and cells:  # every sample failed: no score, not 0.0
            cells = ["no answers", *([""] * (len(cells) - 1))]
        table.add_row(*row, str(o.summary.n_total), str(o.summary.n_failed), *cells, o.summary.run_id)
    return fold_cells(table)


def _finish(outcomes: list[Any], title: str, axes: list[str] | None = None, *, results_dir: Path | None = None,
            debug: bool = False) -> None:
    """The runs' table, the runs that could not run, what the runs' samples say beyond their
    scores (tracebacks, unreadable replies: as after one run), and where the results are."""
    console.print(outcomes_table(outcomes, title, axes))
    for o in outcomes:
        if o.error:
            err_console.print(f"failed: {o.planned.benchmark} × {o.planned.model}: {o.error}", markup=False,
                              highlight=False)
    summaries = [o.summary for o in outcomes if o.summary is not None]
    printed_trace = False
    for summary in summaries:
        if summary.traced and debug and not printed_trace:
            _print_traceback(summary)
            printed_trace = True
        elif summary.traced:
            say(f"run {summary.run_id}: {len(summary.traced)} failed sample(s) kept a traceback — "
                f"{_trace_command(summary.run_id, summary.traced[0], results_dir)}")
        if summary.unreadable_note:
            say(f"warning: run {summary.run_id}: {summary.unreadable_note}")
    _print_location(results_dir)
    bad = any(o.error or (o.summary and o.summary.n_failed) for o in outcomes)
    raise typer.Exit(1 if bad else 0)


def say(text: str) -> None:
    """A note on stderr, printed as written (no rich markup)."""
    err_console.print(text, markup=False, highlight=False)


def _print_location(results_dir: Path | None) -> None:
    """`results: DIR (why there)`: the one rule of lvu.api.results_location, after the run
    (so a first run says where it created the folder)."""
    from lvu.api.location import where_results_are

    console.print(where_results_are(results_dir), markup=False, highlight=False)


def _where(results_dir: Path | None) -> str:
    return f" --results-dir {shlex.quote(str(results_dir))}" if results_dir is not None else ""


def _trace_command(run_id: str, sample_id: str, results_dir: Path | None) -> str:
    return f"lvu results show {run_id}{_where(results_dir)} --trace {shlex.quote(sample_id)}"


def _print_traceback(summary: Any) -> None:
    """`--debug`: the first failed sample's traceback, once."""
    others = f" (the first of {len(summary.traced)} with one)" if len(summary.traced) > 1 else ""
    say(f"traceback of {summary.traced[0]}, run {summary.run_id}{others}:")
    say(summary.first_traceback or "")


def print_run_end(summary: Any, title: str, *, limit: int | None, results_dir: Path | None, debug: bool) -> None:
    """What `lvu run` prints after one run (a lvu.runs.engine.RunSummary): its tables — none when
    every sample failed —, the end line with its headline score or "no answers (8 of 8 failed)",
    the failed samples (with `--debug` the first one's traceback, else where to read it), a
    warning when replies held no readable answer, the report, where results are, what to do next."""
    from rich.markup import escape

    from lvu.api import headline_of

    if summary.no_answers is None:  # all failed: the tables would read as a model that answered 0 %
        print_tables(summary.tables, title)
    reused = f", {summary.n_done_before} reused from the store" if summary.n_done_before else ""
    scope = f"{summary.n_total} of {summary.n_benchmark} samples (--limit {limit})" if summary.limited \
        else f"{summary.n_total} samples"
    top = headline_of(summary)  # as `lvu results list`
    verdict = summary.no_answers or (top.describe() if top else None)
    console.print(f"run [bold]{summary.run_id}[/]: {scope}{reused}, {summary.n_failed} failed"
                  + (f" · {escape(verdict)}" if verdict else ""))
    traced = set(summary.traced)
    for sample_id, error in summary.errors[:10]:
        hint = f" (traceback: {_trace_command(summary.run_id, sample_id, results_dir)})" \
            if sample_id in traced and not debug else ""
        say(failure_line(sample_id, error) + hint)
    if len(summary.errors) > 10:
        say(f"... and {len(summary.errors) - 10} more (lvu results show {summary.run_id}{_where(results_dir)})")
    if summary.data_error_note:
        say(summary.data_error_note)
    if debug and summary.traced:
        _print_traceback(summary)
    if summary.unreadable_note:
        say(f"warning: {summary.unreadable_note}")
    if summary.report_path:  # a --limit run's report covers its samples only, beside the full one
        what = f"report (these {summary.n_total} samples)" if summary.limited else "report"
        console.print(f"{what}: {summary.report_path}")
    _print_location(results_dir)
    print_next_steps(summary.run_id, summary.report_path, results_dir)


def print_next_steps(run_id: str, report_path: Path | None, results_dir: Path | None) -> None:
    """Where to look after a run: the viewer, the run's tables and failures, the report."""
    where = _where(results_dir)
    steps = [(f"lvu view{where}", "browse every sample: frames, prompt, response, score"),
             (f"lvu results show {run_id}{where}", "this run's spec, tables and failed samples")]
    if report_path:
        steps.append((str(report_path), "the report, for any browser: tables with intervals, plots, samples"))
    width = max(len(command) for command, _ in steps)
    console.print("next:", markup=False, highlight=False)
    for command, why in steps:
        console.print(f"  {command.ljust(width)}  # {why}", markup=False, highlight=False)


def run_spec_file(config: Path, options: RunOptions, *, tags: list[str] | None = None, debug: bool = False) -> None:
    """`lvu run -c spec.yaml`: every combination in order, then one summary table; the fields set
    in `options` (the command line's) win over the spec's."""
    from lvu.api import plan_spec, run_planned

    plan = plan_spec(config)
    console.print(f"{config}: {len(plan.runs)} run(s)")
    options = plan.options(options)  # --results-dir, else the spec's `results_dir:`, else the usual rule
    outcomes = run_planned(plan.runs, options, sweep=plan.sweep, tags=tags)
    _finish(outcomes, f"{config.name}", plan.axes if plan.sweep else None, results_dir=options.results_dir,
            debug=debug)


def run_benchmarks(benchmarks: list[str], model: str, *, settings: dict[str, Any], model_args: dict[str, Any],
                   options: RunOptions, tags: list[str], debug: bool = False) -> None:
    """`lvu run -b videomme,mlvu`: one run per benchmark, in turn, as `lvu run -c` runs a spec's
    benchmarks; every benchmark's settings are checked before the first run starts."""
    from lvu.api import plan_benchmarks, run_planned

    planned = plan_benchmarks(benchmarks, model, settings=settings, model_args=model_args, options=options)
    console.print(f"{len(planned)} run(s): {', '.join(benchmarks)} × {model}")
    outcomes = run_planned(planned, options, tags=tags)
    _finish(outcomes, f"{', '.join(benchmarks)} × {model}", results_dir=options.results_dir, debug=debug)


def _values(text: str | None) -> list[Any] | None:
    """'8,16,32' -> [8, 16, 32]; JSON-looking items parsed (numbers, true/false), others kept as text."""
    if text is None:
        return None
    out: list[Any] = []
    for item in (t.strip() for t in text.split(",")):
        try:
            out.append(json.loads(item))
        except json.JSONDecodeError:
            out.append(item)
    return out


Axis = Annotated[Optional[str], typer.Option(help="Comma-separated values.")]


def sweep(
    benchmark: Annotated[list[str], typer.Option("--benchmark", "-b", help="Benchmark (repeatable).")] = ["haystack"],
    model: Annotated[list[str], typer.Option("--model", "-m", help="Model (repeatable).")] = ["ocr-match"],
    frames: Axis = None,
    subtitles: Axis = None,
    audio: Annotated[Optional[str], typer.Option(help="Comma-separated: none, whole, interleave (the modality ablation: --subtitles none,all --audio none,whole).")] = None,
    probe: Annotated[Optional[str], typer.Option(help="Comma-separated: full, blind, blind-asr, single-frame (probes around the model).")] = None,
    resize: Axis = None,
    fps: Axis = None,
    compat: Axis = None,
    seed: Annotated[Optional[str], typer.Option(help="Comma-separated benchmark seeds (e.g. haystacks).")] = None,
    name: Annotated[Optional[str], typer.Option(help="Sweep name recorded with every run (default: the axes, e.g. 'frames').")] = None,
    tag: Annotated[list[str], typer.Option("--tag", help="Tag stored with every run of the sweep (repeatable; `lvu results list --tag`).")] = [],
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="Run spec YAML with a `sweep:` section (then only --limit, --concurrency, --fresh, --results-dir and --no-report apply).")] = None,
    setting: Annotated[list[str], typer.Option("--set", help="Benchmark setting for every point, KEY=VALUE (repeatable).")] = [],
    model_arg: Annotated[list[str], typer.Option("--model-arg", "-a", help="Model argument, KEY=VALUE (repeatable; K1=V1,K2=V2 as in lvu run).")] = [],
    data: Annotated[Optional[Path], typer.Option(help="Benchmark data file or directory.")] = None,
    limit: Annotated[Optional[int], typer.Option(help="Only the first K samples of each run.")] = None,
    concurrency: Annotated[Optional[int], typer.Option(help="Samples in flight at once.")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Recompute every point instead of resuming.")] = False,
    results_dir: ResultsDir = None,
    no_report: Annotated[bool, typer.Option("--no-report", help="Skip the HTML reports.")] = False,
) -> None:
    """Run a grid of settings, each point its own run, and print points × accuracy.

    Example: lvu sweep -b haystack -m ocr-match --frames 8,16,32,64 --probe full,blind.
    Points reuse the frame cache and response caches; a point equal to an earlier run resumes it.
    """
    from lvu.api import RunOptions, plan_sweep, plan_sweep_file, run_planned

    given = {"limit": limit, "concurrency": concurrency, "results_dir": results_dir, "fresh": fresh,
             "report": not no_report}  # what the command line sets; the spec's keys fill in the rest
    options = RunOptions.parse({k: v for k, v in given.items() if v is not None})
    tags = check_tags(tag)
    if config is not None:
        plan = plan_sweep_file(config)
    else:
        grid = {"frames": _values(frames), "subtitles": _values(subtitles), "audio": _values(audio),
                "probe": _values(probe),
                "resize": _values(resize), "fps": _values(fps), "compat": _values(compat), "seed": _values(seed)}
        plan = plan_sweep(benchmark, model, {k: v for k, v in grid.items() if v is not None}, name=name, data=data,
                          settings=parse_kv(setting, "--set"), model_args=parse_kv(model_arg, "--model-arg"))
    console.print(f"sweep {plan.name!r}: {len(plan.runs)} point(s)")
    options = plan.options(options)
    outcomes = run_planned(plan.runs, options, sweep=plan.sweep, tags=tags)
    _finish(outcomes, f"sweep {plan.name}", plan.axes, results_dir=options.results_dir)
