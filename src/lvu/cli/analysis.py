"""`lvu report`, `lvu compare`, `lvu analyse` and `lvu certificate`: reports, comparisons and the
papers' analyses from stored runs (registered on the main app by lvu.cli). Thin: the work is in
lvu.api.analysis; heavy imports (numpy, matplotlib) happen inside the commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table as RichTable

from lvu.cli.common import ResultsDir, console, err_console, parse_kv
from lvu.console_output import fold_cells
from lvu.errors import LvuError

if TYPE_CHECKING:
    from lvu.api.analysis import Table

Runs = Annotated[Optional[list[str]], typer.Argument(help="Run ids or unique prefixes (default: the latest run).")]
Bootstrap = Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples per CI (0: no intervals).")]
Seed = Annotated[int, typer.Option("--seed", help="Bootstrap seed (same seed, same intervals).")]
# As lvu.api.analysis.ANALYSES (a test checks): here for the help text, which needs it at import.
ANALYSES = ("frames-curve", "single-frame-bias", "modality", "depth", "clue-length", "video-length", "letters",
            "blind", "niah", "leak")


WIDE = 10
"""Tables with more columns than this print transposed (one line per column), e.g. LongVideoBench's 22 keys."""


def print_table(t: Table) -> None:
    from lvu.api.analysis import cell_text

    def text(c: object) -> str:  # data, not markup: a label like "[asr]" must show as written
        return escape(cell_text(c))

    table = RichTable(title=escape(t.title), title_justify="left")
    if len(t.columns) > WIDE:
        table.add_column("")
        for row in t.rows:
            table.add_column(" · ".join(text(c) for c in row[:2] if cell_text(c) not in ("", "–")))
        for j, name in enumerate(t.columns[2:], start=2):
            table.add_row(escape(name), *(text(row[j]) for row in t.rows))
    else:
        for c in t.columns:
            table.add_column(escape(c))
        for row in t.rows:
            table.add_row(*(text(c) for c in row))
    console.print(fold_cells(table))
    for note in t.notes:
        console.print(f"  {note}", markup=False, highlight=False, style="dim")


def print_summary(lines: list[tuple[str, str]]) -> None:
    for key, value in lines:
        console.print(f"[bold]{key}[/]: {value}", highlight=False)


def _located(results_dir: Path | None) -> Path:
    """The results dir holding the runs (a one-line error when none is there), its place printed to
    stderr in one line; the library call then opens it read-only."""
    from lvu.cli.results import located

    return located(results_dir)


def _err_line(line: str) -> None:
    err_console.print(line, markup=False, highlight=False)


def report(
    runs: Runs = None,
    results_dir: ResultsDir = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output file (default: reports/<run>.<format> under the results dir).")] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="html (self-contained, plots embedded) or md (plots as PNGs beside it).")] = "html",
    bootstrap: Bootstrap = 1000,
    seed: Seed = 0,
    no_plots: Annotated[bool, typer.Option("--no-plots", help="Leave the matplotlib plots out.")] = False,
    viewer: Annotated[Optional[str], typer.Option(help="Base URL of `lvu view` (e.g. http://127.0.0.1:8000): samples link to its pages.")] = None,
    all_runs: Annotated[bool, typer.Option("--all", help="Every stored run (e.g. a whole sweep) in one report.")] = False,
    include_failed: Annotated[bool, typer.Option("--include-failed", help="Rank runs with no answers (every sample failed) in the summary table of several runs too; by default they are listed under it as left out.")] = False,
) -> None:
    """Report of one or more runs: official tables with bootstrap CIs, the paper's rows, analyses, samples.

    Several runs add the cross-run analyses: frame sweeps, modality ablations, Video-MME w/ and
    w/o subtitles, Neptune MCQ + open-ended."""
    from lvu.api.analysis import check_report_args, report as write_report

    check_report_args(runs, format=format, all_runs=all_runs)
    written = write_report(runs, results_dir=_located(results_dir), out=out, format=format, bootstrap=bootstrap,
                           seed=seed, plots=not no_plots, viewer=viewer, all_runs=all_runs,
                           include_failed=include_failed, on_note=_err_line)
    console.print(f"report: {written.path}")


