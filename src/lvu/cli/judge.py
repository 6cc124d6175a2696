"""`lvu judge ...`: judge stored runs, calibrate an equivalence judge, evaluate metrics on a dev set.

    lvu judge score RUN --judge openai -J model=google/gemma-2-9b-it -J base_url=http://127.0.0.1:8000/v1
    lvu judge calibrate --dev dev.jsonl --judge openai -J model=... -J base_url=...
    lvu judge eval --dev dev.jsonl --metric rouge-l --metric cider --judge openai -J model=...

Imports only typer and rich at module level (`lvu --help` stays fast); docs/judges.md has the details.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.table import Table

from lvu.cli.common import RESULTS_DIR_HELP, RESULTS_DIR_RULE
from lvu.console_output import fold_cells
from lvu.errors import LvuError

if TYPE_CHECKING:
    from lvu.api.judging import Calibration, DevJudged, Judge

judge_app = typer.Typer(help="Judges: GEM-style equivalence, MLVU generation scoring, LLM choice extraction; "
                             "calibration and metric evaluation on labelled dev sets.", no_args_is_help=True)

JudgeName = Annotated[Optional[str], typer.Option("--judge", help="Judge model backend (`lvu list`), e.g. openai, hf, vllm.")]
JudgeArgs = Annotated[list[str], typer.Option("--judge-arg", "-J", help="Judge model argument, KEY=VALUE (repeatable), as --model-arg.")]
Threshold = Annotated[Optional[float], typer.Option("--threshold", help="Equivalence threshold to use instead of the stored calibration.")]
ThresholdFile = Annotated[Optional[Path], typer.Option("--threshold-file", help="A calibration JSON (lvu judge calibrate --out) to take the threshold from.")]
Concurrency = Annotated[int, typer.Option(help="Judge calls in flight at once.")]
Dev = Annotated[Path, typer.Option("--dev", help="Labelled dev set: JSONL rows of question, reference, candidate, label (0/1) or score (0-1).")]
ResultsDir = Annotated[Optional[Path], typer.Option("--results-dir", help=f"Where runs and the judgements of dev rows are stored ({RESULTS_DIR_RULE}).")]
DevFresh = Annotated[bool, typer.Option("--fresh", help="Ask the judge again for every dev row (none is taken from the ledger or a response cache).")]


def _make_judge(name: str | None, args: list[str], threshold: float | None = None,
                threshold_file: Path | None = None) -> Judge:
    from lvu.api.judging import NO_JUDGE, as_judge
    from lvu.cli.common import parse_kv

    if not name:
        raise LvuError(NO_JUDGE)
    return as_judge(name, parse_kv(args, "-J"), threshold=threshold, threshold_file=threshold_file)


def _judge_args(name: str | None, args: list[str]) -> dict[str, object] | None:
    from lvu.cli.common import parse_kv

    return parse_kv(args, "-J") if name else None


def _print_dev_notes(judged: DevJudged) -> None:
    """What judging the dev set did, on stderr: rows taken from the ledger, failures, text verdicts;
    an interrupted job exits 130 (run the same command again to resume)."""
    from lvu.cli.common import err_console

    n_rows = len(judged.rows)
    if judged.n_reused:
        err_console.print(f"{judged.n_reused} of {n_rows} dev rows were judged before by this judge (ledger job "
                          f"{judged.job_id}): not asked again — --fresh asks again", markup=False, highlight=False)
    if judged.interrupted:
        err_console.print(f"interrupted — {judged.n_judged} of {n_rows} dev rows are judged and kept in the ledger; "
                          "run the same command again to resume", markup=False, highlight=False)
        raise typer.Exit(130)
    for row_id, error in judged.failed[:5]:
        err_console.print(f"row {row_id}: judge failed: {error}", markup=False, highlight=False)
    if judged.failed:
        err_console.print(f"{len(judged.failed)} of {n_rows} rows left out: the judge failed on them")
    if judged.n_text:
        err_console.print(f"note: {judged.n_text} verdicts were read from the reply text (no TRUE/FALSE "
                          "log-probabilities): their scores are 0 or 1, so the threshold cannot do much")


@judge_app.command("score")
def score_run(
    run_id: Annotated[Optional[str], typer.Argument(help="Run id or prefix (default: the latest run).")] = None,
    judge: JudgeName = None,
    judge_arg: JudgeArgs = [],
    llm_extract: Annotated[bool, typer.Option("--llm-extract", help="Also map multiple-choice replies without an option to one with the judge.")] = False,
    fresh: Annotated[bool, typer.Option("--fresh", help="Re-judge samples this judge has judged already, asking the judge again (no cached answers).")] = False,
    concurrency: Concurrency = 8,
    threshold: Threshold = None,
    threshold_file: ThresholdFile = None,
    results_dir: Annotated[Optional[Path], typer.Option("--results-dir", help=RESULTS_DIR_HELP)] = None,
) -> None:
    """Judge a stored run's samples that need a judge, post hoc.

    Open-ended and generation samples (and, with --llm-extract, multiple-choice replies without an
    option) are judged and their records updated. Resumable: samples already judged by the same
    judge (model and threshold) are skipped unless --fresh."""
    from lvu.api.judging import judge as judge_run
    from lvu.cli.common import console, err_console, print_tables
    from lvu.cli.results import located

    judge_obj = _make_judge(judge, judge_arg, threshold, threshold_file)
    directory = located(results_dir)  # judges a stored run: creates no store
    done = judge_run(run_id, judge_obj, llm_extract=llm_extract, fresh=fresh, concurrency=concurrency,
                     results_dir=directory)
    print_tables(done.tables, f"{done.benchmark} × {done.model}")
    console.print(f"run [bold]{done.run_id}[/]: judged {done.n_judged}, skipped {done.n_skipped} (already judged by "
                  f"this judge), failed {done.n_failed} — judge {done.judge}", highlight=False)
    for sample_id, error in done.errors[:10]:
        err_console.print(f"failed: {error}", markup=False, highlight=False)
    raise typer.Exit(1 if done.n_failed else 0)


@judge_app.command("calibrate")
def calibrate_command(
    dev: Dev,
    judge: JudgeName = None,
    judge_arg: JudgeArgs = [],
    concurrency: Concurrency = 8,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Also write the calibration JSON here.")] = None,
    results_dir: ResultsDir = None,
    fresh: DevFresh = False,
) -> None:
    """Calibrate an equivalence judge's threshold on a labelled dev set.

    The F1-maximising threshold is stored for this judge; later uses of the same judge (model and
    arguments) load it. Each row's judgement is kept in the results dir's ledger as it arrives: an
    interrupted calibration resumes, and after editing the dev file only the changed rows are asked."""
    from lvu.api.judging import calibrate_judge
    from lvu.cli.common import console

    done = calibrate_judge(dev, judge, model_args=_judge_args(judge, judge_arg), concurrency=concurrency, out=out,
                           results_dir=results_dir, fresh=fresh, on_judged=_print_dev_notes)
    if done.calibration is None or done.default is None:  # interrupted: _print_dev_notes has exited already
        raise typer.Exit(130)
    table = _metric_table(f"{done.judge.short_name} on {dev.name} ({done.n} rows, {done.positives} equivalent)")
    _metric_row(table, "calibrated (max F1)", done.calibration)
    _metric_row(table, "default 0.5", done.default)
    console.print(table)
    console.print(f"judge: {done.judge.model_identity}\nstored: {done.path}" + (f" and {out}" if out else ""),
                  highlight=False)


@judge_app.command("eval")
def eval_command(
    dev: Dev,
    metric: Annotated[list[str], typer.Option("--metric", help="Rule metric (repeatable): cider, bleu4, meteor, rouge-l, embedding.")] = [],
    judge: JudgeName = None,
    judge_arg: JudgeArgs = [],
    concurrency: Concurrency = 8,
    threshold: Threshold = None,
    threshold_file: ThresholdFile = None,
    results_dir: ResultsDir = None,
    fresh: DevFresh = False,
) -> None:
    """F1, precision, recall and accuracy of metrics and judges on a labelled dev set.

    Each metric at its F1-maximising threshold (the shape of Neptune's Table 2); a judge also at
    its own stored (or given) threshold. The paper's Table 2 is printed beside for reference."""
    from lvu.api.judging import evaluate_dev, paper_judge_reference
    from lvu.cli.common import console, err_console

    done = evaluate_dev(dev, metrics=metric, model=judge, model_args=_judge_args(judge, judge_arg), threshold=threshold,
                        threshold_file=threshold_file, concurrency=concurrency, results_dir=results_dir, fresh=fresh,
                        on_note=lambda line: err_console.print(line, markup=False, highlight=False),
                        on_judged=_print_dev_notes)
    table = _metric_table(done.title)
    for name, metrics in done.rows:
        _metric_row(table, name, metrics)
    console.print(table)
    if done.judge is not None:
        console.print(f"judge: {done.judge.identity}", highlight=False)
    ref = Table(title="Neptune Table 2 (paper; GEM dev set, 292 triplets)", title_justify="left")
    for col in ("metric", "fine-tuning", "F1"):
        ref.add_column(col)
    for r in paper_judge_reference():
        ref.add_row(r["metric"], r["finetuning"] or "-", f"{r['f1']:.1f}")
    console.print(ref)


def _metric_table(title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("metric", "F1", "precision", "recall", "accuracy", "threshold"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    return fold_cells(table)


def _metric_row(table: Table, name: str, m: Calibration) -> None:
    table.add_row(name, *(f"{100 * v:.1f}" for v in (m.f1, m.precision, m.recall, m.accuracy)), f"{m.threshold:.4g}")
