"""`lvu judge ...`: judge stored runs, calibrate an equivalence judge, evaluate metrics on a dev set.

    lvu judge score RUN --judge openai -J model=google/gemma-2-9b-it -J base_url=http://127.0.0.1:8000/v1
    lvu judge calibrate --dev dev.jsonl --judge openai -J model=... -J base_url=...
    lvu judge eval --dev dev.jsonl --metric rouge-l --metric cider --judge openai -J model=...

Imports only typer and rich at module level (`lvu --help` stays fast); docs/judges.md has the details.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.table import Table

from lvu.cli.common import RESULTS_DIR_HELP, RESULTS_DIR_RULE
from lvu.console_output import fold_cells
from lvu.errors import LvuError

if TYPE_CHECKING:
    from lvu.scoring.judges import DevRow, Judge

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
    from lvu.cli.common import parse_kv
    from lvu.scoring.judges import make_judge

    if not name:
        raise LvuError("no judge model — pass --judge NAME (e.g. --judge openai -J model=... -J base_url=...)")
    return make_judge(name, parse_kv(args, "-J"), threshold_file, threshold=threshold)


def _judge_dev(judge: Judge, rows: list[DevRow], dev: Path, concurrency: int, results_dir: Path | None,
               fresh: bool) -> list[float | None]:
    """P(equivalent) per dev row (None where the judge call failed; failures are reported). Each
    judgement is committed to the ledger as it arrives (lvu.runs.dev_judging): a rerun resumes."""
    import asyncio  # here, not at module level: every `lvu` command would pay for it (~30 ms)

    from lvu.cli.common import err_console
    from lvu.runs.dev_judging import judge_dev_set

    done = asyncio.run(judge_dev_set(judge, rows, dev, results_dir=results_dir, concurrency=concurrency, fresh=fresh))
    if done.n_reused:
        err_console.print(f"{done.n_reused} of {len(rows)} dev rows were judged before by this judge (ledger job "
                          f"{done.job_id}): not asked again — --fresh asks again", markup=False, highlight=False)
    if done.interrupted:
        n = sum(j is not None for j in done.judgements)
        err_console.print(f"interrupted — {n} of {len(rows)} dev rows are judged and kept in the ledger; run the same "
                          "command again to resume", markup=False, highlight=False)
        raise typer.Exit(130)
    judgements = [j for j in done.judgements if j is not None]  # all of them: the job ran to its end
    failed = [(r.id, j.error) for r, j in zip(rows, judgements) if j.error]
    for row_id, error in failed[:5]:
        err_console.print(f"row {row_id}: judge failed: {error}", markup=False, highlight=False)
    if failed:
        err_console.print(f"{len(failed)} of {len(rows)} rows left out: the judge failed on them")
    methods = {j.method for j in judgements if not j.error}
    if "text" in methods or "parse-failed" in methods:
        n_text = sum(1 for j in judgements if j.method in ("text", "parse-failed"))
        err_console.print(f"note: {n_text} verdicts were read from the reply text (no TRUE/FALSE log-probabilities): "
                          "their scores are 0 or 1, so the threshold cannot do much")
    return [None if j.error else j.value for j in judgements]


def _scored(rows: list[DevRow], scores: list[float | None]) -> tuple[list[float], list[int]]:
    kept = [(s, r.label) for r, s in zip(rows, scores) if s is not None and not math.isnan(s)]
    return [s for s, _ in kept], [y for _, y in kept]


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
    from lvu.runs.location import existing_results, location_line

    judge_obj = _make_judge(judge, judge_arg, threshold, threshold_file)
    directory, why = existing_results(results_dir)  # judges a stored run: creates no store
    err_console.print(location_line(directory, why), markup=False, highlight=False)
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
    from lvu.cli.common import console
    from lvu.scoring.judges import binary_metrics, calibrate, read_dev_set, save_calibration

    rows = read_dev_set(dev)
    judge_obj = _make_judge(judge, judge_arg, threshold=0.5)  # the threshold does not change P(equivalent)
    scores, labels = _scored(rows, _judge_dev(judge_obj, rows, dev, concurrency, results_dir, fresh))
    cal = calibrate(scores, labels)
    path = save_calibration(judge_obj, cal, dev=dev, n=len(scores), positives=sum(labels))
    if out:
        save_calibration(judge_obj, cal, dev=dev, n=len(scores), positives=sum(labels), path=out)
    table = _metric_table(f"{judge_obj.short_name} on {dev.name} ({len(scores)} rows, {sum(labels)} equivalent)")
    _metric_row(table, "calibrated (max F1)", cal)
    _metric_row(table, "default 0.5", binary_metrics(scores, labels, 0.5))
    console.print(table)
    console.print(f"judge: {judge_obj.model_identity}\nstored: {path}" + (f" and {out}" if out else ""), highlight=False)


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
    from lvu.benchmarks.neptune_ref import JUDGE_REFERENCE
    from lvu.cli.common import console, err_console
    from lvu.scoring.judges import binary_metrics, calibrate, read_dev_set

    if not metric and not judge:
        raise LvuError("nothing to evaluate — pass --metric NAME (repeatable) and/or --judge NAME")
    rows = read_dev_set(dev)
    table = _metric_table(f"{dev.name}: {len(rows)} rows, {sum(r.label for r in rows)} equivalent "
                          "(thresholds chosen on this same set, as in the paper)")
    for name in metric:
        try:
            from lvu.scoring.text_metrics import evaluate_metric
        except ImportError as e:
            raise LvuError(f"text metrics are not available ({e}) — pip install 'lvu[metrics]'") from None
        try:
            values = evaluate_metric(name, [r.model_dump() for r in rows])
        except LvuError as e:  # e.g. METEOR without Java: the other rows still print
            err_console.print(f"{name}: skipped — {e}", markup=False, highlight=False)
            continue
        scores, labels = _scored(rows, list(values))
        _metric_row(table, name, calibrate(scores, labels))
    if judge:
        judge_obj = _make_judge(judge, judge_arg, threshold, threshold_file)
        scores, labels = _scored(rows, _judge_dev(judge_obj, rows, dev, concurrency, results_dir, fresh))
        _metric_row(table, judge_obj.short_name, calibrate(scores, labels))
        _metric_row(table, f"  at its threshold ({judge_obj.threshold_source})",
                    binary_metrics(scores, labels, judge_obj.threshold))
    console.print(table)
    if judge:
        console.print(f"judge: {judge_obj.identity}", highlight=False)
    ref = Table(title="Neptune Table 2 (paper; GEM dev set, 292 triplets)", title_justify="left")
    for col in ("metric", "fine-tuning", "F1"):
        ref.add_column(col)
    for r in JUDGE_REFERENCE:
        ref.add_row(r["metric"], r["finetuning"] or "-", f"{r['f1']:.1f}")
    console.print(ref)


def _metric_table(title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("metric", "F1", "precision", "recall", "accuracy", "threshold"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    return fold_cells(table)


def _metric_row(table: Table, name: str, m) -> None:
    table.add_row(name, *(f"{100 * v:.1f}" for v in (m.f1, m.precision, m.recall, m.accuracy)), f"{m.threshold:.4g}")