def compare(
    runs: Runs = None,
    paper: Annotated[bool, typer.Option("--paper", help="The run beside the paper's rows (one RUN).")] = False,
    model: Annotated[Optional[str], typer.Option(help="--paper: only paper rows whose model contains this.")] = None,
    table: Annotated[Optional[str], typer.Option(help="--paper: only rows of this paper table (e.g. 'Table 5').")] = None,
    all_rows: Annotated[bool, typer.Option("--all-rows", help="--paper: every row of the task, not only rows with the run's input setting.")] = False,
    results_dir: ResultsDir = None,
    bootstrap: Bootstrap = 1000,
    seed: Seed = 0,
    include_failed: Annotated[bool, typer.Option("--include-failed", help="Also compare runs where every sample failed (left out by default: they have no answers, and their 0 % is not a score).")] = False,
) -> None:
    """`compare RUN --paper`: the run's numbers beside the paper's rows, with errata.
    `compare RUN_A RUN_B`: per-breakdown deltas B − A with a paired test on shared samples.
    A run where every sample failed is left out, with a one-line note, unless --include-failed."""
    from lvu.api.analysis import compare as compare_runs

    result = compare_runs(runs, paper=paper, model=model, table=table, all_rows=all_rows,
                          results_dir=_located(results_dir), bootstrap=bootstrap, seed=seed,
                          include_failed=include_failed, on_note=_err_line).comparison
    print_table(result.table)
    print_summary(result.summary)
    for e in result.errata:
        console.print(f"erratum: {e}", markup=False, highlight=False, style="yellow")


def analyse(
    name: Annotated[str, typer.Argument(help=f"One of: {', '.join(ANALYSES)}.")],
    runs: Annotated[Optional[list[str]], typer.Argument(help="Run ids or unique prefixes (default: the latest run); "
                                                             "leak: a benchmark name or an lvu JSONL file.")] = None,
    results_dir: ResultsDir = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Also write the plot (PNG, SVG or PDF by suffix).")] = None,
    bootstrap: Annotated[Optional[int], typer.Option("--bootstrap", help="Bootstrap resamples per CI (0: no intervals; default 1000; not leak).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed (same seed, same intervals); leak: the seed of its halves.")] = 0,
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="leak: also ask this model each question without the video (any lvu model).")] = None,
    model_arg: Annotated[Optional[list[str]], typer.Option("--model-arg", "-a", help="leak: the model's arguments, KEY=VALUE (repeatable).")] = None,
    data: Annotated[Optional[Path], typer.Option("--data", help="leak: the benchmark's data file or directory.")] = None,
    setting: Annotated[Optional[list[str]], typer.Option("--set", help="leak: a benchmark setting, KEY=VALUE (repeatable).")] = None,
    by: Annotated[Optional[str], typer.Option("--by", help="leak: the label to group by (default: task, else question_type, ...; none: overall only).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="leak: print leak.json's content instead of the table.")] = False,
) -> None:
    """Run one of the papers' analyses on stored runs and print its table (docs/analysis.md).

    frames-curve, single-frame-bias and modality compare runs: pass them, or pass one and the
    stored runs that form its sweep / ablation are found. blind takes any number of blind-probe runs
    (`-m blind` / `-m blind-asr`): the share answered correctly without the video, per label. niah
    takes runs of `lvu build needle` benchmarks: depth x length heatmaps, one per run (frame count).
    leak takes a benchmark or JSONL file, not runs: how well options-only rules answer (exit 0 even
    when a rule leaks; 1 when a -m model's calls failed)."""
    from lvu.api.analysis import analyse as run_analysis

    if name not in ANALYSES:
        raise LvuError(f"unknown analysis {name!r} — use one of {', '.join(ANALYSES)}")
    leak_only = {"--model": model, "--model-arg": model_arg, "--data": data, "--set": setting, "--by": by,
                 "--json": json_out or None}
    if name == "leak":
        if bootstrap is not None:
            raise LvuError("--bootstrap does not apply to leak: its intervals are Wilson score intervals (no resampling)")
        return _leak(runs or [], results_dir, plot, seed, model, model_arg or [], data, setting or [], by, json_out)
    given = next((flag for flag, v in leak_only.items() if v), None)
    if given:
        raise LvuError(f"{given} applies to `lvu analyse leak` only — {name} analyses stored runs")
    result = run_analysis(name, runs, results_dir=_located(results_dir), bootstrap=1000 if bootstrap is None else bootstrap,
                          seed=seed, on_note=_err_line)
    for table in result.tables:
        print_table(table)
    for note in result.notes:
        console.print(f"  {note}", markup=False, highlight=False, style="dim")
    print_summary(result.summary)
    for table in result.after:
        print_table(table)
    if plot:
        result.write_plot(plot)
        console.print(f"plot: {plot}")


def _leak(sources: list[str], results_dir: Path | None, plot: Path | None, seed: int, model: str | None,
          model_arg: list[str], data: Path | None, setting: list[str], by: str | None, json_out: bool) -> None:
    """`lvu analyse leak BENCH-OR-FILE`: the options-only audit (lvu.api.analysis.leak_audit)."""
    import json

    from lvu.api.analysis import leak_audit

    if len(sources) != 1:
        raise LvuError(f"leak audits one benchmark or JSONL file, not runs (got {len(sources)}) — e.g. "
                       "`lvu analyse leak videomme --data ~/data/Video-MME` or `lvu analyse leak OUT/needle.jsonl`")
    done = leak_audit(sources[0], data=data, settings=parse_kv(setting, "--set"), by=by, seed=seed, model=model,
                      model_args=parse_kv(model_arg, "--model-arg"), results_dir=results_dir,
                      show_progress=not json_out, on_note=_err_line)
    if json_out:
        console.print(json.dumps(done.to_json(), indent=1, sort_keys=True, ensure_ascii=False), markup=False,
                      highlight=False, soft_wrap=True)
    else:
        print_table(done.table)
    for line in done.warnings:
        err_console.print(line, markup=False, highlight=False, style="yellow")
    if plot:
        done.write_plot(plot)
        err_console.print(f"plot: {plot}", markup=False, highlight=False)
    if done.result.failed:
        raise typer.Exit(1)


def _floats(text: str, what: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or any(v <= 0 for v in values):
        raise LvuError(f"{what} {text!r} is not a comma-separated list of positive numbers — e.g. 0.5,1")
    return values


def certificate(
    benchmark: Annotated[str, typer.Option("--benchmark", "-b", help="Benchmark name (`lvu list`).")] = "haystack",
    model: Annotated[str, typer.Option("--model", "-m", help="Model backend name.")] = "ocr-match",
    limit: Annotated[Optional[int], typer.Option(help="Only the first K multiple-choice samples.")] = None,
    fps: Annotated[str, typer.Option(help="Frame rates tried for each clip length, comma-separated.")] = "0.5,1",
    min_clip: Annotated[float, typer.Option(help="Shortest clip in seconds (then doubled up to the whole video).")] = 2.0,
    max_frames: Annotated[int, typer.Option(help="Skip clips that would need more frames than this.")] = 256,
    verify: Annotated[int, typer.Option(help="Re-ask a correct clip this many times (the paper: 2, for sampling models).")] = 0,
    data: Annotated[Optional[Path], typer.Option(help="Benchmark data file or directory.")] = None,
    setting: Annotated[list[str], typer.Option("--set", help="Benchmark setting, KEY=VALUE (repeatable).")] = [],
    model_arg: Annotated[list[str], typer.Option("--model-arg", "-a", help="Model argument, KEY=VALUE (repeatable).")] = [],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Also write one JSON line per sample (its whole query trail), read back from the ledger.")] = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write the certificate-frames distribution (PNG, SVG or PDF by suffix).")] = None,
    concurrency: Annotated[int, typer.Option(help="Samples certified at once.")] = 4,
    fresh: Annotated[bool, typer.Option("--fresh", help="Recompute every certificate (none is taken from the ledger or a response cache).")] = False,
    results_dir: ResultsDir = None,
) -> None:
    """Neptune's model-based temporal certificate and effort score: for each sample, centred clips of
    growing length and frame rate until the model answers correctly (docs/analysis.md).

    Each certificate is committed to the results dir's ledger as it completes: running the same
    command again resumes, and an edited sample is the only one certified again."""
    from lvu.api.analysis import certificate as certify

    settings = {**({"data": str(data)} if data else {}), **parse_kv(setting, "--set")}
    if concurrency < 1:
        raise LvuError(f"--concurrency {concurrency} is not a positive number of samples — e.g. --concurrency 4")
    done = certify(benchmark, model, settings=settings, model_args=parse_kv(model_arg, "--model-arg"), limit=limit,
                   fps=_floats(fps, "--fps"), min_clip=min_clip, max_frames=max_frames, verify=verify,
                   results_dir=results_dir, concurrency=concurrency, fresh=fresh)
    job, certs = done.job, done.job.certificates
    print_table(done.table)
    print_summary(done.analysis.summary)
    if out:
        done.write_rows(out)
        console.print(f"wrote {len(certs)} rows to {out}")
    if plot:
        done.write_plot(plot)
        console.print(f"plot: {plot}")
    console.print(f"certificates: job {job.job_id} in {job.results_dir} ({len(certs) - job.n_reused} computed, "
                  f"{job.n_reused} from the ledger)", markup=False, highlight=False)
    if job.interrupted:
        err_console.print(f"interrupted — {len(certs)} certificates are in the ledger; run the same command again "
                          "to resume", markup=False, highlight=False)
        raise typer.Exit(130)
    raise typer.Exit(1 if any(c.error for c in certs) else 0)
